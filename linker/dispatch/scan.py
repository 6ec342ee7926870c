"""`Scan` as `lax.scan` (a fixed number of steps) or `lax.while_loop` (``until``).

The loop carry is a fixed pytree:

- ``step``: the step counter;
- ``mit_mot``: the whole mit-mot buffers (gradient scans read and write them
  at offsets from the step);
- ``windows``: for each mit-sot/sit-sot output, its last ``-min(taps)`` values,
  oldest first (fixed-length loops only);
- ``shared``: the values of Aesara's untraced sit-sots ("shared outs"), among
  them random states, which are PRNG keys;
- ``buffers``: the full output buffers of mit-sot/sit-sot/nit-sot outputs,
  written in place (``until`` loops only);
- ``running``: whether the ``until`` condition still lets the loop go on.

Sequences are the scanned ``xs`` (or indexed by the step); non-sequences are
closed over. Outputs are laid out as Aesara's own Scan lays out its buffers,
including buffers that ``scan_save_mem`` shortened: a buffer of ``S`` rows
holds the last ``S`` states of the history (initial taps, then one state per
step), in order, zero-padded when longer than the history. An ``until`` loop
whose trace is kept returns it as `Ragged`, since the number of steps it ran
is known only at run time; the linker trims it at the jit boundary, splitting
the program there when the trace feeds further computation.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from aesara.scan.op import Scan
from jax import lax

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.scan_layout import ScanLayout, split_by
from aejax.linker.errors import InvalidValueError
from aejax.linker.ragged import Ragged
from aejax.linker.rewrites import JAXGraphRewriter


class Carry(NamedTuple):
    """The loop state of a lowered Scan (see the module docstring)."""

    step: Any
    mit_mot: tuple[Any, ...]
    windows: tuple[Any, ...]
    shared: tuple[Any, ...]
    buffers: tuple[Any, ...]
    running: Any


def same_type_as(value: Any, reference: Any) -> Any:
    """``value`` with the dtype of ``reference`` (and strong typing), keys untouched."""
    dtype = jnp.result_type(reference)
    if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return value
    return lax.convert_element_type(value, dtype)


def read_rows(buffer: Any, position: Any, taps: Sequence[int]) -> list[Any]:
    """Rows ``(position + tap) % len(buffer)`` of a circular buffer."""
    size = buffer.shape[0]
    return [lax.dynamic_index_in_dim(buffer, (position + t) % size, keepdims=False) for t in taps]


def write_rows(buffer: Any, position: Any, taps: Sequence[int], rows: Sequence[Any]) -> Any:
    """``buffer`` with ``rows`` written at ``(position + tap) % len(buffer)``."""
    size = buffer.shape[0]
    for t, row in zip(taps, rows):
        buffer = lax.dynamic_update_index_in_dim(buffer, same_type_as(row, buffer), (position + t) % size, 0)
    return buffer


def shift_in(window: Any, row: Any) -> Any:
    """The window of last values after ``row`` is appended."""
    row = same_type_as(row, window)[None]
    return row if window.shape[0] == 1 else jnp.concatenate([window[1:], row], axis=0)


def static_count(value: Any, what: str) -> int:
    """A concrete integer, or a TypeError saying which count must be static."""
    try:
        return int(np.asarray(value))
    except Exception as error:
        raise TypeError(f"the {what} of a Scan must be known while tracing ({error})") from error


def check_steps(n_steps: int, seqs: Sequence[Any]) -> None:
    """Aesara's checks of a step count against the sequences."""
    if n_steps < 0:
        raise InvalidValueError(f"Scan was asked to run for a negative number of steps ({n_steps})")
    for index, seq in enumerate(seqs):
        if seq.shape[0] < n_steps:
            raise InvalidValueError(
                f"sequence {index} of the Scan has {seq.shape[0]} entries but the "
                f"Scan runs for {n_steps} steps"
            )


def history_rows(size: int, initial: Any, trace: Any) -> Any:
    """The last ``size`` rows of ``[initial; trace]``, zero-padded when longer."""
    history = trace if initial is None else jnp.concatenate([initial, same_type_as(trace, initial)])
    if size <= history.shape[0]:
        return history[history.shape[0] - size :]
    padding = jnp.zeros((size - history.shape[0],) + history.shape[1:], history.dtype)
    return jnp.concatenate([history, padding])


