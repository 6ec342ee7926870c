"""Whether the function being traced is the body of a loop the program runs.

A lowering may trace differently for code that runs once per call and code
that runs once per step of a loop: a random draw hashes its key with JAX's
rolled Threefry outside loops and with the unrolled one inside them
(`aejax.linker.dispatch.random`). The Scan lowering traces each step inside
`tracing_loop_body`; `in_loop_body` tells a lowering where it is.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

_DEPTH = contextvars.ContextVar("aejax_loop_depth", default=0)


@contextmanager
def tracing_loop_body() -> Iterator[None]:
    """Trace the block as (one more level of) a loop's body."""
    token = _DEPTH.set(_DEPTH.get() + 1)
    try:
        yield
    finally:
        _DEPTH.reset(token)


def in_loop_body() -> bool:
    """Whether the code being traced runs once per step of a loop (at any depth)."""
    return _DEPTH.get() > 0
