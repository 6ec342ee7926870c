"""Compiling runs with Python's cyclic garbage collector paused.

Rewriting, lowering and tracing a large graph (aehmc's NUTS) allocate
hundreds of thousands of short-lived objects, and each few hundred
allocations trigger a collection that walks the young ones: 0.3 s of a
second process's 1.6 s went to collections that found almost nothing.
Reference counting still frees what it can while collection is paused;
whatever is cyclic waits for the next collection after the pause.

The pause is process-wide (the collector is), counted so that overlapping
compiles in several threads end it only when the last one ends, never turns
on a collector the user had turned off, and ends in a child forked during it.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_paused_by_us = False


def _after_fork_in_child() -> None:
    """A process forked during a pause has none of its compiles: end the pause there."""
    global _lock, _depth, _paused_by_us
    _lock = threading.Lock()
    _depth = 0
    if _paused_by_us:
        _paused_by_us = False
        gc.enable()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@contextmanager
def collection_paused() -> Iterator[None]:
    """Run the block with cyclic garbage collection off, as it was before once every such block has ended."""
    global _depth, _paused_by_us
    with _lock:
        if _depth == 0 and gc.isenabled():
            gc.disable()
            _paused_by_us = True
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _paused_by_us:
                _paused_by_us = False
                gc.enable()
