"""`Scan` as `lax.scan` (a fixed number of steps) or `lax.while_loop` (``until``,
or a number of steps known only at run time, which bounds the loop).

Both loops run one step function (`LoweredScan.step`) on a fixed pytree
(`Carry`):

- ``mit_mot``: in fixed loops, a window of the rows one step reads and writes
  of each mit-mot buffer (gradient scans); each step its oldest row leaves as
  part of the output and the next buffer row enters. In while loops, the
  whole buffers;
- ``windows``: the last ``-min(taps)`` values of each mit-sot/sit-sot, oldest
  first (a sit-sot carries its value itself);
- ``shared``: the values of Aesara's untraced sit-sots ("shared outs"), among
  them random states, which are PRNG keys.

A while loop wraps it with its loop control (`WhileCarry`): the step counter,
whether the ``until`` condition still lets the loop go on, and the traces
being kept, written and never read inside the loop (XLA would copy a buffer
it also reads at every step).

Sequences are the scanned ``xs`` (or indexed by the step; an ``arange`` with
traced bounds is computed from the step, `RangeRows`); non-sequences are
closed over; in fixed loops traces leave as stacked ``ys``. Random draws
whose randomness does not depend on the step are taken before the loop and
read like sequences (`aejax.linker.scan.noise`). Outputs are laid
out as Aesara's own Scan lays out its buffers, including buffers that
aejax's `ScanKeepLast` shortened: a buffer of ``S`` rows holds the last ``S``
states of the history (initial taps, then one state per step), in order,
zero-padded when longer than the history. An ``until`` loop whose trace is
kept returns it as `Ragged`, since the number of steps it ran is known only
at run time; the linker trims it at the jit boundary, splitting the program
there when the trace feeds computation that cannot take it.

While a step is traced, its mit-sot/sit-sot and shared outputs are checked
against the states they replace (`LoweredScan.check_carry`): a mismatch names
the Scan output and its initial value, not a JAX carry component.

A `Ragged` input (a sequence, or a buffer whose size is a run-time length,
as in the backward loop of an ``until`` loop's gradient) is used through its
bound-sized buffer, and the matching output is `Ragged` with the same length.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np
from aesara.compile.mode import Mode, get_mode
from aesara.graph.basic import Apply, Variable, ancestors
from aesara.graph.fg import FunctionGraph
from aesara.graph.rewriting.basic import MergeOptimizer, in2out
from aesara.link.basic import JITLinker
from aesara.link.vm import VMLinker
from aesara.scan.op import Scan
from aesara.scan.rewriting import push_out_non_seq_scan
from aesara.tensor.elemwise import DimShuffle
from aesara.tensor.random.type import RandomType
from aesara.tensor.shape import SpecifyShape, Unbroadcast
from aesara.tensor.subtensor import IncSubtensor, Subtensor
from jax import lax

from aejax.linker.checks import InnerCodes, require
from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.dispatch.callback import host_generator, perform_callback, split_for_host
from aejax.linker.dispatch.rows import row_at
from aejax.linker.dispatch.tensor_basic import bounded_shape, require_memory
from aejax.linker.errors import IndexOutOfBoundsError, InvalidValueError, LoweringError, variable_name
from aejax.linker.graph.scan_layout import ScanLayout, scan_like, split_by
from aejax.linker.lengths.bounds import value_interval, values_within
from aejax.linker.lengths.concrete import is_traced, static_ints
from aejax.linker.lengths.consumers import takes_run_time_lengths
from aejax.linker.lengths.ragged import (
    RUN_TIME_LENGTH,
    NeedsSplit,
    Ragged,
    RangeRows,
    buffer_of,
    row_count,
    rows_padded,
)
from aejax.linker.rewrites import rewrite_step
from aejax.linker.scan.carry import (
    Carry,
    SotWindow,
    WhileCarry,
    flatten,
    history_rows,
    last_states,
    ordered_history,
    read_rows,
    same_type_as,
    shift_in,
    window_rows,
    window_written,
    write_rows,
)
from aejax.linker.scan.noise import ScanNoise
from aejax.linker.scan.progress import Progress
from aejax.linker.scan.row_bounds import bounds_request
from aejax.linker.trace.loop_bodies import tracing_loop_body
from aejax.linker.trace.lowering import LoweredGraph
from aejax.linker.trace.outcome import Outputs, attempt, outputs_of
from aejax.linker.trace.replay import traced_once


def check_steps(n_steps: Any, seqs: Sequence[Any], node: Any) -> None:
    """Aesara's checks of a step count against the sequences (run-time checks where traced)."""
    negative = f"Scan was asked to run for a negative number of steps ({_shown(n_steps)})"
    _check(n_steps >= 0, negative, node, IndexOutOfBoundsError)  # Aesara's Scan raises IndexError
    for var, seq in zip(node.inputs[1:], seqs):
        length = row_count(seq)
        _check(
            n_steps <= length,
            f"the sequence {outer_name(var)!r} of Scan {node.op} has {_shown(length)} entries but the "
            f"Scan runs for {_shown(n_steps)} steps: pass a longer sequence or ask for fewer steps",
            node,
        )


