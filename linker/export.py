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

``fn`` checks each input as JAX traces it, against its Aesara Type: its
rank, the lengths the Type fixes and its dtype's kind (a complex array for a
real input, a float one for an integer input raise `TypeError` naming the
input, as Aesara does); so under ``jax.jit`` the checks cost nothing per
call. Where Aesara refuses a value that may lose precision, ``fn`` casts it
as JAX would: a float64 array for a float32 input is rounded to float32
(`aejax.linker.call.input_checks`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any

import aesara
import jax
from aesara.compile.function.types import Function
from aesara.compile.sharedvalue import SharedVariable
from aesara.graph.basic import Variable, ancestors
from aesara.tensor.random.type import RandomType

from aejax.adapters import CodecError, StateCodec, codec_for, stays_on_host
from aejax.linker.call.input_checks import checked_argument
from aejax.linker.call.linker import BACKEND
from aejax.linker.call.precision import PrecisionWarning, wide_float_variables
from aejax.linker.checks import CheckTable, with_checks
from aejax.linker.errors import LoweringError, caller_stacklevel, variable_name
from aejax.linker.lengths.ragged import RUN_TIME_LENGTH, NeedsSplit
from aejax.linker.mode import mode as aejax_mode
from aejax.linker.program.segments import GraphProgram
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
        raises `TypeError` when given the wrong number of inputs, a state
        whose names or kinds of values (arrays, PRNG keys) are not those of
        `state`, or an input of another rank, dtype kind or fixed length than
        its Aesara Type's, naming it (`aejax.linker.call.input_checks`); an
        input of a narrower kind or another precision (a float64 array for a
        float32 input) is cast to the input's dtype, as JAX casts.
    state
        The initial state: the shared variables' values in JAX form, by name
        (`state_names`: a variable's own name where it has one).
    shared
        The shared variable behind each state entry.
    inputs
        The variables of the inputs ``fn`` takes after the state, in order.
    checks
        The checks `checked_fn`'s failure codes number (`aejax.linker.checks.CheckTable`).
    """

    fn: Callable[..., tuple[list[Any], State]]
    state: State
    shared: dict[str, SharedVariable] = field(repr=False)
    inputs: list[Variable] = field(default_factory=list, repr=False)
    checks: CheckTable = field(default_factory=CheckTable, repr=False)

    def checked_fn(self, state: State, *inputs: Any) -> tuple[tuple[Any, State], Any]:
        """``fn`` with the graph's run-time checks: ``((outputs, new_state), failure_code)``, traceable by JAX.

        ``fn`` cannot raise on a check of traced values (aeppl's parameter
        checks, index bounds, `CheckAndRaise`): it warns and skips it. Here
        each such check folds into ``failure_code``, an ``int32`` that is
        ``aejax.linker.checks.PASSED`` (-1) while every check holds, else the
        number of the first that failed, whose exception (the Op's own type
        and message) ``self.checks.exception(code)`` makes on the host; under
        ``jax.vmap``, one code per batch entry.
        """
        return with_checks(self.fn, self.checks)(state, *inputs)

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
        needs_static=error.needs_static,
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


def state_names(shared: Sequence[SharedVariable]) -> list[str]:
    """The state's name for each of ``shared``, all different: a variable's own name where it has one.

    A second variable of the same name gets ``<name>_1``, ``<name>_2``, ...;
    a variable without one ``rng_0``, ``rng_1``, ... for random generators
    and ``shared_0``, ``shared_1``, ... for others, counted in input order;
    a generated name never takes one a variable has.
    """
    given = {var.name for var in shared if var.name}
    names: list[str] = []
    for var in shared:
        if var.name and var.name not in names:
            names.append(var.name)
            continue
        base = var.name or ("rng" if isinstance(var.type, RandomType) else "shared")
        taken = set(names) | given
        names.append(next(f"{base}_{k}" for k in count(1 if var.name else 0) if f"{base}_{k}" not in taken))
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
            "(jax.config.update('jax_enable_x64', True)) for float64",
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
    mode = aejax_mode.with_x64(jax.config.jax_enable_x64)
    compiled = aesara.function(list(inputs), outputs, updates=updates, mode=mode)
    return exported(compiled)


def exported(compiled: Function) -> JaxGraph:
    """The `JaxGraph` of a function compiled with aejax's mode (`jaxify` after its compilation).

    ``fn`` runs the programs' lowerings of the graph, made in the precision
    of ``compiled``'s programs (``compiled.x64``) and with its mode's options
    (`AejaxMode.with_progress`).
    """
    if not isinstance(getattr(compiled.vm, "jit_fn", None), GraphProgram):
        raise TypeError(f"{compiled!r} was not compiled with aejax's mode: pass mode=aejax.linker.mode")
    single = compiled.unpack_single
    fgraph = compiled.maker.fgraph
    check_no_host_objects(fgraph)
    check_precision = precision_check(fgraph)
    specs = compiled.maker.inputs
    shared_positions = [i for i, spec in enumerate(specs) if spec.shared]
    shared = [specs[i].variable for i in shared_positions]
    names = state_names(shared)
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
        for argnum, (position, arg) in enumerate(zip(explicit, args), start=1):
            values[position] = checked_argument(arg, specs[position].variable, argnum)
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
    return JaxGraph(fn=fn, state=state, shared=shared_by_name, inputs=[specs[i].variable for i in explicit])
