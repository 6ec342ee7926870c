"""``--conformance-resident-shared``: numpy-valued ``aesara.shared`` builds aejax's resident shared variables.

`install` registers `resident_tensor_constructor` for ``np.ndarray`` on
Aesara's ``shared_constructor`` (a ``functools.singledispatch``), in place of
Aesara's ``tensor_constructor``; `uninstall` puts Aesara's back. Only the
plugin calls them, inside its pytest session, so that every tensor shared
variable a suite makes stays a ``jax.Array`` between AEJAX calls
(`aejax.adapters.resident`).

The variable has the dtype and static shape Aesara's constructor gives
(``shape=``, or the deprecated ``broadcastable=``) and holds a device copy of
the value, also with ``borrow=True`` (``jnp.asarray`` of a numpy array may
alias its memory on the CPU, and a buffer the variable holds may be donated).
Values of a dtype JAX has no counterpart for (object, strings, datetimes)
still go to Aesara's constructor.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

JAX_DTYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
    | {"float16", "float32", "float64", "complex64", "complex128"}
)
"""The numpy dtypes that become resident shared variables (with ``jax_enable_x64``, as the hook sets it)."""

_saved: dict[str, Callable[..., Any]] = {}


def resident_tensor_constructor(
    value: np.ndarray,
    name: str | None = None,
    strict: bool = False,
    allow_downcast: bool | None = None,
    borrow: bool = False,
    shape: tuple[Any, ...] | None = None,
    target: str = "cpu",
    broadcastable: tuple[bool, ...] | None = None,
) -> Any:
    """Aesara's ``tensor_constructor`` with a resident shared variable for a value of a `JAX_DTYPES` dtype."""
    if value.dtype.name not in JAX_DTYPES:
        return _saved["constructor"](
            value,
            name=name,
            strict=strict,
            allow_downcast=allow_downcast,
            borrow=borrow,
            shape=shape,
            target=target,
            broadcastable=broadcastable,
        )
    if broadcastable is not None:
        warnings.warn("The `broadcastable` keyword is deprecated; use `shape`.", DeprecationWarning, stacklevel=1)
        shape = broadcastable
    if target != "cpu":
        raise TypeError("not for cpu")  # as Aesara's: another constructor may take it
    import jax.numpy as jnp

    from aejax.adapters.resident import resident_shared

    # borrow=False: the variable holds a device copy of its own (jnp.asarray may alias the numpy memory)
    return resident_shared(jnp.asarray(value), name=name, strict=strict, allow_downcast=allow_downcast, shape=shape)


def install() -> None:
    """Make ``aesara.shared`` of a numpy array build a resident shared variable."""
    import jax
    from aesara.compile.sharedvalue import shared_constructor

    import aejax.linker  # noqa: F401  (registers the jax.Array constructor)

    jax.config.update("jax_enable_x64", True)  # float64 and int64 values keep their dtype, as the hook sets it
    if "constructor" in _saved:
        return
    _saved["constructor"] = shared_constructor.dispatch(np.ndarray)
    shared_constructor.register(np.ndarray)(resident_tensor_constructor)


def uninstall() -> None:
    """Give ``np.ndarray`` its constructor from before `install` back."""
    from aesara.compile.sharedvalue import shared_constructor

    constructor = _saved.pop("constructor", None)
    if constructor is not None:
        shared_constructor.register(np.ndarray)(constructor)


def installed() -> bool:
    """Whether numpy arrays build resident shared variables now."""
    return "constructor" in _saved
