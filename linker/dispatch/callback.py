"""Run an Op's Python ``perform`` on the host from inside a JAX trace.

An Op with no JAX lowering is computed by its own numpy implementation,
staged with `jax.pure_callback` (`staged_host_call`); it then works under jit, inside loops and
under vmap (one callback per batch element). JAX needs the outputs' shapes
while tracing. They are the output types' static shapes where known, else the
Op's ``infer_shape`` evaluated with the inputs' shapes (always known while
tracing) and the values of the inputs that are not traced. A shape that needs
a traced value raises `LoweringError` (asking for static inputs); shapes
nothing tells raise `UnknownShapesError`, and the node runs on the host
between two programs instead, where its ``perform`` computes them.

A node that takes or produces Python objects (`Generic` values) needs no
lowering: it runs on the host between programs. Its fallback lowering only
raises `HostObjectError`, for the case where it would run inside a program:
in an inner graph (the node around it then runs on the host, if it can) or
in a graph exported with ``jaxify``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import aesara.tensor as at
import jax
import numpy as np
from aesara.graph.basic import Apply, Constant, Variable, graph_inputs, io_toposort
from aesara.graph.op import Op, _NoPythonOp
from aesara.link.c.op import _NoPythonCOp, _NoPythonExternalCOp
from aesara.scalar.basic import ScalarType
from aesara.tensor.exceptions import ShapeError
from aesara.tensor.random.type import RandomStateType
from aesara.tensor.type import DenseTensorType
from jax.experimental import io_callback

from aejax.adapters.words import WORD, host_words, host_words_value, program_value, program_words, word_count
from aejax.linker.errors import LoweringError, caller_stacklevel, mark_raised_by, variable_name
from aejax.linker.trace.folding import fold, host_value, is_numeric, perform
from aejax.linker.trace.host_failures import UnknownShapesError, host_object_error, host_objects, recorded
from aejax.linker.trace.lowering import lookup
from aejax.linker.trace_context import current

_NO_PERFORM = {cls.perform for cls in (Op, _NoPythonOp, _NoPythonCOp, _NoPythonExternalCOp)}

HostInput = Callable[[np.ndarray], Any]
"""Turns the host value of an input into what the Op's ``perform`` expects."""


class CallbackWarning(UserWarning):
    """An Op without a JAX lowering runs its Python ``perform`` on the host."""


def _is_jax_value(value: Any) -> bool:
    return isinstance(value, (jax.Array, jax.core.Tracer))


def host_fallback_problem(op: Any, node: Apply | None) -> str | None:
    """Why ``node`` cannot run on the host through a callback; ``None`` if it can."""
    if node is None:
        return "no node was given to run its perform"
    kept = host_objects(node)
    if type(op).perform in _NO_PERFORM:
        if kept:
            return (
                f"it has no Python perform to run on the host, where its value {variable_name(kept[0])!r} "
                f"of type {kept[0].type}, a Python object, must stay"
            )
        return "it has no Python perform to run on the host instead"
    if kept:
        return None  # it runs on the host between programs (`host_lowering`)
    others = [str(out.type) for out in node.outputs if not is_numeric(out)]
    if others:
        return f"its outputs of types {', '.join(others)} cannot come back from a host callback"
    return None


def host_lowering(node: Apply) -> Callable[..., Any]:
    """A lowering of ``node`` that runs its ``perform`` through `jax.pure_callback`.

    For a node of values that stay on the host, one that raises `HostObjectError`:
    such a node runs on the host between programs, never inside one.
    """
    kept = host_objects(node)
    if kept:
        return _host_only(node, kept[0])
    run = perform_callback(node)

    def on_host(*args: Any) -> Any:
        outs = run(*args)
        return outs[0] if len(outs) == 1 else tuple(outs)

    return on_host


def _host_only(node: Apply, var: Variable) -> Callable[..., Any]:
    def host_only(*args: Any) -> Any:
        raise host_object_error(
            node,
            var,
            "the node is inside a JAX program here (an inner graph of a Scan or an OpFromGraph), where no "
            "node runs on the host",
            "Compute the Python objects outside the inner graph, or compile the graph with another mode.",
        )

    return host_only


def host_generator(rng_type: Any) -> HostInput:
    """How the host builds a numpy generator of ``rng_type`` from a PRNG key's raw words."""
    return np.random.RandomState if isinstance(rng_type, RandomStateType) else np.random.default_rng


def split_for_host(key: Any) -> tuple[Any, Any]:
    """A key split in two: the new state, and raw words that seed a generator on the host."""
    new_key, host_key = jax.random.split(key)
    return new_key, jax.random.key_data(host_key)


