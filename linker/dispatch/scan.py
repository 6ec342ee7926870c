"""`Scan` as `lax.scan` (a fixed number of steps) or `lax.while_loop` (``until``,
or a number of steps known only at run time, which bounds the loop).

The loop carry is a fixed pytree (`Carry`):

- ``step``: the step counter (while loops);
- ``mit_mot``: in fixed loops, a window of the rows one step reads and writes
  of each mit-mot buffer (gradient scans); each step its oldest row leaves as
  part of the output and the next buffer row enters. In ``until`` loops, the
  whole buffers;
- ``windows``: the last ``-min(taps)`` values of each mit-sot/sit-sot, oldest
  first (a sit-sot carries its value itself);
- ``shared``: the values of Aesara's untraced sit-sots ("shared outs"), among
  them random states, which are PRNG keys;
- ``buffers``: in ``until`` loops, the traces being kept, written and never
  read inside the loop (XLA would copy a buffer it also reads at every step);
- ``running``: whether the ``until`` condition still lets the loop go on.

Sequences are the scanned ``xs`` (or indexed by the step; an ``arange`` with
traced bounds is computed from the step, `RangeRows`); non-sequences are
closed over; in fixed loops traces leave as stacked ``ys``. Outputs are laid
out as Aesara's own Scan lays out its buffers, including buffers that
aejax's `ScanKeepLast` shortened: a buffer of ``S`` rows holds the last ``S``
states of the history (initial taps, then one state per step), in order,
zero-padded when longer than the history. An ``until`` loop whose trace is
kept returns it as `Ragged`, since the number of steps it ran is known only
at run time; the linker trims it at the jit boundary, splitting the program
there when the trace feeds further computation.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import jax.numpy as jnp
import numpy as np
from aesara.graph.rewriting.basic import MergeOptimizer
from aesara.graph.basic import ancestors
from aesara.scan.op import Scan
from aesara.tensor.random.type import RandomType
from jax import lax

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.dispatch.callback import host_generator, perform_callback, split_for_host
from aejax.linker.dispatch.tensor_basic import require_memory
from aejax.linker.checks import require, shapes_only
from aejax.linker.concrete import is_traced, static_ints
from aejax.linker.scan_layout import ScanLayout, split_by
from aejax.linker.errors import InvalidValueError, LoweringError, variable_name
from aejax.linker.ragged import RUN_TIME_LENGTH, RangeRows
from aejax.linker.rewrites import scan_rewrites
from aejax.linker.loop_state import (
    Carry,
    SotWindow,
    flatten,
    history_rows,
    ordered_history,
    read_rows,
    same_type_as,
    shift_in,
    window_rows,
    window_written,
    write_rows,
)


def static_count(value: Any, what: str) -> int:
    """A concrete integer, or a `NotStaticError` saying which count must be static."""
    return static_ints([value], f"the {what} of a Scan")[0]


def check_steps(n_steps: Any, seqs: Sequence[Any], node: Any) -> None:
    """Aesara's checks of a step count against the sequences (run-time checks where traced)."""
    _check(n_steps >= 0, f"Scan was asked to run for a negative number of steps ({_shown(n_steps)})", node)
    for index, seq in enumerate(seqs):
        length = sequence_length(seq)
        _check(
            n_steps <= length,
            f"sequence {index} of the Scan has {_shown(length)} entries but the Scan runs for "
            f"{_shown(n_steps)} steps",
            node,
        )


def _shown(value: Any) -> str:
    return "a run-time number of" if is_traced(value) else str(value)


def _check(condition: Any, message: str, node: Any) -> None:
    if is_traced(condition):
        require(condition, InvalidValueError, message, f"node {node}")
    elif not condition:
        raise InvalidValueError(message)


def sequence_length(seq: Any) -> Any:
    """How many rows a sequence has (traced for an arange with traced bounds)."""
    return seq.length if isinstance(seq, RangeRows) else seq.shape[0]


def sequence_row(seq: Any, index: Any) -> Any:
    """Row ``index`` of a sequence; an arange's row is computed, never stored."""
    return seq.row(index) if isinstance(seq, RangeRows) else lax.dynamic_index_in_dim(seq, index, keepdims=False)


def sequence_rows(seq: Any, n_steps: int) -> Any:
    """The first ``n_steps`` rows of a sequence, as ``lax.scan`` takes them."""
    return seq.row(jnp.arange(n_steps)) if isinstance(seq, RangeRows) else jnp.asarray(seq)[:n_steps]


