"""Progress bars for long loops, moved from inside the compiled program.

A mode asks for them with ``mode.with_progress(every=k)`` (`aejax.linker.mode`);
its linker then lowers the outermost fixed-length Scans of each graph (those of
the graph itself, not those nested in a step) with `Progress.scan` in place of
``lax.scan``: the loop runs in chunks of ``k`` steps, an inner ``lax.scan``
each, and after each chunk a host callback tells the loop's bar (`LoopBar`)
how many steps have run. A loop of ``n`` steps makes ``ceil(n / k)``
callbacks, the last one after the ``n % k`` remaining steps. Without the
option the Scan lowering calls ``lax.scan`` as it always did: the program is
the one it was without this module.

The inner loops carry a count of the steps run, and the callback runs in a
branch that count selects (`report`), so it waits for the steps it reports
(a callback nothing depends on may run before them). The count is the same
for every chain: ``jax.vmap`` leaves it and the branch unbatched, and the
callback takes no operand, so one callback per chunk for all chains, one bar. Under ``jax.jit`` with a sharding over several devices XLA
runs it on the first device only; under ``jax.shard_map`` (`aejax.linker.many_chains` on a mesh), where every device
runs its own loop, the branch is taken on the mesh's first device only (`on_first_device`): still one bar, in
process 0 where a mesh spans several processes. It is an unordered
``jax.debug.callback``: JAX refuses ordered effects in a program that spans
several devices, and the chunks of a loop run one after the other anyway.

A bar costs about 0.25 to 0.4 ms a call on the CPU (a program holding a
callback is no longer run on the calling thread; tqdm opens and closes the
bar) and 20 to 30 us a move: nothing measurable on a loop of a second, several
times a loop of a fraction of a millisecond (docs/many_chains.md has the
measurements). So a compiled function whose calls are shorter than
`Progress.min_seconds` runs them without bars
(`aejax.linker.program.watched`).
``until`` loops and loops whose number of steps is known only at run time
have no bar: the number is not known while tracing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from aejax.linker.trace.replay import traced_once

UPDATES = 20
"""How many times the bar of a loop moves when `Progress.every` is ``None``."""

MIN_SECONDS = 0.1
"""The default `Progress.min_seconds`: a call shorter than tqdm's refresh interval is over before its bar is redrawn."""

INSTALL = "progress bars need tqdm: pip install 'aejax[progress]' (or pip install tqdm)"


def tqdm_bar() -> Callable[..., Any]:
    """tqdm's bar class for this environment (``tqdm.auto``: a widget in a notebook); `ImportError` without tqdm."""
    try:
        from tqdm.auto import tqdm
    except ImportError as error:
        raise ImportError(INSTALL) from error
    return tqdm


