"""Codecs of Aesara's reference backends ``"py"`` and ``"c"``.

Their storage is the host value itself, so the codec applies Aesara's own
semantics, `Type.filter`, and turns its errors into `PayloadError`.
"""

from __future__ import annotations

from typing import Any

from aejax.adapters.codec import CodecError, PayloadError
from aejax.adapters.schemas import ArrayPayloadSpec, CodecSpec, PayloadSpec


class TypeFilterCodec:
    """Codec that stores host values as they are, checked by `Type.filter`."""

    def __init__(self, backend: str) -> None:
        self.spec = CodecSpec(backend=backend, type="aesara.graph.type.Type")

    def __repr__(self) -> str:
        return f"TypeFilterCodec({self.spec.backend!r})"

    def encode(self, host_value: Any, type: Any) -> Any:
        return _filter(host_value, type, strict=False)

    def decode(self, backend_value: Any, type: Any) -> Any:
        return _filter(backend_value, type, strict=False)

    def validate(self, backend_value: Any, type: Any) -> None:
        _filter(backend_value, type, strict=True)

    def payload_spec(self, type: Any) -> PayloadSpec:
        dtype = getattr(type, "dtype", None)
        if dtype is None:
            raise CodecError(f"{type} has no array payload on backend {self.spec.backend!r}")
        return ArrayPayloadSpec(shape=tuple(getattr(type, "shape", ())), dtype=str(dtype))


def _filter(value: Any, type: Any, strict: bool) -> Any:
    try:
        return type.filter(value, strict=strict)
    except (TypeError, ValueError) as error:
        reason = str(error) or error.__class__.__name__
        raise PayloadError(type, "<value>", f"a value {type}.filter accepts ({reason})", value) from None


PY_CODEC = TypeFilterCodec("py")
C_CODEC = TypeFilterCodec("c")