def _shown(value: Any) -> str:
    return "a run-time number of" if is_traced(value) else str(value)


def _check(condition: Any, message: str, node: Any, error: type[InvalidValueError] = InvalidValueError) -> None:
    if is_traced(condition):
        require(condition, error, message, f"node {node}")
    elif not condition:
        raise error(message)


def sequence_row(seq: Any, index: Any) -> Any:
    """Row ``index`` of a sequence; an arange's row is computed, never stored."""
    if isinstance(seq, RangeRows):
        return seq.row(index)
    return row_at(buffer_of(seq), index)


def sequence_rows(seq: Any, n_steps: int) -> Any:
    """The first ``n_steps`` rows of a sequence, as ``lax.scan`` takes them."""
    if isinstance(seq, RangeRows):
        return seq.row(jnp.arange(n_steps))
    return rows_padded(seq.buffer, n_steps) if isinstance(seq, Ragged) else jnp.asarray(seq)[:n_steps]


def unwrapped(buffers: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Buffers as arrays, and each one's run-time length (``None`` unless it is `Ragged`)."""
    return (
        [jnp.asarray(buffer_of(b)) for b in buffers],
        [b.length if isinstance(b, Ragged) else None for b in buffers],
    )


def without_padding_rows(results: list[Any], lengths: Sequence[Any]) -> list[Any]:
    """An until loop's ``results``, each trace of a buffer of run-time length shorter by that buffer's padding rows.

    `ordered_history` cuts a trace by the steps the loop did not run, from
    the end of its buffer; a buffer of run-time length (a loop over a
    sequence of run-time length) is bound-sized, and its rows past that
    length were never part of the trace.
    """
    cut = [
        Ragged(r.buffer, r.length - (r.buffer.shape[0] - n)) if n is not None and isinstance(r, Ragged) else r
        for r, n in zip(results, lengths)
    ]
    return cut + results[len(lengths) :]


def with_lengths(results: list[Any], lengths: Sequence[Any]) -> list[Any]:
    """``results`` with the first ones `Ragged` where their length is a run-time one."""
    wrapped = [r if n is None or isinstance(r, Ragged) else Ragged(r, n) for r, n in zip(results, lengths)]
    return wrapped + results[len(lengths) :]


def type_name(shape: Sequence[int], dtype: Any) -> str:
    """A value's type as messages show it, e.g. ``float64[3]``."""
    return f"{dtype}[{','.join(map(str, shape))}]"


BUFFER_OPS = (IncSubtensor, Subtensor, DimShuffle, Unbroadcast, SpecifyShape)
"""The Ops between a Scan outer input and the value the user gave (a sequence, an initial value)."""


def outer_name(outer: Variable) -> str:
    """The user's name for a Scan node's outer input.

    Aesara's `scan` wraps the values it is given: a sequence ``seq`` becomes
    ``seq[start:][:n_steps]``; an initial value is written into the buffer it
    allocates, ``set_subtensor(empty[:1], x0[None])`` for a sit-sot,
    ``set_subtensor(empty[:k], x0[:k])`` for a mit-sot reading ``k`` steps
    back. The first named value through those Ops, else the input's own name.
    """
    var = outer
    while var.name is None and var.owner is not None and isinstance(var.owner.op, BUFFER_OPS):
        var = var.owner.inputs[1 if isinstance(var.owner.op, IncSubtensor) else 0]
    return variable_name(var if var.name is not None else outer)


class Outer(NamedTuple):
    """A Scan node's outer inputs, grouped as `ScanLayout.outer_inputs` groups them."""

    n_steps: Any
    seqs: list[Any]
    mit_mot: list[Any]
    sots: list[Any]
    shared: list[Any]
    nit_sizes: list[int]
    non_seqs: list[Any]
    noise: list[Any]


class LoopPlan(NamedTuple):
    """What both loops of one Scan call share: the outer values, and which traces leave the loop."""

    outer: Outer
    traced: list[bool]
    """Whether each mit-sot/sit-sot keeps its trace (its buffer is longer than its window)."""

    def kept(self, values: Sequence[Any]) -> list[Any]:
        """The items of ``values`` (one per mit-sot/sit-sot) whose trace is kept."""
        return [value for value, keep in zip(values, self.traced) if keep]


class Stepped(NamedTuple):
    """What one step of a loop computed (`LoweredScan.step`)."""

    carry: Carry
    """The carry after the step, its mit-mot state not yet written."""
    mit_mot: list[list[Any]]
    """The rows the step writes into each mit-mot state."""
    traces: list[Any]
    """The rows leaving as traces: of the kept mit-sots/sit-sots, then of the nit-sots."""
    until: list[Any]
    """The ``until`` condition (``[]`` without one)."""


class LoweredScan:
    """The JAX computation of one Scan node."""

    def __init__(
        self, op: Scan, node: Any, inner: LoweredGraph, fgraph: FunctionGraph, progress: Progress | None = None
    ) -> None:
        self.node = node
        self.progress = progress  # an outermost Scan's bar (`aejax.linker.scan.progress`); None: none
        self.layout = ScanLayout.of(op)
        self.noise = ScanNoise(fgraph, self.layout, inner)
        self.inner = self.noise.inner
        self.windows = [SotWindow(w, taps) for w, taps in zip(self.layout.sot_windows(), self.layout.sot_taps)]
        self.mintaps = self.layout.mit_mot_mintaps()

    def __call__(self, *outer: Any) -> Any:
        outcome = attempt(self.node, lambda: self.outputs(*outer), lambda error: error)
        results = (
            list(outputs_of(outcome)) if isinstance(outcome, Outputs) else self.when_step_fails(outer, outcome.error)
        )
        return results if len(results) > 1 else results[0]

    def when_step_fails(self, outer: Sequence[Any], error: Exception) -> list[Any]:
        """The outputs when tracing the loop failed with ``error``: computed on the host, or ``error`` raised.

        Only a step whose shapes vary from step to step (`step_decides_shape`)
        runs on the host, and only when no bounds of its sequences' values
        could make it traceable (`bounds_request`, raised instead) and no input
        has a run-time length (which a host callback cannot take).
        """
        if not self.step_decides_shape(error):
            raise error
        request = None if isinstance(error, NeedsSplit) else bounds_request(self.node, self.sequence_inputs, error)
        if request is not None:
            raise request from error
        if any(isinstance(v, RUN_TIME_LENGTH) for v in outer):
            raise error
        return self.on_host(outer)

    @property
    def sequence_inputs(self) -> list[Variable]:
        """The step's sequence inputs in the graph it is traced from."""
        return self.inner.inputs[: self.layout.n_seqs]

    def sequence_row_intervals(self) -> list[tuple[int, int] | None]:
        """What each sequence row of the step may hold: its outer sequence's elements, where the graph bounds them.

        Asked while the graph around the Scan is traced, whose values the
        outer sequences' bounds may read (`aejax.linker.lengths.bounds`).
        """
        return [value_interval(seq) for seq in self.node.inputs[1 : 1 + self.layout.n_seqs]]

    def step_decides_shape(self, error: Exception) -> bool:
        """Whether ``error`` is a shape inside the step that depends on the step's own values.

        Such a shape (``arange(y_t)`` for a sequence value ``y_t``) differs from
        step to step, which no JAX loop can express; making inputs of the
        compiled function static cannot help either. So does the trace of an
        ``until`` loop in the step where its length must be known
        (``dot(trace, trace)``, `NeedsSplit`): no program splits inside a loop.
        """
        if isinstance(error, NeedsSplit):
            return True
        if not isinstance(error, LoweringError) or not error.needs_static:
            return False
        if error.node is None or error.node is self.node:
            return False
        per_step = set(self.inner.inputs[: len(self.inner.inputs) - self.layout.n_non_seqs])
        return bool(per_step & set(ancestors(error.node.inputs)))

    @cached_property
    def host_node(self) -> Apply:
        """The node `on_host` runs (`stepping_on_host`), its step compiled now, once.

        Aesara's ``Scan.perform`` compiles the step the first time it runs,
        which would be inside the host callback: in a thread of XLA's, outside
        whatever context the caller compiles in, and again for each new
        trace. Compiled here, while the program is traced, the one step
        function serves every step of every call.
        """
        node = stepping_on_host(self.node)
        node.op.fn  # noqa: B018  (compiles the step, which Scan.perform reuses)
        return node

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
        why = "has a step whose shapes depend on its values"
        run = perform_callback(self.host_node, numeric, rng_inputs, why=why)
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
            (n_steps,) = static_ints((n_steps,), "the number of steps of a Scan")
        check_steps(n_steps, seqs, self.node)
        mit_mot, mm_lengths = unwrapped(mit_mot)
        sots, sot_lengths = unwrapped(sots)
        nit_sizes, nit_lengths = self.nit_sot_sizes(nit_sizes)
        lengths = [*mm_lengths, *sot_lengths, *nit_lengths]
        if not bounded and n_steps == 0:
            return with_lengths(self.no_steps(mit_mot, sots, shared), lengths)
        values = Outer(
            n_steps=n_steps,
            seqs=[s if bounded else sequence_rows(s, n_steps) for s in seqs],
            mit_mot=mit_mot,
            sots=sots,
            shared=list(shared),
            nit_sizes=nit_sizes,
            non_seqs=list(non_seqs),
            noise=[],
        )
        nit_outputs = self.node.outputs[self.layout.n_mit_mot + self.layout.n_sot :]
        require_memory(
            sum(b.size * b.dtype.itemsize for b in values.sots)
            + sum(size * np.dtype(out.type.dtype).itemsize for size, out in zip(values.nit_sizes, nit_outputs)),
            f"the buffers of Scan {self.node} for its number of steps {_shown(n_steps)} "
            f"(input {variable_name(self.node.inputs[0])!r})",
        )
        if not bounded:
            values = self.with_noise(values)
        plan = LoopPlan(values, [b.shape[0] > sw.width for b, sw in zip(values.sots, self.windows)])
        results = self.while_loop(plan) if self.layout.as_while or bounded else self.fixed_loop(plan)
        if self.layout.as_while:
            results = without_padding_rows(results, lengths)
        else:
            results = self.sots_of_run_time_length(results, n_steps, sot_lengths)
        return with_lengths(results, lengths)

    def sots_of_run_time_length(self, results: list[Any], n_steps: Any, lengths: Sequence[Any]) -> list[Any]:
        """Results with each mit-sot/sit-sot whose buffer had a run-time length laid out as that buffer.

        Such a buffer (Aesara sizes one by the steps, or keeps 1 row for a
        last value) may be shorter than the history the loop wrote into its
        bound-sized buffer: it keeps the last states (`last_states`).
        """
        results = list(results)
        for k, (length, width) in enumerate(zip(lengths, self.layout.sot_windows())):
            if length is not None:
                position = self.layout.sot_output_index(k)
                results[position] = last_states(results[position], n_steps + width, length)
        return results

    def nit_sot_sizes(self, sizes: Sequence[Any]) -> tuple[list[int], list[Any]]:
        """The nit-sot buffers' sizes to allocate, and their run-time lengths when traced (`bounded_shape`)."""
        shapes = [
            bounded_shape((size,), [self.node.inputs[self.layout.nit_sot_input_index(k)]])
            for k, size in enumerate(sizes)
        ]
        return [shape[0] for shape, _ in shapes], [length for _, length in shapes]

    def with_noise(self, outer: Outer) -> Outer:
        """``outer`` with the draws of the step's hoisted random variables taken before the loop (`ScanNoise`)."""
        if not self.noise.hoisted:
            return outer
        noise = self.noise.draw(outer.n_steps, outer.shared, self.first_step(outer), self.layout.as_while)
        return outer._replace(noise=noise)

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
        """One step of the inner graph, its outputs grouped as `ScanLayout.inner_outputs`.

        The sequence rows are traced within their outer sequences' bounds
        (`sequence_row_intervals`): a size computed from a row
        (``arange(1, 1 + 2 ** d)`` for a row ``d`` of ``arange(10)``) is then
        bounded, and a loop nested in the step is a bounded `lax.while_loop`.
        """
        bounded = [(row, within) for row, within in zip(seq_rows, self.sequence_row_intervals()) if within is not None]
        with values_within(bounded):
            outs = self.inner(*seq_rows, *flatten(mit_mot_rows), *flatten(sot_rows), *shared, *non_seqs)
        return self.layout.inner_outputs(outs)

    def check_carry(self, outer: Outer, sot_outs: Sequence[Any], shared_outs: Sequence[Any]) -> None:
        """Check a step's mit-sot/sit-sot and shared outputs against the states they replace.

        Called while the loop body is traced, so the one trace of the step
        gives the shapes: a step that returns ``float64[3]`` for a
        ``float64[2]`` state raises `InvalidValueError` naming the Scan output
        and its initial value, before JAX would report a carry component.
        """
        lay = self.layout
        carried = [
            (lay.sot_name(k), lay.sot_input_index(k), buffer.shape[1:], buffer.dtype, out)
            for k, (buffer, out) in enumerate(zip(outer.sots, sot_outs))
        ] + [
            (f"shared state {k}", position, jnp.shape(state), jnp.result_type(state), out)
            for k, (position, state, out) in enumerate(zip(lay.shared_input_positions(), outer.shared, shared_outs))
        ]
        for what, position, shape, dtype, out in carried:
            returned = (jnp.shape(out), jnp.result_type(out))
            if returned != (tuple(shape), dtype):
                raise InvalidValueError(
                    f"{what} of Scan {self.node.op} (initial {outer_name(self.node.inputs[position])!r}): "
                    f"the step returns {type_name(*returned)}, the state is {type_name(shape, dtype)}. "
                    "Each step must return its state's shape and dtype: change the step, or give "
                    "an initial value of the shape the step returns."
                )

    def first_step(self, outer: Outer) -> list[Any]:
        """The inner graph's inputs in the first step (the sequences' rows first)."""
        lay = self.layout
        mm_rows = [read_rows(b, -m, taps) for b, m, taps in zip(outer.mit_mot, lay.mit_mot_mintaps(), lay.mit_mot_in)]
        sot_rows = [read_rows(b, w, taps) for b, w, taps in zip(outer.sots, lay.sot_windows(), lay.sot_taps)]
        seq_rows = [sequence_row(s, 0) for s in outer.seqs]
        return [*seq_rows, *flatten(mm_rows), *flatten(sot_rows), *outer.shared, *outer.non_seqs]

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
                    f"mit-mot buffer of {buffer.shape[0]} rows is too short for {n_steps} steps in node {self.node}",
                    node=self.node,
                )
            padded = jnp.concatenate([buffer, jnp.zeros((span,) + buffer.shape[1:], buffer.dtype)])
            windows.append(padded[:span])
            incoming.append(padded[span : span + n_steps])
        return windows, incoming

    def start(self, plan: LoopPlan, mit_mot: Sequence[Any], codes: InnerCodes) -> Carry:
        """The carry before the first step, with ``mit_mot`` as the mit-mot state and the step's ``codes``."""
        return Carry(
            mit_mot=tuple(mit_mot),
            windows=tuple(sw.start(b) for sw, b in zip(self.windows, plan.outer.sots)),
            shared=tuple(plan.outer.shared),
            failed=codes.start(),
        )

    def step(
        self,
        plan: LoopPlan,
        codes: InnerCodes,
        carry: Carry,
        seq_rows: Sequence[Any],
        mm_rows: list[list[Any]],
        noise_rows: Sequence[Any],
    ) -> Stepped:
        """One step of either loop, given the rows it reads of the sequences, the mit-mots and the noise.

        The step's mit-sot/sit-sot and shared outputs are checked against
        their states (`check_carry`) and replace them in the carry.
        """
        sot_rows = [sw.rows(w) for sw, w in zip(self.windows, carry.windows)]
        states = self.noise.step_states(carry.shared, noise_rows)
        with tracing_loop_body():
            (mm_outs, sot_outs, nit_outs, shared_outs, until), failed = codes.step(
                carry.failed, self.run_inner, seq_rows, mm_rows, sot_rows, states, plan.outer.non_seqs
            )
        self.check_carry(plan.outer, sot_outs, shared_outs)
        new = carry._replace(
            windows=tuple(sw.shifted(w, y) for sw, w, y in zip(self.windows, carry.windows, sot_outs)),
            shared=tuple(same_type_as(v, s) for v, s in zip(shared_outs, carry.shared)),
            failed=failed,
        )
        return Stepped(new, self.mit_mot_out_groups(mm_outs), [*plan.kept(sot_outs), *nit_outs], until)

    def sot_results(self, plan: LoopPlan, windows: Sequence[Any], histories: Iterator[Any]) -> list[Any]:
        """Each mit-sot/sit-sot's output: the next of ``histories`` where its trace is kept, else its last window.

        A last window gives as many of its last rows as the buffer has.
        """
        return [
            next(histories) if keep else sw.as_rows(window)[-b.shape[0] :]
            for sw, b, keep, window in zip(self.windows, plan.outer.sots, plan.traced, windows)
        ]

    def fixed_loop(self, plan: LoopPlan) -> list[Any]:
        """A fixed number of steps: ``lax.scan``, traces leaving as stacked ``ys``."""
        lay = self.layout
        n_steps, seqs, mit_mot, sots, _, sizes, _, noise = plan.outer
        mm_windows, mm_incoming = self.mit_mot_windows(n_steps, mit_mot)

        def body(carry: Carry, rows: tuple[list[Any], ...]) -> tuple[Carry, tuple[list[Any], list[Any]]]:
            seq_rows, entering, noise_rows = rows
            mm_rows = [window_rows(w, m, taps) for w, m, taps in zip(carry.mit_mot, self.mintaps, lay.mit_mot_in)]
            new, mm_outs, traces, _ = self.step(plan, codes, carry, seq_rows, mm_rows, noise_rows)
            written = [
                window_written(w, m, taps, values)
                for w, m, taps, values in zip(carry.mit_mot, self.mintaps, lay.mit_mot_out, mm_outs)
            ]
            mit_mot = tuple(shift_in(w, row) for w, row in zip(written, entering))
            return new._replace(mit_mot=mit_mot), ([w[0] for w in written], traces)

        codes = InnerCodes()
        start = self.start(plan, mm_windows, codes)
        xs = (seqs, mm_incoming, noise)
        if self.progress is None:
            final, (mm_traces, traces) = lax.scan(body, start, xs, length=n_steps)
        else:
            final, (mm_traces, traces) = self.progress.scan(body, start, xs, n_steps, self.node.op.name or "Scan")
        codes.fold(final.failed)
        mm_results = [
            jnp.concatenate([trace, window, b[n_steps + window.shape[0] :]])[: b.shape[0]]
            for b, trace, window in zip(mit_mot, mm_traces, final.mit_mot)
        ]
        kept = zip(plan.kept(sots), plan.kept(self.windows), traces)
        histories = (history_rows(b.shape[0], b[: sw.width], trace) for b, sw, trace in kept)
        sot_results = self.sot_results(plan, final.windows, histories)
        nit_results = [history_rows(size, None, trace) for size, trace in zip(sizes, traces[sum(plan.traced) :])]
        return [*mm_results, *sot_results, *nit_results, *self.noise.after_loop(final.shared, noise, n_steps)]

    def mit_mot_out_groups(self, outs: Sequence[Any]) -> list[list[Any]]:
        """A step's mit-mot outputs (flat), grouped per mit-mot."""
        return split_by(outs, [len(t) for t in self.layout.mit_mot_out])

    def while_loop(self, plan: LoopPlan) -> list[Any]:
        """An ``until`` loop, or one whose number of steps is traced: ``lax.while_loop``.

        Every mit-sot/sit-sot is read from its window; the outputs whose trace
        is kept are also written, write-only, into their buffers (a buffer the
        loop also read from would be copied by XLA at every step). The step is
        traced once (`traced_once`): that trace gives the nit-sot buffers'
        shapes and is replayed as the loop body.
        """
        lay = self.layout
        n_steps, seqs, mit_mot, sots, _, sizes, _, noise = plan.outer
        offsets = [sw.width for sw in plan.kept(self.windows)] + [0] * lay.n_nit_sot

        def advance(i: Any, carry: Carry) -> Stepped:
            """Step ``i``, reading and writing the whole mit-mot buffers."""
            mm_rows = [read_rows(b, i - m, taps) for b, m, taps in zip(carry.mit_mot, self.mintaps, lay.mit_mot_in)]
            noise_rows = [sequence_row(rows, i) for rows in noise]
            stepped = self.step(plan, codes, carry, [sequence_row(s, i) for s in seqs], mm_rows, noise_rows)
            mit_mot = tuple(
                write_rows(b, i - m, taps, values)
                for b, m, taps, values in zip(carry.mit_mot, self.mintaps, lay.mit_mot_out, stepped.mit_mot)
            )
            return stepped._replace(carry=stepped.carry._replace(mit_mot=mit_mot))

        first = jnp.asarray(0, "int32")
        codes = InnerCodes()
        start = self.start(plan, mit_mot, codes)
        step, example = traced_once(advance, first, start)
        nit_rows = example.traces[len(example.traces) - len(sizes) :]
        nit_buffers = [jnp.zeros((size,) + row.shape, row.dtype) for size, row in zip(sizes, nit_rows)]

        def cond(state: WhileCarry) -> Any:
            return state.running & (state.step < n_steps)

        def body(state: WhileCarry) -> WhileCarry:
            carry, _, rows, until = step(state.step, state.carry)
            i, buffers = state.step, zip(state.buffers, offsets, rows)
            return WhileCarry(
                step=i + 1,
                running=jnp.logical_not(jnp.asarray(until[0]).astype(bool)) if until else state.running,
                carry=carry,
                buffers=tuple(write_rows(b, i + offset, (0,), (y,)) for b, offset, y in buffers),
            )

        buffers = (*plan.kept(sots), *nit_buffers)
        final = lax.while_loop(cond, body, WhileCarry(first, jnp.asarray(True), start, buffers))
        codes.fold(final.carry.failed)
        laid_out = iter(
            ordered_history(b, final.step, offset, n_steps, lay.as_while) for b, offset in zip(final.buffers, offsets)
        )
        sot_results = self.sot_results(plan, final.carry.windows, laid_out)
        shared = self.noise.after_loop(final.carry.shared, noise, final.step)
        return [*final.carry.mit_mot, *sot_results, *laid_out, *shared]


