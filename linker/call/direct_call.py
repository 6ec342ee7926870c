"""The direct call of an `AejaxFunction`, and its fast path once a call has run.

`DirectCall` serves a call with every explicit input given positionally: it
filters the arguments with `Type.filter` as Aesara does, encodes them and the
shared variables' values and decodes the results with `linker.HostCall`'s
helpers around its own call of the program, and stores the decoded updates,
each through its variable's filter.

Once a call has run, the jit program it ran computes the graph for any
arguments of the same kinds (`static_inputs.Shortcut`). `ExactCall` is the
call for those: numpy arrays of the dtypes and shapes the program was traced
for, numpy scalars for 0-d inputs where the filter would take them. For such
arguments every filter is the identity and every output's dtype is known,
so it checks each argument once, runs the program and converts its outputs,
with nothing in between; anything else takes `DirectCall`'s general path.
It returns what the function returns (`Returning`), and each shared random
state enters as the words of the key its generator holds, read through the
generator and key it last saw there (`SharedKey`).
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, NamedTuple, NoReturn

import jax
import numpy as np
from aesara.compile.function.types import Function
from aesara.tensor.random.type import RandomGeneratorType, RandomStateType
from aesara.tensor.type import TensorType

from aejax.adapters import HeldKey, held_key_reader
from aejax.adapters.jax_api import enable_x64
from aejax.adapters.resident import ResidentStorage
from aejax.adapters.words import WORD, host_words, word_count
from aejax.linker.call.linker import (
    BoundaryValue,
    HostCall,
    KeyBoundaryValue,
    held_value,
    raise_failure,
    thunk_node,
)
from aejax.linker.call.precision import calls_before_words, running_in, takes_words, taking_words
from aejax.linker.program.packing import unpacked
from aejax.linker.program.static_inputs import Shortcut
from aejax.linker.trace.host_failures import raised_on_host

_CONFIG = jax.config

NOT_EXACT = object()
"""What an `ExactCall` returns, having done nothing, for a call the general path must take."""


class Returning(NamedTuple):
    """How a compiled function returns its outputs: Aesara's `Function` attributes of these names."""

    return_none: bool
    unpack_single: bool
    output_keys: list[str] | None

    @classmethod
    def of(cls, function: Function) -> Returning:
        """How ``function`` returns its outputs now (`Function.copy` sets ``unpack_single`` after building)."""
        return cls(function.return_none, function.unpack_single, function.output_keys)

    def value(self, outputs: list[Any]) -> Any:
        """What the function returns for ``outputs``."""
        if self.return_none:
            return None
        if self.unpack_single and len(outputs) == 1:
            return outputs[0]
        if self.output_keys is not None:
            return dict(zip(self.output_keys, outputs))
        return outputs


