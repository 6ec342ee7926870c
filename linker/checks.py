"""Run-time checks on traced values, raised after the call with the Op's own exception.

JAX cannot raise from inside a jit program. A check whose condition depends
on traced values (`CheckAndRaise`, e.g. aeppl's parameter checks) is turned
into a *failure code* instead: ``-1`` while every check holds, else the
number of the first check that failed in the program's own `CheckTable`,
which maps numbers back to the exception class and message, and to the node
of the program's graph the check is filed under (`filed_under`), which the
call's error names.

Codes travel as values. `require` folds its check into the code of the
innermost scope (`code_of`): the trace context's ``code``, an immutable value
the scope replaces, never a cell written in place. Lowering a node is one
such scope (`aejax.linker.trace.outcome.attempt`), whose code is part of the
node's `Outputs`; the lowering loop folds its nodes' codes in order, and the
program's code is that fold, so one ``int32`` leaves the program beside the
outputs. A function that a JAX primitive traces (a loop's step, a branch)
returns its code with its result; the lowering that traced it folds what the
primitive returns (`InnerCodes`) only if the function met a check.
What a check does where it is met (fold into the code, warn, or nothing
while only shapes are wanted) and the table it is numbered in are fields of
the trace context too (`aejax.linker.trace_context`).

A program is traced once, as `coded_program` makes it: it returns its
outputs alone when tracing met no check, else `Coded` outputs and code, and
`ProgramTrace.of` its trace tells the caller which, and whether it stages a
host callback. A program with checks runs as a `CheckedProgram`, which raises the
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
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
from jax.extend.core import ClosedJaxpr, Jaxpr

from aejax.linker.errors import mark_raised_by
from aejax.linker.trace_context import CHECKED, SHAPES_ONLY, WARN, current, entered, folding

PASSED = -1
"""The failure code of a run in which every check held."""


class CheckTable:
    """The exception class and message of every check a program may raise, and the node it is filed under, by
    number: one table a program."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._numbers: dict[tuple[type, str, Any], int] = {}
        self._filed: list[tuple[type, str, Any]] = []

    def extend(self, filed: Iterable[tuple[type, str, Any]]) -> None:
        """Number the checks of a saved program's table in order: the class, message and node of each (`entries`,
        `nodes`; a node ``None`` where the saved one is not known)."""
        with self._lock:
            for check in filed:
                self._numbers.setdefault(check, len(self._filed))
                self._filed.append(check)

    def number(self, exc_type: type, message: str, node: Any = None) -> int:
        """The number of the check of ``node`` that raises ``exc_type(message)``, a new one if it has none yet."""
        with self._lock:
            check = (exc_type, message, node)
            if check not in self._numbers:
                self._numbers[check] = len(self._filed)
                self._filed.append(check)
            return self._numbers[check]

    def exception(self, number: int) -> BaseException:
        """The exception of the check numbered ``number``, as its Op raises it, marked with its node
        (`aejax.linker.errors.raised_by`) where it has one."""
        exc_type, message, node = self._filed[number]
        return exc_type(message) if node is None else mark_raised_by(exc_type(message), node)

    def entries(self) -> list[tuple[type, str]]:
        """The class and message of every check numbered so far, at the index of its number."""
        with self._lock:
            return [(exc_type, message) for exc_type, message, _ in self._filed]

    def nodes(self) -> list[Any]:
        """The node each check numbered so far is filed under (``None``: none), at the index of its number."""
        with self._lock:
            return [node for _, _, node in self._filed]


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
    number = context.table.number(exc_type, message, context.node)
    fold(jnp.where(jnp.all(condition), PASSED, number).astype("int32"))


@contextmanager
def filed_under(node: Any) -> Iterator[None]:
    """A block lowering ``node``, whose checks are filed under it, unless it lies in the lowering of another node
    (a Scan's step): the node of the program's own graph that Aesara would name."""
    if current().node is not None:
        yield
        return
    with entered(node=node):
        yield


def checking() -> bool:
    """Whether checks met now fold into a failure code (inside a program)."""
    return current().checks == CHECKED


def _first_failure(earlier: Any, later: Any) -> Any:
    if earlier is None:
        return later
    return earlier if later is None else jnp.where(earlier == PASSED, later, earlier)


def fold(code: Any) -> None:
    """Fold the failure code ``code`` (of a check, a loop, a node; ``None``: none) into the scope's (`code_of`)."""
    if code is not None:
        folding(_first_failure(current().code, code))


