"""Run-time checks on traced values, raised after the call with the Op's own exception.

JAX cannot raise from inside a jit program. A check whose condition depends
on traced values (`CheckAndRaise`, e.g. aeppl's parameter checks) is turned
into a *failure code* instead: ``-1`` while every check holds, else the
number of the first check that failed (`CHECKS` maps numbers back to the
exception class and message). `require` folds each check into the code of
the function being traced; a loop carries its body's code and hands it out
when it ends (`with_failure_code`, `report`), so one ``int32`` leaves the
program beside the outputs.

A program is first traced as it is, inside `discovering`. The first `require`
met there raises `NeedsChecks`, and the program is traced again as a
`CheckedProgram`, which raises the failed check's exception on the host,
before any output is stored, so a failing call updates no shared variable.
Programs without checks are compiled as they are and pay nothing.

A program given the buffers of its inputs to reuse (donated: the old value
of an updated shared variable) cannot fail once it has started without
losing them, so it is a `CheckedProgram`, given none, as soon as it has a
check or a callback (`callback_staged`).
"""

from __future__ import annotations

import contextvars
import copy
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

_WARN, _DISCOVER, _CHECKED, _SHAPES_ONLY = "warn", "discover", "checked", "shapes only"
_DISCOVER_DONATING = "discover, inputs donated"
_CONTEXT = contextvars.ContextVar("aejax_checks", default=_WARN)
_CODES: contextvars.ContextVar[list[Any]] = contextvars.ContextVar("aejax_check_codes")
_CALLBACKS: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("aejax_callbacks", default=None)
PASSED = -1
"""The failure code of a run in which every check held."""


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

    def entries(self) -> list[tuple[type, str]]:
        """Every check known so far, at the index of its number."""
        with self._lock:
            return list(self._checks)


CHECKS = _CheckTable()


class NeedsChecks(Exception):
    """A program traced without checks met one: trace it again as a `CheckedProgram`."""


def require(condition: Any, exc_type: type, message: str, where: Any) -> None:
    """Check a traced ``condition`` inside the program; fail the call with ``exc_type(message)``.

    Outside `discovering`, `with_checks` and `CheckedProgram` (e.g. a graph
    exported with ``jaxify``, called as ``fn``) the check cannot be raised: it
    warns, naming ``where``, and is skipped.
    """
    context = _CONTEXT.get()
    if context == _SHAPES_ONLY:
        return
    if context in (_DISCOVER, _DISCOVER_DONATING):
        raise NeedsChecks(message)
    if context == _WARN:
        warnings.warn(
            f"the check {message!r} of {where} depends on traced values and this program "
            "cannot raise, so it is not checked",
            stacklevel=2,
        )
        return
    number = CHECKS.number(exc_type, message)
    report(jnp.where(jnp.all(condition), PASSED, number).astype("int32"))


def checking() -> bool:
    """Whether checks met now fold into a failure code (inside a `CheckedProgram`)."""
    return _CONTEXT.get() == _CHECKED


def _first_failure(earlier: Any, later: Any) -> Any:
    return later if earlier is None else jnp.where(earlier == PASSED, later, earlier)


def report(code: Any) -> None:
    """Fold the failure code ``code`` (of a check or a loop) into the code of the function being traced."""
    codes = _CODES.get()
    codes[0] = _first_failure(codes[0], code)


def loop_failure_start() -> Any:
    """A loop's failure code before its first step: `PASSED` inside a `CheckedProgram`, else ``None`` (none carried)."""
    return jnp.asarray(PASSED, "int32") if checking() else None


def loop_step(failed: Any, step: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """``step(*args)`` traced as a loop body, and the loop's failure code after it (``None`` stays ``None``)."""
    if failed is None:
        return step(*args), None
    result, code = with_failure_code(step, *args)
    return result, _first_failure(failed, code)


def loop_end(failed: Any) -> None:
    """Hand a finished loop's failure code to the function around the loop."""
    if failed is not None:
        report(failed)


def with_failure_code(fn: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """``fn(*args)`` and the failure code of the checks met while tracing it (`PASSED` if none)."""
    token = _CODES.set([None])
    try:
        result = fn(*args)
        code = _CODES.get()[0]
    finally:
        _CODES.reset(token)
    return result, jnp.asarray(PASSED, "int32") if code is None else code


def _traced_in(context: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    token = _CONTEXT.set(context)
    try:
        return fn(*args)
    finally:
        _CONTEXT.reset(token)


def shapes_only(fn: Callable[..., Any], *args: Any) -> Any:
    """``jax.eval_shape(fn, *args)``, its checks skipped: only its output shapes are wanted."""
    return _traced_in(_SHAPES_ONLY, lambda *values: jax.eval_shape(fn, *values), args)


def discovering(traced_fn: Callable[..., Any], donating: bool = False) -> Callable[..., Any]:
    """``traced_fn`` tracing so that a check in it raises `NeedsChecks`.

    With ``donating`` (its program is given input buffers to reuse), so does
    a callback (`callback_staged`).
    """
    context = _DISCOVER_DONATING if donating else _DISCOVER

    def discover(*args: Any) -> Any:
        return _traced_in(context, traced_fn, args)

    return discover


def callback_staged() -> None:
    """Say that the program being traced calls the host, where an exception may fail it after it started.

    A program given donated buffers would have lost them by then, so it is
    traced again as a `CheckedProgram`, which is given none.
    """
    if _CONTEXT.get() == _DISCOVER_DONATING:
        raise NeedsChecks("a callback in a program whose inputs are donated")
    staged = _CALLBACKS.get()
    if staged is not None:
        staged.append(True)


@contextmanager
def recording_callbacks() -> Iterator[list[bool]]:
    """A list that gets an entry for each callback staged in the block (a program holding one cannot be saved)."""
    token = _CALLBACKS.set([])
    try:
        yield _CALLBACKS.get()
    finally:
        _CALLBACKS.reset(token)


def with_checks(traced_fn: Callable[..., Any]) -> Callable[..., tuple[Any, Any]]:
    """``traced_fn`` returning ``(result, code)``: its checks fold into the failure ``code`` (an ``int32``).

    The code is `PASSED`, or the number of the first check that failed
    (`CHECKS.exception` makes its exception); under ``jax.vmap`` one per
    batch entry.
    """

    def with_code(*args: Any) -> tuple[Any, Any]:
        return _traced_in(_CHECKED, lambda *values: with_failure_code(traced_fn, *values), args)

    return with_code


class CheckedProgram:
    """``jax.jit`` of a traced function whose checks fail the call after it returns."""

    def __init__(self, traced_fn: Callable[..., tuple[Any, ...]]) -> None:
        self.jitted = jax.jit(with_checks(traced_fn))
        """The program that returns the outputs and the failure code."""
        self._with_code: Callable[..., Any] = self.jitted
        self._checks: list[tuple[type, str]] | None = None  # None: the codes are numbers of this process's CHECKS

    def running(self, with_code: Callable[..., Any], checks: list[tuple[type, str]] | None) -> CheckedProgram:
        """This program computed by ``with_code``: the same computation, its codes numbering ``checks`` (``None``: `CHECKS`)."""
        twin = copy.copy(self)
        twin._with_code, twin._checks = with_code, checks
        return twin

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        outputs, code = self._with_code(*args)
        code = int(np.asarray(code))  # bool() of a JAX array is several times slower
        if code != PASSED:
            if self._checks is None:
                raise CHECKS.exception(code)
            exc_type, message = self._checks[code]
            raise exc_type(message)
        return outputs
