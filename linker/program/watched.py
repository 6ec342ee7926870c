"""A graph whose loops move progress bars, run without them while its calls are too short to watch.

A program that holds a host callback costs the CPU a fixed 0.1 ms a call
(XLA no longer runs it on the calling thread) on top of each move of a bar,
so a bar would double the time of a loop of a fraction of a millisecond,
and such a loop is over before a bar could be read. A `WatchedProgram` runs
the graph with its bars (`aejax.linker.scan.progress`) and times each run of
an already compiled program: after a run shorter than ``min_seconds`` the
next calls run its twin lowered without bars, until one of those takes
longer again. A user whose calls take seconds sees a bar on every call;
one who calls a short loop in a hot loop pays for the bars on the first two
calls and one more compile. A timed call waits for its outputs, so the
calls of an ``"AEJAX_DEVICE"`` function with bars return when their arrays
are ready, not before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax

from aejax.linker.program.segments import GraphProgram
from aejax.linker.program.static_inputs import Shortcut


class WatchedProgram(GraphProgram):
    """`GraphProgram` of a graph lowered with progress bars, with its twin lowered without them.

    ``unwatched`` makes the twin (a `GraphProgram` on the same boundary
    cells), the first time a call is short: a run of a compiled program
    that took under ``min_seconds`` (`aejax.linker.scan.progress.Progress.min_seconds`).
    """

    def __init__(self, *args: Any, unwatched: Callable[[], GraphProgram], min_seconds: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.min_seconds = min_seconds
        self.quiet = False
        """Whether the next call runs the twin without bars."""
        self._make_unwatched = unwatched
        self._unwatched: GraphProgram | None = None
        self._twin_lock = threading.Lock()
        self._timed: tuple[Shortcut, Shortcut] | None = None  # (the watched shortcut, the one handed out for it)

    @GraphProgram.cache_size.setter  # type: ignore[attr-defined]
    def cache_size(self, size: int) -> None:
        GraphProgram.cache_size.fset(self, size)  # type: ignore[attr-defined]
        if self._unwatched is not None:
            self._unwatched.cache_size = size

    def unwatched(self) -> GraphProgram:
        """The twin without bars, made on first use."""
        if self._unwatched is None:
            with self._twin_lock:
                if self._unwatched is None:
                    twin = self._make_unwatched()
                    if self._cache_size is not None:
                        twin.cache_size = self._cache_size
                    self._unwatched = twin
        return self._unwatched

    def shortcut(self) -> Shortcut | None:
        """A shortcut that runs this program's calls (with or without bars), while the watched one has a shortcut.

        The same object for as long as the watched program's shortcut stays:
        a direct call keeps it (`aejax.linker.call.direct_call.ExactCall`).
        """
        watched = super().shortcut()
        if watched is None:
            return None
        timed = self._timed
        if timed is None or timed[0] is not watched:
            timed = self._timed = (watched, Shortcut(watched.shapes, self))
        return timed[1]

    def __call__(self, *args: Any) -> Sequence[Any]:
        """The outputs for ``args``, with bars unless the last timed call was short."""
        if self.quiet:
            program = self.unwatched()
            return self._timed_run(program.__call__, program.shortcut(), args)
        return self._timed_run(super().__call__, super().shortcut(), args)

    def _timed_run(self, run: Callable[..., Sequence[Any]], shortcut: Shortcut | None, args: tuple[Any, ...]) -> Any:
        """``run(*args)``, deciding from its time whether the next call is quiet, if it compiled nothing."""
        if shortcut is None or not shortcut.fits(args):  # this run traces and compiles: its time says nothing
            return run(*args)
        started = time.perf_counter()
        results = jax.block_until_ready(run(*args))
        self.quiet = time.perf_counter() - started < self.min_seconds
        return results
