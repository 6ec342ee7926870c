"""Pydantic models of the codec layer.

- `CodecSpec`: which backend and Aesara Type a codec serves, and its version.
- `ArrayPayloadSpec` / `KeyPayloadSpec`: what a backend value looks like, so a
  linker can build a loop carry for it.
- The numpy random-state payloads Aesara accepts: the legacy `RandomState`
  state (``get_state(legacy=False)``) and the `Generator` bit-generator states
  of MT19937, PCG64 (and PCG64DXSM), Philox and SFC64.

`parse_rng_state` validates a payload and turns a pydantic validation error
into a `PayloadError` that names the field at fault (Aesara's own
`RandomStateType.filter` raises a bare ``TypeError()``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    Strict,
    TypeAdapter,
    ValidationError,
)

from aejax.adapters.codec import MISSING, PayloadError

_NAME = r"^[a-z][a-z0-9_]*$"
_DOTTED = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$"


class CodecSpec(BaseModel):
    """Identity of a codec: the backend, the Aesara Type class and a version.

    ``type`` is the dotted path of the Type class (``module.QualName``), so a
    registry can index codecs without importing them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: str = Field(pattern=_NAME)
    type: str = Field(pattern=_DOTTED)
    version: int = Field(default=1, ge=1)

    @property
    def entry_point_name(self) -> str:
        """The name under which the codec is published in ``aejax.codecs``."""
        return f"{self.backend}:{self.type}"


class ArrayPayloadSpec(BaseModel):
    """A backend value that is an array; ``None`` marks a dimension known only at run time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["array"] = "array"
    shape: tuple[int | None, ...]
    dtype: str


class KeyPayloadSpec(BaseModel):
    """A backend value that is a typed JAX PRNG key of shape ``()``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["key"] = "key"
    impl: str
    key_data_shape: tuple[int, ...]
    key_data_dtype: Literal["uint32"] = "uint32"


PayloadSpec = Annotated[ArrayPayloadSpec | KeyPayloadSpec, Field(discriminator="kind")]


def _host_int(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    return value


def _host_float(value: Any) -> Any:
    if isinstance(value, (np.floating, int)) and not isinstance(value, bool):
        return float(value)
    return value


def _word_array(dtype: str, shape: tuple[int, ...]) -> Any:
    def check(value: Any) -> np.ndarray:
        if not isinstance(value, np.ndarray):
            raise ValueError(f"expected a numpy {dtype} array of shape {shape}")
        if value.dtype != np.dtype(dtype) or value.shape != shape:
            raise ValueError(
                f"expected a numpy {dtype} array of shape {shape}, got dtype {value.dtype} and shape {value.shape}"
            )
        return value

    return Annotated[
        np.ndarray,
        BeforeValidator(check),
        PlainSerializer(lambda a: a.tolist(), when_used="json"),
    ]


HostInt = Annotated[int, Strict(), BeforeValidator(_host_int)]
HostFloat = Annotated[float, Strict(), BeforeValidator(_host_float)]
Flag = Annotated[HostInt, Field(ge=0, le=1)]
UInt32Word = Annotated[HostInt, Field(ge=0, lt=2**32)]
UInt128 = Annotated[HostInt, Field(ge=0, lt=2**128)]


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    def fingerprint(self) -> bytes:
        """Canonical bytes of the whole state, equal across processes."""
        return b"".join(_canonical(self))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Payload):
            return NotImplemented
        return self.fingerprint() == other.fingerprint()

    __hash__ = None  # type: ignore[assignment]

    def to_numpy(self) -> dict[str, Any]:
        """The state as the dict numpy's ``state`` setters accept."""
        return self.model_dump(mode="python")


def _canonical(value: Any) -> Iterator[bytes]:
    if isinstance(value, BaseModel):
        yield type(value).__name__.encode() + b"{"
        for name in sorted(type(value).model_fields):
            yield name.encode() + b"="
            yield from _canonical(getattr(value, name))
            yield b";"
        yield b"}"
    elif isinstance(value, np.ndarray):
        yield f"{value.dtype.str}{value.shape}:".encode()
        yield np.ascontiguousarray(value).tobytes()
    elif isinstance(value, float):
        yield value.hex().encode()
    else:
        yield repr(value).encode()


class MT19937Words(_Payload):
    key: _word_array("uint32", (624,))
    pos: Annotated[HostInt, Field(ge=0, le=624)]


class MT19937State(_Payload):
    bit_generator: Literal["MT19937"]
    state: MT19937Words


class PCG64Words(_Payload):
    state: UInt128
    inc: UInt128


class PCG64State(_Payload):
    bit_generator: Literal["PCG64", "PCG64DXSM"]
    state: PCG64Words
    has_uint32: Flag
    uinteger: UInt32Word


class PhiloxWords(_Payload):
    counter: _word_array("uint64", (4,))
    key: _word_array("uint64", (2,))


class PhiloxState(_Payload):
    bit_generator: Literal["Philox"]
    state: PhiloxWords
    buffer: _word_array("uint64", (4,))
    buffer_pos: Annotated[HostInt, Field(ge=0, le=4)]
    has_uint32: Flag
    uinteger: UInt32Word


class SFC64Words(_Payload):
    state: _word_array("uint64", (4,))


class SFC64State(_Payload):
    bit_generator: Literal["SFC64"]
    state: SFC64Words
    has_uint32: Flag
    uinteger: UInt32Word


class LegacyRandomState(_Payload):
    """``RandomState.get_state(legacy=False)``: MT19937 plus the cached Gaussian."""

    bit_generator: Literal["MT19937"]
    state: MT19937Words
    has_gauss: Flag
    gauss: HostFloat


GeneratorState = Annotated[
    MT19937State | PCG64State | PhiloxState | SFC64State,
    Field(discriminator="bit_generator"),
]
RNGState = LegacyRandomState | MT19937State | PCG64State | PhiloxState | SFC64State

_GENERATOR_STATE = TypeAdapter(GeneratorState)


def _first_error(error: ValidationError, tag: Any) -> tuple[str, str]:
    detail = error.errors()[0]
    loc = list(detail["loc"])
    if loc and loc[0] == tag:
        loc = loc[1:]
    field = ".".join(str(part) for part in loc) or "bit_generator"
    return field, detail["msg"]


def parse_rng_state(type_: Any, data: Any, legacy: bool) -> RNGState:
    """Validate a numpy random-state dict for ``type_``.

    ``legacy`` selects the `RandomState` schema; otherwise one of the
    `Generator` bit-generator schemas, chosen by ``data["bit_generator"]``.
    Raises `PayloadError` naming the first field at fault.
    """
    if not isinstance(data, dict):
        raise PayloadError(type_, "<state>", "a numpy random-state dict", data)
    try:
        if legacy:
            return LegacyRandomState.model_validate(data)
        return _GENERATOR_STATE.validate_python(data)
    except ValidationError as error:
        field, message = _first_error(error, data.get("bit_generator"))
        got = _lookup(data, field)
        raise PayloadError(type_, field, f"valid ({message})", got) from None


def _lookup(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return MISSING
        data = data[part]
    return data
