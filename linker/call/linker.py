"""The JAX linker: Aesara's `JITLinker` with a codec storage boundary.

Inputs are encoded by their ``"jax"`` codec before each call (a shared numpy
`Generator` becomes a PRNG key) and outputs decoded after it (the advanced key
becomes a numpy `Generator` again), so shared variables are used as they are
and keep host values every Aesara backend understands. `Type.filter` is never
applied to backend values. A resident shared variable
(`aejax.adapters.resident`) is the exception: it enters as the ``jax.Array``
it holds and its update stays one (`resident_updates`), its old buffer given
to the program to reuse (``donated``).

`JAXDeviceLinker`, the linker of the device-I/O mode ``"AEJAX_DEVICE"``, is
the same but for the outputs a function returns: an array leaves the program
as the ``jax.Array`` XLA made (`DeviceValue`), where XLA put it.

Each graph's program computes with JAX's 64-bit types or without them
(`aejax.linker.call.precision`): the linker decides which, lowers the graph
in that precision, and gives a program without them cells that narrow
64-bit values on the way in and widen them on the way out.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import jax
import jax.numpy as jnp
import numpy as np
from aesara.compile.ops import DeepCopyOp, ViewOp
from aesara.graph.basic import Apply, Constant, Variable
from aesara.link.basic import JITLinker
from aesara.link.utils import raise_with_op
from aesara.scalar.basic import ScalarType
from aesara.tensor.type import TensorType

from aejax.adapters import CodecError, KeyCodec, KeyPayloadSpec, StateCodec, codec_for
from aejax.adapters.jax import NARROWED, as_key_codec
from aejax.adapters.resident import ResidentStorage
from aejax.adapters.threefry import key_impl
from aejax.linker.call.copies import warn_of_copied_updates
from aejax.linker.call.identity import graph_identity
from aejax.linker.call.precision import program_x64, running_in
from aejax.linker.dispatch import jax_funcify
from aejax.linker.errors import InputValueError, LoweringError, raised_by, rebuildable, variable_name
from aejax.linker.program.saved_programs import ProgramStore, SavedAs
from aejax.linker.program.segments import GraphProgram
from aejax.linker.program.watched import WatchedProgram
from aejax.linker.scan.progress import Progress
from aejax.linker.trace.lowering import lower_nodes

BACKEND = "jax"


class BoundaryValue:
    """One input or output of the compiled graph: its variable, codec and storage cell.

    A value crosses the jit boundary in the form the codec's `encode` gives;
    when the codec says ``host_is_backend`` (arrays), the filtered host value
    crosses as it is and is validated once, while the program is traced,
    unless the cell is ``narrowed``: a 64-bit value of a program that
    computes without x64, encoded (narrowed) and decoded (widened) by its
    codec on each call. See `KeyBoundaryValue` for random states.
    """

    reuses_previous = False
    """Whether the cell has a ``decode_into`` that puts an output into the host value it updates."""

    def __init__(self, variable: Variable, codec: StateCodec, storage: list[Any], narrowed: bool = False) -> None:
        self.variable = variable
        self.codec = codec
        self.storage = storage
        self._type = variable.type
        self._encode = codec.encode
        self._decode = codec.decode
        self.passes_through = bool(getattr(codec, "host_is_backend", False)) and not narrowed

    @property
    def crosses_as_array(self) -> bool:
        """Whether its host value is a numpy array (of a `TensorType`) that crosses the boundary as it is."""
        return self.passes_through and isinstance(self._type, TensorType)

    def encode(self, host_value: Any) -> Any:
        """A host value of this cell in boundary form."""
        if self.passes_through:
            return host_value
        try:
            return self._encode(host_value, self._type)
        except Exception as error:
            raise self.failure("input", error) from error

    def decode(self, value: Any) -> Any:
        """A boundary-form output as a host value."""
        try:
            return self._decode(value, self._type)
        except Exception as error:
            raise self.failure("output", error) from error

    @property
    def decoder(self) -> tuple[Callable[[Any, Any], Any], Any]:
        """The codec's own decoding function and the Type it takes: `decode` without the error wrapping."""
        return self._decode, self._type

    def failure(self, role: str, error: Exception) -> InputValueError:
        """``error`` of the codec, as an `InputValueError` naming the variable (and the codec, if it is a bug)."""
        reason = (
            str(error)
            if isinstance(error, CodecError)
            else (f"codec {self.codec!r} failed with {type(error).__name__}: {error}")
        )
        return InputValueError(f"{role} {variable_name(self.variable)!r}: {reason}")

    def enter(self, value: Any) -> Any:
        """Boundary form -> the value inside the traced function (checked once, while tracing)."""
        if self.passes_through and isinstance(value, jax.core.Tracer):
            try:
                self.codec.validate(value, self._type)
            except Exception as error:
                raise self.failure("input", error) from error
        return value

    def leave(self, value: Any) -> Any:
        """The value inside the traced function -> boundary form."""
        return value