class DirectCall:
    """The common call of one `AejaxFunction`: filter, run, store updates, return outputs.

    Its ``exact`` attribute is the `ExactCall` for arguments like those of
    the last call that ran a new program, or ``None``; ``run_exact`` is that
    call's `ExactCall.run`, or a function returning `NOT_EXACT` while there
    is none: callers call it first, with nothing to test.
    """

    run_exact: Callable[[Sequence[Any]], Any]

    def __init__(self, function: Function, call: HostCall, arity: int) -> None:
        containers = function.input_storage
        self.arity = arity
        self.call = call
        self.explicit = containers[:arity]
        self._filters = [self.argument_filter(c, cell) for c, cell in zip(self.explicit, call.program.input_cells)]
        self.shared = [c.storage for c in containers[arity:]]
        self.updated = [
            (c.storage, update_filter(c))
            for c, i in zip(containers, function.maker.expanded_inputs)
            if i.update is not None
        ]
        self.n_returned = len(function.maker.fgraph.outputs) - len(self.updated)
        self.words = takes_words(call.program.x64)
        """Whether its exact calls take 64-bit arguments as words (`aejax.linker.call.precision`), decided now."""
        self.made_in = 0.0
        """How long the call that ran its last new program took, compiling it included (seconds)."""
        self.exact = None
        self._exact_for: Shortcut | None = None
        self._fgraph = function.maker.fgraph
        self._node = thunk_node(self._fgraph)
        self._thunk = SimpleNamespace(inputs=[cell.storage for cell in call.program.input_cells])  # all Aesara reads

    @property
    def exact(self) -> ExactCall | None:
        return self._exact

    @exact.setter
    def exact(self, exact: ExactCall | None) -> None:
        self._exact = exact
        self.run_exact = _not_exact if exact is None else exact.run

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

    def arguments(self, args: Sequence[Any], trusted: bool = False) -> list[Any]:
        """The program's arguments for positional ``args``: each filtered (unless ``trusted``), then the shared values.

        Raises what a filter raises, before anything runs.
        """
        values = list(args) if trusted else [filter(arg) for filter, arg in zip(self._filters, args)]
        if self.shared:
            values += [held_value(cell) for cell in self.shared]
        return values

    def __call__(self, values: list[Any], returning: Returning) -> Any:
        """What the function returns for the program's arguments ``values`` (`arguments`), after storing the updates.

        The program runs once, in its precision (`aejax.linker.call.precision`),
        called from here while the arguments fit the compiled program of the
        last call (`GraphProgram.shortcut`);
        a failure raises as Aesara's path raises it (`failed`). Every update
        passes its shared variable's filter before any is stored, so a call
        that fails changes nothing.
        """
        started = time.perf_counter()
        call = self.call  # its parts, not the whole: the program is called from here, one layer less per call
        program = call.program
        shortcut = program.shortcut()
        try:
            with running_in(program.x64):
                encoded = call.encoded(values)
                if shortcut is not None and shortcut.fits(encoded):  # a compiled program: called from here too
                    results = unpacked(shortcut.program(*encoded))
                else:
                    results = program(*encoded)
                outputs = call.decoded(results, values)
        except Exception:
            self.failed(values)
        outputs = self._returned(outputs)
        shortcut = program.shortcut()
        if shortcut is not self._exact_for:  # a new program ran: the exact call is now one for its arguments
            self._exact_for = shortcut
            self.made_in = time.perf_counter() - started
            self.exact = self.exact_call(values[: self.arity], returning)
        return returning.value(outputs)

    def raises_refusal(self, error: Exception, args: Sequence[Any]) -> bool:
        """Whether an argument among ``args`` that its filter refused with ``error`` raises as it is; if not,
        Aesara's path takes the call and refuses it with its own message (nothing has run)."""
        return False

    def failed(self, args: Sequence[Any]) -> NoReturn:
        """Raise the exception being handled, which running the program on ``args`` raised, as Aesara's path raises it.

        Aesara's `Function` holds the filtered arguments in its input storage
        while its thunk runs, and a failure of the thunk is re-raised with the
        node at fault and the values of that storage (`raise_failure`): so
        here, without running the program a second time.
        """
        error = program_error()
        for container, filter, arg in zip(self.explicit, self._filters, args):
            container.storage[0] = filter(arg)
        raise_failure(error, self._fgraph, self._node, self._thunk, self.call.program)

    @staticmethod
    def argument_filter(container: Any, cell: BoundaryValue) -> Callable[[Any], Any]:
        """How an explicit argument of ``container`` (entering the program through ``cell``) is filtered."""
        return argument_filter(container)

    def exact_call(self, arguments: Sequence[Any], returning: Returning) -> ExactCall | None:
        """The exact call for arguments like the filtered ``arguments`` of the call that just ran, if there is one."""
        return ExactCall.of(self, arguments, returning)

    def _returned(self, outputs: list[Any]) -> list[Any]:
        """The outputs the caller gets, after each update is filtered and stored."""
        if not self.updated:
            return outputs
        n = self.n_returned
        updated = list(zip(self.updated, outputs[n:]))
        for (cell, _), value in updated:  # first: the program may have reused the old buffer
            if type(cell) is ResidentStorage:
                cell.hold(value)
        updates = [(cell, keep(value)) for (cell, keep), value in updated if type(cell) is not ResidentStorage]
        for cell, value in updates:
            cell[0] = value
        return outputs[:n]