def perform_callback(
    node: Apply,
    outputs: Sequence[int] | None = None,
    host_inputs: Mapping[int, HostInput] | None = None,
    why: str = "has no JAX lowering",
    register_with: str = "aejax.linker.jax_funcify",
) -> Callable[..., list[Any]]:
    """A traceable function computing ``node``'s outputs with its ``perform`` on the host.

    It takes the node's input values and returns those of the outputs at
    indices ``outputs`` (all by default), which must be tensors or scalars.
    An input at an index of ``host_inputs`` crosses to the host as an array
    and is converted there by its function (e.g. key words -> numpy
    `Generator`). The first trace of the node warns with `CallbackWarning`,
    telling users to register a JAX version of the Op with ``register_with``.
    """
    selected = list(range(len(node.outputs)) if outputs is None else outputs)
    converters = dict(host_inputs or {})
    dtypes = [np.dtype(node.outputs[i].type.dtype) for i in selected]
    warned = False

    def callback(*args: Any) -> list[Any]:
        nonlocal warned
        shapes = output_shapes(node, args, selected)
        staged = [i for i, arg in enumerate(args) if _is_jax_value(arg)]
        for i in staged:
            if i not in converters and not is_numeric(node.inputs[i]):
                raise LoweringError(
                    f"input {node.inputs[i]} of node {node} (Op {node.op}) is a JAX value of type "
                    f"{node.inputs[i].type}, which cannot cross a host callback; register a JAX "
                    f"lowering with aejax.linker.jax_funcify.register({type(node.op).__name__})",
                    node=node,
                )

        fixed = [None if i in staged else arg for i, arg in enumerate(args)]
        graph_node = current().node  # a Scan's, when ``node`` is in its step: the node Aesara names

        def on_host(*staged_values: Any) -> tuple[np.ndarray, ...]:
            values = list(fixed)
            for i, value in zip(staged, staged_values):
                values[i] = value
            try:
                inputs = [
                    converters[i](np.asarray(v)) if i in converters else host_value(v, var)
                    for i, (v, var) in enumerate(zip(values, node.inputs))
                ]
            except Exception as error:
                raise recorded(error) from error
            try:
                results = perform(node, inputs)
                return tuple(
                    _host_output(node, i, results[i], shape, dtype) for i, shape, dtype in zip(selected, shapes, dtypes)
                )
            except Exception as error:
                if graph_node in (None, node):
                    mark_raised_by(error, node, inputs)
                else:
                    mark_raised_by(error, graph_node)
                raise recorded(error) from error

        entering = [Crossing.of(args[i].dtype) for i in staged]
        leaving = [Crossing.of(dtype) for dtype in dtypes]

        def crossing_to_host(*crossed: Any) -> tuple[np.ndarray, ...]:
            outputs = on_host(*[c.on_host(value) for c, value in zip(entering, crossed)])
            return tuple(c.from_host(output) for c, output in zip(leaving, outputs))

        results = staged_host_call(
            crossing_to_host,
            [c.result_type(shape) for c, shape in zip(leaving, shapes)],
            *[c.from_program(args[i]) for c, i in zip(entering, staged)],
        )
        results = [c.in_program(r) for c, r in zip(leaving, results)]
        if not warned:
            warned = True
            warnings.warn(
                f"Op {node.op} (node {node}) {why}: it runs its Python perform on the "
                "host through jax.pure_callback: every call is a round trip to Python, and it "
                "has no gradient. Register a JAX version of it with "
                f"{register_with}.register({type(node.op).__name__}) to avoid it.",
                CallbackWarning,
                stacklevel=caller_stacklevel(),
            )
        return list(results)

    return callback


def staged_host_call(callback: Callable[..., Any], result_types: Sequence[jax.ShapeDtypeStruct], *args: Any) -> Any:
    """``callback(*args)`` run on the host by the program, its results of ``result_types``; one call per batch
    element under vmap.

    A `jax.pure_callback`, unless no result holds an element: XLA drops a
    pure call whose results are empty, and the Op's ``perform`` would never
    run, nor raise for the parameters it checks (Aesara's `Images2Neibs`
    for a step of 0). That call is an unordered `io_callback`, which XLA
    keeps.
    """
    if all(math.prod(result.shape) == 0 for result in result_types):
        return io_callback(callback, result_types, *args, ordered=False)
    return jax.pure_callback(callback, result_types, *args, vmap_method="sequential")


