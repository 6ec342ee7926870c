"""Run-time checks on traced values, raised after the call with the Op's own exception.

JAX cannot raise from inside a jit program. A check whose condition depends
on traced values (`CheckAndRaise`, e.g. aeppl's parameter checks) is turned
into a *failure code* instead: ``-1`` while every check holds, else the
number of the first check that failed in the program's own `CheckTable`,
which maps numbers back to the exception class and message. `require` folds each check into the code of
the function being traced; a loop carries its body's code and hands it out
when it ends (`with_failure_code`, `report_inner`), so one ``int32`` leaves the
program beside the outputs.
What a check does where it is met (fold into the code, warn, or nothing
while only shapes are wanted), the table it is numbered in, the code so far
and the count of checks met are fields of the trace context
(`aejax.linker.trace_context`).

A program is traced once, as `coded_program` makes it: it returns its
outputs alone when tracing met no check, else its outputs and its code, and
`recording_program` tells the caller which, and whether it staged a
callback. A program with checks runs as a `CheckedProgram`, which raises the
failed check's exception on the host, before any output is stored, so a
failing call updates no shared variable; programs without checks pay nothing.

A program given the buffers of its inputs to reuse (donated: the old value
of an updated shared variable) cannot fail once it has started without
losing them, so a program with a check or a callback is compiled without
donations (`aejax.linker.program.static_inputs`).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from aejax.linker.trace_context import CHECKED, SHAPES_ONLY, WARN, current, entered

PASSED = -1
"""The failure code of a run in which every check held."""


class CheckTable:
    """The exception class and message of every check a program may raise, by number: one table a program."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._numbers: dict[tuple[type, str], int] = {}
        self._checks: list[tuple[type, str]] = []

    def number(self, exc_type: type, message: str) -> int:
        """The number of the check that raises ``exc_type(message)``, a new one if it has none yet."""
        with self._lock:
            key = (exc_type, message)
            if key not in self._numbers:
                self._numbers[key] = len(self._checks)
                self._checks.append(key)
            return self._numbers[key]

    def exception(self, number: int) -> BaseException:
        """The exception of the check numbered ``number``, as its Op raises it."""
        exc_type, message = self._checks[number]
        return exc_type(message)

    def entries(self) -> list[tuple[type, str]]:
        """Every check numbered so far, at the index of its number."""
        with self._lock:
            return list(self._checks)


def require(condition: Any, exc_type: type, message: str, where: Any) -> None:
    """Check a traced ``condition`` inside the program; fail the call with ``exc_type(message)``.

    Outside a program (`coded_program`, `with_checks`; e.g. a graph exported
    with ``jaxify``, called as ``fn``) the check cannot be raised: it warns,
    naming ``where``, and is skipped.
    """
    context = current()
    if context.checks == SHAPES_ONLY:
        return
    if context.checks == WARN:
        warnings.warn(
            f"the check {message!r} of {where} depends on traced values and this program "
            "cannot raise, so it is not checked",
            stacklevel=2,
        )
        return
    number = context.table.number(exc_type, message)
    if context.met is not None:
        context.met[0] += 1
    report(jnp.where(jnp.all(condition), PASSED, number).astype("int32"))


def checking() -> bool:
    """Whether checks met now fold into a failure code (inside a program)."""
    return current().checks == CHECKED


def checks_met() -> int:
    """How many checks the program being traced has met so far (for `report_inner`)."""
    met = current().met
    return 0 if met is None else met[0]


def _first_failure(earlier: Any, later: Any) -> Any:
    return later if earlier is None else jnp.where(earlier == PASSED, later, earlier)


def report(code: Any) -> None:
    """Fold the failure code ``code`` (of a check or a loop) into the code of the function being traced."""
    codes = current().codes
    codes[0] = _first_failure(codes[0], code)


def loop_failure_start() -> Any:
    """A loop's failure code before its first step: `PASSED` inside a program, else ``None`` (none carried)."""
    return jnp.asarray(PASSED, "int32") if checking() else None


