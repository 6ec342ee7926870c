"""aejax's own rewrites of Scans.

- `ScanKeepLast`: when only the last value of a Scan output is used, its
  buffer holds only the rows the loop reads, so the loop carries no trace.
  Unlike Aesara's ``scan_save_mem`` it writes buffer sizes that do not depend
  on the number of steps (JAX needs static shapes, while that number may be
  known only at run time), and it also serves ``until`` loops, which
  ``scan_save_mem`` leaves alone.
- `ScanSequencesUncut`: gives a Scan the sequence ``x`` where ``aesara.scan``
  gave it ``x[:n_steps]``.
- `FixedLengthScanMerge`: Aesara's ``scan_merge`` for loops of a fixed length.
- `ScanSequenceBounds`: gives an integer sequence from whose rows the step
  makes a size the bounds of its values (`aejax.linker.graph.value_bounds`).

`aejax.linker.rewrites.query` says where each runs among Aesara's rewrites.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import aesara.tensor as at
import numpy as np
from aesara.graph.basic import Apply, Constant, Variable, ancestors, io_toposort
from aesara.graph.fg import FunctionGraph
from aesara.graph.rewriting.basic import NodeRewriter, in2out
from aesara.raise_op import CheckAndRaise
from aesara.scalar.basic import Cast
from aesara.scan.op import Scan
from aesara.scan.rewriting import ScanMerge
from aesara.tensor.basic import Alloc, AllocEmpty, ARange, ScalarFromTensor, TensorFromScalar
from aesara.tensor.elemwise import Elemwise
from aesara.tensor.exceptions import NotScalarConstantError
from aesara.tensor.extra_ops import BroadcastTo
from aesara.tensor.shape import Shape, Shape_i
from aesara.tensor.subtensor import IncSubtensor, Subtensor, get_constant_idx

from aejax.linker.graph.scan_layout import ScanLayout, scan_like
from aejax.linker.graph.value_bounds import ValuesWithin, within_bounds
from aejax.linker.rewrites.shape import axis_length


def _constant_index(client: Any) -> list[Any] | None:
    if not isinstance(getattr(client, "op", None), Subtensor):
        return None
    try:
        return get_constant_idx(client.op.idx_list, client.inputs, only_process_constants=True)
    except NotScalarConstantError:
        return None


class TailRead(NamedTuple):
    """A variable that reads ``var[skipped:]`` of a Scan output ``var``: its last row, or the length of an axis."""

    variable: Variable
    skipped: int
    axis: int | None
    """The axis whose length it reads (``var[skipped:].shape[axis]``); ``None`` for the last row."""


def tail_reads(fgraph: FunctionGraph, var: Variable, skipped: int = 0) -> list[TailRead] | None:
    """The ``var[-1]`` and ``var.shape[i]`` (or ``var[k:][-1]``, ``var[k:].shape[i]``) reads, if they are
    all that uses ``var`` (maybe none)."""
    reads = []
    for client, _ in fgraph.clients[var]:
        if isinstance(getattr(client, "op", None), Shape_i):
            reads.append(TailRead(client.outputs[0], skipped, client.op.i))
            continue
        index = _constant_index(client)
        if index is None or len(index) != 1:
            return None
        first = index[0]
        if first == -1:
            reads.append(TailRead(client.outputs[0], skipped, None))
        elif isinstance(first, slice) and first.stop is None and first.step is None:
            tails = tail_reads(fgraph, client.outputs[0], skipped + max(int(first.start or 0), 0))
            if tails is None:
                return None
            reads.extend(tails)
        else:
            return None
    return reads


def last_row(buffer: Variable, n_steps: Variable, rows_needed: int) -> Variable:
    """``buffer[-1]`` of a shrunk buffer, failing as the full one would when it is too short.

    The full buffer had too few rows for the read when the Scan ran fewer than
    ``rows_needed`` steps; the shrunk one always has its initial rows.
    """
    if rows_needed <= 0:
        return buffer[-1]
    message = "index -1 is out of bounds: the Scan ran too few steps for its last value"
    return CheckAndRaise(IndexError, message)(buffer[-1], at.ge(n_steps, rows_needed))


def initial_rows(buffer: Variable, width: int) -> Variable:
    """The first ``width`` rows of a Scan output buffer, without the buffer when it can.

    Aesara builds a buffer as ``set_subtensor(AllocEmpty(n_steps + k)[:k], init)``;
    its first rows are those of ``init``, and the buffer, whose size depends
    on the number of steps, is not needed. An ``init`` of exactly ``width``
    rows is taken whole, also when only its ``Unbroadcast`` input says so
    (``aesara.scan``'s ``unbroadcast(x0[None])``): Aesara's
    ``local_dimshuffle_subtensor`` fails on ``x0[None][:1][0]``.
    """
    node = buffer.owner
    if node is not None and isinstance(node.op, IncSubtensor) and node.op.set_instead_of_inc:
        target, init = node.inputs[:2]
        if isinstance(getattr(target.owner, "op", None), AllocEmpty):
            rows = axis_length(init, 0)
            return init if isinstance(rows, Constant) and rows.data == width else init[:width]
    return buffer[:width]


def _recurrent_sots(op: Scan, layout: ScanLayout) -> list[bool]:
    """For each mit-sot/sit-sot, whether its step's value depends on a state the loop carries.

    A value that does not (``{shared: u + 4}`` of a sequence ``u``) may be
    computed for all steps at once: Aesara's ``scan_pushout_seqs_ops`` then
    writes it into the buffer past its initial rows, which needs the buffer's
    full length.
    """
    _, mit_mot_taps, sot_taps, shared, _ = layout.inner_inputs(op.inner_inputs)
    states = set(mit_mot_taps + sot_taps + shared)
    sots = layout.inner_outputs(op.inner_outputs)[1]
    return [any(var in states for var in ancestors([out])) for out in sots]


def _nit_sots_read_in_step(op: Scan, layout: ScanLayout) -> list[bool]:
    """For each nit-sot of a loop of a fixed length, whether other work of the step reads its value.

    Aesara's ``scan_pushout_add`` (which leaves until loops alone) may then
    push that work out of the loop, and give it the nit-sot's outer output as
    the value at every step, which needs its full trace.
    """
    nit_sots = layout.inner_outputs(op.inner_outputs)[2]
    if layout.as_while:
        return [False] * len(nit_sots)
    read = {var for node in io_toposort(op.inner_inputs, op.inner_outputs) for var in node.inputs}
    return [out in read for out in nit_sots]


class ScanKeepLast(NodeRewriter):
    """Shrink the buffers of a Scan's outputs of which only the last row and the length are used.

    Only the outputs whose step reads a carried state (`_recurrent_sots`), and
    the nit-sots no other work of the step reads (`_nit_sots_read_in_step`),
    are shrunk; the others keep their full buffer for Aesara's push-outs. A
    length read becomes the number of steps run: ``n_steps`` for a loop of a
    fixed length, and for an ``until`` loop a count the loop keeps
    (`counting_steps`).

    A class rather than a decorated function so that compiled functions and
    the mode pickle (a decorated function is not importable by its name).
    """

    def tracks(self) -> list[type]:
        return [Scan]

    def transform(self, fgraph: FunctionGraph, node: Any, *args: Any, **kwargs: Any) -> dict[Variable, Variable] | bool:
        if not isinstance(node.op, Scan):
            return False
        layout = ScanLayout.of(node.op)
        inputs = list(node.inputs)
        shrunk: dict[int, tuple[list[TailRead], int]] = {}
        recurrent = _recurrent_sots(node.op, layout)
        for k, width in enumerate(layout.sot_windows()):
            out = layout.sot_output_index(k)
            reads = tail_reads(fgraph, node.outputs[out])
            if reads is not None and recurrent[k]:
                position = layout.sot_input_index(k)
                inputs[position] = initial_rows(inputs[position], width)
                shrunk[out] = (reads, width)
        read_in_step = _nit_sots_read_in_step(node.op, layout)
        for k in range(layout.n_nit_sot):
            out = layout.nit_sot_output_index(k)
            reads = tail_reads(fgraph, node.outputs[out])
            if reads is not None and not read_in_step[k]:
                position = layout.nit_sot_input_index(k)
                inputs[position] = at.as_tensor_variable(1, dtype=node.inputs[position].dtype)
                shrunk[out] = (reads, 0)
        if not shrunk:
            return False
        return _shrunk_reads(node, inputs, shrunk, layout.as_while)


def _shrunk_reads(
    node: Apply, inputs: list[Variable], shrunk: dict[int, tuple[list[TailRead], int]], as_while: bool
) -> dict[Variable, Variable]:
    """Each output of ``node`` and each read of a ``shrunk`` one, replaced by those of the Scan on ``inputs``.

    ``shrunk`` maps an output's index to its reads and its initial rows.
    """
    counted = as_while and any(read.axis == 0 for reads, _ in shrunk.values() for read in reads)
    op = node.op
    if counted:
        op, inputs = counting_steps(op, inputs)
    new = op.make_node(*inputs)
    steps = new.outputs[-1] if counted else node.inputs[0]
    replacements: dict[Variable, Variable] = {}
    for index, (old, fresh) in enumerate(zip(node.outputs, new.outputs)):
        if index not in shrunk:
            replacements[old] = fresh
            continue
        reads, width = shrunk[index]
        replacements.update((read.variable, _read_of(read, fresh, width, steps, node.inputs[0])) for read in reads)
    return replacements


def _read_of(read: TailRead, shrunk: Variable, width: int, steps: Variable, n_steps: Variable) -> Variable:
    """What ``read`` reads, from the ``shrunk`` buffer of an output with ``width`` initial rows after ``steps`` steps.

    The full buffer has ``width + steps`` rows; ``n_steps`` is the most steps the loop may run.
    """
    if read.axis is None:
        return last_row(shrunk, n_steps, read.skipped + 1 - width)
    if read.axis > 0:
        return shrunk.shape[read.axis]
    return at.cast(at.maximum(steps + (width - read.skipped), 0), read.variable.dtype)


def counting_steps(op: Scan, outer_inputs: Sequence[Variable]) -> tuple[Scan, list[Variable]]:
    """``op`` with one more shared state, last, that counts the steps run, and its outer inputs.

    The new node's last output is that count (int64): the number of steps an
    ``until`` loop ran, which its traces' lengths tell only when kept whole.
    """
    layout = ScanLayout.of(op)
    seqs, mit_mots, sots, shared, non_seqs = layout.inner_inputs(op.inner_inputs)
    mit_mot_outs, sot_outs, nit_sot_outs, shared_outs, until = layout.inner_outputs(op.inner_outputs)
    count = at.lscalar("steps_run")
    twin = scan_like(
        op,
        [*seqs, *mit_mots, *sots, *shared, count, *non_seqs],
        [*mit_mot_outs, *sot_outs, *nit_sot_outs, *shared_outs, count + 1, *until],
        info=replace(op.info, n_shared_outs=op.info.n_shared_outs + 1),
    )
    n_steps, outer_seqs, outer_mit_mots, outer_sots, outer_shared, sizes, outer_non_seqs = layout.outer_inputs(
        outer_inputs
    )
    start = at.as_tensor_variable(np.int64(0))
    return twin, [*n_steps, *outer_seqs, *outer_mit_mots, *outer_sots, *outer_shared, start, *sizes, *outer_non_seqs]


class ScanSequencesUncut(NodeRewriter):
    """Give a Scan ``x`` where it was given the sequence ``x[:stop]``.

    A Scan reads only its first ``n_steps`` rows of a sequence, so cutting the
    sequence first changes nothing but its length check, while the cut's
    length may be known only at run time (``aesara.scan`` cuts every sequence
    to ``n_steps``). The Scan lowering checks ``x`` against ``n_steps`` itself;
    ``x`` is shorter than ``n_steps`` exactly when ``x[:stop]`` is. Counts
    computed from shapes are concrete while tracing, so those cuts stay.
    """

    def tracks(self) -> list[type]:
        return [Scan]

    def transform(self, fgraph: FunctionGraph, node: Any, *args: Any, **kwargs: Any) -> list[Variable] | bool:
        if not isinstance(node.op, Scan) or _from_shapes(node.inputs[0]):
            return False
        layout = ScanLayout.of(node.op)
        inputs = list(node.inputs)
        for position in range(1, 1 + layout.n_seqs):
            inputs[position] = _uncut(inputs[position], node.inputs[0])
        if inputs == node.inputs:
            return False
        return node.op.make_node(*inputs).outputs


def _uncut(seq: Variable, n_steps: Variable) -> Variable:
    """``x`` for a sequence ``x[:stop]`` whose stop is the Scan's ``n_steps``; else ``seq``."""
    node = seq.owner
    if node is None or not isinstance(node.op, Subtensor) or len(node.op.idx_list) != 1:
        return seq
    cut = node.op.idx_list[0]
    if not isinstance(cut, slice) or cut.start is not None or cut.step is not None or cut.stop is None:
        return seq
    return node.inputs[0] if _unwrapped(node.inputs[1]) is _unwrapped(n_steps) else seq


def _from_shapes(count: Variable) -> bool:
    """Whether ``count`` is computed from shapes (so concrete while tracing)."""
    return any(v.owner is not None and isinstance(v.owner.op, (Shape, Shape_i)) for v in ancestors([count]))


def _unwrapped(count: Variable) -> Variable:
    """``count`` without the scalar/tensor conversions and casts around it."""
    while count.owner is not None and isinstance(count.owner.op, (ScalarFromTensor, TensorFromScalar, Elemwise)):
        if isinstance(count.owner.op, Elemwise) and not isinstance(count.owner.op.scalar_op, Cast):
            break
        count = count.owner.inputs[0]
    return count


sequences_uncut = in2out(ScanSequencesUncut(), name="scan_sequences_uncut", ignore_newtrees=True)
keep_last = in2out(ScanKeepLast(), name="scan_keep_last", ignore_newtrees=True)


class FixedLengthScanMerge(ScanMerge):
    """Aesara's ``scan_merge``, for Scans without an ``until`` condition.

    Aesara merges two until loops whose conditions are the same graph of
    their inner inputs, even when those inputs hold different values (each
    loop's own state, or a different limit): the merged loop stops where the
    first loop stops, and the other loop's trace gets that loop's length.
    """

    def belongs_to_set(self, node: Any, set_nodes: list[Any]) -> bool:
        return not node.op.info.as_while and super().belongs_to_set(node, set_nodes)


BOUNDED_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"})
"""The dtypes of sequences `ScanSequenceBounds` bounds: those whose values int64 holds."""

LARGEST_ROUNDED = 2**62
"""Largest bound rounded up to a power of two; a larger one is kept as it is (the next would overflow int64)."""


def size_inputs(node: Apply) -> list[Variable]:
    """The inputs of ``node`` that decide the size of an output: those whose values must bound a buffer.

    The bounds of an ``arange``, the shape of an ``alloc``, a Scan's number of
    steps and nit-sot sizes, and the inputs of a nested Scan that decide a
    size in its step.
    """
    op = node.op
    if isinstance(op, (ARange, AllocEmpty)):
        return list(node.inputs)
    if isinstance(op, (Alloc, BroadcastTo)):
        return list(node.inputs[1:])
    if isinstance(op, Scan):
        return _scan_size_inputs(node)
    return []


def _scan_size_inputs(node: Apply) -> list[Variable]:
    """A Scan node's number of steps, nit-sot sizes, and the sequences and non-sequences its step makes sizes from."""
    op = node.op
    layout = ScanLayout.of(op)
    deciding = sizes_decided_by(op.inner_inputs, op.inner_outputs)
    inner_seqs, *_, inner_non_seqs = layout.inner_inputs(op.inner_inputs)
    _, outer_seqs, *_, nit_sizes, outer_non_seqs = layout.outer_inputs(node.inputs)
    paired = list(zip(outer_seqs, inner_seqs)) + list(zip(outer_non_seqs, inner_non_seqs))
    return [node.inputs[0], *nit_sizes, *(outer for outer, inner in paired if inner in deciding)]


def sizes_decided_by(inputs: list[Variable], outputs: list[Variable]) -> set[Variable]:
    """The variables of the graph from ``inputs`` to ``outputs`` whose values decide the size of a value in it."""
    sizes = [var for node in io_toposort(inputs, outputs) for var in size_inputs(node)]
    return values_behind(sizes, set(inputs))


def values_behind(variables: list[Variable], inputs: set[Variable]) -> set[Variable]:
    """``variables`` and those whose values they are computed from, back to ``inputs``.

    Not through a shape: ``x.shape[0]`` reads none of the values of ``x``
    (``zeros_like(y_t)`` takes no bound from the values of ``y_t``).
    """
    found: set[Variable] = set()
    pending = list(variables)
    while pending:
        var = pending.pop()
        if var in found:
            continue
        found.add(var)
        node = var.owner
        if node is not None and var not in inputs and not isinstance(node.op, (Shape, Shape_i)):
            pending.extend(node.inputs)
    return found


def rounded_up(value: Variable) -> Variable:
    """The least power of two at least ``value`` (an int64 scalar), 0 for ``value <= 0``.

    Each bound is a static input of a program, one program per value;
    rounded up, a bound changes only when the value it bounds doubles.
    """
    exponent = at.ceil(at.log2(at.maximum(value, 1))).astype("int64")
    power = at.power(at.as_tensor_variable(np.int64(2)), exponent)
    power = at.switch(at.lt(power, value), power * 2, power)  # log2 rounded down near a power of two
    return at.switch(at.le(value, 0), np.int64(0), at.switch(at.gt(value, LARGEST_ROUNDED), value, power))


def bounded_values(seq: Variable, name: str) -> Variable:
    """``seq`` wrapped in `ValuesWithin`, with the extremes of its values rounded away from zero to powers of two.

    The bounds always hold 0 (an empty sequence has no extremes).
    """
    values = at.concatenate([seq.ravel().astype("int64"), at.zeros((1,), dtype="int64")])
    low = -rounded_up(-values.min())
    high = rounded_up(values.max())
    low.name, high.name = f"least value of {name}", f"greatest value of {name}"
    return within_bounds(seq, low, high)


def _boundable(seq: Variable) -> bool:
    """Whether a sequence may be given the bounds of its values: an integer one, not a constant nor bounded yet."""
    if isinstance(seq, Constant) or getattr(seq.type, "dtype", None) not in BOUNDED_DTYPES:
        return False
    return seq.owner is None or not isinstance(seq.owner.op, ValuesWithin)


class ScanSequenceBounds(NodeRewriter):
    """Give each integer sequence of a Scan from whose rows the step makes a size the bounds of its values.

    A step's size computed from a sequence row (``arange(2, y_t + 1)``) needs
    a bound for the lowering to allocate it, and the graph gives none when
    the sequence is an input. The bounds are the sequence's least and greatest
    values, rounded to powers of two (`bounded_values`); the Scan lowering
    asks for them as static inputs when its step needs them
    (`aejax.linker.scan.row_bounds`).
    """

    def tracks(self) -> list[type]:
        return [Scan]

    def transform(self, fgraph: FunctionGraph, node: Any, *args: Any, **kwargs: Any) -> list[Variable] | bool:
        if not isinstance(node.op, Scan):
            return False
        op = node.op
        layout = ScanLayout.of(op)
        deciding = sizes_decided_by(op.inner_inputs, op.inner_outputs)
        inputs = list(node.inputs)
        for k, inner in enumerate(op.inner_inputs[: layout.n_seqs]):
            seq = inputs[1 + k]
            if inner in deciding and _boundable(seq):
                inputs[1 + k] = bounded_values(seq, f"sequence {seq.name or k} of {op.name or 'a Scan'}")
        if inputs == node.inputs:
            return False
        return node.op.make_node(*inputs).outputs


sequence_bounds = in2out(ScanSequenceBounds(), name="scan_sequence_bounds", ignore_newtrees=True)
