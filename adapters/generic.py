"""The JAX backend's codecs of Types whose values are Python objects, kept on the host: `Generic`, `SliceType`,
`TypedListType`.

A value of `aesara.link.c.type.Generic` (``aesara.link.c.type.generic()``)
is whatever Python object the caller gives: a list, a string, a callable.
None of them can enter a jit program, so under JAX such a value never
leaves the host: `GenericCodec` hands the object on as it is, both ways, and
says so with ``stays_on_host``. The linker runs every node that takes or
produces such a value on the host, with Aesara's own implementation, between
its jit programs (`aejax.linker.program.host_node`).

``stays_on_host`` is an optional attribute of a `StateCodec` (``False`` if
absent); a codec of another Type whose values are Python objects may set it
too. `stays_on_host` asks it of a Type's codec.
"""

from __future__ import annotations

from typing import Any, Literal

import jax
from pydantic import BaseModel, ConfigDict

from aejax.adapters.codec import CodecError, PayloadError
from aejax.adapters.registry import codec_for
from aejax.adapters.schemas import CodecSpec

BACKEND = "jax"


class HostPayloadSpec(BaseModel):
    """The backend value of a Type whose values stay on the host: a Python object, never inside a program."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["host"] = "host"


class GenericCodec:
    """`Generic` values under JAX: the Python object itself, neither copied nor converted.

    ``host_is_backend`` is ``False`` although encoding changes nothing: the
    linker takes codecs that say ``True`` for array codecs.
    """

    spec = CodecSpec(backend=BACKEND, type="aesara.link.c.type.Generic")
    stays_on_host = True
    host_is_backend = False

    def __repr__(self) -> str:
        return "GenericCodec()"

    def encode(self, host_value: Any, type: Any) -> Any:
        """``host_value`` itself."""
        return host_value

    def decode(self, backend_value: Any, type: Any) -> Any:
        """``backend_value`` itself: the caller gets the object the graph computed."""
        return backend_value

    def validate(self, backend_value: Any, type: Any) -> None:
        """Any Python object but a value JAX is tracing, which means it entered a jit program."""
        if isinstance(backend_value, jax.core.Tracer):
            raise PayloadError(
                type, "<value>", "a Python object kept on the host, not a value JAX traces", backend_value
            )

    def payload_spec(self, type: Any) -> HostPayloadSpec:
        return HostPayloadSpec()


class SliceCodec(GenericCodec):
    """`SliceType` values under JAX (an input made with ``slicetype()``): the ``slice`` itself, kept on the host.

    A node indexing with such an input runs on the host, as nodes of `Generic`
    values do. A slice a node builds (``MakeSlice`` of traced bounds) is a
    Python slice of traced values while tracing, so it stays inside the
    program: ``built_while_tracing``.
    """

    spec = CodecSpec(backend=BACKEND, type="aesara.tensor.type_other.SliceType")
    built_while_tracing = True

    def __repr__(self) -> str:
        return "SliceCodec()"

    def validate(self, backend_value: Any, type: Any) -> None:
        """A ``slice`` (Aesara's `SliceType` holds nothing else)."""
        if not isinstance(backend_value, slice):
            raise PayloadError(type, "<value>", "a Python slice", backend_value)


class TypedListCodec(GenericCodec):
    """`TypedListType` values under JAX (``aesara.typed_list``): the Python list itself, kept on the host.

    The nodes of typed lists (``append``, ``getitem``, ``length``, ...) run on
    the host with Aesara's own implementations, as nodes of `Generic` values do.
    """

    spec = CodecSpec(backend=BACKEND, type="aesara.typed_list.type.TypedListType")

    def __repr__(self) -> str:
        return "TypedListCodec()"

    def validate(self, backend_value: Any, type: Any) -> None:
        """A Python list (a typed list holds nothing else)."""
        if not isinstance(backend_value, list):
            raise PayloadError(type, "<value>", "a Python list", backend_value)


def built_while_tracing(type: Any, backend: str = BACKEND) -> bool:
    """Whether values of ``type`` that a node computes may live inside a program, only those given at its
    boundary staying on the host (the codec's optional ``built_while_tracing``: `SliceCodec`)."""
    return _codec_says(type, backend, "built_while_tracing")


def stays_on_host(type: Any, backend: str = BACKEND) -> bool:
    """Whether values of the Aesara Type instance ``type`` stay on the host under ``backend``.

    That is, its codec says ``stays_on_host`` (`Generic`: any Python object).
    A Type without a codec (or whose plugin failed to load) does not: using
    one of its values at the boundary raises the codec layer's error.
    """
    return _codec_says(type, backend, "stays_on_host")


def _codec_says(type: Any, backend: str, flag: str) -> bool:
    """The optional boolean attribute ``flag`` of the codec of ``type``; ``False`` without a codec or the attribute."""
    try:
        codec = codec_for(backend, type)
    except CodecError:
        return False
    return bool(getattr(codec, flag, False))
