"""Turn an Aesara `FunctionGraph` into a JAX-traceable Python function.

The function walks the graph's nodes in topological order. Two rules keep
shapes concrete while JAX traces it (the values that must be concrete:
`aejax.linker.lengths.concrete`):

- A node whose inputs are all concrete (numpy values, not tracers) and small
  is evaluated with numpy through the Op's own ``perform``, Aesara's reference
  implementation; so ``x.shape[0] * 2``, `MakeVector` of constants, casts and
  slice bounds stay plain integers. Results larger than `FOLD_LIMIT`
  elements are not folded.
- Every other node runs its JAX lowering; outputs are cast to the dtype the
  graph declares, so JAX's promotion rules never change a graph's types.

The nodes only one branch of an `IfElse` needs run inside that branch, as
Aesara runs them: only if it is taken (`aejax.linker.trace.branches`).

A failing node raises `LoweringError` naming the node and its traced inputs.
Three kinds of errors pass through unchanged: a `ValueCheckError` (a lowering
found the graph's values invalid), the exception an Op declares it raises
(``exc_type``, as `CheckAndRaise` does), and a `BoundsNeeded` (it names the
node whose bounds the program should make static).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from aesara.graph.basic import Apply, Constant, NoParams, Variable, ancestors
from aesara.graph.fg import FunctionGraph
from aesara.graph.utils import MethodNotDefined
from aesara.scalar.basic import ScalarType
from aesara.scan.op import Scan
from aesara.tensor.basic import AllocEmpty
from aesara.tensor.random.op import RandomVariable
from aesara.tensor.type import DenseTensorType, TensorType
from aesara.tensor.type_other import SliceType

from aejax.linker.checks import require
from aejax.linker.errors import (
    InvalidValueError,
    LoweringError,
    NodeIndexError,
    NodeTypeError,
    NodeValueError,
    NotStaticError,
    ValueCheckError,
    variable_name,
)
from aejax.linker.lengths import masked
from aejax.linker.lengths.bounds import BoundsNeeded, length_bound, tracing
from aejax.linker.lengths.concrete import is_shape_failure, is_symbolic, is_traced
from aejax.linker.lengths.consumers import run_time_lengths_taken
from aejax.linker.lengths.ragged import (
    RUN_TIME_LENGTH,
    Masked,
    NeedsSplit,
    Ragged,
    RangeRows,
    each_output,
    rows_padded,
    selected_rows_first,
)
from aejax.linker.trace.branches import VALUE_FAILURES, Branch, branch_inputs, if_else, plan_branches
from aejax.linker.trace.call_values import CallValues, call_values
from aejax.linker.trace.host_failures import HostObjectError, UnknownShapesError

FOLD_LIMIT = 64
"""Largest number of elements a value may have to be computed with numpy while tracing."""


def is_numeric(var: Variable) -> bool:
    """Whether ``var`` is a dense tensor or a scalar (sparse tensors are not)."""
    return isinstance(var.type, (DenseTensorType, ScalarType))


def host_value(value: Any, var: Variable) -> Any:
    """``value`` as the numpy value ``var``'s ``perform`` takes.

    Arrays are copied: ``perform`` may write to its inputs, and values from
    constants or JAX callbacks must not change (or are read-only). ``None``
    (an input given as ``None``, which `Default` replaces) stays ``None``.
    """
    if value is None:
        return None
    if isinstance(var.type, DenseTensorType):
        return np.array(value, dtype=var.type.dtype)
    if isinstance(var.type, ScalarType):
        return np.dtype(var.type.dtype).type(value)
    return value


def _foldable(node: Apply, args: Sequence[Any]) -> bool:
    # AllocEmpty's values are not a function of its inputs; a Scan's perform is a Python loop.
    if isinstance(node.op, (Scan, RandomVariable, AllocEmpty)):
        return False
    if not all(is_numeric(out) for out in node.outputs):
        return False
    return not any(is_traced(arg) for arg in args) and all(
        np.size(arg) <= FOLD_LIMIT for arg, var in zip(args, node.inputs) if is_numeric(var)
    )


def perform(node: Apply, host_args: Sequence[Any]) -> list[Any]:
    """``node``'s outputs computed by its Op's own ``perform`` on host values."""
    storage: list[list[Any]] = [[None] for _ in node.outputs]
    params = node.run_params()
    extra = () if params is NoParams else (params,)
    node.op.perform(node, list(host_args), storage, *extra)
    return [cell[0] for cell in storage]


def fold(node: Apply, args: Sequence[Any]) -> list[Any] | None:
    """Compute ``node`` with numpy through ``perform``; ``None`` if that is not possible.

    Without numpy's floating-point warnings (``log(0.0)`` is ``-inf``): the
    reference backends fold with C code, which gives none.
    """
    try:
        with np.errstate(all="ignore"):
            results = perform(node, [host_value(arg, var) for arg, var in zip(args, node.inputs)])
    except (MethodNotDefined, NotImplementedError):
        return None
    if any(np.size(result) > FOLD_LIMIT for result in results):
        return None
    return results


def _as_declared(value: Any, var: Variable) -> Any:
    if not isinstance(var.type, (TensorType, ScalarType)):
        return value
    dtype = np.dtype(var.type.dtype)
    if hasattr(value, "dtype") and value.dtype == dtype:  # not getattr(..., None): numpy takes None for float64
        return value
    if isinstance(value, (jax.core.Tracer, jax.Array)):
        return value.astype(jax.dtypes.canonicalize_dtype(dtype))  # 32 bits in a program without x64
    return np.asarray(value, dtype=dtype)


def _declared(value: Any, var: Variable) -> Any:
    """``value`` with the dtype the graph declares for ``var`` (a `Ragged` trace as it is)."""
    if isinstance(value, Masked):
        return Masked(_as_declared(value.buffer, var), value.mask)
    return value if isinstance(value, RUN_TIME_LENGTH) else _as_declared(value, var)


def _traced_inputs(node: Apply, args: Sequence[Any]) -> str:
    names = [str(var) for var, arg in zip(node.inputs, args) if is_traced(arg)]
    return ", ".join(names) or "none"


def reference_failure(node: Apply, args: Sequence[Any]) -> Exception | None:
    """The exception Aesara's own ``perform`` raises on inputs shaped like ``args``, if any.

    Traced arguments are replaced by zeros of their shape and dtype: this tells
    inputs that do not fit (shapes) apart from a fault of the lowering.
    """
    if not all(is_numeric(var) for var in node.inputs) or any(isinstance(a, RUN_TIME_LENGTH) for a in args):
        return None
    if any(is_symbolic(size) for arg in args for size in np.shape(arg)):
        return None  # a symbolic dimension of jax.export: no zeros of that shape to try
    host_args = [
        np.zeros(np.shape(arg), var.type.dtype) if is_traced(arg) else host_value(arg, var)
        for arg, var in zip(args, node.inputs)
    ]
    try:
        with np.errstate(all="ignore"):
            perform(node, host_args)
    except (MethodNotDefined, NotImplementedError):
        return None
    except Exception as error:
        return error
    return None


def _failure_kind(reference: Exception) -> type[LoweringError]:
    """The `LoweringError` raised where Aesara's implementation raises ``reference``: of the same built-in kind."""
    if isinstance(reference, TypeError):
        return NodeTypeError
    return NodeIndexError if isinstance(reference, IndexError) else NodeValueError