def _not_exact(args: Sequence[Any]) -> Any:
    return NOT_EXACT


class ArgumentKind(NamedTuple):
    """The arguments an `ExactCall` takes at one position: of these classes, this dtype and shape, aligned.

    The dtype is compared by identity: numpy keeps one object per built-in
    dtype, so an argument with an equal but distinct one only takes the
    general path.
    """

    position: int
    classes: tuple[type, ...]
    dtype: np.dtype
    shape: tuple[int, ...]


class SharedKey:
    """A shared random state entering an `ExactCall`, and the generator and key last seen in its cell.

    While the cell holds the generator last seen, and that generator still
    holds the key last seen (`held_key_reader`), the key's words enter the
    program with nothing to look up; `watch` looks at a new generator or key.
    """

    __slots__ = ("position", "codec", "output", "seen")

    def __init__(self, position: int, codec: Any, output: int | None) -> None:
        self.position = position
        """Its position among the program's inputs."""
        self.codec = codec
        self.output = output
        """The program output that advances it, if one does."""
        self.seen: tuple[Any, Callable[[], HeldKey | None], HeldKey | None] = _NOTHING_SEEN
        """The generator last seen, the reader of the key it holds, and that key (one tuple: set at once)."""

    def watch(self, host: Any) -> HeldKey | None:
        """Watch ``host``, the generator now in the cell: the key it holds, if one of this input's codec."""
        current = held_key_reader(host)
        held = None if current is None else current()
        if held is None or held.codec is not self.codec:
            self.seen = _NOTHING_SEEN
            return None
        self.seen = (host, current, held)
        return held


def _holds_nothing() -> None:
    return None


_NOTHING_SEEN = (None, _holds_nothing, None)
"""`SharedKey.seen` before a generator holding a key of its codec is seen."""


