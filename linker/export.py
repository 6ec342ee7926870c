"""Pure-JAX export of an Aesara graph, with its state explicit.

`jaxify` compiles a graph with aejax's mode and returns it as a pure
function ``fn(state, *inputs) -> (outputs, new_state)``. Shared variables
become the ``state`` dict (random generators as typed PRNG keys through the
codecs), so the function composes with `jax.jit`, `jax.vmap` (e.g. one key per
chain), `jax.grad` and sharding. `JaxGraph.store` writes a state back into the
Aesara shared variables, where every Aesara backend can use it.

Like any JAX function, ``fn`` computes in the precision of the JAX that
traces it: with ``jax_enable_x64`` on as the caller traces it (by
``jax.jit``, ``jax.export``, ...), a float64 graph computes in float64; with
it off, in float32, and the first such trace warns (`PrecisionWarning`,
naming float64 variables of the graph). The graph is lowered in the
precision JAX has when `jaxify` is called.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aesara
import jax
from aesara.compile.sharedvalue import SharedVariable
from aesara.graph.basic import Variable, ancestors

from aejax.adapters import CodecError, StateCodec, codec_for, stays_on_host
from aejax.linker.call.linker import BACKEND
from aejax.linker.call.precision import PrecisionWarning, wide_float_variables
from aejax.linker.errors import LoweringError, caller_stacklevel, variable_name
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH, NeedsSplit
from aejax.linker.mode import mode as aejax_mode
from aejax.linker.program.static_inputs import is_integer_scalar
from aejax.linker.trace.host_failures import host_object_error, host_objects
from aejax.linker.trace.lowering import LoweredGraph

State = dict[str, Any]

UNTIL_TRACE = (
    "the exported graph uses the trace of an until-loop, whose length is known only "
    "at run time, so it cannot be one pure JAX function; export the loop's last values "
    "instead, or compile the graph with aesara.function(..., mode='AEJAX')"
)


@dataclass
class JaxGraph:
    """An Aesara graph as a pure JAX function and its state.

    Attributes
    ----------
    fn
        ``fn(state, *inputs) -> (outputs, new_state)``, traceable by JAX. It
        raises `TypeError` when given the wrong number of inputs, or a state
        whose names or kinds of values (arrays, PRNG keys) are not those of
        `state`.
    state
        The initial state: the shared variables' values in JAX form, by name.
    shared
        The shared variable behind each state entry.
    """

    fn: Callable[..., tuple[list[Any], State]]
    state: State
    shared: dict[str, SharedVariable] = field(repr=False)

    def store(self, state: State) -> None:
        """Write ``state`` (all entries or some) back into the shared variables, as host values.

        Every entry is checked and decoded before any is written: if one is
        wrong, the error names it and no shared variable changes.
        """
        try:
            check_state(state, self.shared, complete=False)
        except TypeError as error:
            raise TypeError(f"{error}; nothing was stored") from error
        for name, value in state.items():
            var = self.shared[name]
            var.set_value(codec_for(BACKEND, var.type).decode(value, var.type), borrow=True)


def check_state(state: Any, shared: dict[str, SharedVariable], complete: bool) -> None:
    """Raise `TypeError` unless ``state`` maps names of ``shared`` to valid values of their kind.

    With ``complete``, every name of ``shared`` must be there.
    """
    if not isinstance(state, dict):
        raise TypeError(f"the state must be a dict with the entries {sorted(shared)}, got {type(state).__name__}")
    unknown = sorted(set(state) - set(shared))
    missing = sorted(set(shared) - set(state)) if complete else []
    if unknown or missing:
        raise TypeError(
            f"the state has the entries {sorted(state)}; expected {sorted(shared)} "
            f"(unknown: {unknown or 'none'}, missing: {missing or 'none'})"
        )
    for name, value in state.items():
        var = shared[name]
        try:
            codec_for(BACKEND, var.type).validate(value, var.type)
        except CodecError as error:
            raise TypeError(f"state entry {name!r}: {error}") from error


def with_static_hint(error: LoweringError, inputs: Sequence[Variable], explicit: Sequence[int]) -> LoweringError:
    """``error`` plus which arguments of the exported function to make static."""
    if error.node is None:
        return error
    found = set(ancestors(error.node.inputs))
    argnums = [
        (number + 1, inputs[position])
        for number, position in enumerate(explicit)
        if inputs[position] in found and is_integer_scalar(inputs[position])
    ]
    if not argnums:
        return error
    names = ", ".join(f"{variable_name(var)} (argnum {argnum})" for argnum, var in argnums)
    return LoweringError(
        f"{error}\nThe node depends on {names}: mark it static, e.g. "
        f"jax.jit(graph.fn, static_argnums={tuple(a for a, _ in argnums)}).",
        node=error.node,
    )


ON_HOST = (
    "Compile the graph with aesara.function(..., mode='AEJAX') instead, which runs such nodes on the "
    "host between its JAX programs."
)


def check_no_host_objects(fgraph: Any) -> None:
    """Raise `LoweringError` naming the node or variable if a value of ``fgraph`` stays on the host.

    Such a value (a `Generic` Python object) cannot be an input, an output
    or a state entry of one pure JAX function.
    """
    for node in fgraph.toposort():
        kept = host_objects(node)
        if kept:
            why = "jaxify exports the graph as one pure JAX function, where no node runs on the host"
            raise host_object_error(node, kept[0], why, ON_HOST)
    for var in fgraph.inputs + fgraph.outputs:
        if stays_on_host(var.type):
            raise LoweringError(
                f"{variable_name(var)!r} is of type {var.type}, a Python object that stays on the host: an "
                f"exported pure JAX function cannot take or return it. {ON_HOST}"
            )


def _state_names(shared: Sequence[SharedVariable]) -> list[str]:
    names: list[str] = []
    for index, var in enumerate(shared):
        name = var.name or f"shared_{index}"
        while name in names:
            name = f"{name}_{index}"
        names.append(name)
    return names


def precision_check(fgraph: Any) -> Callable[[], None]:
    """A function to call while ``fgraph`` is traced: it warns once (`PrecisionWarning`) if that is without x64
    while the graph holds float64 values, naming a few of them, named variables first."""
    wide = list(dict.fromkeys(wide_float_variables(fgraph)))
    names = [variable_name(var) for var in sorted(wide, key=lambda var: var.name is None)[:3]]
    more = ", ..." if len(wide) > len(names) else ""
    warned = False

    def check() -> None:
        nonlocal warned
        if not names or warned or jax.config.jax_enable_x64:
            return
        warned = True
        warnings.warn(
            f"the exported graph holds float64 values ({', '.join(map(repr, names))}{more}) and is traced with "
            "jax_enable_x64 off, so it computes in float32; trace it with jax_enable_x64 on "
            "(jax.config.update('jax_enable_x64', True), or inside jax.experimental.enable_x64()) for float64",
            PrecisionWarning,
            stacklevel=caller_stacklevel(),
        )

    return check


def jaxify(inputs: Sequence[Variable], outputs: Any, updates: Any = None) -> JaxGraph:
    """Export the graph from ``inputs`` to ``outputs`` (with ``updates``) as pure JAX.

    The graph is rewritten as aejax's mode rewrites it, and lowered in the
    precision JAX has now (``jax_enable_x64``); ``fn`` computes in the
    precision of the JAX that traces it (see the module docstring).
    Shape-deciding scalar inputs must be static under the caller's `jax.jit`
    (``static_argnums``); the trace of an ``until`` Scan cannot leave the
    function (its length is known only at run time), but its last values
    can. A graph with values that stay on the host (`Generic` Python
    objects) raises `LoweringError`.
    """
    single = not isinstance(outputs, (list, tuple))
    mode = aejax_mode.with_x64(jax.config.jax_enable_x64)
    compiled = aesara.function(list(inputs), outputs, updates=updates, mode=mode)
    fgraph = compiled.maker.fgraph
    check_no_host_objects(fgraph)
    check_precision = precision_check(fgraph)
    specs = compiled.maker.inputs
    shared_positions = [i for i, spec in enumerate(specs) if spec.shared]
    shared = [specs[i].variable for i in shared_positions]
    names = _state_names(shared)
    codecs: list[StateCodec] = [codec_for(BACKEND, var.type) for var in shared]
    n_outputs = len(fgraph.outputs) - len(fgraph.update_mapping)
    updated = {i: o for o, i in fgraph.update_mapping.items()}
    lowered = LoweredGraph(fgraph.inputs, fgraph.outputs, compiled.vm.jit_fn.steps)
    explicit = [i for i in range(len(specs)) if not specs[i].shared]

    shared_by_name = dict(zip(names, shared))
    arg_names = ", ".join(variable_name(specs[i].variable) for i in explicit)

    def fn(state: State, *args: Any) -> tuple[Any, State]:
        if len(args) != len(explicit):
            raise TypeError(f"fn(state, {arg_names}) takes {len(explicit)} input(s) after the state, got {len(args)}")
        check_state(state, shared_by_name, complete=True)
        check_precision()
        values: list[Any] = [None] * len(specs)
        for position, arg in zip(explicit, args):
            values[position] = arg
        for position, name in zip(shared_positions, names):
            values[position] = state[name]
        try:
            results = lowered(*values)
        except NeedsSplit as split:
            raise LoweringError(UNTIL_TRACE, node=split.node) from split
        except LoweringError as error:
            raise with_static_hint(error, fgraph.inputs, explicit) from error
        if any(isinstance(r, RUN_TIME_LENGTH) for r in results):
            raise LoweringError(UNTIL_TRACE)
        new_state = {
            name: results[updated[position]] if position in updated else state[name]
            for position, name in zip(shared_positions, names)
        }
        outs = list(results[:n_outputs])
        return (outs[0] if single else outs), new_state

    state = {
        name: codec.encode(var.get_value(borrow=True), var.type) for name, var, codec in zip(names, shared, codecs)
    }
    return JaxGraph(fn=fn, state=state, shared=shared_by_name)