def traced_failure(node: Apply, args: Sequence[Any], error: Exception) -> Exception:
    """What ``node`` failing with ``error`` while tracing is raised as.

    A failed check of the graph's values passes through; a size or shape that
    had to be concrete is a `LoweringError` asking for static inputs; inputs
    on which Aesara's own implementation fails too raise that failure's class
    (`NodeValueError`, `NodeTypeError`, `NodeIndexError`); anything else is a `LoweringError`.
    """
    if isinstance(error, ValueCheckError) or type(error) is getattr(node.op, "exc_type", None):
        return error
    described = f"node {node} (Op {node.op}): {type(error).__name__}: {error}"
    if is_shape_failure(error):
        return LoweringError(
            f"JAX could not trace {described}\n"
            f"Traced inputs of the node: {_traced_inputs(node, args)}. A size or shape "
            "must be known while tracing: make the values it depends on constants or "
            "scalar inputs of the compiled function (aejax then compiles one program per value).",
            node=node,
            needs_static=True,
        )
    reference = reference_failure(node, args)
    if reference is not None:
        kind = _failure_kind(reference)
        shapes = ", ".join(str(np.shape(arg)) for arg in args)
        return kind(
            f"the inputs of {described}\ndo not fit (shapes {shapes}); Aesara raises "
            f"{type(reference).__name__}: {reference}",
            node=node,
        )
    return LoweringError(
        f"JAX could not trace {described}\nTraced inputs of the node: {_traced_inputs(node, args)}.",
        node=node,
    )


