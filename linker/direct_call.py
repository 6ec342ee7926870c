"""The direct call of an `AejaxFunction`, and its fast path once a call has run.

`DirectCall` serves a call with every explicit input given positionally: it
filters the arguments with `Type.filter` as Aesara does, runs the program on
them and the shared variables' values (`linker.HostCall`), and stores the
decoded updates, each through its variable's filter.

Once a call has run, the jit program it ran computes the graph for any
arguments of the same kinds (`static_inputs.Shortcut`). `ExactCall` is the
call for those: numpy arrays of the dtypes and shapes the program was traced
for, numpy scalars for 0-d inputs where the filter would take them. For such
arguments every filter is the identity and every output's dtype is known,
so it checks each argument once, runs the program and converts its outputs,
with nothing in between; anything else takes `DirectCall`'s general path.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from aesara.compile.function.types import Function
from aesara.tensor.random.type import RandomGeneratorType, RandomStateType
from aesara.tensor.type import TensorType

from aejax.adapters.keyed import held_key
from aejax.linker.linker import BoundaryValue, HostCall, KeyBoundaryValue
from aejax.linker.static_inputs import Shortcut


class DirectCall:
    """The common call of one `AejaxFunction`: filter, run, store updates, return outputs.

    Its ``exact`` attribute is the `ExactCall` for arguments like those of
    the last call that ran a new program, or ``None``; callers try it first.
    """

    def __init__(self, function: Function, call: HostCall, arity: int) -> None:
        containers = function.input_storage
        self.arity = arity
        self.call = call
        self.explicit = containers[:arity]
        self._filters = [argument_filter(c) for c in self.explicit]
        self.shared = [c.storage for c in containers[arity:]]
        self.updated = [
            (c.storage, argument_filter(c))
            for c, i in zip(containers, function.maker.expanded_inputs)
            if i.update is not None
        ]
        self.n_returned = len(function.maker.fgraph.outputs) - len(self.updated)
        self.exact: ExactCall | None = None
        self._exact_for: Shortcut | None = None

    @classmethod
    def of(cls, function: Function) -> DirectCall | None:
        """The direct call of ``function``, or ``None`` if its inputs need Aesara's general path."""
        program = getattr(function.vm, "jit_fn", None)
        containers = function.input_storage
        inputs = function.maker.expanded_inputs
        arity = sum(1 for c in containers if c.required)
        explicit_first = all(c.required and i.update is None for c, i in zip(containers[:arity], inputs))
        shared_after = all(c.implicit and not c.required for c in containers[arity:])
        if program is None or not (explicit_first and shared_after) or function._check_for_aliased_inputs:
            return None
        if any(indices is not None for _, indices, _ in function.indices):
            return None
        return cls(function, HostCall(program, function.maker.fgraph.update_mapping), arity)

    def __call__(self, args: Sequence[Any], trusted: bool = False) -> list[Any]:
        """The outputs for positional ``args`` (filtered unless ``trusted``), after storing the updates.

        Every update passes its shared variable's filter before any is stored,
        so a call that fails changes nothing.
        """
        values = list(args) if trusted else [filter(arg) for filter, arg in zip(self._filters, args)]
        if self.shared:
            values += [cell[0] for cell in self.shared]
        outputs = self._returned(self.call(values))
        shortcut = self.call.program.shortcut()
        if shortcut is not self._exact_for:  # a new program ran: the exact call is now one for its arguments
            self._exact_for = shortcut
            self.exact = ExactCall.of(self, values[: self.arity])
        return outputs

    def _returned(self, outputs: list[Any]) -> list[Any]:
        """The outputs the caller gets, after each update is filtered and stored."""
        if not self.updated:
            return outputs
        n = self.n_returned
        updates = [(cell, keep(value)) for (cell, keep), value in zip(self.updated, outputs[n:])]
        for cell, value in updates:
            cell[0] = value
        return outputs[:n]


class ExpectedArgument(NamedTuple):
    """What an argument of an `ExactCall` must be: one of ``kinds``, of ``dtype`` and ``shape``."""

    kinds: tuple[type, ...]
    dtype: np.dtype
    shape: tuple[int, ...]


class SharedKey(NamedTuple):
    """A shared random state of an `ExactCall`: where it enters, its codec, and which output advances it."""

    position: int
    """Its position among the program's inputs."""
    codec: Any
    output: int | None


