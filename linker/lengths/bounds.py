"""Static upper bounds of run-time lengths, read from the graph.

A Scan with an ``until`` condition returns traces whose length is known only
at run time, but never longer than the buffer Aesara allocated for them,
whose size is a constant. Values computed from such a length (the backward
loop's step count in a gradient, ``zeros(trace.shape[0])``) are bounded as
well. `upper_bound` finds that bound by interval arithmetic over the graph
(constants, static shapes, `Shape_i` and ``x.shape[i]``, and integer
``+ - * ** neg max min switch``), so a lowering can allocate the bound and carry
the run-time length beside it (`aejax.linker.lengths.ragged.Ragged`) instead of
needing the length while tracing.

While a graph is traced (`tracing`), the values already computed count too:
a concrete integer is its own bound, and an array's shape is known even when
its values are not (a `Ragged` value's rows are at most its buffer's). So
``zeros(x.shape[0] - trace.shape[0])`` is bounded by the length of an input
``x``, which the graph's types leave open but every trace fixes.

An interval is also what every element of an integer tensor may hold: a
constant array's least and greatest elements, an ``arange``'s ends, the
elements of ``x`` for ``x[i]`` and ``x[a:b]``. A Scan lowering says what its
step's sequence rows hold (`values_within`): the elements of the outer
sequence. So a loop nested in a loop over ``arange(10)`` running over
``arange(1, 1 + 2 ** d)`` (aehmc's NUTS: the trajectory of the tree depth
``d``) has at most 512 steps, though ``d`` is traced in the outer step.

A sequence the graph does not bound (an input ``y``) may carry its bounds
itself (`aejax.linker.graph.value_bounds.ValuesWithin`, computed from its
values): they count once they are known while tracing, as static inputs of
the program. A lowering that needs them then raises `BoundsNeeded`, if the
program being traced can make them static (`static_inputs_possible`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import wraps
from types import MappingProxyType
from typing import Any

import numpy as np
from aesara import scalar as aes
from aesara.graph.basic import Constant, Variable
from aesara.scan.op import Scan
from aesara.tensor.basic import Alloc, AllocEmpty, ARange, ScalarFromTensor, TensorFromScalar
from aesara.tensor.elemwise import DimShuffle, Elemwise
from aesara.tensor.shape import Shape, Shape_i, SpecifyShape, Unbroadcast
from aesara.tensor.subtensor import AdvancedSubtensor, AdvancedSubtensor1, IncSubtensor, Subtensor

from aejax.linker.errors import LoweringError
from aejax.linker.graph.scan_layout import ScanLayout
from aejax.linker.graph.value_bounds import ValuesWithin
from aejax.linker.lengths.concrete import is_symbolic
from aejax.linker.lengths.ragged import Masked, Ragged
from aejax.linker.trace_context import current, entered

ELEMENTS_OF_FIRST_INPUT = (Subtensor, AdvancedSubtensor1, AdvancedSubtensor, DimShuffle, Unbroadcast, SpecifyShape)
"""Ops whose output's elements are among their first input's: their values lie within its interval."""

Interval = tuple[int, int] | None
"""The least and greatest value an integer (every element of an integer tensor) may take, or ``None`` when unknown."""


MAX_POWER_BITS = 128
"""Largest bit length of a power's bound worked out (any larger one overflows every integer dtype)."""


class BoundsNeeded(LoweringError):
    """A lowering needs the bounds of a `ValuesWithin` node (``node``) while tracing, and they are traced.

    The program being traced can make them static: it starts a program at
    ``node``, where they are inputs, made static there (one program per
    value of the bounds). It reaches the program as it is, not as a failure
    of the node whose lowering raised it.
    """

    def __init__(self, message: str, node: Any) -> None:
        super().__init__(message, node=node, needs_static=True)