Step = tuple[Apply, Callable[..., Any]]
"""A node and its JAX lowering."""


def lower_nodes(
    fgraph: FunctionGraph, funcify: Callable[..., Callable[..., Any]], deferred: bool = False, **kwargs: Any
) -> list[Step]:
    """Each node of ``fgraph`` in topological order with its lowering.

    With ``deferred``, each lowering is a `DeferredLowering`, made when a
    trace first needs it: for a graph whose program an earlier process saved
    (`aejax.linker.program.saved_programs`), which may never be traced, and
    which that process lowered without error.
    """
    if deferred:
        return [(node, DeferredLowering(node, funcify, kwargs)) for node in fgraph.toposort()]
    return [(node, _lowering(node, funcify, **kwargs)) for node in fgraph.toposort()]


class DeferredLowering:
    """The lowering of ``node``, made on the first call of `lowering` (see `lower_nodes`)."""

    __slots__ = ("node", "_funcify", "_kwargs", "_made")

    def __init__(self, node: Apply, funcify: Callable[..., Callable[..., Any]], kwargs: dict[str, Any]) -> None:
        self.node = node
        self._funcify = funcify
        self._kwargs = kwargs
        self._made: Callable[..., Any] | None = None

    def lowering(self) -> Callable[..., Any]:
        if self._made is None:
            self._made = _lowering(self.node, self._funcify, **self._kwargs)
        return self._made


def _lowering(node: Apply, funcify: Callable[..., Callable[..., Any]], **kwargs: Any) -> Callable[..., Any]:
    try:
        return funcify(node.op, node=node, **kwargs)
    except LoweringError:
        raise
    except Exception as error:
        raise LoweringError(
            f"the JAX lowering of Op {node.op} failed for node {node}: {type(error).__name__}: {error}",
            node=node,
        ) from error