class ExactCall:
    """A `DirectCall` for arguments exactly like those its program was traced for.

    Build it with `ExactCall.of` after a call has run. A call returns
    ``None``, having done nothing, when an argument or a shared value is not
    of the kind, dtype and shape it was (or a shared generator is not a keyed
    one, or two shared variables hold one generator), and the general path
    takes over. Otherwise the outputs are copied into numpy, each shared
    generator holds its advanced key, and the other updates are filtered and
    stored, as in the general path.
    """

    def __init__(
        self,
        direct: DirectCall,
        program: Callable[..., Any],
        expected: list[ExpectedArgument],
        array_shapes: list[tuple[int, Any]],
        keys: list[SharedKey],
        decoders: list[Callable[[Any], Any]] | None,
        updates: list[tuple[int, list[Any], Callable[[Any], Any]]],
    ) -> None:
        self._program = program
        self._n_returned = direct.n_returned
        self._shared = direct.shared
        self._expected = expected
        self._array_shapes = array_shapes
        self._keys = keys
        self._advancing = [key.output for key in keys if key.output is not None]
        self._decoders = decoders
        self._updates = updates

    @classmethod
    def of(cls, direct: DirectCall, arguments: Sequence[Any]) -> ExactCall | None:
        """The exact call of ``direct`` after a call with the filtered ``arguments`` ran, if it has one.

        It has none when an explicit input's filter does more than convert
        and check (`filter_checks_isfinite`), or a value crosses the
        boundary other than as a numpy array or a PRNG key.
        """
        shortcut = direct.call.program.shortcut()
        if shortcut is None or not all(map(_only_converts, direct.explicit)):
            return None
        expected = [_expected(c, a) for c, a in zip(direct.explicit, arguments)]
        if None in expected or any(e.shape != s for e, s in zip(expected, shortcut.shapes)):  # type: ignore[union-attr]
            return None
        advanced_by = {position: out for out, position, _ in direct.call.in_place}
        shared = _shared_inputs(direct, shortcut, advanced_by)
        updates = _array_updates(direct, set(advanced_by.values()))
        if shared is None or updates is None:
            return None
        returned = direct.call.program.output_cells[: direct.n_returned]
        decoders = None if all(map(_is_numpy_array, returned)) else [_exact_decoder(cell) for cell in returned]
        return cls(direct, shortcut.program, expected, *shared, decoders, updates)  # type: ignore[arg-type]

    def __call__(self, args: Sequence[Any]) -> list[Any] | None:
        """The outputs for ``args``, after storing the updates; ``None`` if the general path must take them."""
        for arg, (kinds, dtype, shape) in zip(args, self._expected):
            if type(arg) not in kinds or arg.dtype != dtype or arg.shape != shape or not arg.flags.aligned:
                return None
        values = args
        if self._shared:
            entering = self._with_shared(args)
            if entering is None:
                return None
            values, slots = entering
        results = self._program(*values)
        if self._decoders is None:
            outputs = list(map(np.array, results[: self._n_returned]))
        else:
            outputs = [decode(r) for decode, r in zip(self._decoders, results)]
        if self._shared:
            self._store_updates(results, slots)
        return outputs

    def _with_shared(self, args: Sequence[Any]) -> tuple[list[Any], list[list[Any]]] | None:
        """The values the program takes (``args``, then the shared values) and the key slots to advance.

        ``None`` if a shared array changed its shape, a shared generator
        holds no key of its codec (set by the user, or read since), or two
        shared variables hold one generator.
        """
        values = [*args, *map(_HELD_VALUE, self._shared)]
        for position, shape in self._array_shapes:
            if values[position].shape != shape:
                return None
        slots = []
        for position, codec, output in self._keys:
            held = held_key(values[position])
            if held is None or held.codec is not codec:
                return None
            values[position] = held.slot[0]
            if output is not None:
                slots.append(held.slot)
        if len(slots) > 1 and len(set(map(id, slots))) < len(slots):
            return None
        return values, slots

    def _store_updates(self, results: Sequence[Any], slots: list[list[Any]]) -> None:
        """Store the updates: each array's through its filter, then each advanced key into its generator's slot."""
        updates = [(cell, keep(np.array(results[out]))) for out, cell, keep in self._updates] if self._updates else ()
        for slot, out in zip(slots, self._advancing):
            slot[0] = results[out]
        for cell, value in updates:
            cell[0] = value


