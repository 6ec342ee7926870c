"""Turn an Aesara `FunctionGraph` into a JAX-traceable Python function: the lowering loop.

The function walks the graph's nodes in topological order. Each node's
outputs are computed one of two ways, and shapes stay concrete while JAX
traces it (the values that must be concrete: `aejax.linker.lengths.concrete`):

- a node whose inputs are all concrete and small is folded with numpy
  through the Op's own ``perform`` (`aejax.linker.trace.folding`);
- every other node runs its JAX lowering; outputs are cast to the dtype the
  graph declares, so JAX's promotion rules never change a graph's types.

Values of run-time length reach the lowerings that take them
(`aejax.linker.lengths.taking`); a node that needs a size concrete which the
call being traced tells is lowered again on it (`aejax.linker.trace.refill`).
The nodes only one branch of an `IfElse` needs run inside that branch, as
Aesara runs them: only if it is taken (`aejax.linker.trace.branches`).

Running a node comes to an `Outcome` (`aejax.linker.trace.outcome`): its
outputs, or what it needs instead, on which the loop decides: lower it again
on the call's values, retry it on all the rows of a value of run-time length,
end the program there (`LoweredGraph.run_until`), or raise. A failing node
raises `LoweringError` naming the node and its traced inputs
(`aejax.linker.trace.node_failures`). Three kinds of errors pass through
unchanged: a `ValueCheckError` (a lowering found the graph's values invalid),
the exception an Op declares it raises (``exc_type``, as `CheckAndRaise`
does), and a `BoundsNeeded` (it names the node whose bounds the program should
make static).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from aesara.graph.basic import Apply, Constant, Variable
from aesara.graph.fg import FunctionGraph
from aesara.scalar.basic import ScalarType
from aesara.tensor.type import TensorType

from aejax.adapters.numpy2 import NUMPY2
from aejax.linker.errors import InvalidValueError, LoweringError, variable_name
from aejax.linker.lengths.bounds import tracing
from aejax.linker.lengths.consumers import run_time_lengths_taken
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH, Masked, NeedsSplit, Ragged
from aejax.linker.lengths.taking import ranges_bounded, run_time_length_source, taking_run_time_lengths
from aejax.linker.trace.branches import VALUE_FAILURES, Branch, branch_inputs, if_else, plan_branches
from aejax.linker.trace.folding import fold, foldable
from aejax.linker.trace.node_failures import branch_failure, lowering_failure, raised_for
from aejax.linker.trace.outcome import ENDS_PROGRAM, NeedsStatic, Outcome, Split, attempt, outputs_of
from aejax.linker.trace.refill import concrete_from_call


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
    be a graph output, or the input of a node made to take it
    (`aejax.linker.lengths.taking`); any other consumer comes to a `Split`,
    which asks the linker to end the jit program after the node that made
    it (`run_until`; called, it raises `NeedsSplit`); so does a shape that
    needs such a value's length while tracing, unless the node that needs it
    takes a `Ragged` value and its result is one (``x[:trace.shape[0]]``).
    After a split the value enters the next program from the host, where its
    length is known.
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
        """Run the steps in order until one comes to an outcome after which ending the program there helps.

        That is when a value of run-time length reaches the node (`NeedsSplit`:
        the value enters the next program from the host), when it needs values
        concrete that the program computes (they are inputs of the next one),
        or when its output shapes are unknown or it meets a Python object (it
        runs on the host). Returns that node (``None`` if every step ran), its
        failure, and the values computed so far; any other failure is raised.
        """
        env: dict[Variable, Any] = dict(zip(self.inputs, inputs))
        with tracing(env):
            for node, fn in self.branches.outside:
                outcome = self._outputs(node, fn, env)
                if isinstance(outcome, ENDS_PROGRAM):
                    return node, outcome.error, env
                env.update(zip(node.outputs, outputs_of(outcome)))
        return None, None, env

    def _run(self, steps: Sequence[Step], env: MutableMapping[Variable, Any]) -> None:
        """Run ``steps`` in order into ``env``; raise the failure of the first that fails."""
        for node, fn in steps:
            env.update(zip(node.outputs, outputs_of(self._outputs(node, fn, env))))

    def _outputs(self, node: Apply, fn: Callable[..., Any], env: MutableMapping[Variable, Any]) -> Outcome:
        """What ``node`` comes to with its lowering ``fn``, on its inputs' values in ``env``.

        A node that needs values concrete which the call being traced tells
        (`aejax.linker.trace.call_values`) is lowered again on them. An IfElse
        runs the steps only its branches need (`branches`).
        """
        outcome = self._lowered(node, fn, env)
        if isinstance(outcome, NeedsStatic) and concrete_from_call(node, outcome, env):
            return self._lowered(node, fn, env)
        return outcome

    def _lowered(self, node: Apply, fn: Callable[..., Any], env: MutableMapping[Variable, Any]) -> Outcome:
        """What ``node`` comes to with ``fn``; one that needs the length of a value of run-time length takes its rows."""
        if node in self.branches.branches:
            return self._if_else(node, env)
        if type(fn) is DeferredLowering:
            fn = fn.lowering()
        args = ranges_bounded(node, fn, [lowering_input(env, var) for var in node.inputs])
        taking = taking_run_time_lengths(node, fn, args)
        if isinstance(taking, NeedsSplit):
            return Split(taking)
        outcome = run_node(node, taking, args)
        if not (isinstance(outcome, NeedsStatic) and outcome.error.node is node):
            return outcome
        source = run_time_length_source(node, env, self.inputs)
        if source is None:
            return outcome
        rows = _rows_of_run_time_length(node, fn, args)
        return Split(raised_for(NeedsSplit(source), outcome.error)) if rows is None else rows

    def _if_else(self, node: Apply, env: MutableMapping[Variable, Any]) -> Outcome:
        """What IfElse ``node`` comes to, each branch's own steps run only inside it (`if_else`)."""
        then, otherwise = self.branches.branches[node]
        condition = lookup(env, node.inputs[0])
        failures = VALUE_FAILURES + then.raises + otherwise.raises

        def values() -> list[Any]:
            picked = if_else(
                node, condition, self._branch(then, node, 0, env), self._branch(otherwise, node, 1, env), failures
            )
            return [_declared(value, var) for value, var in zip(picked, node.outputs)]

        return attempt(node, values, lambda error: branch_failure(node, condition, error))

    def _branch(
        self, branch: Branch, node: Apply, side: int, env: MutableMapping[Variable, Any]
    ) -> Callable[[], list[Any]]:
        """Branch ``side`` of IfElse ``node``: its steps run on top of ``env``, which keeps none of their values."""

        def values() -> list[Any]:
            inner = ChainMap({}, env)
            with tracing(inner):
                self._run(branch.steps, inner)
            return [lowering_input(inner, var) for var in branch_inputs(node, side)]

        return values