def stepping_on_host(node: Apply) -> Apply:
    """``node``, or a copy whose Scan compiles its step for the host when the Scan's mode is a JIT one.

    Aesara's ``Scan.perform`` compiles the step with the Scan's mode, which is
    aejax's own when it is the default mode: a jit program per value of each
    shape-deciding step input, inside a host callback. The copy keeps the
    mode's rewrites and runs them with Python thunks (no C compilation, as
    for the rest of an aejax function).
    """
    op = node.op
    mode = get_mode(op.mode)
    if not isinstance(mode.linker, JITLinker):
        return node
    host_mode = Mode(linker=VMLinker(use_cloop=False, c_thunks=False), optimizer=mode.provided_optimizer)
    return scan_twin(node, op.inner_inputs, op.inner_outputs, host_mode)


def scan_twin(node: Apply, inner_inputs: Sequence[Variable], inner_outputs: Sequence[Variable], mode: Any) -> Apply:
    """``node``'s Scan with the inner graph ``inner_inputs -> inner_outputs`` and ``mode``, on the same inputs.

    ``node`` itself if the twin's outputs would have other types.
    """
    twin = scan_like(node.op, inner_inputs, inner_outputs, mode=mode).make_node(*node.inputs)
    return twin if [o.type for o in twin.outputs] == [o.type for o in node.outputs] else node