def _shared_inputs(
    direct: DirectCall, shortcut: Shortcut, advanced_by: dict[int, int]
) -> tuple[list[tuple[int, Any]], list[SharedKey]] | None:
    """The position and shape of each shared array, and each shared random state; ``None`` for another kind.

    ``advanced_by`` maps the input position of each random state an output advances to that output.
    """
    array_shapes, keys = [], []
    for position, cell in enumerate(direct.call.program.input_cells[direct.arity :], start=direct.arity):
        if isinstance(cell, KeyBoundaryValue):
            keys.append(SharedKey(position, cell.codec, advanced_by.get(position)))
        elif _is_numpy_array(cell):
            array_shapes.append((position, shortcut.shapes[position]))
        else:
            return None
    return array_shapes, keys


def _array_updates(
    direct: DirectCall, advanced: set[int]
) -> list[tuple[int, list[Any], Callable[[Any], Any]]] | None:
    """``(output, cell, filter)`` of each update not among the ``advanced`` random states; ``None`` if one is not an array."""
    outputs = direct.call.program.output_cells
    updates = [
        (out, cell, keep)
        for out, (cell, keep) in enumerate(direct.updated, start=direct.n_returned)
        if out not in advanced
    ]
    return updates if all(_is_numpy_array(outputs[out]) for out, _, _ in updates) else None


def _only_converts(container: Any) -> bool:
    """Whether an explicit input's filter only converts and checks the kind, dtype and shape of a value."""
    return isinstance(container.type, TensorType) and not container.type.filter_checks_isfinite


def _expected(container: Any, argument: Any) -> ExpectedArgument | None:
    """What an `ExactCall` takes for an explicit input, from the filtered argument of a call that ran."""
    if type(argument) is not np.ndarray:
        return None
    kinds: tuple[type, ...] = (np.ndarray,)
    if argument.ndim == 0 and not container.strict:
        kinds += (argument.dtype.type,)  # the filter would make it this 0-d array; JAX takes it as is
    return ExpectedArgument(kinds, argument.dtype, argument.shape)


_HELD_VALUE = itemgetter(0)
"""The value a storage cell holds."""


def _exact_decoder(cell: BoundaryValue) -> Callable[[Any], Any]:
    return np.array if _is_numpy_array(cell) else cell.decode


def _is_numpy_array(cell: BoundaryValue) -> bool:
    """Whether a boundary cell's host value is a numpy array that crosses as it is.

    Its output is then decoded by copying it into numpy: its dtype and rank
    were checked when a call first decoded it.
    """
    return cell.passes_through and isinstance(cell.variable.type, TensorType)


def argument_filter(container: Any) -> Callable[[Any], Any]:
    """``container``'s `Type.filter` with its call options, skipped for arrays it would return as they are.

    A numpy generator passes a random Type's filter unchanged (any `Generator`
    for `RandomGeneratorType`, any `RandomState` for `RandomStateType`). A
    numpy array of a `TensorType`'s exact dtype and rank, aligned, passes
    the filter unchanged when the Type fixes no dimension and checks no values;
    for a 0-d Type, a numpy scalar of its dtype (or a Python number of the same
    kind and precision) becomes a 0-d array of it, as the filter would make it
    unless it is strict.
    """
    type_ = container.type
    options = {"strict": container.strict, "allow_downcast": container.allow_downcast}

    def full(value: Any) -> Any:
        return type_.filter(value, **options)

    generator_class = _RANDOM_HOST_CLASSES.get(type(type_))
    if generator_class is not None:
        return lambda value: value if isinstance(value, generator_class) else full(value)
    if not _only_converts(container) or any(s is not None for s in type_.shape):
        return full
    dtype, ndim = type_.numpy_dtype, type_.ndim
    scalars = _exact_scalar_types(dtype) if ndim == 0 and not container.strict else ()

    def fast(value: Any) -> Any:
        if type(value) is np.ndarray and value.dtype == dtype and value.ndim == ndim and value.flags.aligned:
            return value
        if type(value) in scalars:
            return np.asarray(value, dtype)
        return full(value)

    return fast


_RANDOM_HOST_CLASSES = {RandomGeneratorType: np.random.Generator, RandomStateType: np.random.RandomState}
"""The numpy objects each random Type's filter accepts as they are."""


def _exact_scalar_types(dtype: np.dtype) -> tuple[type, ...]:
    """Python and numpy scalar types whose values ``dtype`` holds exactly (an int only if it fits)."""
    python = {np.dtype("float64"): (float,), np.dtype("int64"): (int,), np.dtype("bool"): (bool,)}
    return (dtype.type, *python.get(dtype, ()))


