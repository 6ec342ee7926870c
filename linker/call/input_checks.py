"""The arguments of an exported function (`aejax.linker.jaxify`) checked against their inputs' Aesara Types.

``aesara.function``'s calls give every argument to its Type's ``filter``
(numpy values, on the host; `aejax.linker.call.direct_call`). An exported
function is called with JAX values too, tracers under ``jax.jit``,
``jax.vmap`` or ``jax.grad``, so it checks only what a value says without
its numbers: its rank, the lengths its Type fixes (the length-1,
broadcastable, dimensions too) and its dtype's kind. All three are known
while JAX traces: under ``jax.jit`` the checks run once, as the function is
traced, and cost nothing per call; under ``jax.vmap`` they see one
example's rank and shape, without the batch axis.

Kinds follow Aesara (`KINDS`): a bool value may go into any numeric input,
an integer into a float or a complex one, a float into a complex one; a
complex value into a real input, a float into an integer one or a signed
integer into an unsigned one raises. Within those, the value is cast to the
dtype its input has in the traced program, as JAX casts: a float64 value
for a float32 input is rounded to float32 (Aesara refuses it), and with
``jax_enable_x64`` off a float64 input holds float32 values. A numpy integer
array that does not fit its input's integer dtype raises (a traced one is
cast as JAX casts it). Python numbers and (nested) lists become numpy arrays
first.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from aesara.graph.basic import Variable
from aesara.scalar.basic import ScalarType
from aesara.tensor.type import TensorType

from aejax.adapters.jax import backend_dtype, out_of_range
from aejax.linker.errors import InputValueError, variable_name

KINDS = "buifc"
"""numpy's dtype kinds, each one taking the values of those before it (bool, unsigned, signed, float, complex)."""

_KIND_NAMES = {"b": "bool", "u": "unsigned integer", "i": "signed integer", "f": "float", "c": "complex"}


class ArgumentArrayError(InputValueError, ValueError):
    """An argument that is no array (a ragged list): a `ValueError`, as numpy and Aesara raise, naming the input."""


def checked_argument(value: Any, var: Variable, argnum: int) -> Any:
    """``value`` as the argument of the input ``var`` (``argnum`` of the exported function): a JAX or numpy array of
    the dtype ``var`` has in the traced program; `InputValueError` (a `TypeError`) naming ``var`` if it does not fit.

    Values of inputs other than tensors and scalars are returned as they are.
    """
    type_ = var.type
    if not isinstance(type_, (TensorType, ScalarType)):
        return value
    where = f"input {variable_name(var)!r} (argnum {argnum})"
    array = _as_array(value, where)
    dtype = backend_dtype(np.dtype(type_.dtype))
    _check_kind(array, type_, dtype, where)
    _check_shape(array, tuple(getattr(type_, "shape", ())), type_, where)
    if array.dtype == dtype:
        return array
    outside = out_of_range(array, dtype)
    if outside is not None:
        raise InputValueError(
            f"{where} is of type {type_}, whose {dtype} values cannot hold {outside[0]} to {outside[1]}; "
            f"pass values that fit, or declare the input {array.dtype}"
        )
    return array.astype(dtype)


def _as_array(value: Any, where: str) -> Any:
    """``value`` itself if it is a JAX or numpy array, else the array it makes: a JAX one if it holds JAX values (a
    list under ``jax.jit`` is a list of tracers), else a numpy one."""
    if isinstance(value, (jax.Array, np.ndarray, np.generic)):
        return value
    holds_jax = any(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(value))
    try:
        array = (jnp if holds_jax else np).asarray(value)
    except (ValueError, TypeError) as error:
        raise ArgumentArrayError(
            f"{where}: {type(value).__name__} is not an array ({error}); pass an array, or a list whose "
            "rows all have the same length"
        ) from None
    if array.dtype.kind not in KINDS:
        raise InputValueError(f"{where}: {type(value).__name__} of {array.dtype} values is not an array of numbers")
    return array


def _check_kind(array: Any, type_: Any, dtype: np.dtype, where: str) -> None:
    kind = getattr(array.dtype, "kind", None)
    if kind in KINDS and KINDS.index(kind) <= KINDS.index(dtype.kind):
        return
    raise InputValueError(
        f"{where} is of type {type_}; got an array of dtype {array.dtype}, which it cannot hold without losing "
        f"information (a {_KIND_NAMES.get(kind, 'non-numeric')} value into a {_KIND_NAMES[dtype.kind]} input); "
        f"convert the value yourself (value.astype({str(type_.dtype)!r})) or declare the input {array.dtype}"
    )


def _check_shape(array: Any, shape: tuple[Any, ...], type_: Any, where: str) -> None:
    if array.ndim != len(shape):
        raise InputValueError(
            f"{where} is of type {type_}, with {len(shape)} dimension(s); got an array of shape "
            f"{tuple(array.shape)} ({array.ndim} dimension(s)): reshape the value, or declare the input with its rank"
        )
    for axis, (fixed, got) in enumerate(zip(shape, array.shape)):
        if fixed is not None and fixed != got:
            raise InputValueError(
                f"{where} is of type {type_}, whose axis {axis} has length {fixed}; got an array of shape "
                f"{tuple(array.shape)}: pass one of shape {shape} (None: any length)"
            )
