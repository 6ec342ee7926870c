"""Compiling runs with Python's cyclic garbage collector paused.

Rewriting, lowering and tracing a large graph (aehmc's NUTS) allocate
hundreds of thousands of short-lived objects, and each few hundred
allocations trigger a collection that walks the young ones: 0.3 s of a
second process's 1.6 s went to collections that found almost nothing.
Reference counting still frees what it can while collection is paused;
whatever is cyclic waits for the next collection after the pause.

The pause is process-wide (the collector is), counted so that overlapping
compiles in several threads end it only when the last one ends, and never
turns on a collector the user had turned off.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_paused_by_us = False


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