class LoweredGraph:
    """A graph (inputs, outputs, nodes in order) as a JAX-traceable callable.

    Calling it returns the tuple of outputs. A value of run-time length may
    be a graph output, or the input of a lowering that takes it (declared with
    `aejax.linker.lengths.consumers.takes_run_time_lengths`): a `Ragged` value
    where the lowering takes one (indexing, updates, Scans) or the node works row
    by row (an elementwise random draw too, `ragged_draw`) or is a reduction; a `RangeRows` where it takes one (a Scan
    sequence), else as a `Ragged` buffer of
    its bound from the graph (`aejax.linker.lengths.bounds`) when there is one; a
    `Masked` selection where the lowering takes one or the node works
    row by row (`aejax.linker.lengths.masked`), else as a `Ragged` value of its rows
    where a `Ragged` value is taken. Any other consumer raises
    `NeedsSplit`, asking the linker to end the jit program after the node
    that made it; so does a shape that needs such a value's length while
    tracing, unless the node that needs it takes a `Ragged` value and its
    result is one (``x[:trace.shape[0]]``). After a split the value enters
    the next program from the host, where its length is known.
    """

    def __init__(self, inputs: Sequence[Variable], outputs: Sequence[Variable], steps: Sequence[Step]) -> None:
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.steps = list(steps)
        self.branches = plan_branches(self.steps, self.outputs)

    @classmethod
    def of(cls, fgraph: FunctionGraph, funcify: Callable[..., Callable[..., Any]], **kwargs: Any) -> LoweredGraph:
        """The lowering of a whole `FunctionGraph`."""
        return cls(fgraph.inputs, fgraph.outputs, lower_nodes(fgraph, funcify, **kwargs))

    def __call__(self, *inputs: Any) -> tuple[Any, ...]:
        env: dict[Variable, Any] = dict(zip(self.inputs, inputs))
        with tracing(env):
            self._run(self.branches.outside, env)
        return tuple(lookup(env, var) for var in self.outputs)

    def run_until(self, *inputs: Any) -> tuple[Apply | None, Exception | None, dict[Variable, Any]]:
        """Run the steps in order until one fails in a way that ending the program there helps (`ends_program`).

        Returns that node (``None`` if every step ran), its failure, and the
        values computed so far.
        """
        env: dict[Variable, Any] = dict(zip(self.inputs, inputs))
        with tracing(env):
            for node, fn in self.branches.outside:
                try:
                    outputs = self._outputs(node, fn, env)
                except (NeedsSplit, LoweringError) as error:
                    if not ends_program(node, error):
                        raise
                    return node, error, env
                env.update(zip(node.outputs, outputs))
        return None, None, env

    def _run(self, steps: Sequence[Step], env: MutableMapping[Variable, Any]) -> None:
        """Run ``steps`` in order into ``env``."""
        for node, fn in steps:
            env.update(zip(node.outputs, self._outputs(node, fn, env)))

    def _outputs(self, node: Apply, fn: Callable[..., Any], env: MutableMapping[Variable, Any]) -> list[Any]:
        """The outputs of ``node`` from its lowering ``fn``, on its inputs' values in ``env``.

        A node that needs values concrete which the call being traced tells
        (`aejax.linker.trace.call_values`) is lowered again on them. An IfElse
        runs the steps only its branches need (`branches`).
        """
        try:
            return self._lowered(node, fn, env)
        except LoweringError as error:
            if not _concrete_from_call(node, error, env):
                raise
        return self._lowered(node, fn, env)

    def _lowered(self, node: Apply, fn: Callable[..., Any], env: MutableMapping[Variable, Any]) -> list[Any]:
        """``node``'s outputs from ``fn``; one that needs the length of a value of run-time length takes its rows."""
        if node in self.branches.branches:
            return self._if_else(node, env)
        if type(fn) is DeferredLowering:
            fn = fn.lowering()
        args = _ranges_bounded(node, fn, [lookup(env, var) for var in node.inputs])
        try:
            return run_node(node, _taking_run_time_lengths(node, fn, args), args)
        except LoweringError as error:
            needs_length = error.needs_static and error.node is node
            source = _run_time_length_source(node, env, self.inputs) if needs_length else None
            if source is None:
                raise
            outputs = _rows_of_run_time_length(node, fn, args)
            if outputs is None:
                raise NeedsSplit(source) from error
            return outputs

    def _if_else(self, node: Apply, env: MutableMapping[Variable, Any]) -> list[Any]:
        """The outputs of IfElse ``node``, each branch's own steps run only inside it (`if_else`)."""
        then, otherwise = self.branches.branches[node]
        condition = lookup(env, node.inputs[0])
        failures = VALUE_FAILURES + then.raises + otherwise.raises
        try:
            values = if_else(
                node, condition, self._branch(then, node, 0, env), self._branch(otherwise, node, 1, env), failures
            )
        except NotStaticError as error:
            raise traced_failure(node, [condition], error) from error
        return [_declared(value, var) for value, var in zip(values, node.outputs)]

    def _branch(
        self, branch: Branch, node: Apply, side: int, env: MutableMapping[Variable, Any]
    ) -> Callable[[], list[Any]]:
        """Branch ``side`` of IfElse ``node``: its steps run on top of ``env``, which keeps none of their values."""

        def values() -> list[Any]:
            inner = ChainMap({}, env)
            with tracing(inner):
                self._run(branch.steps, inner)
            return [lookup(inner, var) for var in branch_inputs(node, side)]

        return values


