"""Codecs of the JAX backend.

Tensors and scalars
    Host values are numpy arrays/scalars. Encoding checks them and hands them
    on as they are: ``jax.jit`` moves numpy arrays to the device itself, far
    faster than ``jax.device_put`` from Python. Backend values (what JAX
    returns) are ``jax.Array``; decoding returns writeable numpy values of the
    Type's exact dtype.
    With ``jax_enable_x64`` off (a program that computes in 32 bits,
    `aejax.linker.call.precision`), JAX holds no 64-bit values: encoding
    narrows a 64-bit value to its 32-bit dtype (`NARROWED`: float64 to
    float32, int64 to int32, ...) itself, refusing integers that do not fit,
    `validate` expects the narrowed dtype, and decoding a narrowed value
    gives it back in the Type's dtype, so shared variables keep values every
    Aesara backend reads.

Random states
    Under JAX a `RandomStateType` or `RandomGeneratorType` value is a typed
    PRNG key of shape ``()`` (``jax.random.wrap_key_data``), nothing else. The
    key implementation defaults to `THREEFRY_UNROLLED` (`aejax.adapters.threefry`):
    the bits of JAX's ``"threefry2x32"`` (two uint32 words of key data) without
    a loop in the program; its codecs embed and hash states as those of
    ``"threefry2x32"`` do and take keys of either. Pass ``impl="threefry2x32"``
    or ``impl="rbg"`` (four words) to a codec to choose another. Raw
    ``uint32`` key arrays are rejected, so one carry slot never mixes raw and
    typed keys. Keys are always built from explicit ``uint32`` words, never
    from Python/numpy 64-bit integers, which JAX would truncate without x64.

    host -> key: if the host state is the embedding of a key (below), that key
    is returned exactly; otherwise the key words are a BLAKE2b digest of the
    whole validated host state (`schemas.parse_rng_state`), so two states that
    differ anywhere give different keys, and the result is the same in every
    process.

    key -> host: a keyed `Generator` over PCG64 or `RandomState` over MT19937
    (`aejax.adapters.keyed`) that holds the key and, when first used, takes
    the state that embeds it: the key's words verbatim at the start of the
    numpy state, the rest a SHAKE-256 expansion of the key (for PCG64 words
    0-3 form ``state``, words 4-7 ``inc`` with its low bit set; for MT19937 the
    624-word key array, ``pos=624``, no cached Gaussian). Encoding a keyed
    generator still holding its key, or still in the state it settled to,
    gives the key back as it is; any other host value is recognised as an
    embedding by rebuilding it from the leading words and comparing whole
    states, so ``encode(decode(key)) == key`` bit for bit (also after
    pickling), while a generator numpy has drawn from no longer matches and
    gets a new key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from numpy.random.bit_generator import ISeedSequence

from aejax.adapters.codec import CodecError, KeyCodec, PayloadError, StateCodec
from aejax.adapters.keyed import KeyedGenerator, KeyedRandomState, held_key, hold_key, settled_key
from aejax.adapters.schemas import (
    ArrayPayloadSpec,
    CodecSpec,
    KeyPayloadSpec,
    PCG64State,
    RNGState,
    parse_rng_state,
)
from aejax.adapters.threefry import THREEFRY_UNROLLED, bits_of, key_impl

DEFAULT_KEY_IMPL = THREEFRY_UNROLLED
_EMBED_TAG = b"aejax.prng-embedding\0"
_HASH_TAG = b"aejax.prng-host-state\0"
_UINT32 = np.dtype(np.uint32)


NARROWED = {
    np.dtype(wide): np.dtype(narrow)
    for wide, narrow in (("float64", "float32"), ("complex128", "complex64"), ("int64", "int32"), ("uint64", "uint32"))
}
"""The dtype JAX holds the values of each 64-bit dtype in while ``jax_enable_x64`` is off."""


def backend_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of ``dtype``'s values under JAX's current ``jax_enable_x64``: `NARROWED` while it is off."""
    if dtype in NARROWED and not jax.config.jax_enable_x64:
        return NARROWED[dtype]
    return dtype