class KeyBoundaryValue(BoundaryValue):
    """A random state: it crosses the jit boundary as its key's raw ``uint32`` words.

    The words are wrapped into a typed key as the traced function starts and
    unwrapped as it ends, so inside it a random state is only ever a key,
    while the call avoids JAX's slow path for key-typed arguments.
    """

    reuses_previous = True

    def __init__(self, variable: Variable, codec: KeyCodec, storage: list[Any], impl: str) -> None:
        super().__init__(variable, codec, storage)
        self.impl = key_impl(impl)  # what jax.random's impl= takes
        self.passes_through = False
        self._encode = codec.encode_words
        self._decode = codec.decode_words

    def decode_into(self, value: Any, previous: Any) -> Any:
        """The advanced state, set into ``previous`` when it is a generator of the codec's own kind.

        A shared generator is then advanced in place call after call, as
        Aesara's in-place random ops do, instead of being rebuilt each time.
        """
        try:
            return self._decode(value, self._type, into=previous)
        except Exception as error:
            raise self.failure("output", error) from error

    def enter(self, value: Any) -> Any:
        return jax.random.wrap_key_data(value, impl=self.impl)

    def leave(self, value: Any) -> Any:
        if not jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
            raise LoweringError(
                f"output {variable_name(self.variable)!r} should be a PRNG key inside the "
                f"traced function, got {value.dtype}",
                node=self.variable.owner,
            )
        return jax.random.key_data(value)


class DeviceValue(BoundaryValue):
    """An array a device-mode function returns: it leaves the program as a ``jax.Array``, not copied to the host.

    Never packed with other outputs (`aejax.linker.program.packing`): packing
    saves host copies, and this value has none. A value that reached the
    host on the way (cut to its run-time length, made by a node run on the
    host) is put back on JAX's default device, so the caller always gets a
    ``jax.Array``.
    """

    def __init__(self, variable: Variable, codec: StateCodec, storage: list[Any]) -> None:
        super().__init__(variable, codec, storage)
        self._dtype = np.dtype(variable.type.dtype)
        self._ndim = getattr(variable.type, "ndim", 0)  # a ScalarType's values are 0-d

    @property
    def crosses_as_array(self) -> bool:
        return False  # outside the program it is a jax.Array, not a numpy array

    def decode(self, value: Any) -> Any:
        try:
            return self._keep(value, self._type)
        except Exception as error:
            raise self.failure("output", error) from error

    @property
    def decoder(self) -> tuple[Callable[[Any, Any], Any], Any]:
        return self._keep, self._type

    def _keep(self, value: Any, type_: Any) -> Any:
        """``value`` as a ``jax.Array``, checked by the codec when its dtype or rank is not the Type's."""
        if not isinstance(value, jax.Array):
            value = jnp.asarray(value)
        if value.dtype != self._dtype or value.ndim != self._ndim:
            self.codec.validate(value, type_)
        return value


class HostConstantValue(BoundaryValue):
    """An output that is a constant of the graph JAX cannot hold, e.g. the numpy `Generator` ``default_rng(3)`` folds to.

    The program leaves an empty array in its place, and each call returns a
    copy of the constant, as Aesara's `DeepCopyOp` does: a key made from a
    generator would not keep its exact state.
    """

    def __init__(self, variable: Variable, codec: StateCodec, storage: list[Any], constant: Constant) -> None:
        super().__init__(variable, codec, storage)
        self.passes_through = False
        self.constant = constant
        self._decode = self._copy

    def _copy(self, value: Any, type_: Any) -> Any:
        return copy.deepcopy(self.constant.data)

    def leave(self, value: Any) -> Any:
        return jnp.zeros((0,), "uint8")


def host_constant(var: Variable) -> Constant | None:
    """The constant ``var`` is (or a copy or view of), if it is not an array or scalar that JAX can hold."""
    while var.owner is not None and isinstance(var.owner.op, (DeepCopyOp, ViewOp)):
        var = var.owner.inputs[0]
    if isinstance(var, Constant) and not isinstance(var.type, (TensorType, ScalarType)):
        return var
    return None


def narrowed_in(var: Variable, x64: bool) -> bool:
    """Whether ``var``'s values cross the boundary of a program of precision ``x64`` narrowed to 32 bits."""
    return not x64 and isinstance(var.type, (TensorType, ScalarType)) and np.dtype(var.type.dtype) in NARROWED