def ends_program(node: Apply, error: Exception) -> bool:
    """Whether ``node``, failing with ``error``, may run in a program that starts at it, or on the host.

    So it may when a value of run-time length reaches it (`NeedsSplit`: the
    value enters the next program from the host), when it needs values
    concrete that the program computes (they are inputs of the next one), or
    when its output shapes are unknown or it meets a Python object (it runs
    on the host).
    """
    if isinstance(error, (NeedsSplit, BoundsNeeded)):
        return True
    only_on_host = isinstance(error, (UnknownShapesError, HostObjectError))
    return isinstance(error, LoweringError) and error.node is node and (error.needs_static or only_on_host)


def _concrete_from_call(node: Apply, error: LoweringError, env: MutableMapping[Variable, Any]) -> bool:
    """Put in ``env`` the call's values of what ``node`` failed to have concrete; whether the call told any.

    Which of its traced inputs (or those of the node whose bounds a
    `BoundsNeeded` asks for) and of the values they are computed from it
    needed is not said: every one the call tells is taken. The inputs they
    are computed from are read (`CallValues.note_read`): the program is
    right for their values only.
    """
    values = call_values()
    if values is None or not error.needs_static:
        return False
    if isinstance(error, BoundsNeeded):
        needed = error.node.inputs
    elif error.node is node:
        needed = node.inputs
    else:
        return False
    found = [_call_value(var, values, env) for var in ancestors(needed) if _traced_in(var, env)]
    read = frozenset().union(*(known[1] for known in found if known is not None))
    if not read:
        return False
    values.note_read(read, node)
    for var in list(env):  # every value the inputs read so far tell, as if they had been concrete from the start
        if _traced_in(var, env):
            known = _call_value(var, values, env)
            if known is not None and known[1] <= values.read.keys():
                env[var] = known[0]
    return True


def _traced_in(var: Variable, env: Mapping[Variable, Any]) -> bool:
    """Whether ``var``'s value in ``env`` is traced (a slice of traced bounds too)."""
    if isinstance(var, Constant) or var not in env:
        return False
    value = env[var]
    if isinstance(value, slice):
        return any(is_traced(bound) for bound in (value.start, value.stop, value.step))
    return is_traced(value)


def _call_value(
    var: Variable, values: CallValues, env: Mapping[Variable, Any]
) -> tuple[Any, frozenset[Variable]] | None:
    """``var``'s value in the call being traced and the inputs it is computed from; ``None`` if the call does not tell it.

    Known are the call's values of its inputs, constants, values the trace
    has concrete, and what `fold` computes from known values.
    """
    known = values.known
    pending = [var]
    while pending:
        top = pending[-1]
        if top in known:
            pending.pop()
            continue
        if top in values.values:
            known[top] = (values.values[top], frozenset([top]))
        elif isinstance(top, Constant):
            known[top] = (top.data, frozenset())
        elif top in env and not _traced_in(top, env):
            known[top] = (env[top], frozenset())
        elif top.owner is None:
            known[top] = None
        else:
            missing = [i for i in top.owner.inputs if i not in known]
            if missing:
                pending.extend(missing)
                continue
            known.update(_folded_from_call(top.owner, known))
        pending.pop()
    return known[var]