@dataclass(frozen=True)
class Progress:
    """The progress option of a mode: how often the bar of a loop moves, and what makes the bar.

    Attributes
    ----------
    every
        Steps between two moves of the bar; ``None``: a loop's bar moves
        `UPDATES` times (every ``ceil(n / UPDATES)`` steps of ``n``).
    bar
        Makes a loop's bar, called as ``bar(total=n, desc=name)``; the bar
        needs ``update(steps)`` and ``close()``. ``None``: tqdm's
        (`tqdm_bar`).
    min_seconds
        A compiled function whose call took less than this runs its next
        calls without bars, until one takes longer again
        (`aejax.linker.program.watched`); 0: bars on every call.
    """

    every: int | None = None
    bar: Callable[..., Any] | None = None
    min_seconds: float = MIN_SECONDS

    def __post_init__(self) -> None:
        every = self.every
        if every is not None and (isinstance(every, bool) or not isinstance(every, int)):
            raise TypeError(f"with_progress(every=...) takes a number of steps (an int) or None, not {every!r}")
        if every is not None and every < 1:
            raise ValueError(f"with_progress(every=...) must be at least 1 step, not {every}")
        seconds = self.min_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
            raise ValueError(f"with_progress(min_seconds=...) takes a number of seconds >= 0, not {seconds!r}")
        if self.bar is None:
            tqdm_bar()  # asking for progress without tqdm fails here, not in a callback

    def steps_between(self, n_steps: int) -> int:
        """The steps between two moves of the bar of a loop of ``n_steps`` (at least 1)."""
        if self.every is not None:
            return self.every
        return max(1, -(-n_steps // UPDATES))

    def scan(self, body: Callable[..., Any], init: Any, xs: Any, length: int, name: str = "Scan") -> tuple[Any, Any]:
        """``lax.scan(body, init, xs, length=length)`` moving a bar named ``name`` every `steps_between` steps.

        ``body`` is traced once (`traced_once`): the chunks and the
        remaining steps replay that trace.
        """
        every = min(self.steps_between(length), length)
        chunks, rest = divmod(length, every)
        bar = LoopBar(self.bar or tqdm_bar(), length, name)
        step, _ = traced_once(body, init, jax.tree.map(lambda x: x[0], xs))

        def counted(state: tuple[Any, Any], row: Any) -> tuple[tuple[Any, Any], Any]:
            done, carry = state
            carry, y = step(carry, row)
            return (done + 1, carry), y

        def chunk(state: tuple[Any, Any], rows: Any) -> tuple[tuple[Any, Any], Any]:
            state, ys = lax.scan(counted, state, rows, length=every)
            report(bar, every, state[0])
            return state, ys

        if chunks == 1:  # no loop of one iteration around it: that made 500 NUTS transitions 30% slower
            state, ys = chunk((jnp.asarray(0, "int32"), init), jax.tree.map(lambda x: x[:every], xs))
        else:
            head = jax.tree.map(lambda x: jnp.reshape(x[: chunks * every], (chunks, every, *x.shape[1:])), xs)
            state, ys = lax.scan(chunk, (jnp.asarray(0, "int32"), init), head, length=chunks)
            ys = jax.tree.map(lambda y: jnp.reshape(y, (chunks * every, *y.shape[2:])), ys)
        if rest:
            state, tail = lax.scan(counted, state, jax.tree.map(lambda x: x[chunks * every :], xs), length=rest)
            report(bar, rest, state[0])
            ys = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), ys, tail)
        return state[1], ys


def report(bar: LoopBar, steps: int, done: Any) -> None:
    """Call back to move ``bar`` by ``steps`` once the loop's count of steps run, ``done``, is computed.

    The callback takes no operand (JAX would copy each into a new array on
    the host, about 40 us): it runs in a branch that ``done`` selects, which
    orders it after the steps that computed ``done``.
    """
    lax.cond((done > 0) & on_first_device(), lambda: jax.debug.callback(partial(bar.advance, steps)), lambda: None)


def on_first_device() -> Any:
    """Whether the program runs on the first device of the mesh it is mapped over (``jax.shard_map``), or ``True``.

    Each device of a ``shard_map`` runs its own copy of the loop; only the
    first (of process 0, where several processes share the mesh) moves the bar.
    """
    axes = tuple(jax.sharding.get_abstract_mesh().manual_axes)
    return lax.axis_index(axes) == 0 if axes else True


class LoopBar:
    """The host side of one loop's progress: a bar opened at a call's first move and closed at its last.

    A move past the loop's number of steps starts a new bar: a new call has
    begun (the previous one stopped early, on a runtime failure).
    """

    def __init__(self, make_bar: Callable[..., Any], total: int, name: str) -> None:
        self._make_bar = make_bar
        self.total = total
        self.name = name
        self._lock = threading.Lock()
        self._bar: Any = None
        self._done = 0

    def advance(self, steps: int) -> None:
        """Show that the loop has run ``steps`` more steps (called by the program, on a thread of XLA's)."""
        with self._lock:
            if self._bar is None or self._done + steps > self.total:
                self._close()
                self._bar = self._make_bar(total=self.total, desc=self.name)
            self._bar.update(steps)
            self._done += steps
            if self._done >= self.total:
                self._close()

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar, self._done = None, 0
