"""The context of the function JAX is tracing: one immutable object, held in one ContextVar.

What a lowering may ask of the trace it runs in lives in one `TraceContext`:
the values of the call the program is traced for (which nodes read where they
need an input concrete), the graph's values computed so far and the intervals
that traced values lie within (for bounds), whether the program can make
inputs static, how many loop bodies deep the code is, what a check met does,
the failure code of the checks met so far in the innermost scope that folds
one, and the node of the program's graph being lowered. A block changes it
with `entered`: the block runs in a copy with some fields replaced, and the
context before it is back after it; `folding` replaces the code of the
innermost block that opened a scope for one. No field holds a mutable
object: what tracing finds leaves it as a value.

The context is a `ContextVar`'s value, so each thread traces in its own:
compiled functions are called, and traced, from several threads at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

WARN, CHECKED, SHAPES_ONLY = "warn", "checked", "shapes only"
"""What a check met while tracing does: warns that it cannot be checked, folds into a failure code, or nothing."""

_NONE: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True)
class TraceContext:
    """What the function being traced may ask of its trace (each field's default: outside every trace)."""

    call_values: Any = None
    """The `aejax.linker.trace.call_values.CallValues` of the call the program is traced for; ``None``: none."""
    traced_values: Mapping[Any, Any] = field(default_factory=lambda: _NONE)
    """The graph's values computed so far in this trace, by variable (`aejax.linker.lengths.bounds.tracing`)."""
    values_within: Mapping[int, tuple[Any, tuple[int, int]]] = field(default_factory=lambda: _NONE)
    """Traced values known to lie within an interval, by ``id`` (each with the value, which keeps its ``id`` its own)."""
    static_inputs_possible: bool = False
    """Whether the program being traced can make the values a `BoundsNeeded` names static inputs."""
    loop_depth: int = 0
    """How many loop bodies deep the code being traced is (`aejax.linker.trace.loop_bodies`)."""
    checks: str = WARN
    """What a check does here: `WARN`, `CHECKED` or `SHAPES_ONLY` (`aejax.linker.checks`)."""
    code: Any = None
    """The failure code of the checks met so far in the innermost scope (`aejax.linker.checks.code_of`); ``None``: none."""
    table: Any = None
    """The `aejax.linker.checks.CheckTable` that numbers the checks of the program being traced."""
    node: Any = None
    """The node of the program's graph being lowered (a Scan's, while its step is); its checks are filed under it."""


OUTSIDE = TraceContext()
"""The context outside every trace (immutable, so one for all threads)."""

_CURRENT: ContextVar[TraceContext] = ContextVar("aejax_trace_context", default=OUTSIDE)


def current() -> TraceContext:
    """The context of the code being traced now, in this thread."""
    return _CURRENT.get()


@contextmanager
def entered(**changes: Any) -> Iterator[TraceContext]:
    """Run the block in the current context with the fields ``changes`` names replaced; yields that context.

    A block that does not replace ``code`` is no scope of its own: the code
    that checks folded in it (`folding`) is the code of the scope around it.
    """
    context = replace(_CURRENT.get(), **changes)
    token = _CURRENT.set(context)
    try:
        yield context
        code = _CURRENT.get().code
    finally:
        _CURRENT.reset(token)
    if "code" not in changes and code is not context.code:
        folding(code)


def folding(code: Any) -> None:
    """Make ``code`` the failure code of the innermost scope (an `entered` block that replaced ``code``) from now on."""
    _CURRENT.set(replace(_CURRENT.get(), code=code))
