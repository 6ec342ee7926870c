"""The `StateCodec` and `KeyCodec` protocols and the errors of the codec layer.

A *state codec* converts the values of one Aesara `Type` between the host
representation Aesara stores in its containers (numpy arrays, numpy random
generators, ...) and the storage of one backend (``"py"``, ``"c"``, ``"jax"``).
Linkers call codecs at their storage boundary instead of relying on
`Type.filter` for backend values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from aesara.graph.type import Type

    from aejax.adapters.schemas import CodecSpec, PayloadSpec


class CodecError(Exception):
    """Base class of every error raised by the codec layer."""


class PayloadError(CodecError, TypeError):
    """A host or backend value does not have the form a codec expects.

    The message names the Aesara type, the field at fault and what was
    expected.
    """

    def __init__(self, type_: Any, field: str, expected: str, got: Any) -> None:
        self.type = type_
        self.field = field
        self.expected = expected
        self.got = got
        super().__init__(f"{type_}: field {field!r} must be {expected}, got {describe(got)}")


class CodecNotFoundError(CodecError, LookupError):
    """No codec is registered for a (backend, Type) pair."""


class CodecConflictError(CodecError):
    """Two different codecs claim the same (backend, Type) key."""


class CodecLoadError(CodecError, ImportError):
    """A codec plugin could not be loaded from its entry point."""


class _Missing:
    def __repr__(self) -> str:
        return "nothing (the field is missing)"


MISSING: Any = _Missing()
"""Stands for a field that a payload lacks, in `PayloadError.got`."""


def describe(value: Any) -> str:
    """Return a short description of ``value`` for error messages."""
    if value is MISSING:
        return repr(value)
    dtype = getattr(value, "dtype", None)
    shape = getattr(value, "shape", None)
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    if dtype is not None and shape is not None:
        return f"{kind} of dtype {dtype} and shape {tuple(shape)}"
    if isinstance(value, int) and value.bit_length() > 200:
        return f"{kind} of {value.bit_length()} bits"
    try:
        text = repr(value)
    except ValueError:  # e.g. a container holding an int too long to print
        return f"{kind} (too large to print)"
    return f"{kind} {text[:60]}{'...' if len(text) > 60 else ''}"


@runtime_checkable
class StateCodec(Protocol):
    """Converts values of an Aesara `Type` to and from one backend's storage.

    Attributes
    ----------
    spec
        Which backend and Type the codec serves, and its version.
    host_is_backend
        Optional, ``False`` if absent. ``True`` when every value `Type.filter`
        returns is already valid backend storage, so a linker may hand values
        Aesara has filtered to the backend without calling `encode` (which
        would only check them) and check them once, while tracing, with
        `validate`.
    stays_on_host
        Optional, ``False`` if absent. ``True`` when the values are Python
        objects that never enter a backend program (`GenericCodec`): a
        linker then computes the nodes that take or make them on the host.
    built_while_tracing
        Optional, ``False`` if absent; with ``stays_on_host``, ``True`` when
        values that nodes compute may live inside a program, only those at
        its boundary staying on the host (`SliceCodec`: ``x[a:b]`` of traced
        bounds).
    """

    spec: CodecSpec

    def encode(self, host_value: Any, type: Type) -> Any:
        """Turn a host value (what `type.filter` accepts) into a backend value.

        Must not mutate ``host_value``.
        """

    def decode(self, backend_value: Any, type: Type) -> Any:
        """Turn a backend value into a host value that `type.filter` accepts."""

    def validate(self, backend_value: Any, type: Type) -> None:
        """Raise `PayloadError` unless ``backend_value`` is valid storage for ``type``."""

    def payload_spec(self, type: Type) -> PayloadSpec:
        """Describe the backend value of ``type`` (shape and dtype) for loop carries."""


@runtime_checkable
class KeyCodec(StateCodec, Protocol):
    """A `StateCodec` whose backend value is a typed PRNG key (its `payload_spec` a `KeyPayloadSpec`).

    A linker passes such a state across its jit boundary as the key's raw data
    (an unsigned 32-bit array of the spec's ``key_data_shape``, what
    ``jax.random.key_data`` returns) and wraps it into a key inside the traced
    function, so it asks the codec for that data directly. A codec that only
    implements `StateCodec` is adapted to this protocol through its `encode`
    and `decode` (`aejax.adapters.jax.as_key_codec`).
    """

    def encode_words(self, host_value: Any, type: Type) -> Any:
        """The raw key data of a host value (a numpy array, or a JAX array the codec kept)."""

    def decode_words(self, words: Any, type: Type, into: Any = None) -> Any:
        """A host value holding the key whose raw data is ``words``.

        ``into`` is the variable's previous host value: the codec may set the
        key into it and return it (advancing a shared generator in place), or
        leave it alone.
        """
