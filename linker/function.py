"""The compiled function of the AEJAX mode: Aesara's `Function` with a direct call.

Aesara's `Function.__call__` serves every linker: it writes each argument into
a storage cell, checks for inputs that share memory (for in-place C code),
runs the VM, reads the outputs back, filters each update into its shared
variable and clears the cells again. Under AEJAX one jit program does all the
work and never writes to its inputs, so for the common call — every explicit
input given positionally, no keywords, no profiling — `AejaxFunction` filters
the arguments with `Type.filter` as Aesara does, runs the program on them and
the shared variables' values, and stores the decoded updates (each through
its variable's filter). Anything else (keywords, defaults, ``output_subset``)
goes through Aesara's own `Function.__call__`, and so does a direct call that
fails (a bad argument, a failed check): it has stored nothing, and Aesara's
path gives its usual behaviour and messages.

Aesara finds this class through the mode's ``function_maker`` attribute
(`aesara.compile.function.types.orig_function` looks it up), so nothing of
Aesara's is changed.
"""

from __future__ import annotations

import copyreg
from typing import Any, Callable, Sequence

import numpy as np
from aesara import config
from aesara.compile.function.types import Function, FunctionMaker
from aesara.tensor.random.type import RandomGeneratorType, RandomStateType
from aesara.tensor.type import TensorType

from aejax.linker.linker import HostCall


class DirectCall:
    """The fast path of one `AejaxFunction`: filter, run, store updates, return outputs."""

    def __init__(self, function: Function, call: HostCall, arity: int) -> None:
        containers = function.input_storage
        self.arity = arity
        self._filters = [argument_filter(c) for c in containers[: self.arity]]
        self._shared = [c.storage for c in containers[self.arity :]]
        self._updated = [
            (c.storage, argument_filter(c))
            for c, i in zip(containers, function.maker.expanded_inputs)
            if i.update is not None
        ]
        self._call = call
        self._n_returned = len(function.maker.fgraph.outputs) - len(self._updated)

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
        results = self._call(values + [cell[0] for cell in self._shared])
        updates = [(cell, keep(value)) for (cell, keep), value in zip(self._updated, results[self._n_returned :])]
        for cell, value in updates:
            cell[0] = value
        return results[: self._n_returned]


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
    plain = isinstance(type_, TensorType) and not type_.filter_checks_isfinite
    if not plain or any(s is not None for s in type_.shape):
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


class AejaxFunction(Function):
    """A compiled AEJAX function; see the module docstring for what its calls skip."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._direct = DirectCall.of(self)

    def __reduce__(self) -> Any:
        return copyreg.dispatch_table[Function](self)  # pickled as Aesara pickles its functions

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        direct = self._direct
        if direct is None or kwargs or self.profile or len(args) != direct.arity:
            return super().__call__(*args, **kwargs)
        try:
            outputs = direct(args, trusted=self.trust_input)
        except Exception:
            return super().__call__(*args)  # nothing was stored: Aesara's path raises with its own messages
        if self.return_none:
            return None
        if self.unpack_single and len(outputs) == 1:
            return outputs[0]
        if self.output_keys is not None:
            return dict(zip(self.output_keys, outputs))
        return outputs


class AejaxFunctionMaker(FunctionMaker):
    """Aesara's `FunctionMaker`, building `AejaxFunction`s.

    It rewrites the graph with ``config.cxx`` empty: Aesara's constant
    folding runs each folded node through the Op's thunk, which by default
    compiles the Op's C code (about 40 s for an RNN gradient on an empty
    Aesara cache), while a JAX function needs none of it; the Op's Python
    code folds the same constants.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("function_builder", AejaxFunction)
        with config.change_flags(cxx=""):
            super().__init__(*args, **kwargs)
