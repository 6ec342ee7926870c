"""Which lowerings take values of run-time length as they are: declared once, where each lowering is made.

The lowering loop hands a lowering a `Ragged` trace, a `RangeRows` range or
a `Masked` selection only if the lowering says it takes that kind; otherwise
it converts the value or splits the program (`aejax.linker.lengths.taking`).
A lowering declares it by wrapping the function it returns::

    return takes_run_time_lengths(subtensor, ragged=True, masked=not idx_list)

and `taking` asks `run_time_lengths_taken(fn)`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple


class RunTimeLengths(NamedTuple):
    """The kinds of values of run-time length a lowering takes as they are."""

    ragged: bool = False
    """`Ragged` values (an until loop's trace): indexing, slicing, updates, Scans."""
    ranges: bool = False
    """`RangeRows` (an ``arange`` of traced bounds, never materialised): a Scan's sequence."""
    masked: bool = False
    """`Masked` selections ``x[nonzero(m)]``."""


NONE = RunTimeLengths()
"""What a lowering that declares nothing takes."""

_TAKEN: weakref.WeakKeyDictionary[Callable[..., Any], RunTimeLengths] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def takes_run_time_lengths(
    fn: Callable[..., Any], *, ragged: bool = False, ranges: bool = False, masked: bool = False
) -> Callable[..., Any]:
    """Declare which values of run-time length the lowering ``fn`` takes as they are; returns ``fn``."""
    taken = RunTimeLengths(ragged=ragged, ranges=ranges, masked=masked)
    with _LOCK:
        _TAKEN[fn] = taken
    return fn


def run_time_lengths_taken(fn: Callable[..., Any]) -> RunTimeLengths:
    """What ``fn`` declared with `takes_run_time_lengths` (nothing if it did not)."""
    return _TAKEN.get(fn, NONE)
