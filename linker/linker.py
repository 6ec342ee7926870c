"""The JAX linker: Aesara's `JITLinker` with a codec storage boundary.

Inputs are encoded by their ``"jax"`` codec before each call (a shared numpy
`Generator` becomes a PRNG key) and outputs decoded after it (the advanced key
becomes a numpy `Generator` again), so shared variables are used as they are
and keep host values every Aesara backend understands. `Type.filter` is never
applied to backend values.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import numpy as np
from aesara.graph.basic import Variable
from aesara.link.basic import JITLinker

from aejax.adapters import CodecError, KeyPayloadSpec, StateCodec, codec_for
from aejax.linker.dispatch import jax_funcify
from aejax.linker.errors import InputValueError, LoweringError, variable_name
from aejax.linker.lowering import lower_nodes
from aejax.linker.program import GraphProgram

BACKEND = "jax"


class BoundaryValue:
    """One input or output of the compiled graph: its variable, codec and storage cell.

    An array crosses the jit boundary as itself (`enter`/`leave` are the
    identity); see `KeyBoundaryValue` for random states.
    """

    def __init__(self, variable: Variable, codec: StateCodec, storage: list[Any]) -> None:
        self.variable = variable
        self.codec = codec
        self.storage = storage
        self._type = variable.type
        self._encode = codec.encode
        self._decode = codec.decode

    def encode(self) -> Any:
        """The host value in the storage cell, in boundary form."""
        try:
            return self._encode(self.storage[0], self._type)
        except Exception as error:
            raise self.failure("input", error) from error

    def decode(self, value: Any) -> Any:
        """A boundary-form output as a host value."""
        try:
            return self._decode(value, self._type)
        except Exception as error:
            raise self.failure("output", error) from error

    def failure(self, role: str, error: Exception) -> InputValueError:
        """``error`` of the codec, as an `InputValueError` naming the variable (and the codec, if it is a bug)."""
        reason = str(error) if isinstance(error, CodecError) else (
            f"codec {self.codec!r} failed with {type(error).__name__}: {error}"
        )
        return InputValueError(f"{role} {variable_name(self.variable)!r}: {reason}")

    def enter(self, value: Any) -> Any:
        """Boundary form -> the value inside the traced function."""
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

    def __init__(self, variable: Variable, codec: StateCodec, storage: list[Any], impl: str) -> None:
        super().__init__(variable, codec, storage)
        self.impl = impl
        self._encode = codec.encode_words  # type: ignore[attr-defined]
        self._decode = lambda words, type: codec.decode_words(np.asarray(words), type)  # type: ignore[attr-defined]

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


def boundary(variables: list[Variable], storage_map: dict[Variable, list[Any]]) -> list[BoundaryValue]:
    """The codec-backed cells of ``variables``."""
    cells = []
    for var in variables:
        codec = codec_for(BACKEND, var.type)
        spec = codec.payload_spec(var.type)
        if isinstance(spec, KeyPayloadSpec):
            cells.append(KeyBoundaryValue(var, codec, storage_map[var], spec.impl))
        else:
            cells.append(BoundaryValue(var, codec, storage_map[var]))
    return cells


class JAXCodecLinker(JITLinker):
    """Compile a whole `FunctionGraph` with `jax.jit` behind a codec boundary.

    `fgraph_convert` lowers every node and wraps the graph in a `GraphProgram`
    whose boundary cells encode the inputs and decode the outputs through the
    ``"jax"`` codecs; `jit_compile` is the identity, since the program compiles
    itself on first use (once per value of its static inputs).
    """

    def fgraph_convert(self, fgraph: Any, storage_map: Any = None, **kwargs: Any) -> GraphProgram:
        return GraphProgram(
            fgraph.inputs,
            fgraph.outputs,
            lower_nodes(fgraph, jax_funcify),
            self.create_thunk_inputs(storage_map),
            boundary(fgraph.outputs, storage_map),
        )

    def jit_compile(self, program: GraphProgram) -> GraphProgram:
        return program

    def create_thunk_inputs(self, storage_map: dict[Variable, list[Any]]) -> list[BoundaryValue]:
        return boundary(self.fgraph.inputs, storage_map)

    def create_jitable_thunk(
        self, compute_map: Any, order: Any, input_storage: Any, output_storage: Any, storage_map: Any
    ) -> tuple[list[Callable[[], None]], list[Any], GraphProgram]:
        program = self.jit_compile(self.fgraph_convert(self.fgraph, storage_map=storage_map))
        encoders = [cell.encode for cell in program.input_cells]
        outputs = [(cell.decode, cell.storage, compute_map[cell.variable]) for cell in program.output_cells]

        def thunk() -> None:
            results = program(*[encode() for encode in encoders])
            decoded = [decode(value) for (decode, _, _), value in zip(outputs, results)]
            for (_, storage, computed), value in zip(outputs, decoded):
                storage[0] = value
                computed[0] = True

        thunk.inputs = [cell.storage for cell in program.input_cells]  # type: ignore[attr-defined]
        thunk.outputs = [cell.storage for cell in program.output_cells]  # type: ignore[attr-defined]
        thunk.lazy = False  # type: ignore[attr-defined]
        output_nodes = [o.owner for o in self.fgraph.outputs if o.owner is not None][:1]
        return [thunk], output_nodes, program
