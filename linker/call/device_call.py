"""The calls of the device-I/O mode ``"AEJAX_DEVICE"``: ``jax.Array``s in, ``jax.Array``s out.

The calls of ``"AEJAX"`` (`aejax.linker.call.direct_call`) filter every
argument into numpy with `Type.filter` and copy every output into numpy.
Here a ``jax.Array`` argument is only checked, by its input's codec
(`StateCodec.validate`: dtype, rank, the dimensions the Type fixes), and
enters the program as it is, on whatever device and with whatever sharding
it has; a wrong one raises `JaxArgumentError` naming the input, and is never
converted (a cast or a host copy would hide a wrong dtype and cost what this
mode is for). Any other argument is filtered as ``"AEJAX"`` filters it. The
returned arrays are the ``jax.Array``s XLA made (`linker.DeviceValue`).

`DeviceDirectCall` is `DirectCall` with that filter; `DeviceExactCall` is the
fast path once a call has run: it checks each argument's class, dtype and
shape (a ``jax.Array``'s placement is jit's to check: a new sharding
compiles the program for it) and returns the program's outputs as they are.
Shared variables are read and updated as under ``"AEJAX"``: a resident one
(made from a ``jax.Array``) keeps its update as a ``jax.Array``, any other
has its update copied to the host after each call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import jax
import numpy as np

from aejax.adapters.jax_api import enable_x64
from aejax.linker.call.direct_call import (
    NOT_EXACT,
    ArgumentKind,
    DirectCall,
    ExactCall,
    Returning,
    argument_filter,
    program_error,
)
from aejax.linker.call.linker import BoundaryValue, DeviceValue
from aejax.linker.errors import InputValueError, variable_name

_CONFIG = jax.config


class JaxArgumentError(InputValueError):
    """A ``jax.Array`` argument that is not valid for its input (dtype, rank or a fixed dimension)."""


def device_argument_filter(container: Any, cell: BoundaryValue) -> Callable[[Any], Any]:
    """``container``'s filter for the device mode: a ``jax.Array`` checked by ``cell``'s codec and kept as it is.

    Anything else takes ``"AEJAX"``'s filter (`argument_filter`). So does a
    ``jax.Array`` for an input whose Type checks values (``filter_checks_isfinite``)
    or whose value is not an array under JAX (a random state): only the
    Type's own filter checks those, on a host copy.
    """
    host = argument_filter(container)
    type_ = container.type
    if not cell.passes_through or getattr(type_, "filter_checks_isfinite", False):
        return host
    validate = cell.codec.validate
    name = variable_name(cell.variable)

    def device_filter(value: Any) -> Any:
        if not isinstance(value, jax.Array):
            return host(value)
        try:
            validate(value, type_)
        except Exception as error:
            raise JaxArgumentError(
                f"input {name!r}: {error}. A jax.Array argument is not converted in mode AEJAX_DEVICE: "
                f"pass one of the input's dtype {type_.dtype} and rank {getattr(type_, 'ndim', 0)} "
                f"(value.astype({str(type_.dtype)!r})), or a numpy array to have it converted"
            ) from None
        return value

    return device_filter


class DeviceDirectCall(DirectCall):
    """`DirectCall` whose ``jax.Array`` arguments are checked, not filtered into numpy (`device_argument_filter`)."""

    @staticmethod
    def argument_filter(container: Any, cell: BoundaryValue) -> Callable[[Any], Any]:
        return device_argument_filter(container, cell)

    def exact_call(self, arguments: Sequence[Any], returning: Returning) -> ExactCall | None:
        return DeviceExactCall.of(self, arguments, returning)

    def raises_refusal(self, error: Exception, args: Sequence[Any]) -> bool:
        """Whether an argument refused with ``error`` raises as it is: a wrong ``jax.Array``, or any ``jax.Array``
        among ``args``, which Aesara's path would copy to the host and might accept where the device call did not."""
        return isinstance(error, JaxArgumentError) or any(isinstance(arg, jax.Array) for arg in args)

    def failed(self, args: Sequence[Any]) -> NoReturn:
        """Raise the exception being handled as it is if a ``jax.Array`` is among ``args`` (Aesara's path never
        sees one: it would have copied it to the host), else as Aesara's path raises it (`DirectCall.failed`)."""
        if any(isinstance(arg, jax.Array) for arg in args[: self.arity]):
            raise program_error() from None
        super().failed(args)