def _rows_of_run_time_length(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> Outcome | None:
    """What ``node`` comes to with its first argument as a `Ragged` value of all its rows; ``None`` if that needs static values too.

    For a node that needs a shape computed from a run-time length, such as
    ``x[n - 1::-1]`` where ``n`` is the length of an until-loop's trace:
    indexing and updates take `Ragged` values, and the rows they pick are a
    value of run-time length too.
    """
    first = args[0] if args else None
    if not run_time_lengths_taken(fn).ragged or isinstance(first, RUN_TIME_LENGTH) or jnp.ndim(first) == 0:
        return None
    whole = Ragged(jnp.asarray(first), jnp.shape(first)[0])
    outcome = run_node(node, fn, [whole, *args[1:]])
    return None if isinstance(outcome, NeedsStatic) else outcome


def lookup(env: Mapping[Variable, Any], var: Variable) -> Any:
    """The value of ``var`` in ``env``, or its data if it is a constant."""
    if isinstance(var, Constant):
        return var.data
    return env[var]


def lowering_input(env: Mapping[Variable, Any], var: Variable) -> Any:
    """The value of ``var`` as a node's lowering gets it while tracing: a constant's data through `constant_data`."""
    if isinstance(var, Constant):
        return constant_data(var.data)
    return env[var]


def constant_data(data: Any) -> Any:
    """A constant's ``data`` as a lowering gets it: a copy of an array whose dtype this precision narrows.

    JAX 0.12 keeps a loop body's trace per numpy array object across
    precisions: an array first lowered with ``jax_enable_x64`` on and then
    closed over by a ``lax.while_loop`` body with it off compiles as float64
    beside float32 (XLA rejects the program). A copy is a new object; arrays
    of the same dtype in both precisions are shared as they are.
    """
    if isinstance(data, np.ndarray) and data.ndim and jax.dtypes.canonicalize_dtype(data.dtype) != data.dtype:
        return data.copy()
    return data


MAX_DIMS = 64 if NUMPY2 else 32
"""The most dimensions a numpy array has (``NPY_MAXDIMS``: 32, and 64 since numpy 2)."""


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


def run_node(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> Outcome:
    """What ``node`` comes to: its outputs folded with numpy when concrete, else from its JAX lowering ``fn``."""
    check_ranks(node)
    return attempt(node, lambda: _computed(node, fn, args), lambda error: lowering_failure(node, args, error))


def _computed(node: Apply, fn: Callable[..., Any], args: Sequence[Any]) -> list[Any]:
    folded = fold(node, args) if foldable(node, args) else None
    return folded if folded is not None else _declared_outputs(node, fn(*args))


def _declared_outputs(node: Apply, out: Any) -> list[Any]:
    """The values a lowering of ``node`` returned (one, or a sequence of them), each as its output declares."""
    outs = [out] if len(node.outputs) == 1 else list(out)
    return [_declared(value, var) for value, var in zip(outs, node.outputs)]