def out_of_range(value: Any, dtype: np.dtype) -> tuple[Any, Any] | None:
    """The least and greatest of ``value``'s numbers if one does not fit in the integer ``dtype``, else ``None``.

    Only numpy values are read: a JAX array (or tracer) gives ``None``, as
    does any ``dtype`` that is not an integer one.
    """
    if not isinstance(value, (np.ndarray, np.generic)) or dtype.kind not in "iu" or not value.size:
        return None
    info = np.iinfo(dtype)
    least, greatest = value.min(), value.max()
    return (least, greatest) if least < info.min or greatest > info.max else None


def _narrowed(type: Any, value: Any, dtype: np.dtype) -> Any:
    """``value`` (a numpy or JAX array of ``type``) in ``dtype``, 32 bits; `CodecError` for integers that do not fit."""
    outside = out_of_range(value, dtype)
    if outside is not None:
        raise CodecError(
            f"{type} holds {value.dtype} values outside {dtype} ({outside[0]} to {outside[1]}), and the "
            "program computes without jax_enable_x64, in 32-bit integers; compile it with "
            "aejax.linker.mode.with_x64(True)"
        )
    return value.astype(dtype)


def _check_array(type: Any, value: Any, shape: tuple[Any, ...], dtypes: tuple[np.dtype, ...]) -> None:
    """Raise `PayloadError` unless ``value`` has one of ``dtypes``, ``type``'s rank and the dimensions it fixes."""
    if value.dtype not in dtypes:
        raise PayloadError(type, "dtype", str(dtypes[0]), value)
    if value.ndim != len(shape):
        raise PayloadError(type, "ndim", str(len(shape)), value)
    for axis, (want, got) in enumerate(zip(shape, value.shape)):
        if want is not None and want != got:
            raise PayloadError(type, f"shape[{axis}]", str(want), value)


def _type_dtype(type: Any) -> np.dtype:
    dtype = getattr(type, "numpy_dtype", None)  # not `or`: a dtype without fields is falsy
    return np.dtype(type.dtype) if dtype is None else dtype


class _ArrayCodec:
    """Shared behaviour of the tensor and scalar codecs.

    `Type.filter` already gives arrays of the Type's dtype and shape, which
    is all `encode` checks: so ``host_is_backend``, unless a subclass
    encodes differently.
    """

    spec: CodecSpec

    @property
    def host_is_backend(self) -> bool:
        return type(self).encode is _ArrayCodec.encode

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def _shape(self, type: Any) -> tuple[Any, ...]:
        raise NotImplementedError

    def encode(self, host_value: Any, type: Any) -> Any:
        """``host_value``, checked, as it is; narrowed to 32 bits while ``jax_enable_x64`` is off (`NARROWED`).

        A ``jax.Array`` is taken too, there: a resident shared variable's
        value enters a program as the array it holds.
        """
        dtype = _type_dtype(type)
        narrow = backend_dtype(dtype)
        arrays = (np.ndarray, np.generic) if narrow is dtype else (np.ndarray, np.generic, jax.Array)
        if not isinstance(host_value, arrays):
            raise PayloadError(type, "<value>", "a numpy array or scalar", host_value)
        _check_array(type, host_value, self._shape(type), (dtype, narrow))
        return host_value if host_value.dtype == narrow else _narrowed(type, host_value, narrow)

    def validate(self, backend_value: Any, type: Any) -> None:
        if not isinstance(backend_value, (jax.Array, np.ndarray, np.generic)):
            raise PayloadError(type, "<value>", "a jax.Array or numpy array", backend_value)
        _check_array(type, backend_value, self._shape(type), (backend_dtype(_type_dtype(type)),))

    def payload_spec(self, type: Any) -> ArrayPayloadSpec:
        return ArrayPayloadSpec(shape=self._shape(type), dtype=str(type.dtype))

    def _widened(self, backend_value: Any, type: Any) -> np.ndarray:
        """A backend value as a numpy array of ``type``'s dtype: a narrowed one (`NARROWED`) cast back, any other checked."""
        array = np.array(backend_value)
        dtype = _type_dtype(type)
        if array.dtype == NARROWED.get(dtype):
            array = array.astype(dtype)
        if array.dtype != dtype or array.ndim != len(self._shape(type)):
            self.validate(backend_value, type)
        return array