class Crossing(NamedTuple):
    """How a value of one dtype crosses a host callback, in either direction.

    In a program traced with x64, a 64-bit value (``float64``, ``int64``,
    ``uint64``, ``complex128``) crosses as its 32-bit words
    (`aejax.adapters.words`). JAX converts what enters and leaves a callback
    with the x64 setting of the thread the callback runs on, and XLA runs a
    large program's callbacks on a thread of its own, where aejax's setting
    for the program (`aejax.linker.call.precision`) does not hold: there a
    ``float64`` input reached ``perform`` as ``float32`` (its value rounded),
    and a ``float64`` output was refused.
    """

    dtype: np.dtype
    words: int
    """How many 32-bit words an element crosses as; 0: it crosses as it is."""

    @classmethod
    def of(cls, dtype: Any) -> Crossing:
        """The crossing of values of ``dtype``, in the precision being traced."""
        dtype = np.dtype(dtype)
        return cls(dtype, word_count(dtype) if jax.config.jax_enable_x64 else 0)

    def result_type(self, shape: tuple[int, ...]) -> jax.ShapeDtypeStruct:
        """What a value of ``shape`` crosses as, for `jax.pure_callback`."""
        return (
            jax.ShapeDtypeStruct((*shape, self.words), WORD) if self.words else jax.ShapeDtypeStruct(shape, self.dtype)
        )

    def from_host(self, array: np.ndarray) -> np.ndarray:
        """On the host: ``array`` as it crosses."""
        return host_words(np.asarray(array, self.dtype, order="C")) if self.words else array

    def on_host(self, crossed: Any) -> np.ndarray:
        """On the host: the value that crossed as ``crossed``."""
        return host_words_value(crossed, self.dtype) if self.words else crossed

    def from_program(self, value: Any) -> Any:
        """In the program: ``value`` as it crosses."""
        return program_words(value) if self.words else value

    def in_program(self, crossed: Any) -> Any:
        """In the program: the value that crossed as ``crossed``."""
        return program_value(crossed, self.dtype) if self.words else crossed


def _host_output(node: Apply, index: int, value: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    array = np.asarray(value, dtype=dtype)
    if array.shape != shape:
        raise ValueError(
            f"Op {node.op} (node {node}) returned output {index} with shape {array.shape}, but its "
            f"type or infer_shape said {shape}"
        )
    return array


def output_shapes(node: Apply, args: Sequence[Any], outputs: Sequence[int]) -> list[tuple[int, ...]]:
    """The shapes of ``node``'s outputs at indices ``outputs``, given its input values while tracing."""
    static = [_static_shape(node.outputs[i]) for i in outputs]
    inferred: Sequence[Sequence[Any]] = static
    if any(None in shape for shape in static):
        inferred = _inferred_shapes(node, args, outputs)
    return [tuple(int(i) if s is None else s for s, i in zip(st, inf)) for st, inf in zip(static, inferred)]


def _static_shape(var: Variable) -> tuple[int | None, ...]:
    return tuple(var.type.shape) if isinstance(var.type, DenseTensorType) else ()


def _input_shape(value: Any, var: Variable) -> tuple[Variable, ...] | None:
    if isinstance(var.type, DenseTensorType):
        return tuple(at.constant(d, dtype="int64") for d in np.shape(value))
    if isinstance(var.type, ScalarType):
        return ()
    return None


def _inferred_shapes(node: Apply, args: Sequence[Any], outputs: Sequence[int]) -> list[list[Any]]:
    op = node.op
    infer_shape = getattr(op, "infer_shape", None)
    shapes = None
    if infer_shape is not None:
        try:
            shapes = infer_shape(None, node, [_input_shape(a, v) for a, v in zip(args, node.inputs)])
        except (ShapeError, ValueError):  # the Op cannot tell from shapes: a vector's length (`get_vector_length`)
            pass
    if shapes is None:
        raise UnknownShapesError(
            f"the output shapes of Op {op} (node {node}) are unknown while tracing: its output "
            "types have no static shape and it has no infer_shape. Give the outputs static shapes "
            "(e.g. with at.specify_shape) or implement infer_shape, so it can run on the host "
            f"through a callback; or register a JAX lowering with aejax.linker.jax_funcify.register("
            f"{type(op).__name__}).",
            node=node,
        )
    wanted = [[at.as_tensor_variable(d) for d in shapes[i]] for i in outputs]
    known = {var: arg for var, arg in zip(node.inputs, args) if not _is_jax_value(arg)}
    flat = [d for shape in wanted for d in shape]
    traced = [v for v in graph_inputs(flat, blockers=known) if v not in known and not isinstance(v, Constant)]
    if traced:
        raise LoweringError(
            f"the output shape of Op {op} (node {node}) depends on values of its inputs "
            f"({', '.join(map(str, traced))}), which are traced; JAX needs output shapes while "
            "tracing. Make those inputs constants or inputs of the compiled function, give the "
            "outputs static shapes (at.specify_shape), or register a JAX lowering with "
            f"aejax.linker.jax_funcify.register({type(op).__name__}).",
            node=node,
            needs_static=True,
        )
    values = _evaluate(flat, known, node)
    it = iter(values)
    return [[next(it) for _ in shape] for shape in wanted]


def _evaluate(variables: Sequence[Variable], known: Mapping[Variable, Any], node: Apply) -> list[Any]:
    values = dict(known)
    for apply in io_toposort(list(known), variables):
        results = fold(apply, [lookup(values, v) for v in apply.inputs])
        if results is None:
            raise UnknownShapesError(
                f"could not compute the output shapes of Op {node.op} (node {node}) from its "
                f"infer_shape: numpy could not evaluate node {apply} of the shape graph",
                node=node,
            )
        values.update(zip(apply.outputs, results))
    return [lookup(values, v) for v in variables]
