"""Run-time checks on traced values, raised after the call with the Op's own exception.

JAX cannot raise from inside a jit program. A check whose condition depends
on traced values (`CheckAndRaise`, e.g. aeppl's parameter checks) is recorded
with `jax.experimental.checkify` instead (`require`).

A program is first traced as it is, inside `discovering`. The first `require`
met there raises `NeedsChecks`, and the program is traced again as a
`CheckedProgram`, which returns whether a check failed next to the outputs and
raises the failed check's exception on the host, before any output is stored,
so a failing call updates no shared variable. Programs without checks are
compiled as they are and pay nothing.
"""

from __future__ import annotations

import contextvars
import re
import threading
import warnings
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

_WARN, _DISCOVER, _FUNCTIONALIZED, _SHAPES_ONLY = "warn", "discover", "functionalized", "shapes only"
_CONTEXT = contextvars.ContextVar("aejax_checks", default=_WARN)
_MESSAGE = re.compile(r"aejax check (\d+)\b")


class _CheckTable:
    """The exception class and message of every check a program may raise, by number."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._numbers: dict[tuple[type, str], int] = {}
        self._checks: list[tuple[type, str]] = []

    def number(self, exc_type: type, message: str) -> int:
        with self._lock:
            key = (exc_type, message)
            if key not in self._numbers:
                self._numbers[key] = len(self._checks)
                self._checks.append(key)
            return self._numbers[key]

    def exception(self, number: int) -> BaseException:
        exc_type, message = self._checks[number]
        return exc_type(message)


CHECKS = _CheckTable()


class NeedsChecks(Exception):
    """A program traced without checks met one: trace it again as a `CheckedProgram`."""


def require(condition: Any, exc_type: type, message: str, where: Any) -> None:
    """Check a traced ``condition`` inside the program; fail the call with ``exc_type(message)``.

    Outside `discovering` and `CheckedProgram` (e.g. a graph exported with
    ``jaxify``) the check cannot be raised: it warns, naming ``where``, and
    is skipped.
    """
    context = _CONTEXT.get()
    if context == _SHAPES_ONLY:
        return
    if context == _DISCOVER:
        raise NeedsChecks(message)
    if context == _WARN:
        warnings.warn(
            f"the check {message!r} of {where} depends on traced values and this program "
            "cannot raise, so it is not checked",
            stacklevel=2,
        )
        return
    number = CHECKS.number(exc_type, message)
    escaped = message.replace("{", "{{").replace("}", "}}")  # checkify formats its message
    checkify.check(jnp.all(condition), f"aejax check {number}: {escaped}")


def _traced_in(context: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    token = _CONTEXT.set(context)
    try:
        return fn(*args)
    finally:
        _CONTEXT.reset(token)


def shapes_only(fn: Callable[..., Any], *args: Any) -> Any:
    """``jax.eval_shape(fn, *args)``, its checks skipped: only its output shapes are wanted."""
    return _traced_in(_SHAPES_ONLY, lambda *values: jax.eval_shape(fn, *values), args)


def discovering(traced_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``traced_fn`` tracing so that a check in it raises `NeedsChecks`."""

    def discover(*args: Any) -> Any:
        return _traced_in(_DISCOVER, traced_fn, args)

    return discover


class CheckedProgram:
    """``jax.jit`` of a traced function whose checks fail the call after it returns.

    Each call returns the outputs and one flag; only when the flag says a
    check failed is the program run again, returning checkify's error, to
    find which check it was (the error itself costs time to return).
    """

    def __init__(self, traced_fn: Callable[..., tuple[Any, ...]]) -> None:
        checked = checkify.checkify(traced_fn)

        def with_error(*args: Any) -> tuple[checkify.Error, tuple[Any, ...]]:
            return _traced_in(_FUNCTIONALIZED, checked, args)

        def with_flag(*args: Any) -> tuple[Any, tuple[Any, ...]]:
            error, outputs = with_error(*args)
            flags = [leaf for leaf in jax.tree_util.tree_leaves(error) if leaf.dtype == bool]
            return (jnp.any(jnp.stack(flags)) if flags else jnp.asarray(False)), outputs

        self._with_flag = jax.jit(with_flag)
        self._with_error = jax.jit(with_error)

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        failed, outputs = self._with_flag(*args)
        if np.asarray(failed):  # bool() of a JAX array is several times slower
            raise failure(self._with_error(*args)[0])
        return outputs


def failure(error: checkify.Error) -> BaseException:
    """The exception of the check that failed, as its Op declares it."""
    message = error.get() or ""
    found = _MESSAGE.search(message)
    if found is None:
        return RuntimeError(f"a run-time check failed: {message}")
    return CHECKS.exception(int(found.group(1)))