def code_of(fn: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    """``fn(*args)`` and the failure code of the checks met while tracing it, ``None`` if none was: a scope."""
    with entered(code=None):
        return fn(*args), current().code


def passed_if_none(code: Any) -> Any:
    """``code``, or `PASSED` as an ``int32`` if it is ``None`` (no check met)."""
    return jnp.asarray(PASSED, "int32") if code is None else code


class InnerCodes:
    """The failure codes of functions a JAX primitive traces inside one lowering (a loop's step, a platform's branch).

    The primitive fixes what they return before it traces them, so each
    returns a code (`PASSED` if it met no check); whether one met a check is
    known from its own code being ``None`` while traced, and only then is
    the code the primitive returns folded into the lowering's (`fold`). One
    object a lowering, made and read there.
    """

    def __init__(self) -> None:
        self.met = False

    def start(self) -> Any:
        """A loop's failure code before its first step: `PASSED` inside a program, else ``None`` (none carried)."""
        return jnp.asarray(PASSED, "int32") if checking() else None

    def step(self, failed: Any, step: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
        """``step(*args)`` traced as a loop body, and the loop's failure code after it (``None`` stays ``None``)."""
        if failed is None:
            return step(*args), None
        result, code = self.coded(step)(*args)
        return result, _first_failure(failed, code)

    def coded(self, fn: Callable[..., Any]) -> Callable[..., tuple[Any, Any]]:
        """``fn`` returning its result and its failure code (`PASSED` if it met no check)."""

        def with_code(*args: Any) -> tuple[Any, Any]:
            result, code = code_of(fn, *args)
            self.met = self.met or code is not None
            return result, passed_if_none(code)

        return with_code

    def fold(self, code: Any) -> None:
        """Fold ``code``, what the primitive returned, into the lowering's if a function it traced met a check."""
        if self.met:
            fold(code)


def shapes_only(fn: Callable[..., Any], *args: Any) -> Any:
    """``jax.eval_shape(fn, *args)``, its checks skipped: only its output shapes are wanted."""
    with entered(checks=SHAPES_ONLY):
        return jax.eval_shape(fn, *args)


class Coded(NamedTuple):
    """What a program that met a check returns: its outputs and its failure code."""

    outputs: Any
    code: Any


# the name saved programs know it by: lower case, so that no check of our messages takes it for a name users see
jax.export.register_namedtuple_serialization(Coded, serialized_name="aejax_failure_coded")


@dataclass(frozen=True)
class ProgramTrace:
    """What tracing a program (`coded_program`) found: whether it met a check, whether it stages a host callback.

    A program given donated buffers that calls the host, where an exception
    may fail it after it started, would have lost them by then: its caller
    compiles it without donations.
    """

    checked: bool
    callbacks: bool

    @classmethod
    def of(cls, traced: Any) -> ProgramTrace:
        """What the program ``traced`` (a ``jax.stages.Traced`` of a `coded_program`) holds."""
        return cls(isinstance(traced.out_info, Coded), stages_any(traced.jaxpr.jaxpr, CALLBACKS))


CALLBACKS = frozenset({"pure_callback", "io_callback"})
"""The primitives by which a program calls the host where an exception may fail it
(`aejax.linker.dispatch.callback.staged_host_call`).

A progress bar's ``debug_callback`` (`aejax.linker.scan.progress`) raises nothing, so it is not one.
"""


HOST_CALLS = CALLBACKS | {"debug_callback"}
"""Every primitive by which a program calls the host, a progress bar's too: JAX exports a program staging none."""


def stages_any(jaxpr: Any, primitives: frozenset[str]) -> bool:
    """Whether ``jaxpr`` (a ``Jaxpr``) or one nested in it stages one of ``primitives`` (their names)."""
    return any(
        eqn.primitive.name in primitives
        or any(stages_any(inner, primitives) for inner in _inner_jaxprs(eqn.params.values()))
        for eqn in jaxpr.eqns
    )


def _inner_jaxprs(params: Iterable[Any]) -> Iterator[Any]:
    """The jaxprs among an equation's ``params`` (a sequence of them, such as a cond's branches, included)."""
    for param in params:
        if isinstance(param, (tuple, list)):
            yield from _inner_jaxprs(param)
        elif isinstance(param, Jaxpr):
            yield param
        elif isinstance(param, ClosedJaxpr):
            yield param.jaxpr


def coded_program(traced_fn: Callable[..., Any], table: CheckTable) -> Callable[..., Any]:
    """``traced_fn`` traced as a program: its checks fold into a failure code, returned beside its result if any was met.

    The function returns ``traced_fn``'s result alone when tracing met no
    check, else ``Coded(result, code)``; `ProgramTrace.of` its trace says
    which. Codes number the checks in ``table``, the program's.
    """

    def coded(*args: Any) -> Any:
        result, code = _program_code(traced_fn, args, table)
        return result if code is None else Coded(result, code)

    return coded


def with_checks(traced_fn: Callable[..., Any], table: CheckTable) -> Callable[..., tuple[Any, Any]]:
    """``traced_fn`` returning ``(result, code)``: its checks fold into the failure ``code`` (an ``int32``).

    The code is `PASSED`, or the number in ``table`` of the first check that
    failed (``table.exception(code)`` makes its exception); under
    ``jax.vmap`` one per batch entry.
    """

    def with_code(*args: Any) -> tuple[Any, Any]:
        result, code = _program_code(traced_fn, args, table)
        return result, passed_if_none(code)

    return with_code


def _program_code(traced_fn: Callable[..., Any], args: tuple[Any, ...], table: CheckTable) -> tuple[Any, Any]:
    """``traced_fn(*args)`` traced as a program, and the failure code of its checks in ``table`` (``None`` if it met none)."""
    with entered(checks=CHECKED, table=table):
        return code_of(traced_fn, *args)


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