class ExactCall:
    """A `DirectCall` for arguments exactly like those its program was traced for.

    Build it with `ExactCall.of` after a call has run. Its `run` returns
    `NOT_EXACT`, having done nothing, when an argument or a shared value is not
    of the kind, dtype and shape it was (or a shared generator is not a keyed
    one, or two shared variables hold one generator), and the general path
    takes over. Otherwise the outputs are copied into numpy, each shared
    generator holds its advanced key, and the other updates are filtered and
    stored, as in the general path.
    """

    takes_words = True
    """Whether its calls may take 64-bit arguments as words (`Words`), when its function's do (`DirectCall.words`)."""

    def __init__(
        self,
        direct: DirectCall,
        returning: Returning,
        program: Callable[..., Any],
        kinds: list[ArgumentKind],
        array_shapes: list[tuple[int, Any]],
        keys: list[SharedKey],
        decoders: list[Callable[[Any], Any]] | None,
        updates: list[tuple[int, list[Any], Callable[[Any], Any]]],
        resident_updates: list[tuple[int, ResidentStorage]],
        words: Words | None = None,
    ) -> None:
        self._program = program
        self._direct = direct
        self._words = words
        self._until_words = calls_before_words(direct.made_in)
        self._wide: tuple[int, ...] | None = None
        self._shared_dtypes: tuple[tuple[int, np.dtype], ...] = ()
        self._x64 = direct.call.program.x64
        self._arity = direct.arity
        self._n_returned = direct.n_returned
        self._returning = returning
        self._bare_array = decoders is None and direct.n_returned == 1 and returning == _ONE_OUTPUT_BARE
        self._shared = direct.shared
        self._kinds = kinds
        self._array_shapes = array_shapes
        self._keys = keys
        self._decoders = decoders
        self._updates = updates
        self._resident_updates = resident_updates

    @classmethod
    def of(cls, direct: DirectCall, arguments: Sequence[Any], returning: Returning) -> ExactCall | None:
        """The exact call of ``direct`` after a call with the filtered ``arguments`` ran, if it has one.

        Its calls return their outputs as ``returning`` says.

        It has none when an explicit input's filter does more than convert
        and check (`filter_checks_isfinite`), or a value crosses the
        boundary other than as a numpy array or a PRNG key (an explicit
        input's only as an array: it enters unencoded, so not narrowed).
        """
        shortcut = direct.call.program.shortcut()
        if shortcut is None or not all(map(_only_converts, direct.explicit)):
            return None
        if not all(cell.crosses_as_array for cell in direct.call.program.input_cells[: direct.arity]):
            return None
        kinds = [cls.argument_kind(p, c, a) for p, (c, a) in enumerate(zip(direct.explicit, arguments))]
        if None in kinds or any(a.shape != s for a, s in zip(arguments, shortcut.shapes)):
            return None
        advanced_by = {position: out for out, position, _ in direct.call.in_place}
        shared = _shared_inputs(direct, shortcut, advanced_by)
        updates = _array_updates(direct, set(advanced_by.values()))
        if shared is None or updates is None:
            return None
        decoders = cls.output_decoders(direct.call.program.output_cells[: direct.n_returned])
        words = Words.of(direct, shortcut) if direct.words and cls.takes_words else None
        return cls(direct, returning, shortcut.program, kinds, *shared, decoders, *updates, words)  # type: ignore[arg-type]

    @staticmethod
    def argument_kind(position: int, container: Any, argument: Any) -> ArgumentKind | None:
        """The arguments the exact call takes at ``position``, from the call's filtered ``argument``; ``None`` for none."""
        return _argument_kind(position, container, argument)

    @staticmethod
    def output_decoders(returned: Sequence[BoundaryValue]) -> list[Callable[[Any], Any]] | None:
        """How the exact call decodes each returned output; ``None`` when every one is an array copied into numpy."""
        if all(cell.crosses_as_array for cell in returned):
            return None
        return [_exact_decoder(cell) for cell in returned]

    def run(self, args: Sequence[Any]) -> Any:
        """What the function returns for ``args``, after storing the updates; `NOT_EXACT` for the general path.

        A method rather than ``__call__``: calling a method costs the caller
        less than calling an instance, which goes through the type's call slot.
        """
        if len(args) != self._arity:
            return NOT_EXACT
        for position, classes, dtype, shape in self._kinds:  # no zip: it costs more than the checks
            arg = args[position]
            if type(arg) not in classes or arg.dtype is not dtype or arg.shape != shape or not arg.flags.aligned:
                return NOT_EXACT
        if self._shared:
            return self._call_with_shared(args)
        if self._wide is not None:  # inline, as below: no frame between the call and its program
            if self._wide:
                values = list(args)
                for position in self._wide:
                    values[position] = host_words(values[position])
                results = self._program(*values)
            else:  # no 64-bit argument: nothing to turn into words
                results = self._program(*args)
        elif _CONFIG.jax_enable_x64 is self._x64:
            results = self._program(*args)
        else:
            with enable_x64(self._x64):  # here, not in a function: no frame between the call and its program
                results = self._program(*args)
            if self._words is not None:
                self._count_towards_words()
        if self._bare_array:  # one output: never packed
            return np.array(results[0])
        return self._returning.value(self._outputs(unpacked(results)))

    def _call_with_shared(self, args: Sequence[Any]) -> Any:
        """The call for checked ``args`` of a function with shared variables."""
        values = list(args)
        for cell in self._shared:
            values.append(held_value(cell))
        for position, shape in self._array_shapes:
            if values[position].shape != shape:
                return NOT_EXACT
        advancing = self._enter_keys(values)
        if advancing is None:
            return NOT_EXACT
        if self._wide is not None:
            for position, dtype in self._shared_dtypes:
                if values[position].dtype is not dtype:  # JAX would convert it to the program's dtype
                    return NOT_EXACT
            for position in self._wide:
                values[position] = host_words(values[position])
            results = unpacked(self._program(*values))
        elif _CONFIG.jax_enable_x64 is self._x64:
            results = unpacked(self._program(*values))
        else:
            with enable_x64(self._x64):
                results = unpacked(self._program(*values))
            if self._words is not None:
                self._count_towards_words()
        self._store_updates(results, advancing)  # first: a resident variable's old buffer may be donated
        return self._returning.value(self._outputs(results))

    def _count_towards_words(self) -> None:
        """Count a call that entered ``enable_x64``; once they have cost what making the program did, take words."""
        self._until_words -= 1
        if self._until_words <= 0:
            self.take_words()

    def take_words(self) -> None:
        """Compile the program taking 64-bit arguments as words (`Words`), and make the exact call one that runs it.

        A copy of this call runs it, put in its function's place in one
        step: a call running meanwhile in another thread keeps the program
        and the arguments' form it started with. Nothing is done where the
        call takes no words.
        """
        words, self._words = self._words, None
        if words is None:
            return
        taking = copy.copy(self)
        taking._program = taking_words(self._program, words.arguments)
        taking._wide, taking._shared_dtypes = words.wide, words.shared_dtypes
        if self._direct.exact is self:
            self._direct.exact = taking

    def _enter_keys(self, values: list[Any]) -> list[tuple[list[Any], int]] | None:
        """Replace each shared generator in ``values`` by the words of its key.

        Returns the slot of each key to advance, with the output advancing
        it; ``None`` if a generator holds no key of its codec (set by the
        user, or read since), or two shared variables hold one generator.
        """
        advancing, watched = [], False
        for key in self._keys:
            host = values[key.position]
            seen_host, current, held = key.seen
            if host is not seen_host or current() is not held:
                held, watched = key.watch(host), True
                if held is None:
                    return None
            values[key.position] = held.slot[0]  # type: ignore[union-attr]
            if key.output is not None:
                advancing.append((held.slot, key.output))  # type: ignore[union-attr]
        if watched and len({id(key.seen[0]) for key in self._keys}) < len(self._keys):
            return None
        return advancing

    def _outputs(self, results: Sequence[Any]) -> list[Any]:
        """The returned outputs among the program's unpacked ``results``, as host values.

        A numpy array among them is a packed output's view of its buffer's
        own copy (`aejax.linker.program.packing`), already what the caller gets.
        """
        if self._decoders is None:
            outputs = []
            for r in results[: self._n_returned]:  # a loop: a comprehension is one more function call (Python 3.11)
                outputs.append(r if type(r) is np.ndarray else np.array(r))
            return outputs
        return [r if type(r) is np.ndarray else decode(r) for decode, r in zip(self._decoders, results)]

    def _store_updates(self, results: Sequence[Any], advancing: list[tuple[list[Any], int]]) -> None:
        """Store the updates: each resident one as it is (the program may have reused the old buffer), each
        other array's through its filter, then each advanced key into its generator's slot."""
        for out, cell in self._resident_updates:
            cell.hold(results[out])
        updates = [(cell, keep(np.array(results[out]))) for out, cell, keep in self._updates] if self._updates else ()
        for slot, out in advancing:
            slot[0] = results[out]
        for cell, value in updates:
            cell[0] = value