def boundary(
    variables: list[Variable],
    storage_map: dict[Variable, list[Any]],
    on_device: frozenset[int] = frozenset(),
    x64: bool = True,
) -> list[BoundaryValue]:
    """The codec-backed cells of ``variables`` for a program of precision ``x64``.

    An array at a position in ``on_device`` stays a ``jax.Array``.
    """
    cells = []
    for position, var in enumerate(variables):
        codec = codec_for(BACKEND, var.type)
        spec = codec.payload_spec(var.type)
        constant = host_constant(var)
        if constant is not None:
            cells.append(HostConstantValue(var, codec, storage_map[var], constant))
        elif isinstance(spec, KeyPayloadSpec):
            cells.append(KeyBoundaryValue(var, as_key_codec(codec, spec), storage_map[var], spec.impl))
        elif position in on_device and getattr(codec, "host_is_backend", False):
            cells.append(DeviceValue(var, codec, storage_map[var]))
        else:
            cells.append(BoundaryValue(var, codec, storage_map[var], narrowed_in(var, x64)))
    return cells


class HostCall:
    """Run a `GraphProgram` on host values: encode the inputs, call it, decode the outputs.

    A `DirectCall` uses its `encoded` and `decoded` around its own call of the program.

    ``updates`` maps an output's position to the position of the input it
    updates (``FunctionGraph.update_mapping``); such an output is decoded into
    the input's host value where its cell can (an advanced random state set
    into the shared generator), after every other output is decoded, so a
    call that fails leaves no partial result behind.

    Attributes
    ----------
    in_place
        ``(output, input, decode_into)`` of each output decoded into the host
        value of the input it updates.
    """

    def __init__(self, program: GraphProgram, updates: Mapping[int, int] | None = None) -> None:
        self.program = program
        self._encoders = [None if cell.passes_through else cell.encode for cell in program.input_cells]
        self._encodes = any(self._encoders)
        cells = program.output_cells
        self.in_place = [
            (out, updated, cells[out].decode_into)
            for out, updated in sorted((updates or {}).items())
            if cells[out].reuses_previous
        ]
        in_place = {out for out, _, _ in self.in_place}
        self._decoders = [(None, None) if i in in_place else cell.decoder for i, cell in enumerate(cells)]

    def __call__(self, host_values: Sequence[Any]) -> list[Any]:
        """The host values of the outputs for ``host_values``, encoded, computed and decoded in the program's precision."""
        with running_in(self.program.x64):
            return self.decoded(self.program(*self.encoded(host_values)), host_values)

    def encoded(self, host_values: Sequence[Any]) -> Sequence[Any]:
        """The program's arguments for ``host_values``."""
        if not self._encodes:
            return host_values
        return [v if encode is None else encode(v) for encode, v in zip(self._encoders, host_values)]

    def decoded(self, results: Sequence[Any], host_values: Sequence[Any]) -> list[Any]:
        """The host values of the program's ``results`` for a call on ``host_values`` (an update into its input's)."""
        try:
            outputs = [None if decode is None else decode(r, t) for (decode, t), r in zip(self._decoders, results)]
        except Exception:
            self._name_failed_output(results)
            raise
        if self.in_place:
            self._decode_in_place(outputs, results, host_values)
        return outputs

    def _decode_in_place(self, outputs: list[Any], results: Sequence[Any], host_values: Sequence[Any]) -> None:
        reused: list[Any] = []
        for out, updated, decode_into in self.in_place:
            previous = host_values[updated]
            fresh = any(previous is other for other in reused)  # one object updated twice: keep both
            outputs[out] = decode_into(results[out], None if fresh else previous)
            reused.append(previous)

    def _name_failed_output(self, results: Sequence[Any]) -> None:
        """Decode ``results`` again cell by cell, so that the failure names its output."""
        for cell, (decode, _), result in zip(self.program.output_cells, self._decoders, results):
            if decode is not None:
                cell.decode(result)


def held_value(storage: list[Any]) -> Any:
    """What a storage list holds, a backend value a `ResidentStorage` keeps included (not decoded)."""
    return storage.held() if type(storage) is ResidentStorage else storage[0]


def resident_updates(fgraph: Any, storage_map: Mapping[Variable, list[Any]]) -> frozenset[int]:
    """The positions of ``fgraph``'s outputs that update a shared variable whose storage keeps backend values."""
    mapping = getattr(fgraph, "update_mapping", None) or {}
    return frozenset(
        out for out, position in mapping.items() if isinstance(storage_map[fgraph.inputs[position]], ResidentStorage)
    )