def _folded_from_call(
    node: Apply, known: Mapping[Variable, tuple[Any, frozenset[Variable]] | None]
) -> dict[Variable, tuple[Any, frozenset[Variable]] | None]:
    """The known values of ``node``'s outputs, computed with `fold` from those of its inputs."""
    inputs = [known[var] for var in node.inputs]
    results = None
    if all(found is not None for found in inputs):
        args = [found[0] for found in inputs]
        makes_slices = all(isinstance(out.type, SliceType) for out in node.outputs)  # ``x[i:k]``'s bounds
        results = fold(node, args) if makes_slices or _foldable(node, args) else None
    if results is None:
        return dict.fromkeys(node.outputs)
    read = frozenset().union(*(found[1] for found in inputs))
    return {out: (result, read) for out, result in zip(node.outputs, results)}


def _run_time_length_source(node: Apply, env: Mapping[Variable, Any], inputs: Sequence[Variable]) -> Apply | None:
    """The node that made a value of run-time length in ``env`` from which ``node``'s inputs are computed, if any."""
    for var in ancestors(node.inputs, blockers=inputs):
        if var.owner is not None and var not in inputs and isinstance(env.get(var), (Ragged, Masked)):
            return var.owner
    return None


def _rows_of_run_time_length(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> list[Any] | None:
    """``node``'s outputs with its first argument as a `Ragged` value of all its rows; ``None`` if that fails too.

    For a node that needs a shape computed from a run-time length, such as
    ``x[n - 1::-1]`` where ``n`` is the length of an until-loop's trace:
    indexing and updates take `Ragged` values, and the rows they pick are a
    value of run-time length too.
    """
    first = args[0] if args else None
    if not run_time_lengths_taken(fn).ragged or isinstance(first, RUN_TIME_LENGTH) or jnp.ndim(first) == 0:
        return None
    whole = Ragged(jnp.asarray(first), jnp.shape(first)[0])
    try:
        return run_node(node, fn, [whole, *args[1:]])
    except LoweringError as error:
        if error.needs_static:
            return None
        raise


def _taking_run_time_lengths(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> Callable[..., Any]:
    """``fn``, made to take the values of run-time length among ``args``; else `NeedsSplit`."""
    if any(isinstance(arg, Ragged) for arg in args) and not run_time_lengths_taken(fn).ragged:
        return _selections_first(_taking_ragged(node, fn, args))
    for var, arg in zip(node.inputs, args):
        if isinstance(arg, RangeRows) and not run_time_lengths_taken(fn).ranges:
            return _needing_bounds(var)
    if not any(isinstance(arg, Masked) for arg in args) or run_time_lengths_taken(fn).masked:
        return fn
    if masked.is_row_wise(node) and masked.share_one_mask(args) and not _whole_array_rows(node, args):
        return lambda *values: masked.elementwise(node, fn, values)
    if _draws_along_rows(node, args):
        params = args[3:]
        if masked.share_one_mask(params) and not _whole_array_rows(node, params, output=1):
            return lambda *values: masked.draw_masked(node, fn, values)
        return _selections_first(lambda *values: ragged_draw(node, fn, values))
    if masked.is_reduction(node):
        return lambda x: masked.reduction(node, fn, x)
    if masked.is_extremum(node):
        return lambda x: masked.extremum(node, fn, x)
    if run_time_lengths_taken(fn).ragged:
        return _selections_first(fn)
    if masked.is_row_wise(node):  # selections made with different masks, or with whole arrays
        return _selections_first(lambda *values: ragged_elementwise(node, fn, values))
    raise NeedsSplit(next(var.owner for var, arg in zip(node.inputs, args) if isinstance(arg, Masked)))


def _selections_first(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, taking each `Masked` selection among its arguments as a `Ragged` value of its rows (`Masked.as_ragged`)."""
    return lambda *values: fn(*[selected_rows_first(v) for v in values])


def _ranges_bounded(node: Apply, fn: Callable[..., Any], args: list[Any]) -> list[Any]:
    """``args``, each lazy arange a `Ragged` buffer of its bound from the graph (if it has one) unless ``fn`` takes ranges."""
    if run_time_lengths_taken(fn).ranges or not any(isinstance(arg, RangeRows) for arg in args):
        return args
    return [_bounded_range(var, arg) if isinstance(arg, RangeRows) else arg for var, arg in zip(node.inputs, args)]


def _bounded_range(var: Variable, value: RangeRows) -> RangeRows | Ragged:
    """A lazy arange as a `Ragged` buffer of its bound from the graph, if it has one."""
    bound = length_bound(var)
    return value if bound is None else value.as_ragged(bound)


def _taking_ragged(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> Callable[..., Any]:
    """``fn`` for `Ragged` arguments: row by row, reductions and maxima over their rows; else `NeedsSplit`."""
    if masked.is_row_wise(node):
        return lambda *values: ragged_elementwise(node, fn, values)
    if _draws_along_rows(node, args):
        return lambda *values: ragged_draw(node, fn, values)
    if masked.is_reduction(node):
        return lambda x: ragged_reduction(node, fn, x)
    if masked.is_extremum(node):
        return lambda x: masked.extremum(node, fn, x.as_masked())
    raise NeedsSplit(next(var.owner for var, arg in zip(node.inputs, args) if isinstance(arg, Ragged)))


def ragged_reduction(node: Apply, fn: Callable[..., Any], x: Ragged) -> Any:
    """A reduction of a `Ragged` value: over its rows as a `Masked` value, else row by row (still ragged)."""
    if node.op.axis is not None and 0 not in node.op.axis:
        return Ragged(fn(x.buffer), x.length)
    return masked.reduction(node, fn, x.as_masked())


def ragged_elementwise(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> Any:
    """An elementwise node with `Ragged` arguments, computed on every buffer row.

    Aesara's shapes agree at run time, so a ragged argument is as long as any
    full-length argument: then the result is cut to that static length;
    otherwise it is ragged, its buffer as long as the longest.
    """
    rows, length, static = _common_rows(node, args)
    out = fn(*[rows_padded(a.buffer, rows) if isinstance(a, Ragged) else a for a in args])
    if static:
        return out
    return each_output(out, lambda o: Ragged(o, length))


def ragged_draw(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> tuple[Any, Any]:
    """An elementwise random draw (`masked.is_elementwise_draw`) from `Ragged` parameters, on every buffer row.

    ``bernoulli(h / (arange(2, y + 1) - 1 + h))`` inside a Scan's step, as in
    aemcmc's CRT sampler: every row of the parameters' buffers is drawn, and
    the sample has their run-time length (the rows past it are drawn but
    never used), as `ragged_elementwise` computes an elementwise Op. The new
    random state is returned as it is.
    """
    state, size, dtype, *params = args
    rows, length, static = _common_rows(node, params, output=1)
    new_state, sample = fn(
        state, size, dtype, *[rows_padded(p.buffer, rows) if isinstance(p, Ragged) else p for p in params]
    )
    return new_state, sample if static else Ragged(sample, length)


def _draws_along_rows(node: Apply, args: Sequence[Any]) -> bool:
    """Whether ``node`` is an elementwise draw whose values of run-time length are parameters along its sample's rows."""
    if not masked.is_elementwise_draw(node) or any(isinstance(arg, RUN_TIME_LENGTH) for arg in args[:3]):
        return False
    ndim = node.outputs[1].type.ndim
    return all(jnp.ndim(a.buffer) == ndim for a in args[3:] if isinstance(a, (Ragged, Masked)))


def _common_rows(node: Apply, args: Sequence[Any], output: int = 0) -> tuple[int, Any, bool]:
    """The buffer rows an elementwise computation over ``args`` (some `Ragged`) takes, their length, and whether it is static.

    The length is a whole array argument's rows where one is an array along
    the rows of ``node``'s output ``output`` (static), else the `Ragged`
    arguments' run-time length, checked to be the same for all of them.
    """
    static = _whole_array_rows(node, args, output)
    rows = static[0] if static else max(a.buffer.shape[0] for a in args if isinstance(a, Ragged))
    length = static[0] if static else next(a.length for a in args if isinstance(a, Ragged))
    _require_lengths(node, [a.length for a in args if isinstance(a, Ragged)], length)
    return rows, length, bool(static)


def _whole_array_rows(node: Apply, args: Sequence[Any], output: int = 0) -> list[int]:
    """The rows of each of ``args`` that is an array along the rows of ``node``'s output ``output`` (not broadcast along them)."""
    ndim = node.outputs[output].type.ndim
    return [
        jnp.shape(a)[0]
        for a in args
        if not isinstance(a, RUN_TIME_LENGTH) and jnp.ndim(a) == ndim and jnp.shape(a)[0] != 1
    ]


def _require_lengths(node: Apply, lengths: Sequence[Any], length: Any) -> None:
    """Check that the run-time ``lengths`` of ``node``'s arguments are all ``length``, as Aesara requires of their shapes."""
    differing = [other for other in lengths if other is not length]
    if differing:
        require(
            jnp.all(jnp.stack(differing) == length),
            ValueError,
            f"the arguments of node {node} differ in length on axis 0 (lengths known only at run time)",
            f"node {node}",
        )


def _needing_bounds(var: Variable) -> Callable[..., Any]:
    def needs_bounds(*args: Any) -> Any:
        raise NotStaticError(f"the bounds of the arange {var} must be known while tracing")

    return needs_bounds


def lookup(env: Mapping[Variable, Any], var: Variable) -> Any:
    """The value of ``var`` in ``env``, or its data if it is a constant."""
    if isinstance(var, Constant):
        return var.data
    return env[var]


MAX_DIMS = 32
"""The most dimensions a numpy array has (``NPY_MAXDIMS``)."""


def check_ranks(node: Apply) -> None:
    """`InvalidValueError` (a `ValueError`, as numpy's) if an output of ``node`` has more than `MAX_DIMS` dimensions.

    JAX makes such arrays, but Aesara's implementations (numpy arrays) fail on
    them when the graph runs.
    """
    for var in node.outputs:
        ndim = getattr(var.type, "ndim", 0)
        if ndim > MAX_DIMS:
            raise InvalidValueError(
                f"output {variable_name(var)!r} of node {node} has {ndim} dimensions; arrays have at most {MAX_DIMS}"
            )


def run_node(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> list[Any]:
    """The outputs of ``node``: folded with numpy when concrete, else from its JAX lowering."""
    check_ranks(node)
    try:
        folded = fold(node, args) if _foldable(node, args) else None
        if folded is not None:
            return folded
        return _declared_outputs(node, fn(*args))
    except LoweringError as error:
        if error.node is node or isinstance(error, BoundsNeeded):
            raise
        raise type(error)(f"{error}\n(inside node {node})", node=node, needs_static=error.needs_static) from error
    except NeedsSplit as error:
        raise LoweringError(
            f"node {error.node} inside node {node} returns a value whose length is known "
            "only at run time (the trace of a Scan with an until condition, an arange of "
            "traced bounds, a selection x[mask]), and another node of the same loop uses it "
            "where its length must be known; JAX needs static shapes there. Use only the last "
            "values of an inner until-loop's outputs, or move the computation out of the loop.",
            node=node,
            needs_static=True,  # a shape that depends on values: a loop around ``node`` may run on the host
        ) from error
    except Exception as error:
        failure = traced_failure(node, args, error)
        if failure is error:
            raise
        raise failure from error


def _declared_outputs(node: Apply, out: Any) -> list[Any]:
    """The values a lowering of ``node`` returned (one, or a sequence of them), each as its output declares."""
    outs = [out] if len(node.outputs) == 1 else list(out)
    return [_declared(value, var) for value, var in zip(outs, node.outputs)]