class Words(NamedTuple):
    """How an `ExactCall` takes 64-bit arguments as words (`aejax.linker.call.precision.taking_words`)."""

    arguments: tuple[jax.ShapeDtypeStruct, ...]
    """The program's arguments, each 64-bit one as it is before it enters as words."""
    wide: tuple[int, ...]
    """The positions of the 64-bit inputs, which enter as words."""
    shared_dtypes: tuple[tuple[int, np.dtype], ...]
    """The position and dtype of each shared array, checked on each call."""

    @classmethod
    def of(cls, direct: DirectCall, shortcut: Shortcut) -> Words | None:
        """How the exact call of ``direct`` for the program of ``shortcut`` takes words; ``None`` when a shared
        variable holds a backend value (`ResidentStorage`), which takes the program's own precision."""
        if any(type(cell) is ResidentStorage for cell in direct.shared):
            return None
        cells = direct.call.program.input_cells
        dtypes = [WORD if isinstance(c, KeyBoundaryValue) else np.dtype(c.variable.type.dtype) for c in cells]
        arguments = tuple(jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in zip(shortcut.shapes, dtypes))
        wide = tuple(position for position, dtype in enumerate(dtypes) if word_count(dtype))
        shared = tuple(
            (position, dtypes[position])
            for position in range(direct.arity, len(cells))
            if not isinstance(cells[position], KeyBoundaryValue)
        )
        return cls(arguments, wide, shared)


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
        elif cell.crosses_as_array:
            array_shapes.append((position, shortcut.shapes[position]))
        else:
            return None
    return array_shapes, keys


