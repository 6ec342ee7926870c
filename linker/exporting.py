"""A compiled graph as a `jax.export.Exported`: serialized StableHLO that a JAX without Aesara runs.

`export_graph` takes a function compiled with aejax's mode (or a `JaxGraph`
of `jaxify`) and returns an `ExportedGraph`: the graph as the exported
function ``program(state, *inputs) -> (outputs, new_state)``, where
``state`` is a dict of arrays by state name (`aejax.linker.export.state_names`)
and each random state is the raw ``uint32`` data of its PRNG key (typed keys
do not serialize), the names of its inputs, and the initial state. Two
calls, the second given the first's ``new_state``, draw what two calls of
the compiled function draw.

Shapes: each input's spec comes from its Type unless an argument gives it.
A length the Type leaves open (``None`` in ``TensorType.shape``) becomes a
symbolic dimension (`jax.export.symbolic_shape`) named ``<input>_<axis>``,
so one program takes every length. Graphs whose open lengths only flow
through array operations (elementwise, reductions, products, slices,
reshapes) export so; a length that becomes a size (``zeros(x.shape[0])``,
``arange``, a draw of ``size=x.shape``, a Scan over a sequence of that
length) must be fixed: give that input an example array or a
`jax.ShapeDtypeStruct` of fixed shape, or a string like ``"n, 3"`` to name
dimensions that must be equal across inputs (all strings share one scope).

Many chains: ``chains=`` exports the graph vectorized (``jax.vmap``) over a
leading chain axis of every state entry, every input and every output, so
that row ``k`` of each is chain ``k``'s and one call runs every chain: the
program of ``chains=8`` on stacked states and inputs returns what the
program without ``chains`` returns on each chain's in turn. ``chains`` is
the number of chains, or the name of a symbolic dimension (`CHAINS`, in
the scope of the shape strings) for one program that takes any number. The
shapes the arguments give are one chain's; ``ExportedGraph.state`` stays one
chain's initial state (a runner stacks or splits it, one row a chain).

Precision: a compiled function is exported in the precision its program
would have on the platforms asked (`aejax.linker.call.precision.program_x64`):
a float32 graph for an accelerator holds no 64-bit type (it is compiled again
for that precision if it was compiled for another), a float64 graph computes in
float64, and on the CPU alone a float32 graph keeps Aesara's float64
accumulators. A `JaxGraph` is exported in JAX's precision as `export_graph`
finds it (``jax_enable_x64``). ``ExportedGraph.x64`` records which: a runner
sets ``jax_enable_x64`` to it before making the arguments.

`ExportedGraph.serialize` writes a zip archive that needs only JAX, numpy and
the standard library to read back (``docs/export.md`` shows a runner):

- the description (`DESCRIPTION`, JSON): ``format`` (`FORMAT`), ``version`` (`VERSION`),
  ``x64``, ``platforms``, ``chains`` (``null`` without a chain axis), and
  ``inputs``, ``state`` and ``outputs``, lists of
  ``{"name", "shape", "dtype"}`` in calling order, as the program takes and
  returns them (with the chain axis; a symbolic length as its
  expression, ``"x_0"``; an output's name ``null`` where the graph does not
  name it), each random state with ``key_impl``: the JAX key implementation
  that draws the same bits from its data (``jax.random.wrap_key_data``);
- ``program.bin``: ``Exported.serialize()``, read by ``jax.export.deserialize``;
- ``state/<k>.npy``: the initial value of the ``k``-th state entry, one
  chain's (numpy's ``.npy`` format, ``numpy.load``).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aesara
import jax
import jax.export
import numpy as np
from aesara.compile.function.types import Function
from aesara.graph.basic import Variable, ancestors
from aesara.tensor.random.type import RandomType

from aejax.adapters.threefry import bits_of
from aejax.linker.call.precision import program_x64, running_in
from aejax.linker.chains import is_key
from aejax.linker.errors import LoweringError, variable_name
from aejax.linker.export import JaxGraph, State, exported
from aejax.linker.loader import DESCRIPTION, FORMAT, PROGRAM, VERSION, load, state_member
from aejax.linker.program.static_inputs import is_integer_scalar

PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
"""The platforms a graph can be exported for (JAX's names)."""

CHAINS = "chains"
"""The name to give ``chains=`` for a symbolic number of chains (any name of a dimension will do)."""

SYMBOLIC_HINT = (
    "In this export the lengths that the inputs' Types leave open are symbolic ({dims}). A length that "
    "becomes a size must be fixed, and lengths that must be equal need one name: give those inputs "
    "example arrays or jax.ShapeDtypeStructs of fixed shape, or shape strings sharing names, e.g. "
    "export_graph(f, 'n, 3', 'n')."
)

STATIC_HINT = (
    "export_graph traces every input and cannot make one static: to fix a shape-deciding scalar input, "
    "compile the function with it replaced by a constant "
    "(aesara.function(..., givens={n: aesara.tensor.constant(5, dtype=n.dtype)}))."
)


CALLBACK_EXPORT = (
    "the graph holds an Op without a JAX lowering, run on the host through jax.pure_callback (the CallbackWarning "
    "names it), and jax.export cannot serialize a callback: register a JAX lowering for that Op "
    "(aejax.linker.jax_funcify.register(TheOp)) to export the graph"
)


@dataclass(frozen=True)
class ExportedGraph:
    """A graph exported as ``program(state, *inputs) -> (outputs, new_state)`` (see the module docstring).

    Attributes
    ----------
    exported
        The `jax.export.Exported` program.
    inputs
        The names of the inputs it takes after the state, in order.
    outputs
        The names of its outputs (``None`` where the graph does not name one).
    state
        The initial state by name, as numpy arrays (key data for random states).
    keys
        For each random state, the JAX key implementation that draws the same
        bits from its data (``"threefry2x32"``).
    x64
        Whether the program computes with 64-bit types (``jax_enable_x64``).
    chains
        The number of chains along the leading axis of every argument and
        result, the name of that number where it is symbolic, or ``None``
        for a program of one chain without that axis.
    """

    exported: jax.export.Exported
    inputs: tuple[str, ...]
    outputs: tuple[str | None, ...]
    state: dict[str, np.ndarray]
    keys: dict[str, str]
    x64: bool
    chains: int | str | None = None

    def call(self, state: State, *inputs: Any) -> tuple[Any, State]:
        """``(outputs, new_state)`` of the program on ``state`` (raw, as `state` holds it) and ``inputs``,
        run with ``jax_enable_x64`` set to `x64` (for this thread)."""
        with running_in(self.x64):
            return self.exported.call(state, *inputs)

    def description(self) -> dict[str, Any]:
        """What the description (`DESCRIPTION`) holds (see the module docstring)."""
        n_state = len(self.state)
        state_avals = self.exported.in_avals[:n_state]  # a dict's leaves come in the order of its sorted keys
        avals = dict(zip(sorted(self.state), state_avals))
        state = [{"name": name, **aval_entry(avals[name])} for name in self.state]
        for entry in state:
            if entry["name"] in self.keys:
                entry["key_impl"] = self.keys[entry["name"]]
        return {
            "format": FORMAT,
            "version": VERSION,
            "x64": self.x64,
            "platforms": list(self.exported.platforms),
            "chains": self.chains,
            "inputs": [
                {"name": name, **aval_entry(aval)} for name, aval in zip(self.inputs, self.exported.in_avals[n_state:])
            ],
            "state": state,
            "outputs": [
                {"name": name, **aval_entry(aval)} for name, aval in zip(self.outputs, self.exported.out_avals)
            ],
        }

    def serialize(self) -> bytes:
        """The zip archive of the module docstring: description, program, initial state."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr(DESCRIPTION, json.dumps(self.description(), indent=1))
            archive.writestr(PROGRAM, bytes(self.exported.serialize()))
            for index, value in enumerate(self.state.values()):
                archive.writestr(state_member(index), npy_bytes(value))
        return buffer.getvalue()

    @classmethod
    def deserialize(cls, data: bytes) -> ExportedGraph:
        """The `ExportedGraph` that `serialize` wrote into ``data``; `ValueError` if ``data`` is not one."""
        try:
            description, program, state = load(data)
        except (zipfile.BadZipFile, KeyError) as error:
            raise ValueError(
                f"the data is not a serialized aejax export (a zip archive with {DESCRIPTION}, {PROGRAM} and "
                f"state/<k>.npy; ExportedGraph.serialize writes one): {error}"
            ) from error
        entries = description["state"]
        return cls(
            exported=program,
            inputs=tuple(entry["name"] for entry in description["inputs"]),
            outputs=tuple(entry["name"] for entry in description["outputs"]),
            state=state,
            keys={entry["name"]: entry["key_impl"] for entry in entries if "key_impl" in entry},
            x64=description["x64"],
            chains=description.get("chains"),
        )


def export_graph(
    graph: Function | JaxGraph,
    *args: Any,
    platforms: str | Sequence[str] | None = None,
    chains: int | str | None = None,
) -> ExportedGraph:
    """``graph`` (compiled with aejax's mode, or a `JaxGraph`) exported for ``platforms``.

    ``args``, one per input of the graph or none at all, give the inputs'
    shapes: ``None`` (or no ``args``) takes the input's Type, a symbolic
    dimension for each length it leaves open; an array, its shape; a
    string, a shape with named dimensions (``"n, 3"``); a
    `jax.ShapeDtypeStruct`, itself. Otherwise the dtypes are the Types'.
    ``platforms`` (default: JAX's default backend) are names of `PLATFORMS`.
    ``chains`` (a number, or a dimension's name such as `CHAINS`) exports
    the graph vmapped over a leading chain axis of every state entry, input
    and output; ``args`` then give one chain's shapes. The initial state is
    the shared variables' values now. See the module docstring for the
    program, its chains, its precision and the serialized form.
    """
    platforms = checked_platforms(platforms)
    chains = checked_chains(chains)
    if isinstance(graph, JaxGraph):
        return traced_export(graph, args, platforms, jax.config.jax_enable_x64, outputs=None, chains=chains)
    if not isinstance(graph, Function):
        raise TypeError(
            f"export_graph takes a function compiled with aesara.function(..., mode=aejax.linker.mode) or a "
            f"JaxGraph (aejax.linker.jaxify), not {type(graph).__name__}"
        )
    with running_in(getattr(graph, "x64", None)):
        jax_graph = exported(graph)  # raises TypeError, naming it, for a function of another mode
    x64 = all(program_x64(graph.maker.fgraph, graph.maker.mode.x64, platform) for platform in platforms)
    function = compiled_for(graph, x64)
    if function is not graph:
        with running_in(x64):
            jax_graph = exported(function)
    names = tuple(out.variable.name for out in function.maker.outputs)
    return traced_export(jax_graph, args, platforms, x64, outputs=names, chains=chains)


def checked_platforms(platforms: str | Sequence[str] | None) -> tuple[str, ...]:
    """``platforms`` as a tuple of `PLATFORMS` (JAX's default backend for ``None``); `ValueError` naming one that is not."""
    if platforms is None:
        return (jax.default_backend(),)
    chosen = (platforms,) if isinstance(platforms, str) else tuple(platforms)
    unknown = [platform for platform in chosen if platform not in PLATFORMS]
    if unknown or not chosen:
        raise ValueError(
            f"platforms={platforms!r}: {', '.join(map(repr, unknown)) or 'no platform'} is not one JAX exports for; "
            f"name one or more of {', '.join(map(repr, PLATFORMS))}"
        )
    return chosen


def checked_chains(chains: Any) -> int | str | None:
    """``chains`` as ``None``, a positive Python int or a dimension's name; `TypeError` or `ValueError` naming it."""
    if chains is None or isinstance(chains, str):
        return chains
    if isinstance(chains, bool) or not isinstance(chains, (int, np.integer)):
        raise TypeError(
            f"chains={chains!r}: give the number of chains (an int), the name of a symbolic number of chains "
            f"(chains={CHAINS!r}), or None for a program of one chain"
        )
    if chains < 1:
        raise ValueError(f"chains={chains}: a program runs at least 1 chain; give a positive number or {CHAINS!r}")
    return int(chains)


def chain_axis(chains: int | str | None, scope: jax.export.SymbolicScope) -> tuple[Any, ...]:
    """The leading axis that ``chains`` adds to every argument and result: ``()`` for ``None``, else its length."""
    if chains is None:
        return ()
    if isinstance(chains, int):
        return (chains,)
    try:
        dims = jax.export.symbolic_shape(chains, scope=scope)
    except ValueError as error:
        raise ValueError(
            f"chains={chains!r} is not the name of one dimension ({error}); give a name such as {CHAINS!r}"
        ) from error
    if len(dims) != 1:
        raise ValueError(f"chains={chains!r} names {len(dims)} dimensions; give one name, such as {CHAINS!r}")
    return dims


def compiled_for(function: Function, x64: bool) -> Function:
    """``function``, or the same graph compiled again by its mode for the precision ``x64`` if it computes in another."""
    if function.x64 is x64:
        return function
    maker = function.maker
    explicit = [spec.variable for spec in maker.inputs if not spec.shared]
    updates = [(spec.variable, spec.update) for spec in maker.inputs if spec.shared and spec.update is not None]
    outputs = [out.variable for out in maker.outputs]
    return aesara.function(
        explicit,
        outputs[0] if function.unpack_single else outputs,
        updates=updates,
        mode=maker.mode.with_x64(x64),
    )


def traced_export(
    graph: JaxGraph,
    args: Sequence[Any],
    platforms: tuple[str, ...],
    x64: bool,
    outputs: tuple[str | None, ...] | None,
    chains: int | str | None,
) -> ExportedGraph:
    """``graph`` traced with ``jax_enable_x64`` set to ``x64`` and exported (see `export_graph`)."""
    with running_in(x64):
        program, keys = on_key_data(graph)
        state = {name: raw_state(value) for name, value in graph.state.items()}
        scope = shape_scope(args)
        specs = input_specs(graph.inputs, args, scope)
        axis = chain_axis(chains, scope)
        state_specs = {name: jax.ShapeDtypeStruct((*axis, *value.shape), value.dtype) for name, value in state.items()}
        batched_specs = [jax.ShapeDtypeStruct((*axis, *spec.shape), spec.dtype) for spec in specs]
        traced = jax.vmap(program) if axis else program
        try:
            result = jax.export.export(jax.jit(traced), platforms=platforms)(state_specs, *batched_specs)
        except LoweringError as error:
            hint = export_hint(error, graph.inputs, specs)
            if not hint:
                raise
            raise type(error)(f"{error}\n{hint}", node=error.node, needs_static=error.needs_static) from error
        except NotImplementedError as error:
            if "callback" not in str(error):
                raise
            raise LoweringError(CALLBACK_EXPORT) from error
    names = outputs if outputs is not None else (None,) * result.out_tree.children()[0].num_leaves
    return ExportedGraph(
        exported=result,
        inputs=tuple(variable_name(var) for var in graph.inputs),
        outputs=names,
        state=state,
        keys=keys,
        x64=x64,
        chains=chains,
    )


def on_key_data(graph: JaxGraph) -> tuple[Callable[..., tuple[Any, State]], dict[str, str]]:
    """``graph.fn`` with each random state as its key's raw data, in and out; and for each random state the JAX
    key implementation of the same bits."""
    impls = {name: jax.random.key_impl(value) for name, value in graph.state.items() if is_key(value)}

    def program(state: State, *inputs: Any) -> tuple[Any, State]:
        typed = {
            name: jax.random.wrap_key_data(value, impl=impls[name]) if name in impls else value
            for name, value in state.items()
        }
        outputs, new_state = graph.fn(typed, *inputs)
        return outputs, {name: raw_state(value) for name, value in new_state.items()}

    return program, {name: bits_of(str(impl)) for name, impl in impls.items()}


def raw_state(value: Any) -> Any:
    """A state entry as an array: a PRNG key as its data, an array in the dtype of the precision being traced in."""
    if is_key(value):
        data = jax.random.key_data(value)
        return data if isinstance(value, jax.core.Tracer) else np.asarray(data)
    if isinstance(value, jax.core.Tracer):
        return value
    array = np.asarray(value)
    return array.astype(jax.dtypes.canonicalize_dtype(array.dtype))


def shape_scope(args: Sequence[Any]) -> jax.export.SymbolicScope:
    """The scope of the symbolic dimensions of an export: that of the `jax.ShapeDtypeStruct` arguments', or a new one."""
    scope = next((dim.scope for arg in args for dim in spec_dims(arg) if not isinstance(dim, int)), None)
    return scope or jax.export.SymbolicScope()


def input_specs(
    variables: Sequence[Variable], args: Sequence[Any], scope: jax.export.SymbolicScope
) -> list[jax.ShapeDtypeStruct]:
    """The spec of each input (see `export_graph`), its symbolic dimensions all in ``scope``."""
    if args and len(args) != len(variables):
        names = ", ".join(variable_name(var) for var in variables)
        raise TypeError(
            f"export_graph takes one shape argument per input ({names}), or none, not {len(args)}; "
            "give None for an input whose Type gives its shape"
        )
    bases = dimension_bases(variables)
    return [
        input_spec(var, arg, base, scope) for var, arg, base in zip(variables, args or [None] * len(variables), bases)
    ]


def spec_dims(arg: Any) -> tuple[Any, ...]:
    """The dimensions of a `jax.ShapeDtypeStruct` argument (none for other arguments)."""
    return tuple(arg.shape) if isinstance(arg, jax.ShapeDtypeStruct) else ()


def input_spec(var: Variable, arg: Any, base: str, scope: jax.export.SymbolicScope) -> jax.ShapeDtypeStruct:
    """The spec of input ``var`` given ``arg`` (see `export_graph`); its symbolic dimensions are ``<base>_<axis>``."""
    if isinstance(var.type, RandomType):
        raise TypeError(
            f"input {variable_name(var)!r} is a random generator: an exported program takes random states only "
            "in its state; make it a shared variable (aesara.shared(np.random.default_rng(seed)))"
        )
    if isinstance(arg, jax.ShapeDtypeStruct):
        return arg
    dtype = jax.dtypes.canonicalize_dtype(var.type.dtype)
    if arg is None:
        fixed = getattr(var.type, "shape", ())
        text = ", ".join(f"{base}_{axis}" if length is None else str(length) for axis, length in enumerate(fixed))
        return jax.ShapeDtypeStruct(jax.export.symbolic_shape(text, scope=scope), dtype)
    if isinstance(arg, str):
        return jax.ShapeDtypeStruct(jax.export.symbolic_shape(arg, scope=scope), dtype)
    return jax.ShapeDtypeStruct(np.shape(arg), dtype)


def dimension_bases(variables: Sequence[Variable]) -> list[str]:
    """For each input, the start of its symbolic dimensions' names: its name made an identifier, unique,
    ``input<k>`` for an input without one."""
    bases: list[str] = []
    for position, var in enumerate(variables):
        base = re.sub(r"\W", "_", var.name or "")
        if not base or not base[0].isalpha() or base in bases:
            base = f"input{position}"
        bases.append(base)
    return bases


def export_hint(error: LoweringError, variables: Sequence[Variable], specs: Sequence[jax.ShapeDtypeStruct]) -> str:
    """What to change when tracing for the export failed with ``error``, given the inputs and their ``specs``."""
    dims = sorted({str(dim) for spec in specs for dim in spec.shape if not isinstance(dim, int)})
    hints = [SYMBOLIC_HINT.format(dims=", ".join(dims))] if dims else []
    found = set(ancestors(error.node.inputs)) if error.node is not None else set()
    if error.needs_static and any(is_integer_scalar(var) and var in found for var in variables):
        hints.append(STATIC_HINT)
    return " ".join(hints)


def aval_entry(aval: Any) -> dict[str, Any]:
    """An abstract value's shape (a symbolic length as its expression) and dtype, for the description."""
    return {"shape": [dim if isinstance(dim, int) else str(dim) for dim in aval.shape], "dtype": str(aval.dtype)}


def npy_bytes(value: np.ndarray) -> bytes:
    """``value`` in numpy's ``.npy`` format."""
    buffer = io.BytesIO()
    np.save(buffer, value, allow_pickle=False)
    return buffer.getvalue()