class Outer(NamedTuple):
    """A Scan node's outer inputs, grouped as `ScanLayout.outer_inputs` groups them."""

    n_steps: Any
    seqs: list[Any]
    mit_mot: list[Any]
    sots: list[Any]
    shared: list[Any]
    nit_sizes: list[int]
    non_seqs: list[Any]


class LoweredScan:
    """The JAX computation of one Scan node."""

    accepts_range = True

    def __init__(self, op: Scan, node: Any, inner: Callable[..., tuple[Any, ...]]) -> None:
        self.node = node
        self.layout = ScanLayout.of(op)
        self.inner = inner

    def __call__(self, *outer: Any) -> Any:
        try:
            results = self.outputs(*outer)
        except LoweringError as error:
            if not self.step_decides_shape(error) or any(isinstance(v, RUN_TIME_LENGTH) for v in outer):
                raise
            results = self.on_host(outer)
        return results if len(results) > 1 else results[0]

    def step_decides_shape(self, error: LoweringError) -> bool:
        """Whether ``error`` is a shape inside the step that depends on the step's own values.

        Such a shape (``arange(y_t)`` for a sequence value ``y_t``) differs from
        step to step, which no JAX loop can express; making inputs of the
        compiled function static cannot help either.
        """
        if not error.needs_static or error.node is None or error.node is self.node:
            return False
        per_step = set(self.inner.inputs[: len(self.inner.inputs) - self.layout.n_non_seqs])
        return bool(per_step & set(ancestors(error.node.inputs)))

    def on_host(self, outer: Sequence[Any]) -> list[Any]:
        """The Scan computed by Aesara's own implementation on the host (`jax.pure_callback`).

        Its random states advance by a key split: one half seeds the numpy
        generators the host loop draws from.
        """
        rng_inputs = {
            position: host_generator(self.node.inputs[position].type)
            for position in self.layout.shared_input_positions()
            if isinstance(self.node.inputs[position].type, RandomType)
        }
        numeric = [i for i, out in enumerate(self.node.outputs) if not isinstance(out.type, RandomType)]
        run = perform_callback(self.node, numeric, rng_inputs, why="has a step whose shapes depend on its values")
        args, new_keys = list(outer), {}
        for position in rng_inputs:
            new_keys[position], args[position] = split_for_host(args[position])
        computed = dict(zip(numeric, run(*args)))
        return [
            computed[i] if i in computed else new_keys[self.layout.shared_input_of_output(i)]
            for i in range(len(self.node.outputs))
        ]

    def outputs(self, *outer: Any) -> list[Any]:
        """The Scan node's outputs, in Aesara's order."""
        (n_steps,), seqs, mit_mot, sots, shared, nit_sizes, non_seqs = self.layout.outer_inputs(outer)
        bounded = is_traced(n_steps)
        if not bounded:
            n_steps = static_count(n_steps, "number of steps")
        check_steps(n_steps, seqs, self.node)
        if not bounded and n_steps == 0:
            return self.no_steps(mit_mot, sots, shared)
        values = Outer(
            n_steps=n_steps,
            seqs=[s if bounded else sequence_rows(s, n_steps) for s in seqs],
            mit_mot=[jnp.asarray(b) for b in mit_mot],
            sots=[jnp.asarray(b) for b in sots],
            shared=list(shared),
            nit_sizes=[static_count(s, "nit-sot buffer length") for s in nit_sizes],
            non_seqs=list(non_seqs),
        )
        nit_outputs = self.node.outputs[self.layout.n_mit_mot + self.layout.n_sot :]
        require_memory(
            sum(b.size * b.dtype.itemsize for b in values.sots)
            + sum(size * np.dtype(out.type.dtype).itemsize for size, out in zip(values.nit_sizes, nit_outputs)),
            f"the buffers of Scan {self.node} for its number of steps {_shown(n_steps)} "
            f"(input {variable_name(self.node.inputs[0])!r})",
        )
        return self.while_loop(values) if self.layout.as_while or bounded else self.fixed_loop(values)

    def no_steps(self, mit_mot: list[Any], sots: list[Any], shared: list[Any]) -> list[Any]:
        nit_sots = [
            jnp.zeros((0,) * out.type.ndim, out.type.dtype)
            for out in self.node.outputs[self.layout.n_mit_mot + self.layout.n_sot :][: self.layout.n_nit_sot]
        ]
        return [*mit_mot, *sots, *nit_sots, *shared]

    def run_inner(
        self,
        seq_rows: Sequence[Any],
        mit_mot_rows: list[list[Any]],
        sot_rows: list[list[Any]],
        shared: Sequence[Any],
        non_seqs: Sequence[Any],
    ) -> list[list[Any]]:
        """One step of the inner graph, its outputs grouped as `ScanLayout.inner_outputs`."""
        outs = self.inner(*seq_rows, *flatten(mit_mot_rows), *flatten(sot_rows), *shared, *non_seqs)
        return self.layout.inner_outputs(outs)

    def mit_mot_windows(self, n_steps: int, buffers: list[Any]) -> tuple[list[Any], list[Any]]:
        """Each mit-mot buffer as its first window and the rows entering it, step by step.

        A mit-mot step reads and writes ``span`` consecutive rows starting at
        the step's index, so the loop carries only that window: each step the
        oldest row leaves it (final from then on) and the next buffer row enters.
        """
        windows, incoming = [], []
        for buffer, span in zip(buffers, self.layout.mit_mot_spans()):
            if buffer.shape[0] < n_steps + span - 1:
                raise LoweringError(
                    f"mit-mot buffer of {buffer.shape[0]} rows is too short for {n_steps} steps "
                    f"in node {self.node}",
                    node=self.node,
                )
            padded = jnp.concatenate([buffer, jnp.zeros((span,) + buffer.shape[1:], buffer.dtype)])
            windows.append(padded[:span])
            incoming.append(padded[span : span + n_steps])
        return windows, incoming

    def fixed_loop(self, outer: Outer) -> list[Any]:
        """A fixed number of steps: ``lax.scan``, traces leaving as stacked ``ys``."""
        lay = self.layout
        n_steps, seqs, mit_mot, sots, shared, sizes, non_seqs = outer
        widths = lay.sot_windows()
        sot_windows = [SotWindow(w, taps) for w, taps in zip(widths, lay.sot_taps)]
        mintaps = lay.mit_mot_mintaps()
        traced_sots = [buffer.shape[0] > width for buffer, width in zip(sots, widths)]
        mm_windows, mm_incoming = self.mit_mot_windows(n_steps, mit_mot)
        start = Carry(
            step=None,
            mit_mot=tuple(mm_windows),
            windows=tuple(sw.start(b) for sw, b in zip(sot_windows, sots)),
            shared=tuple(shared),
            buffers=(),
            running=None,
        )

        def body(carry: Carry, rows: tuple[list[Any], list[Any]]) -> tuple[Carry, tuple[list[Any], ...]]:
            seq_rows, entering = rows
            mm_rows = [window_rows(w, m, taps) for w, m, taps in zip(carry.mit_mot, mintaps, lay.mit_mot_in)]
            sot_rows = [sw.rows(w) for sw, w in zip(sot_windows, carry.windows)]
            mm_outs, sot_outs, nit_outs, shared_outs, _ = self.run_inner(seq_rows, mm_rows, sot_rows, carry.shared, non_seqs)
            written = [
                window_written(w, m, taps, values)
                for w, m, taps, values in zip(carry.mit_mot, mintaps, lay.mit_mot_out, self.mit_mot_out_groups(mm_outs))
            ]
            new = Carry(
                step=None,
                mit_mot=tuple(shift_in(w, row) for w, row in zip(written, entering)),
                windows=tuple(sw.shifted(w, y) for sw, w, y in zip(sot_windows, carry.windows, sot_outs)),
                shared=tuple(same_type_as(v, s) for v, s in zip(shared_outs, carry.shared)),
                buffers=(),
                running=None,
            )
            kept_sots = [y for y, keep in zip(sot_outs, traced_sots) if keep]
            return new, ([w[0] for w in written], kept_sots, list(nit_outs))

        final, (mm_traces, sot_traces, nit_traces) = lax.scan(body, start, (seqs, mm_incoming), length=n_steps)
        mm_results = [
            jnp.concatenate([trace, window, b[n_steps + window.shape[0] :]])[: b.shape[0]]
            for b, trace, window in zip(mit_mot, mm_traces, final.mit_mot)
        ]
        traces = iter(sot_traces)
        sot_results = [
            history_rows(b.shape[0], b[:w], next(traces)) if keep else sw.as_rows(window)[-b.shape[0] :]
            for b, w, keep, window, sw in zip(sots, widths, traced_sots, final.windows, sot_windows)
        ]
        nit_results = [history_rows(size, None, trace) for size, trace in zip(sizes, nit_traces)]
        return [*mm_results, *sot_results, *nit_results, *final.shared]

    def mit_mot_out_groups(self, outs: Sequence[Any]) -> list[list[Any]]:
        return split_by(outs, [len(t) for t in self.layout.mit_mot_out])

    def while_loop(self, outer: Outer) -> list[Any]:
        """An ``until`` loop, or one whose number of steps is traced: ``lax.while_loop``.

        Every mit-sot/sit-sot is read from its window; the outputs whose trace
        is kept are also written, write-only, into their buffers (a buffer the
        loop also read from would be copied by XLA at every step).
        """
        lay = self.layout
        n_steps, seqs, mit_mot, sots, shared, sizes, non_seqs = outer
        sot_windows = [SotWindow(w, taps) for w, taps in zip(lay.sot_windows(), lay.sot_taps)]
        traced = [b.shape[0] > sw.width for b, sw in zip(sots, sot_windows)]
        mintaps = lay.mit_mot_mintaps()
        nit_buffers = self.nit_sot_buffers(outer)
        start = Carry(
            step=jnp.asarray(0, "int32"),
            mit_mot=tuple(mit_mot),
            windows=tuple(sw.start(b) for sw, b in zip(sot_windows, sots)),
            shared=tuple(shared),
            buffers=tuple(b for b, keep in zip(sots, traced) if keep) + tuple(nit_buffers),
            running=jnp.asarray(True),
        )
        offsets = [sw.width for sw, keep in zip(sot_windows, traced) if keep] + [0] * lay.n_nit_sot

        def cond(carry: Carry) -> Any:
            return carry.running & (carry.step < n_steps)

        def body(carry: Carry) -> Carry:
            i = carry.step
            seq_rows = [sequence_row(s, i) for s in seqs]
            mm_rows = [read_rows(b, i - m, taps) for b, m, taps in zip(carry.mit_mot, mintaps, lay.mit_mot_in)]
            sot_rows = [sw.rows(w) for sw, w in zip(sot_windows, carry.windows)]
            mm_outs, sot_outs, nit_outs, shared_outs, until = self.run_inner(seq_rows, mm_rows, sot_rows, carry.shared, non_seqs)
            written = [y for y, keep in zip(sot_outs, traced) if keep] + list(nit_outs)
            return Carry(
                step=i + 1,
                mit_mot=tuple(
                    write_rows(b, i - m, taps, values)
                    for b, m, taps, values in zip(carry.mit_mot, mintaps, lay.mit_mot_out, self.mit_mot_out_groups(mm_outs))
                ),
                windows=tuple(sw.shifted(w, y) for sw, w, y in zip(sot_windows, carry.windows, sot_outs)),
                shared=tuple(same_type_as(v, s) for v, s in zip(shared_outs, carry.shared)),
                buffers=tuple(write_rows(b, i + offset, (0,), (y,)) for b, offset, y in zip(carry.buffers, offsets, written)),
                running=jnp.logical_not(jnp.asarray(until[0]).astype(bool)) if until else carry.running,
            )

        final = lax.while_loop(cond, body, start)
        laid_out = iter(
            ordered_history(b, final.step, offset, n_steps, lay.as_while) for b, offset in zip(final.buffers, offsets)
        )
        sot_results = [
            next(laid_out) if keep else sw.as_rows(window)[-b.shape[0] :]
            for sw, b, keep, window in zip(sot_windows, sots, traced, final.windows)
        ]
        return [*final.mit_mot, *sot_results, *laid_out, *final.shared]

    def nit_sot_buffers(self, outer: Outer) -> list[Any]:
        """Zero buffers for the nit-sot outputs, shaped like one step's outputs."""
        _, seqs, mit_mot, sots, shared, sizes, non_seqs = outer
        if not sizes:
            return []
        lay = self.layout
        mm_rows = [read_rows(b, -m, taps) for b, m, taps in zip(mit_mot, lay.mit_mot_mintaps(), lay.mit_mot_in)]
        sot_rows = [read_rows(b, w, taps) for b, w, taps in zip(sots, lay.sot_windows(), lay.sot_taps)]
        shapes = shapes_only(
            lambda *rows: self.run_inner(rows, mm_rows, sot_rows, shared, non_seqs)[2],
            *[sequence_row(s, 0) for s in seqs],
        )
        return [jnp.zeros((size,) + s.shape, s.dtype) for size, s in zip(sizes, shapes)]


@jax_funcify.register(Scan)
def _scan(op: Scan, node: Any = None, **kwargs: Any) -> LoweredScan:
    inner = op.fgraph.clone()
    MergeOptimizer().rewrite(inner)
    scan_rewrites.rewrite(inner)
    return LoweredScan(op, node, jax_funcify(inner, **kwargs))