class TensorCodec(_ArrayCodec):
    """`TensorType` values: numpy arrays on the host, ``jax.Array`` under JAX."""

    spec = CodecSpec(backend="jax", type="aesara.tensor.type.TensorType")

    def _shape(self, type: Any) -> tuple[Any, ...]:
        return tuple(type.shape)

    def decode(self, backend_value: Any, type: Any) -> np.ndarray:
        return self._widened(backend_value, type)


class ScalarCodec(_ArrayCodec):
    """`ScalarType` values: numpy scalars on the host, 0-d ``jax.Array`` under JAX."""

    spec = CodecSpec(backend="jax", type="aesara.scalar.basic.ScalarType")

    def _shape(self, type: Any) -> tuple[Any, ...]:
        return ()

    def decode(self, backend_value: Any, type: Any) -> np.generic:
        return np.dtype(type.dtype).type(self._widened(backend_value, type))


def _same_state_dict(a: Any, b: Any) -> bool:
    """Equality of two numpy random-state dicts (their arrays compared by value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_state_dict(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def _int_to_words(value: int, count: int) -> np.ndarray:
    return np.frombuffer(value.to_bytes(4 * count, "little"), dtype="<u4").astype(np.uint32)


class PRNGKeyCodec:
    """Random states as typed JAX PRNG keys; see the module docstring.

    Besides the `StateCodec` methods it converts between host values and the
    key's raw ``uint32`` words (`encode_words` / `decode_words`), which a
    linker may pass across its jit boundary and wrap into a key inside the
    traced function. Decoding gives a keyed numpy generator
    (`aejax.adapters.keyed`) that holds the words until something reads it,
    and encoding one that still holds them, or whose state is still the one
    they settled to, gives back the very same words (a JAX array stays on
    the device). Subclasses say which host object they build and how a key
    is embedded in its state.
    """

    spec: CodecSpec
    state_words: int
    keyed_class: type

    def __init__(self, impl: str = DEFAULT_KEY_IMPL) -> None:
        self.impl = impl
        self._jax_impl = key_impl(impl)  # what jax.random's impl= takes
        shape = jax.eval_shape(lambda: jax.random.key_data(jax.random.key(0, impl=self._jax_impl))).shape
        self.key_words = int(np.prod(shape))
        self.key_shape = tuple(shape)
        self._bits = bits_of(impl)  # names the streams: implementations of the same bits embed and hash alike
        self._embed_hash = hashlib.shake_256(_EMBED_TAG + self._bits.encode() + b"\0")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(impl={self.impl!r})"

    def payload_spec(self, type: Any) -> KeyPayloadSpec:
        return KeyPayloadSpec(impl=self.impl, key_data_shape=self.key_shape)

    def encode(self, host_value: Any, type: Any) -> jax.Array:
        return jax.random.wrap_key_data(self.encode_words(host_value, type), impl=self._jax_impl)

    def decode(self, backend_value: Any, type: Any) -> Any:
        self.validate(backend_value, type)
        return self.decode_words(jax.random.key_data(backend_value), type)

    def encode_words(self, host_value: Any, type: Any) -> Any:
        """The key data (``uint32``, shape ``key_shape``; numpy, or the JAX array it was decoded from) of a host value."""
        held = held_key(host_value)
        if held is not None and held.codec is self:
            return held.words
        settled = settled_key(host_value)
        if settled is not None and self.same_state(host_value, settled.state):
            return settled.words
        state = self.host_state(host_value, type)
        words = self._embedded_words(state)
        if words is None:
            words = self._hashed_words(state)
        return words.reshape(self.key_shape)

    def decode_words(self, words: Any, type: Any, into: Any = None) -> Any:
        """A keyed host object holding the key data ``words``.

        Given ``into``, a keyed host object of this codec's kind, ``into``
        holds the key from now on and is returned, as Aesara's in-place
        random ops advance a shared generator; any other ``into`` is left
        alone.
        """
        if not (isinstance(words, jax.Array) and words.dtype == _UINT32):
            words = np.array(words, dtype=np.uint32)  # owned: the caller may reuse its array
        if words.shape != self.key_shape:
            raise PayloadError(type, "key_data.shape", str(self.key_shape), words)
        host = into if isinstance(into, self.keyed_class) else self.new_keyed_host()
        hold_key(host, self, words)
        return host

    def validate(self, backend_value: Any, type: Any) -> None:
        expected = f"a typed JAX PRNG key of impl {self.impl!r} and shape ()"
        if not isinstance(backend_value, jax.Array):
            raise PayloadError(type, "key", expected, backend_value)
        if not jax.dtypes.issubdtype(backend_value.dtype, jax.dtypes.prng_key):
            raise PayloadError(
                type,
                "key",
                f"{expected} (wrap raw key data with jax.random.wrap_key_data(data, impl={self.impl!r}))",
                backend_value,
            )
        if backend_value.shape != ():
            raise PayloadError(type, "key.shape", "()", backend_value)
        impl = str(jax.random.key_impl(backend_value))
        if bits_of(impl) != self._bits:
            raise PayloadError(type, "key.impl", repr(self.impl), impl)

    def host_state(self, host_value: Any, type: Any) -> RNGState:
        """Validate a host value of this codec's Type and return its state model."""
        raise NotImplementedError

    def new_keyed_host(self) -> Any:
        """A keyed host object of this codec's kind, its numpy state not yet set."""
        raise NotImplementedError

    def set_host_state(self, host_value: Any, state: dict[str, Any]) -> None:
        """Put a keyed host object into the numpy state ``state``, reading none of its attributes."""
        raise NotImplementedError

    def raw_state(self, host_value: Any) -> Any:
        """numpy's own state of a host object, as cheap to read as possible."""
        raise NotImplementedError

    def same_state(self, host_value: Any, raw_state: Any) -> bool:
        """Whether ``host_value`` is still in the state ``raw_state``."""
        return self.raw_state(host_value) == raw_state

    def embed(self, words: np.ndarray) -> dict[str, Any]:
        """The numpy state dict that carries the key ``words``."""
        raise NotImplementedError

    def leading_words(self, state: RNGState) -> np.ndarray | None:
        """The first ``key_words`` words of an embedding laid out like ``state``."""
        raise NotImplementedError

    def _state_bytes(self, words: np.ndarray) -> bytes:
        """The ``state_words`` little-endian words of an embedding: ``words``, then a SHAKE-256 stream."""
        leading = words.astype("<u4").tobytes()
        stream = self._embed_hash.copy()
        stream.update(leading)
        return leading + stream.digest(4 * self.state_words - len(leading))

    def _embedded_words(self, state: RNGState) -> np.ndarray | None:
        words = self.leading_words(state)
        if words is None or not _same_state_dict(self.embed(words), state.to_numpy()):
            return None
        return words

    def _hashed_words(self, state: RNGState) -> np.ndarray:
        digest = hashlib.blake2b(
            _HASH_TAG + self._bits.encode() + b"\0" + state.fingerprint(),
            digest_size=4 * self.key_words,
        ).digest()
        return np.frombuffer(digest, dtype="<u4").astype(np.uint32)


