"""Whether the function being traced is the body of a loop the program runs.

A lowering may trace differently for code that runs once per call and code
that runs once per step of a loop: a random draw hashes its key with JAX's
rolled Threefry outside loops and with the unrolled one inside them
(`aejax.linker.dispatch.random`). The Scan lowering traces each step inside
`tracing_loop_body`; `in_loop_body` tells a lowering where it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from aejax.linker.trace_context import current, entered


@contextmanager
def tracing_loop_body() -> Iterator[None]:
    """Trace the block as (one more level of) a loop's body."""
    with entered(loop_depth=current().loop_depth + 1):
        yield


def in_loop_body() -> bool:
    """Whether the code being traced runs once per step of a loop (at any depth)."""
    return current().loop_depth > 0