def with_static_inputs(traced_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``traced_fn``, traced by a program that makes the values a `LoweringError` asks for static inputs."""

    @wraps(traced_fn)
    def traced(*args: Any) -> Any:
        with entered(static_inputs_possible=True):
            return traced_fn(*args)

    return traced


def static_inputs_possible() -> bool:
    """Whether the function being traced can make the values a `BoundsNeeded` names static.

    aejax's compiled programs can (`with_static_inputs`); a graph exported
    with ``jaxify`` cannot, as it is one function under the caller's ``jax.jit``.
    """
    return current().static_inputs_possible


@contextmanager
def tracing(values: Mapping[Variable, Any]) -> Iterator[None]:
    """Let the bounds found meanwhile read ``values``, the graph's values computed so far in this trace."""
    with entered(traced_values=values):
        yield


@contextmanager
def values_within(values: Iterable[tuple[Any, tuple[int, int]]]) -> Iterator[None]:
    """Let the bounds found meanwhile take each traced value of ``values`` within its interval.

    A Scan lowering says so of its step's sequence rows. The interval goes
    with the value, not with a variable: whichever variable of whichever
    graph holds that value has it. (Variables would not do: Aesara's inner
    graphs share their nominal inputs, so the first input of a nested loop's
    step is the same variable as that of the loop around it.) The values add
    to those of enclosing calls.
    """
    added = {id(value): (value, interval) for value, interval in values}
    with entered(values_within=MappingProxyType({**current().values_within, **added})):
        yield


def value_interval(var: Variable) -> Interval:
    """The least and greatest value every element of the integer tensor ``var`` may take, if the graph bounds them."""
    return _Bounds().interval(var)


def upper_bound(var: Variable) -> int | None:
    """The greatest value the integer scalar ``var`` may take at run time, if the graph bounds it."""
    return _Bounds().upper(var)


def fixed_value(var: Variable) -> int | None:
    """The value of the integer scalar ``var`` if the graph fixes it (``x.shape[1]`` of a value whose width is static)."""
    interval = _Bounds().interval(var)
    return interval[0] if interval is not None and interval[0] == interval[1] else None


def length_bound(var: Variable) -> int | None:
    """The greatest length the leading axis of ``var`` may have at run time, if the graph bounds it."""
    return _Bounds().length(var)


def _combine(a: Interval, b: Interval, corners: Callable[[int, int], int]) -> Interval:
    if a is None or b is None:
        return None
    values = [corners(x, y) for x in a for y in b]
    return min(values), max(values)


_BINARY: dict[type, Callable[[int, int], int]] = {
    aes.Add: lambda x, y: x + y,
    aes.Sub: lambda x, y: x - y,
    aes.Mul: lambda x, y: x * y,
    aes.ScalarMaximum: max,
    aes.ScalarMinimum: min,
}


def _power(base: Interval, exponent: Interval) -> Interval:
    """The interval of ``base ** exponent`` for integers ``>= 0`` (monotone there, so its corners bound it)."""
    if base is None or exponent is None or base[0] < 0 or exponent[0] < 0:
        return None
    if base[1] > 1 and base[1].bit_length() * exponent[1] > MAX_POWER_BITS:
        return None
    return _combine(base, exponent, lambda x, y: x**y)


def _scalar_op_interval(op: object, args: list[Interval]) -> Interval:
    if isinstance(op, (aes.Identity, aes.Cast)):
        return args[0]  # a cast that would wrap is caught by `_in_dtype`
    if isinstance(op, aes.Neg) and args[0] is not None:
        return -args[0][1], -args[0][0]
    if isinstance(op, aes.Switch) and args[1] is not None and args[2] is not None:
        return min(args[1][0], args[2][0]), max(args[1][1], args[2][1])
    if isinstance(op, aes.Pow) and len(args) == 2:
        return _power(*args)
    corners = next((f for kind, f in _BINARY.items() if isinstance(op, kind)), None)
    if corners is None or not args:
        return None
    result = args[0]
    for arg in args[1:]:
        result = _combine(result, arg, corners)
    return result


def _in_dtype(var: Variable, interval: Interval) -> Interval:
    """``interval`` if ``var``'s integer dtype holds all of it (no wrap-around), else ``None``."""
    dtype = np.dtype(var.type.dtype)
    if interval is None or dtype.kind not in "iu":
        return None
    limits = np.iinfo(dtype)
    return interval if limits.min <= interval[0] and interval[1] <= limits.max else None


class _Bounds:
    """One bound query; it remembers what it found, since index graphs share many subterms."""

    def __init__(self) -> None:
        self._intervals: dict[Variable, Interval] = {}
        self._lengths: dict[Variable, int | None] = {}
        context = current()
        self._traced = context.traced_values
        self._within = context.values_within

    def interval(self, var: Variable) -> Interval:
        if var not in self._intervals:
            integer = np.dtype(getattr(var.type, "dtype", "object")).kind in "iu"
            self._intervals[var] = _in_dtype(var, self._find_interval(var)) if integer else None
        return self._intervals[var]

    def upper(self, var: Variable) -> int | None:
        interval = self.interval(var)
        return None if interval is None else interval[1]

    def length(self, var: Variable) -> int | None:
        if var not in self._lengths:
            self._lengths[var] = self._find_length(var)
        return self._lengths[var]

    def _find_interval(self, var: Variable) -> Interval:
        known = var.data if isinstance(var, Constant) else self._traced.get(var)
        if isinstance(var, Constant) or _concrete(known):
            return _elements_interval(np.asarray(known))
        within = self._within.get(id(known)) if known is not None else None
        if within is not None and within[0] is known:
            return within[1]
        node = var.owner
        if node is None:
            return None
        op = node.op
        if isinstance(op, Shape_i):
            return self._axis_interval(node.inputs[0], op.i)
        entry = _shape_entry(node)
        if entry is not None:
            return self._axis_interval(*entry)
        if isinstance(op, (ScalarFromTensor, TensorFromScalar, *ELEMENTS_OF_FIRST_INPUT)):
            return self.interval(node.inputs[0])
        if isinstance(op, ARange):
            return self._arange_elements(*node.inputs)
        if isinstance(op, ValuesWithin):
            return self._values_within(*node.inputs)
        scalar_op = op.scalar_op if isinstance(op, Elemwise) else op
        return _scalar_op_interval(scalar_op, [self.interval(i) for i in node.inputs])

    def _values_within(self, x: Variable, low: Variable, high: Variable) -> Interval:
        """What `ValuesWithin` holds: what the graph bounds ``x`` to, else ``[low, high]`` once both are known."""
        own = self.interval(x)
        if own is not None:
            return own
        least, greatest = self.interval(low), self.interval(high)
        return None if least is None or greatest is None else (least[0], greatest[1])

    def _axis_interval(self, var: Variable, axis: int) -> Interval:
        static = var.type.shape[axis]
        if static is not None:
            return static, static
        traced = _traced_axis(self._traced.get(var), axis)
        if traced is not None:
            return traced
        bound = self.length(var) if axis == 0 else None
        return None if bound is None else (0, bound)

    def _find_length(self, var: Variable) -> int | None:
        static = var.type.shape[0] if var.type.ndim else None
        if static is not None:
            return static
        traced = _traced_axis(self._traced.get(var), 0) if var.type.ndim else None
        if traced is not None:
            return traced[1]
        node = var.owner
        if node is None:
            return None
        op = node.op
        if isinstance(op, (Alloc, AllocEmpty)):
            return self.upper(node.inputs[1] if isinstance(op, Alloc) else node.inputs[0])
        if isinstance(op, ARange):
            return self._arange_length(*node.inputs)
        if isinstance(op, (IncSubtensor, ValuesWithin)) or (
            isinstance(op, Subtensor) and isinstance(op.idx_list[0], slice)
        ):
            return self.length(node.inputs[0])
        if isinstance(op, Elemwise):
            lengths = [self.length(i) for i in node.inputs if i.type.ndim == var.type.ndim and i.type.shape[0] != 1]
            return max(lengths) if lengths and None not in lengths else None
        if isinstance(op, Scan):
            return self._scan_output_length(node, node.outputs.index(var))
        return None

    def _arange_length(self, start: Variable, stop: Variable, step: Variable) -> int | None:
        """At most ``(max stop - min start) / step`` rows, for a constant positive step."""
        bounds = [self.interval(v) for v in (start, stop, step)]
        if None in bounds or bounds[2][0] != bounds[2][1] or bounds[2][0] <= 0:
            return None
        (low, _), (_, high), (step_value, _) = bounds
        return max(0, -(-(high - low) // step_value))

    def _arange_elements(self, start: Variable, stop: Variable, step: Variable) -> Interval:
        """What an integer ``arange`` holds, for a constant step: from ``start`` up to ``stop - 1`` (down to ``stop + 1``)."""
        first, last, steps = (self.interval(v) for v in (start, stop, step))
        if first is None or last is None or steps is None or steps[0] != steps[1] or steps[0] == 0:
            return None
        if steps[0] > 0:
            return first[0], max(first[0], last[1] - 1)  # an empty range holds nothing, so any interval does
        return min(first[1], last[0] + 1), first[1]

    def _scan_output_length(self, node: Any, index: int) -> int | None:
        """A Scan output is at most as long as its outer buffer (a nit-sot: its size input)."""
        position = ScanLayout.of(node.op).size_input_of_output(index)
        if position is None:
            return None
        size = node.inputs[position]
        return self.upper(size) if size.type.ndim == 0 else self.length(size)


def _shape_entry(node: Any) -> tuple[Variable, int] | None:
    """``(x, axis)`` if ``node`` is ``x.shape[axis]`` written as a `Subtensor` of `Shape` at a constant axis."""
    op = node.op
    if not isinstance(op, Subtensor) or len(node.inputs) != 2 or isinstance(op.idx_list[0], slice):
        return None
    if not isinstance(node.inputs[1], Constant):
        return None
    shape = node.inputs[0].owner
    if shape is None or not isinstance(shape.op, Shape):
        return None
    return shape.inputs[0], int(node.inputs[1].data)


def _elements_interval(data: np.ndarray) -> Interval:
    """The least and greatest element of a concrete integer array (``None`` for other dtypes, or no elements)."""
    if data.dtype.kind not in "iu" or data.size == 0:
        return None
    return int(data.min()), int(data.max())


def _concrete(value: Any) -> bool:
    """Whether a value computed while tracing is known (a number or numpy array, not a JAX tracer)."""
    return isinstance(value, (int, np.integer, np.ndarray))


def _traced_axis(value: Any, axis: int) -> Interval:
    """The least and greatest length of ``axis`` of a value computed while tracing (``None`` if it is not an array).

    A JAX array's shape is static even while its values are traced; the rows
    of a value of run-time length are at most those of its buffer.
    """
    if isinstance(value, (Ragged, Masked)):
        rows = value.buffer.shape
        return (0, rows[0]) if axis == 0 else (rows[axis], rows[axis])
    shape = getattr(value, "shape", None)
    if shape is None or axis >= len(shape) or is_symbolic(shape[axis]):
        return None  # not an array, or a symbolic dimension of jax.export: no static bound
    return shape[axis], shape[axis]