class _KeyDataOf:
    """A `StateCodec` of typed keys as a `KeyCodec`: the raw key data through its `encode` and `decode`."""

    def __init__(self, codec: StateCodec, impl: str) -> None:
        self.codec = codec
        self.spec = codec.spec
        self.impl = key_impl(impl)  # what jax.random's impl= takes

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.codec!r})"

    def encode(self, host_value: Any, type: Any) -> Any:
        return self.codec.encode(host_value, type)

    def decode(self, backend_value: Any, type: Any) -> Any:
        return self.codec.decode(backend_value, type)

    def validate(self, backend_value: Any, type: Any) -> None:
        self.codec.validate(backend_value, type)

    def payload_spec(self, type: Any) -> KeyPayloadSpec:
        return self.codec.payload_spec(type)

    def encode_words(self, host_value: Any, type: Any) -> Any:
        return jax.random.key_data(self.codec.encode(host_value, type))

    def decode_words(self, words: Any, type: Any, into: Any = None) -> Any:
        return self.codec.decode(jax.random.wrap_key_data(words, impl=self.impl), type)


def as_key_codec(codec: StateCodec, spec: KeyPayloadSpec) -> KeyCodec:
    """``codec``, whose payload is a key described by ``spec``, as a `KeyCodec` (adapted if it is not one)."""
    return codec if isinstance(codec, KeyCodec) else _KeyDataOf(codec, spec.impl)