def loop_step(failed: Any, step: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """``step(*args)`` traced as a loop body, and the loop's failure code after it (``None`` stays ``None``)."""
    if failed is None:
        return step(*args), None
    result, code = with_failure_code(step, *args)
    return result, _first_failure(failed, code)


def report_inner(code: Any, since: int) -> None:
    """Hand the failure code of an inner function (a finished loop, a branch) to the function around it.

    Only if a check was met while it was traced (`checks_met` is past
    ``since``, its count before): else the code is `PASSED` whatever the
    values, and reporting it would make the program a checked one for nothing.
    """
    if code is not None and checks_met() > since:
        report(code)


def _code_of(fn: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """``fn(*args)`` and the failure code of the checks met while tracing it, ``None`` if none was."""
    with entered(codes=[None]) as context:
        return fn(*args), context.codes[0]


def with_failure_code(fn: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """``fn(*args)`` and the failure code of the checks met while tracing it (`PASSED` if none)."""
    result, code = _code_of(fn, *args)
    return result, jnp.asarray(PASSED, "int32") if code is None else code


def shapes_only(fn: Callable[..., Any], *args: Any) -> Any:
    """``jax.eval_shape(fn, *args)``, its checks skipped: only its output shapes are wanted."""
    with entered(checks=SHAPES_ONLY):
        return jax.eval_shape(fn, *args)


@dataclass
class ProgramTrace:
    """What tracing a program (`coded_program`) found: whether it met a check, whether it staged a callback."""

    checked: bool = False
    callbacks: bool = False


def coded_program(traced_fn: Callable[..., Any], table: CheckTable) -> Callable[..., Any]:
    """``traced_fn`` traced as a program: its checks fold into a failure code, returned beside its result if any was met.

    The function returns ``traced_fn``'s result alone when tracing met no
    check, else ``(result, code)``; `recording_program` says which. Codes
    number the checks in ``table``, the program's.
    """

    def coded(*args: Any) -> Any:
        result, code = _program_code(traced_fn, args, table)
        trace = current().program
        if trace is not None:
            trace.checked = code is not None
        return result if code is None else (result, code)

    return coded


def callback_staged() -> None:
    """Say that the program being traced calls the host, where an exception may fail it after it started.

    A program given donated buffers would have lost them by then: its caller
    compiles it without donations (`recording_program`).
    """
    trace = current().program
    if trace is not None:
        trace.callbacks = True


@contextmanager
def recording_program() -> Iterator[ProgramTrace]:
    """What tracing a program (`coded_program`) in the block finds: a `ProgramTrace`."""
    with entered(program=ProgramTrace()) as context:
        yield context.program


def with_checks(traced_fn: Callable[..., Any], table: CheckTable) -> Callable[..., tuple[Any, Any]]:
    """``traced_fn`` returning ``(result, code)``: its checks fold into the failure ``code`` (an ``int32``).

    The code is `PASSED`, or the number in ``table`` of the first check that
    failed (``table.exception(code)`` makes its exception); under
    ``jax.vmap`` one per batch entry.
    """

    def with_code(*args: Any) -> tuple[Any, Any]:
        result, code = _program_code(traced_fn, args, table)
        return result, jnp.asarray(PASSED, "int32") if code is None else code

    return with_code


def _program_code(traced_fn: Callable[..., Any], args: tuple[Any, ...], table: CheckTable) -> tuple[Any, Any]:
    """``traced_fn(*args)`` traced as a program, and the failure code of its checks in ``table`` (``None`` if it met none)."""
    with entered(checks=CHECKED, met=[0], table=table):
        return _code_of(traced_fn, *args)


class CheckedProgram:
    """A jitted program returning ``(outputs, code)`` (``jitted``), whose checks fail the call after it returns.

    ``checks`` numbers the checks its codes name: the table its trace
    numbered them in, or one read from a saved program.
    """

    def __init__(self, jitted: Callable[..., tuple[Any, Any]], checks: CheckTable) -> None:
        self.jitted = jitted
        self.checks = checks

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        outputs, code = self.jitted(*args)
        code = int(np.asarray(code))  # bool() of a JAX array is several times slower
        if code != PASSED:
            raise self.checks.exception(code)
        return outputs