def raise_failure(error: BaseException, fgraph: Any, node: Apply | None, thunk: Any, program: Any) -> NoReturn:
    """Raise ``error``, which running ``program`` (the thunk ``thunk`` of ``fgraph``'s ``node``) raised, as Aesara
    raises a failed thunk's: with the node at fault and its input values (`raise_with_op`).

    That node is the one whose check or ``perform`` raised, if the error
    says which (`aejax.linker.errors.raised_by`) and it is one of
    ``fgraph``'s own, else ``node``. The error keeps its type and message
    (`rebuildable`): Aesara re-creates it with more text.
    """
    kept = rebuildable(error)
    if kept is not error:
        kept.__cause__ = error
    raiser = raised_by(error)
    if raiser is not None and raiser.node in fgraph.apply_nodes:
        node, thunk = raiser.node, raiser.thunk({cell.variable: cell.storage[0] for cell in program.input_cells})
    if node is None:
        raise kept
    raise_with_op(fgraph, node, thunk, (type(kept), kept, error.__traceback__))


def thunk_node(fgraph: Any) -> Apply | None:
    """The node Aesara files the thunk of ``fgraph``'s program under (named by its errors): its first output's."""
    return next((var.owner for var in fgraph.outputs if var.owner is not None), None)


class JAXCodecLinker(JITLinker):
    """Compile a whole `FunctionGraph` with `jax.jit` behind a codec boundary.

    `fgraph_convert` lowers every node and wraps the graph in a `GraphProgram`
    whose boundary cells encode the inputs and decode the outputs through the
    ``"jax"`` codecs; `jit_compile` is the identity, since the program compiles
    itself on first use (once per value of its static inputs).

    ``x64`` is the precision its programs are asked for: ``True`` with JAX's
    64-bit types, ``False`` without, ``None`` (the default) decided for each
    graph (`aejax.linker.call.precision.program_x64`). ``progress`` is the
    mode's progress option (`aejax.linker.scan.progress.Progress`; ``None``,
    the default: no bars), handed to the lowerings; a program with bars is
    never saved nor loaded (`ProgramStore`): it calls back into this process.
    """

    def __init__(self, *args: Any, x64: bool | None = None, progress: Progress | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.x64 = x64
        self.progress = progress

    def accept(self, fgraph: Any, no_recycling: Any = None, profile: Any = None) -> JAXCodecLinker:
        if self.fgraph is not None and self.fgraph is not fgraph:  # Aesara would make a linker without our settings
            again = type(self)(allow_gc=self.allow_gc, x64=self.x64, progress=self.progress)
            return again.accept(fgraph, no_recycling, profile)
        return super().accept(fgraph, no_recycling, profile)

    def fgraph_convert(self, fgraph: Any, storage_map: Any = None, **kwargs: Any) -> GraphProgram:
        x64 = program_x64(fgraph, self.x64)
        with running_in(x64):  # the lowerings, and the store's key, see the program's precision
            mapping = getattr(fgraph, "update_mapping", None) or {}
            entries = self.create_thunk_inputs(storage_map, x64)
            exits = self.create_thunk_outputs(fgraph, storage_map, x64)
            donated = frozenset(mapping[out] for out in resident_updates(fgraph, storage_map))
            warn_of_copied_updates(fgraph, storage_map)
            if self.progress is not None:
                return self._watched(fgraph, entries, exits, donated, x64)
            store = ProgramStore.opened(fgraph, lambda: graph_identity(fgraph, [*entries, *exits], donated))
            found = None if store is None else store.discovered()
            return GraphProgram(
                fgraph.inputs,
                fgraph.outputs,
                lower_nodes(fgraph, jax_funcify, deferred=found is not None),  # lowered when traced, if ever
                entries,
                exits,
                donated=donated,
                saved=None if store is None else SavedAs(store, found),
                x64=x64,
            )

    def _watched(
        self, fgraph: Any, entries: list[BoundaryValue], exits: list[BoundaryValue], donated: frozenset[int], x64: bool
    ) -> WatchedProgram:
        """The program of ``fgraph`` with progress bars; never saved nor loaded: its bars call back into this process."""
        boundary_of = (fgraph.inputs, fgraph.outputs)

        def unwatched() -> GraphProgram:
            with running_in(x64):
                steps = lower_nodes(fgraph, jax_funcify, deferred=True)
            return GraphProgram(*boundary_of, steps, entries, exits, donated=donated, x64=x64)

        progress = self.progress
        steps = lower_nodes(fgraph, jax_funcify, progress=progress)
        options = {"unwatched": unwatched, "min_seconds": progress.min_seconds}
        return WatchedProgram(*boundary_of, steps, entries, exits, donated=donated, x64=x64, **options)

    def jit_compile(self, program: GraphProgram) -> GraphProgram:
        return program

    def create_thunk_inputs(self, storage_map: dict[Variable, list[Any]], x64: bool = True) -> list[BoundaryValue]:
        """The cells of the graph's inputs, for a program of precision ``x64``."""
        return boundary(self.fgraph.inputs, storage_map, x64=x64)

    def create_thunk_outputs(
        self, fgraph: Any, storage_map: dict[Variable, list[Any]], x64: bool = True
    ) -> list[BoundaryValue]:
        """The cells of ``fgraph``'s outputs: each decoded to its host value, but updates of resident shared variables."""
        return boundary(fgraph.outputs, storage_map, on_device=resident_updates(fgraph, storage_map), x64=x64)

    def create_jitable_thunk(
        self, compute_map: Any, order: Any, input_storage: Any, output_storage: Any, storage_map: Any
    ) -> tuple[list[Callable[[], None]], list[Any], GraphProgram]:
        """The thunk that runs the graph's program and fills the output cells, and the node Aesara files it under.

        A graph of no node (its outputs are inputs or constants) has no
        thunk: each output's cell is its input's or holds the constant, as
        for Aesara's own linkers.
        """
        program = self.jit_compile(self.fgraph_convert(self.fgraph, storage_map=storage_map))
        if not order:
            return [], [], program
        call = HostCall(program, self.fgraph.update_mapping)
        inputs = [cell.storage for cell in program.input_cells]
        outputs = [(cell.storage, compute_map[cell.variable]) for cell in program.output_cells]
        mapping = self.fgraph.update_mapping or {}
        held = [
            (out, storage_map[self.fgraph.inputs[mapping[out]]]) for out in resident_updates(self.fgraph, storage_map)
        ]

        failure: list[BaseException | None] = [None]

        def thunk() -> None:
            try:
                results = call([held_value(cell) for cell in inputs])
            except Exception as error:  # raised after Aesara's loop over its thunks, naming the node at fault
                failure[0] = error
                return
            for out, storage in held:  # at once: the old value may be donated, and Aesara's update reads the storage
                storage.hold(results[out])
            for (storage, computed), value in zip(outputs, results):
                storage[0] = value
                computed[0] = True

        thunk.inputs = [cell.storage for cell in program.input_cells]  # type: ignore[attr-defined]
        thunk.outputs = [cell.storage for cell in program.output_cells]  # type: ignore[attr-defined]
        thunk.lazy = False  # type: ignore[attr-defined]
        thunk.failure = failure  # type: ignore[attr-defined]
        node = thunk_node(self.fgraph)
        return [thunk], [] if node is None else [node], program

    def make_all(self, input_storage: Any = None, output_storage: Any = None, storage_map: Any = None) -> Any:
        """Aesara's `JITLinker.make_all`, its function raising a failed program's error as `raise_failure` does.

        Aesara's loop over thunks would file any error under the one node it
        gives the thunk: so the thunk keeps its error, and the function
        raises it once the loop has returned.
        """
        fn, *made = super().make_all(input_storage, output_storage, storage_map)
        thunks, nodes = made[2], made[3]
        if not nodes:
            return (fn, *made)
        (thunk,), (node,), fgraph = thunks, nodes, self.fgraph

        def run() -> None:
            fn()
            error, thunk.failure[0] = thunk.failure[0], None
            if error is not None:
                raise_failure(error, fgraph, node, thunk, fn.jit_fn)

        run.jit_fn, run.allow_gc, run.storage_map = fn.jit_fn, fn.allow_gc, fn.storage_map  # type: ignore[attr-defined]
        return (run, *made)


class JAXDeviceLinker(JAXCodecLinker):
    """`JAXCodecLinker` whose returned array outputs stay ``jax.Array``s (`DeviceValue`).

    Updates of shared variables are decoded to host values as under
    `JAXCodecLinker` (but those of resident shared variables), so shared
    variables keep values every Aesara backend reads.
    """

    def create_thunk_outputs(
        self, fgraph: Any, storage_map: dict[Variable, list[Any]], x64: bool = True
    ) -> list[BoundaryValue]:
        updates = set(getattr(fgraph, "update_mapping", None) or {})
        returned = frozenset(i for i in range(len(fgraph.outputs)) if i not in updates)
        on_device = returned | resident_updates(fgraph, storage_map)
        return boundary(fgraph.outputs, storage_map, on_device=on_device, x64=x64)