class _Unseeded(ISeedSequence):
    """Zeros as seed words: for bit generators whose state is set right after.

    Seeding with an integer runs numpy's `SeedSequence` (about 20 us for
    PCG64), which a decoded key would overwrite at once.
    """

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        return np.zeros(n_words, dtype)


_UNSEEDED = _Unseeded()


def _parsed_state(type: Any, host_value: Any, host_class: type, legacy: bool, read: Callable[[Any], dict]) -> RNGState:
    if isinstance(host_value, host_class):
        host_value = read(host_value)
    elif not isinstance(host_value, dict):
        raise PayloadError(type, "<value>", f"a numpy {host_class.__name__} or its state dict", host_value)
    return parse_rng_state(type, host_value, legacy=legacy)


class RandomGeneratorCodec(PRNGKeyCodec):
    """`RandomGeneratorType` <-> JAX PRNG key; decodes to a PCG64 `Generator`."""

    spec = CodecSpec(backend="jax", type="aesara.tensor.random.type.RandomGeneratorType")
    state_words = 8
    keyed_class = KeyedGenerator

    def host_state(self, host_value: Any, type: Any) -> RNGState:
        return _parsed_state(type, host_value, np.random.Generator, False, lambda g: g.bit_generator.state)

    def new_keyed_host(self) -> KeyedGenerator:
        return KeyedGenerator(np.random.PCG64(_UNSEEDED))

    def set_host_state(self, host_value: np.random.Generator, state: dict[str, Any]) -> None:
        np.random.Generator.bit_generator.__get__(host_value).state = state

    def raw_state(self, host_value: Any) -> Any:
        return host_value.bit_generator.state

    def embed(self, words: np.ndarray) -> dict[str, Any]:
        full = self._state_bytes(words)
        return {
            "bit_generator": "PCG64",
            "state": {
                "state": int.from_bytes(full[:16], "little"),
                "inc": int.from_bytes(full[16:], "little") | 1,
            },
            "has_uint32": 0,
            "uinteger": 0,
        }

    def leading_words(self, state: RNGState) -> np.ndarray | None:
        if not isinstance(state, PCG64State) or state.bit_generator != "PCG64":
            return None
        return _int_to_words(state.state.state, 4)[: self.key_words]


class RandomStateCodec(PRNGKeyCodec):
    """`RandomStateType` <-> JAX PRNG key; decodes to an MT19937 `RandomState`."""

    spec = CodecSpec(backend="jax", type="aesara.tensor.random.type.RandomStateType")
    state_words = 624
    keyed_class = KeyedRandomState

    def host_state(self, host_value: Any, type: Any) -> RNGState:
        return _parsed_state(type, host_value, np.random.RandomState, True, lambda r: r.get_state(legacy=False))

    def new_keyed_host(self) -> KeyedRandomState:
        return KeyedRandomState(np.random.MT19937(_UNSEEDED))

    def set_host_state(self, host_value: np.random.RandomState, state: dict[str, Any]) -> None:
        np.random.RandomState.set_state(host_value, state)

    def raw_state(self, host_value: Any) -> Any:
        return host_value.get_state(legacy=False)

    def same_state(self, host_value: Any, raw_state: Any) -> bool:
        return _same_state_dict(self.raw_state(host_value), raw_state)

    def embed(self, words: np.ndarray) -> dict[str, Any]:
        return {
            "bit_generator": "MT19937",
            "state": {"key": np.frombuffer(self._state_bytes(words), "<u4").astype(np.uint32), "pos": 624},
            "has_gauss": 0,
            "gauss": 0.0,
        }

    def leading_words(self, state: RNGState) -> np.ndarray | None:
        return state.state.key[: self.key_words].copy()