def _array_updates(
    direct: DirectCall, advanced: set[int]
) -> tuple[list[tuple[int, list[Any], Callable[[Any], Any]]], list[tuple[int, ResidentStorage]]] | None:
    """The updates that are not among the ``advanced`` random states; ``None`` if one is not an array.

    ``(output, cell, filter)`` of each one copied to the host, and
    ``(output, cell)`` of each one held as it is by a `ResidentStorage`.
    """
    outputs = direct.call.program.output_cells
    host, resident = [], []
    for out, (cell, keep) in enumerate(direct.updated, start=direct.n_returned):
        if out in advanced:
            continue
        if type(cell) is ResidentStorage:
            resident.append((out, cell))
        elif outputs[out].crosses_as_array:
            host.append((out, cell, keep))
        else:
            return None
    return host, resident


def program_error() -> BaseException:
    """The exception being handled, raised by a program: the one recorded on the host if a callback failed it.

    As `GraphProgram` raises it: a direct call may have run the compiled program itself.
    """
    error = sys.exc_info()[1]
    original = raised_on_host(error) if isinstance(error, jax.errors.JaxRuntimeError) else None
    return error if original is None else original


def update_filter(container: Any) -> Callable[[Any], Any]:
    """How an update of ``container``'s shared variable is filtered: none for a `ResidentStorage`, which holds it as it is."""
    if type(container.storage) is ResidentStorage:
        return _as_it_is
    return argument_filter(container)


def _as_it_is(value: Any) -> Any:
    return value


def _only_converts(container: Any) -> bool:
    """Whether an explicit input's filter only converts and checks the kind, dtype and shape of a value."""
    return isinstance(container.type, TensorType) and not container.type.filter_checks_isfinite


def _argument_kind(position: int, container: Any, argument: Any) -> ArgumentKind | None:
    """The arguments an `ExactCall` takes for the explicit input at ``position``, from a call's filtered ``argument``."""
    dtype = container.type.numpy_dtype
    if type(argument) is not np.ndarray or argument.dtype != dtype:
        return None
    classes: tuple[type, ...] = (np.ndarray,)
    if argument.ndim == 0 and not container.strict:
        classes += (dtype.type,)  # the filter would make it a 0-d array; JAX takes the scalar as it is
    return ArgumentKind(position, classes, dtype, argument.shape)


_ONE_OUTPUT_BARE = Returning(return_none=False, unpack_single=True, output_keys=None)


def _exact_decoder(cell: BoundaryValue) -> Callable[[Any], Any]:
    """How the exact call decodes an output: a numpy array's by copying it (its dtype and rank were checked)."""
    return np.array if cell.crosses_as_array else cell.decode


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