class DeviceExactCall(ExactCall):
    """`ExactCall` for ``jax.Array`` (and numpy) arguments, returning the program's ``jax.Array`` outputs.

    A ``jax.Array`` argument is matched by its concrete class and by the
    dtype and shape of its ``aval`` (read once: cheaper than the array's own
    properties); a numpy one as `ExactCall` matches it. Returned arrays are
    never packed (`DeviceValue`), so without shared variables the program's
    results are returned as they are.
    """

    takes_words = False  # a jax.Array argument enters as it is: its calls keep the program's precision

    def __init__(self, direct: DirectCall, returning: Returning, program: Callable[..., Any], *rest: Any) -> None:
        super().__init__(direct, returning, program, *rest)
        kinds = self._kinds
        self._device_kinds = [(k.position, k.classes[0], k.dtype, k.shape) for k in kinds if _is_device(k)]
        self._host_kinds = [k for k in kinds if not _is_device(k)]
        if not self._shared and not self._host_kinds:
            self.run = self._device_only_run()  # type: ignore[method-assign]

    @staticmethod
    def argument_kind(position: int, container: Any, argument: Any) -> ArgumentKind | None:
        if not isinstance(argument, jax.Array):
            return ExactCall.argument_kind(position, container, argument)
        dtype = container.type.numpy_dtype
        aval = getattr(argument, "aval", None)
        if aval is None or aval.dtype != dtype:
            return None
        return ArgumentKind(position, (type(argument),), dtype, tuple(aval.shape))

    @staticmethod
    def output_decoders(returned: Sequence[BoundaryValue]) -> list[Callable[[Any], Any]] | None:
        if all(isinstance(cell, DeviceValue) for cell in returned):
            return None
        return [_keep if isinstance(cell, DeviceValue) else cell.decode for cell in returned]

    def run(self, args: Sequence[Any]) -> Any:
        """What the function returns for ``args``, after storing the updates; `NOT_EXACT` for the general path."""
        if len(args) != self._arity:
            return NOT_EXACT
        for position, klass, dtype, shape in self._device_kinds:
            arg = args[position]
            if type(arg) is not klass:
                return NOT_EXACT
            aval = arg.aval
            if aval.dtype is not dtype or aval.shape != shape:
                return NOT_EXACT
        for position, classes, dtype, shape in self._host_kinds:
            arg = args[position]
            if type(arg) not in classes or arg.dtype is not dtype or arg.shape != shape or not arg.flags.aligned:
                return NOT_EXACT
        if self._shared:
            return self._call_with_shared(args)
        if _CONFIG.jax_enable_x64 is self._x64:
            results = self._program(*args)  # nothing is packed: every output is returned, none as numpy
        else:
            with enable_x64(self._x64):
                results = self._program(*args)
        if self._bare_array:
            return results[0]
        return self._returning.value(self._outputs(results))

    def _device_only_run(self) -> Callable[[Sequence[Any]], Any]:
        """`run` for a function of ``jax.Array`` arguments only and no shared variables, as a closure.

        The hot loop of a small function: a closure reads what it needs from
        its cells, cheaper than from the instance, and leaves out the checks
        of numpy arguments and shared values.
        """
        arity, kinds, program, x64 = self._arity, self._device_kinds, self._program, self._x64
        returned = None if self._bare_array else (self._returning.value, self._outputs)
        if arity == 1 and returned is None:
            return _one_array_run(program, x64, *kinds[0][1:])

        def run(args: Sequence[Any]) -> Any:
            if len(args) != arity:
                return NOT_EXACT
            for position, klass, dtype, shape in kinds:
                arg = args[position]
                if type(arg) is not klass:
                    return NOT_EXACT
                aval = arg.aval
                if aval.dtype is not dtype or aval.shape != shape:
                    return NOT_EXACT
            if _CONFIG.jax_enable_x64 is x64:
                results = program(*args)
            else:
                with enable_x64(x64):
                    results = program(*args)
            if returned is None:
                return results[0]
            value, outputs = returned
            return value(outputs(results))

        return run

    def _outputs(self, results: Sequence[Any]) -> list[Any]:
        """The returned outputs among the program's unpacked ``results``: arrays as the ``jax.Array``s they are."""
        if self._decoders is None:
            return list(results[: self._n_returned])
        return [decode(r) for decode, r in zip(self._decoders, results)]


def _one_array_run(program: Callable[..., Any], x64: bool, klass: type, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
    """`DeviceExactCall.run` of a function of one ``jax.Array`` returning one array (``x + 1``): no loop at all."""

    def run(args: Sequence[Any]) -> Any:
        if len(args) == 1:
            arg = args[0]
            if type(arg) is klass:
                aval = arg.aval
                if aval.dtype is dtype and aval.shape == shape:
                    if _CONFIG.jax_enable_x64 is x64:
                        return program(arg)[0]
                    with enable_x64(x64):
                        return program(arg)[0]
        return NOT_EXACT

    return run


def _is_device(kind: ArgumentKind) -> bool:
    """Whether ``kind`` matches ``jax.Array`` arguments."""
    return issubclass(kind.classes[0], jax.Array)


def _keep(value: Any) -> Any:
    return value