def merged_inner_graph(fgraph: FunctionGraph) -> FunctionGraph:
    """A clone of a Scan's inner graph in which each computation is made once.

    Aesara's Scan builds the inner graph of a Scan nested in another one
    once for the outputs of the enclosing step and again for its updates:
    in aehmc's NUTS every trajectory was integrated twice, and four times
    in a Scan of transitions (`merged_copies` merges those copies).

    A nested Scan also recomputes the values of the enclosing step that it
    reads: ``aesara.scan`` passes it only their roots, as non-sequences.
    aehmc's U-turn check, a Scan in the integration step, made again the
    leapfrog step (the potential and its gradient) that the step had just
    made: 13.3 potential evaluations per NUTS transition of 8.1 leapfrog
    steps. What a nested Scan computes from its non-sequences alone moves
    out into this graph (`invariants_moved_out`), where merging meets it
    with this step's own copy. Each nested Scan's inner graph is made so
    first (`nested_steps_merged`): the U-turn check's copy must reach the
    integration step while the step's own copy is whole, before the part of
    it that reads only the expansion step's values (the direction drawn
    there) moves out into the expansion step in turn.

    The inner graph of a Scan that `with_merged_step` made is merged
    already: it is cloned, not merged again (the lowering of a Scan nested
    in another would otherwise merge again every Scan nested in it).
    """
    if fgraph in _merged_steps:
        return fgraph.clone()
    inner = merged_copies(fgraph)
    changed = nested_steps_merged(inner)
    # Moving out comes first in each round, so a changed graph is merged after it.
    while invariants_moved_out(inner) or changed:
        inner = merged_copies(inner)
        changed = False
    return inner


