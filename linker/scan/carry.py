"""The pieces of a lowered Scan's loop state: windows, buffers and their layout.

`aejax.linker.scan.lower` builds its ``lax.scan``/``lax.while_loop``
carries from these: windows of recent values that a step reads, buffers that
keep traces, and the functions that lay the results out as Aesara's own Scan
leaves its output buffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from aejax.linker.dispatch.rows import rotated, row_at, with_row_at
from aejax.linker.lengths.ragged import Ragged


class Carry(NamedTuple):
    """The state one step of a lowered Scan reads and writes (its fields: `aejax.linker.scan.lower`).

    ``failed`` is the loop's failure code of run-time checks
    (`aejax.linker.checks.InnerCodes.step`) inside a program, else ``None``.
    """

    mit_mot: tuple[Any, ...]
    windows: tuple[Any, ...]
    shared: tuple[Any, ...]
    failed: Any


class WhileCarry(NamedTuple):
    """A while loop's state: the step's `Carry` inside the loop's control.

    ``step`` counts the steps run, ``running`` says whether the ``until``
    condition lets the loop go on, and ``buffers`` are the traces being kept.
    """

    step: Any
    running: Any
    carry: Carry
    buffers: tuple[Any, ...]


def same_type_as(value: Any, reference: Any) -> Any:
    """``value`` with the dtype of ``reference`` (and strong typing), keys untouched."""
    dtype = jnp.result_type(reference)
    if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return value
    return lax.convert_element_type(value, dtype)


def read_rows(buffer: Any, position: Any, taps: Sequence[int]) -> list[Any]:
    """Rows ``(position + tap) % len(buffer)`` of a circular buffer.

    In numpy: ``list(buffer[(position + np.array(taps)) % len(buffer)])``.
    """
    size = buffer.shape[0]
    return [row_at(buffer, (position + t) % size) for t in taps]


def write_rows(buffer: Any, position: Any, taps: Sequence[int], rows: Sequence[Any]) -> Any:
    """``buffer`` with ``rows`` written at ``(position + tap) % len(buffer)``.

    In numpy, on a copy: ``buffer[(position + np.array(taps)) % len(buffer)] = rows``.
    """
    size = buffer.shape[0]
    for t, row in zip(taps, rows):
        buffer = with_row_at(buffer, (position + t) % size, same_type_as(row, buffer))
    return buffer


def shift_in(window: Any, row: Any) -> Any:
    """The window of last values after ``row`` is appended.

    In numpy: ``np.concatenate([window, row[None]])[1:]``.
    """
    row = same_type_as(row, window)[None]
    return row if window.shape[0] == 1 else jnp.concatenate([window[1:], row], axis=0)


class SotWindow:
    """The last ``width`` values of a mit-sot/sit-sot, as the loop carries them.

    A sit-sot (width 1) carries its value itself, a mit-sot a tuple of its
    ``width`` last values, oldest first, rather than a ``width``-row array:
    on the CPU every extra slice, concatenate or copy of a window in a loop
    body costs time per step, and XLA computed a step's value once for the
    trace and again for the rebuilt window.
    """

    def __init__(self, width: int, taps: Sequence[int]) -> None:
        self.width = width
        self.taps = tuple(taps)

    def start(self, buffer: Any) -> Any:
        """The first window of a buffer that starts with the initial values.

        In numpy: ``buffer[0]`` for a sit-sot, else ``tuple(buffer[:width])``.
        """
        return buffer[0] if self.width == 1 else tuple(buffer[k] for k in range(self.width))

    def rows(self, window: Any) -> list[Any]:
        """The rows a step reads (``taps`` are negative).

        In numpy: ``[window[width + t] for t in taps]``; a sit-sot's are ``[window]``.
        """
        return [window if self.width == 1 else window[self.width + t] for t in self.taps]

    def shifted(self, window: Any, row: Any) -> Any:
        """The window after a step wrote ``row``: the oldest value leaves, ``row`` enters last."""
        if self.width == 1:
            return same_type_as(row, window)
        return (*window[1:], same_type_as(row, window[0]))

    def as_rows(self, window: Any) -> Any:
        """The window as ``width`` rows, oldest first."""
        return window[None] if self.width == 1 else jnp.stack(window)


def history_rows(size: int, initial: Any, trace: Any) -> Any:
    """The last ``size`` rows of ``[initial; trace]``, zero-padded when longer.

    In numpy, with ``h = np.concatenate([initial, trace])`` (``trace`` when
    ``initial`` is ``None``): ``h[len(h) - size:]`` if ``size <= len(h)``,
    else ``np.concatenate([h, np.zeros((size - len(h), *h.shape[1:]))])``.
    """
    history = trace if initial is None else jnp.concatenate([initial, same_type_as(trace, initial)])
    if size <= history.shape[0]:
        return history[history.shape[0] - size :]
    padding = jnp.zeros((size - history.shape[0],) + history.shape[1:], history.dtype)
    return jnp.concatenate([history, padding])


def flatten(groups: Sequence[Sequence[Any]]) -> list[Any]:
    """The items of ``groups``, one list."""
    return [item for group in groups for item in group]


def window_rows(window: Any, mintap: int, taps: Sequence[int]) -> list[Any]:
    """Rows ``tap - mintap`` of a mit-mot window.

    In numpy: ``list(window[np.array(taps) - mintap])``.
    """
    return [window[t - mintap] for t in taps]


def window_written(window: Any, mintap: int, taps: Sequence[int], rows: Sequence[Any]) -> Any:
    """A mit-mot window with ``rows`` written at ``tap - mintap``.

    In numpy, on a copy: ``window[np.array(taps) - mintap] = rows``.
    """
    for t, row in zip(taps, rows):
        window = window.at[t - mintap].set(same_type_as(row, window))
    return window


def ordered_history(buffer: Any, steps: Any, offset: int, max_steps: Any, stops_early: bool) -> Any:
    """A circular buffer after ``steps`` writes, laid out as Aesara's Scan leaves it.

    ``offset`` initial rows precede the first write. A buffer that wrapped is
    rotated oldest-first; a longer one is zero-padded and, when the loop
    ``stops_early`` (``until``), cut by the steps it did not run (a run-time
    length). A buffer long enough for every step never wraps: it is already
    in order, and the rows after the last write are cut or never written.

    In numpy, with ``size = len(buffer)``, ``filled = offset + steps`` and
    zeros in the rows never written::

        if filled > size:
            laid_out = np.roll(buffer, -(filled % size), axis=0)
        else:
            laid_out = buffer.copy()
            laid_out[filled:] = 0
        if stops_early and size > offset + 1 and filled < size:
            laid_out = laid_out[: size - (max_steps - steps)]
    """
    size = buffer.shape[0]
    filled = steps + offset
    fits = isinstance(max_steps, int) and size >= offset + max_steps
    if fits:
        laid_out = buffer
    else:
        rows = jnp.arange(size).reshape((size,) + (1,) * (buffer.ndim - 1))
        padded = jnp.where(rows < filled, buffer, jnp.zeros_like(buffer))
        laid_out = jnp.where(filled > size, rotated(buffer, filled % size), padded)
    if size <= offset + 1 or not stops_early:
        return laid_out
    length = jnp.where(filled < size, size - (max_steps - steps), size)
    # A loop that may run steps runs one: its history holds the initial rows and a first step.
    at_least = offset + min(max_steps, 1) if fits else 0
    return Ragged(laid_out, length, at_least)


def last_states(history: Any, filled: Any, length: Any) -> Ragged:
    """The last ``length`` states of a history, as a circular buffer of ``length`` rows leaves them.

    ``history`` holds the last of ``filled`` states in order (`ordered_history`
    of a buffer at least as long as ``length``); a buffer of a run-time
    ``length`` shorter than the history keeps only its last states, in
    order, and a longer one is zero-padded. In numpy terms, for a history
    ``h`` of ``filled`` states: ``h[max(filled - length, 0):][:length]``,
    padded with zero rows to ``length``.
    """
    size = history.shape[0]
    held = jnp.minimum(filled, size)
    first = jnp.maximum(held - length, 0)
    positions = first + jnp.arange(size)
    kept = (positions < held).reshape((size,) + (1,) * (history.ndim - 1))
    rows = rotated(history, first)
    return Ragged(jnp.where(kept, rows, jnp.zeros_like(rows)), length)