class LoweredScan:
    """The JAX computation of one Scan node."""

    def __init__(self, op: Scan, node: Any, inner: Callable[..., tuple[Any, ...]]) -> None:
        self.op = op
        self.node = node
        self.layout = ScanLayout.of(op)
        self.inner = inner

    def __call__(self, *outer: Any) -> Any:
        results = self.outputs(*outer)
        return results if len(results) > 1 else results[0]

    def outputs(self, *outer: Any) -> list[Any]:
        """The Scan node's outputs, in Aesara's order."""
        lay = self.layout
        (n_steps,), seqs, mit_mot, sots, shared, nit_sizes, non_seqs = lay.outer_inputs(outer)
        n_steps = static_count(n_steps, "number of steps")
        check_steps(n_steps, seqs)
        sizes = [static_count(s, "nit-sot buffer length") for s in nit_sizes]
        if n_steps == 0:
            return self.no_steps(mit_mot, sots, shared)
        seqs = [jnp.asarray(s)[:n_steps] for s in seqs]
        mit_mot = [jnp.asarray(b) for b in mit_mot]
        sots = [jnp.asarray(b) for b in sots]
        if lay.as_while:
            return self.while_loop(n_steps, seqs, mit_mot, sots, shared, sizes, non_seqs)
        return self.fixed_loop(n_steps, seqs, mit_mot, sots, shared, sizes, non_seqs)

    def no_steps(self, mit_mot: list[Any], sots: list[Any], shared: list[Any]) -> list[Any]:
        nit_sots = [
            jnp.zeros((0,) * out.type.ndim, out.type.dtype)
            for out in self.node.outputs[self.layout.n_mit_mot + self.layout.n_sot :][: self.layout.n_nit_sot]
        ]
        return [*mit_mot, *sots, *nit_sots, *shared]

    def inner_inputs(self, step: Any, seq_rows: Sequence[Any], carry: Carry, sot_rows: list[list[Any]], non_seqs: Sequence[Any]) -> list[Any]:
        mit_mot_rows = [
            row
            for buffer, taps, mintap in zip(carry.mit_mot, self.layout.mit_mot_in, self.layout.mit_mot_mintaps())
            for row in read_rows(buffer, step - mintap, taps)
        ]
        return [*seq_rows, *mit_mot_rows, *(r for rows in sot_rows for r in rows), *carry.shared, *non_seqs]

    def updated_mit_mot(self, step: Any, carry: Carry, outs: Sequence[Any]) -> tuple[Any, ...]:
        groups = split_by(outs, [len(t) for t in self.layout.mit_mot_out])
        return tuple(
            write_rows(buffer, step - mintap, taps, rows)
            for buffer, taps, mintap, rows in zip(
                carry.mit_mot, self.layout.mit_mot_out, self.layout.mit_mot_mintaps(), groups
            )
        )

    def fixed_loop(self, n_steps: int, seqs: list[Any], mit_mot: list[Any], sots: list[Any], shared: list[Any], sizes: list[int], non_seqs: list[Any]) -> list[Any]:
        lay = self.layout
        widths = lay.sot_windows()
        traced_sots = [buffer.shape[0] > width for buffer, width in zip(sots, widths)]
        start = Carry(
            step=jnp.asarray(0, "int32"),
            mit_mot=tuple(mit_mot),
            windows=tuple(b[:w] for b, w in zip(sots, widths)),
            shared=tuple(shared),
            buffers=(),
            running=None,
        )

        def body(carry: Carry, seq_rows: list[Any]) -> tuple[Carry, tuple[list[Any], list[Any]]]:
            sot_rows = [[w[width + t] for t in taps] for w, width, taps in zip(carry.windows, widths, lay.sot_taps)]
            outs = self.inner(*self.inner_inputs(carry.step, seq_rows, carry, sot_rows, non_seqs))
            mm_outs, sot_outs, nit_outs, shared_outs, _ = lay.inner_outputs(outs)
            new = Carry(
                step=carry.step + 1,
                mit_mot=self.updated_mit_mot(carry.step, carry, mm_outs),
                windows=tuple(shift_in(w, y) for w, y in zip(carry.windows, sot_outs)),
                shared=tuple(same_type_as(v, s) for v, s in zip(shared_outs, carry.shared)),
                buffers=(),
                running=None,
            )
            kept_sots = [y for y, keep in zip(sot_outs, traced_sots) if keep]
            return new, (kept_sots, list(nit_outs))

        final, (sot_traces, nit_traces) = lax.scan(body, start, seqs, length=n_steps)
        traces = iter(sot_traces)
        sot_results = [
            history_rows(b.shape[0], b[:w], next(traces)) if keep else history_rows(b.shape[0], window, window[:0])
            for b, w, keep, window in zip(sots, widths, traced_sots, final.windows)
        ]
        nit_results = [history_rows(size, None, trace) for size, trace in zip(sizes, nit_traces)]
        return [*final.mit_mot, *sot_results, *nit_results, *final.shared]

    def while_loop(self, n_steps: int, seqs: list[Any], mit_mot: list[Any], sots: list[Any], shared: list[Any], sizes: list[int], non_seqs: list[Any]) -> list[Any]:
        lay = self.layout
        widths = lay.sot_windows()
        nit_buffers = self.nit_sot_buffers(seqs, mit_mot, sots, shared, sizes, non_seqs)
        start = Carry(
            step=jnp.asarray(0, "int32"),
            mit_mot=tuple(mit_mot),
            windows=(),
            shared=tuple(shared),
            buffers=tuple(sots) + tuple(nit_buffers),
            running=jnp.asarray(True),
        )
        offsets = widths + [0] * lay.n_nit_sot

        def cond(carry: Carry) -> Any:
            return carry.running & (carry.step < n_steps)

        def body(carry: Carry) -> Carry:
            i = carry.step
            seq_rows = [lax.dynamic_index_in_dim(s, i, keepdims=False) for s in seqs]
            sot_rows = [read_rows(b, i + w, taps) for b, w, taps in zip(carry.buffers, widths, lay.sot_taps)]
            outs = self.inner(*self.inner_inputs(i, seq_rows, carry, sot_rows, non_seqs))
            mm_outs, sot_outs, nit_outs, shared_outs, (until,) = lay.inner_outputs(outs)
            buffers = tuple(
                write_rows(b, i + offset, (0,), (y,))
                for b, offset, y in zip(carry.buffers, offsets, [*sot_outs, *nit_outs])
            )
            return Carry(
                step=i + 1,
                mit_mot=self.updated_mit_mot(i, carry, mm_outs),
                windows=(),
                shared=tuple(same_type_as(v, s) for v, s in zip(shared_outs, carry.shared)),
                buffers=buffers,
                running=jnp.logical_not(jnp.asarray(until).astype(bool)),
            )

        final = lax.while_loop(cond, body, start)
        ordered = [
            ordered_history(b, final.step, offset, n_steps) for b, offset in zip(final.buffers, offsets)
        ]
        return [*final.mit_mot, *ordered, *final.shared]

    def nit_sot_buffers(self, seqs: list[Any], mit_mot: list[Any], sots: list[Any], shared: list[Any], sizes: list[int], non_seqs: list[Any]) -> list[Any]:
        """Zero buffers for the nit-sot outputs, shaped like one step's outputs."""
        if not sizes:
            return []
        widths = self.layout.sot_windows()
        carry = Carry(0, tuple(mit_mot), (), tuple(shared), (), None)
        sot_rows = [read_rows(b, w, taps) for b, w, taps in zip(sots, widths, self.layout.sot_taps)]
        args = self.inner_inputs(0, [s[0] for s in seqs], carry, sot_rows, non_seqs)
        shapes = jax.eval_shape(lambda *a: self.inner(*a), *args)
        nit_shapes = self.layout.inner_outputs(shapes)[2]
        return [jnp.zeros((size,) + s.shape, s.dtype) for size, s in zip(sizes, nit_shapes)]


def ordered_history(buffer: Any, steps: Any, offset: int, max_steps: int) -> Any:
    """A circular buffer after ``steps`` writes, laid out as Aesara's Scan leaves it.

    ``offset`` initial rows precede the first write. A buffer that wrapped is
    rotated oldest-first; a longer one is zero-padded and, when the loop
    stopped early, cut by the steps it did not run (a run-time length).
    """
    size = buffer.shape[0]
    filled = steps + offset
    rotated = jnp.roll(buffer, -(filled % size), axis=0)
    rows = jnp.arange(size).reshape((size,) + (1,) * (buffer.ndim - 1))
    padded = jnp.where(rows < filled, buffer, jnp.zeros_like(buffer))
    laid_out = jnp.where(filled > size, rotated, padded)
    if size <= offset + 1:
        return laid_out
    length = jnp.where(filled < size, size - (max_steps - steps), size)
    return Ragged(laid_out, length)


@jax_funcify.register(Scan)
def _scan(op: Scan, node: Any = None, **kwargs: Any) -> LoweredScan:
    inner = op.fgraph.clone()
    JAXGraphRewriter().rewrite(inner)
    return LoweredScan(op, node, jax_funcify(inner, **kwargs))