def merged_copies(fgraph: FunctionGraph) -> FunctionGraph:
    """A clone of ``fgraph`` with equal computations merged.

    One `MergeOptimizer` pass leaves some copies, so passes run on fresh
    clones until one removes no node. A first pass that removes none ends
    it: the next clone would be the same graph again.
    """
    inner, before = _merged_clone(fgraph), len(fgraph.apply_nodes)
    while len(inner.apply_nodes) < before:
        before = len(inner.apply_nodes)
        again = _merged_clone(inner)
        if len(again.apply_nodes) < before:
            inner = again
    return inner


def _merged_clone(fgraph: FunctionGraph) -> FunctionGraph:
    merged = fgraph.clone()
    MergeOptimizer().rewrite(merged)
    return merged


def nested_steps_merged(fgraph: FunctionGraph) -> bool:
    """Whether some Scans in ``fgraph`` were given, in place, inner graphs made by `merged_inner_graph`."""
    changed = False
    for node in [node for node in fgraph.toposort() if isinstance(node.op, Scan)]:
        twin = with_merged_step(node)
        if twin is not node:
            fgraph.replace_all(list(zip(node.outputs, twin.outputs)), reason="merged_inner_graph")
            changed = True
    return changed


def with_merged_step(node: Apply) -> Apply:
    """``node``'s Scan with its inner graph made by `merged_inner_graph`, on the same inputs.

    ``node`` itself if that graph has no Scan in it (merging there can wait
    for the lowering), if it is merged already, or if the copy's outputs
    have other types.
    """
    op = node.op
    if op.fgraph in _merged_steps or not any(isinstance(inner.op, Scan) for inner in op.fgraph.apply_nodes):
        return node
    step = merged_inner_graph(op.fgraph)
    twin = scan_twin(node, step.inputs, step.outputs, op.mode)
    if twin is not node:
        _merged_steps.add(twin.op.fgraph)
    return twin


_merged_steps: weakref.WeakSet[FunctionGraph] = weakref.WeakSet()
"""The inner graphs of the Scans `with_merged_step` made, which `merged_inner_graph` leaves as they are."""


_push_out_non_seqs = in2out(push_out_non_seq_scan, ignore_newtrees=True)


def invariants_moved_out(fgraph: FunctionGraph) -> bool:
    """Whether some of the Scans in ``fgraph`` computed values from their non-sequences alone, now computed in ``fgraph``.

    Aesara's ``push_out_non_seq_scan`` moves them, in place: each is the
    same at every step of its loop.
    """
    before = set(fgraph.apply_nodes)
    _push_out_non_seqs.rewrite(fgraph)
    return set(fgraph.apply_nodes) != before


@jax_funcify.register(Scan)
def _scan(op: Scan, node: Any = None, progress: Progress | None = None, **kwargs: Any) -> LoweredScan:
    inner = merged_inner_graph(op.fgraph)
    rewrite_step(inner, op.mode)
    lowered = LoweredScan(op, node, jax_funcify(inner, **kwargs), inner, progress)  # nested Scans get no bar
    return takes_run_time_lengths(lowered, ragged=True, ranges=True)
