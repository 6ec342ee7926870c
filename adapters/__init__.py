"""aejax.adapters: backend-neutral state codecs for Aesara Types.

A codec converts the values of one Aesara `Type` between the host
representation (numpy arrays, numpy random generators, Python objects) and
one backend's storage, and validates backend payloads. Codecs are looked up by
``codec_for(backend, type)`` and published through the ``aejax.codecs``
entry-point group.

Importing it first checks the environment (`stack`) and, under numpy 2, gives Aesara what numpy 2
removed (`numpy2`); JAX's API differences between releases are in `jax_api`.
"""

from aejax.adapters import numpy2, stack

stack.check()
numpy2.restore()

# Aesara is imported from here on, working under this numpy.
from aejax.adapters.codec import (
    CodecConflictError,
    CodecError,
    CodecLoadError,
    CodecNotFoundError,
    KeyCodec,
    PayloadError,
    StateCodec,
)
from aejax.adapters.generic import GenericCodec, HostPayloadSpec, SliceCodec, TypedListCodec, stays_on_host
from aejax.adapters.keyed import HeldKey, KeyedGenerator, KeyedRandomState, held_key_reader
from aejax.adapters.registry import (
    ENTRY_POINT_GROUP,
    CodecRegistry,
    PublishedCodecs,
    codec_for,
    default_registry,
    published_codecs,
    refresh_codecs,
    register_codec,
    type_path,
)
from aejax.adapters.resident import ResidentSharedVariable, ResidentStorage, resident_shared
from aejax.adapters.schemas import (
    ArrayPayloadSpec,
    CodecSpec,
    KeyPayloadSpec,
    LegacyRandomState,
    MT19937State,
    PCG64State,
    PhiloxState,
    SFC64State,
    parse_rng_state,
)
from aejax.adapters.threefry import THREEFRY_UNROLLED

__all__ = [
    "ENTRY_POINT_GROUP",
    "ArrayPayloadSpec",
    "CodecConflictError",
    "CodecError",
    "CodecLoadError",
    "CodecNotFoundError",
    "CodecRegistry",
    "CodecSpec",
    "GenericCodec",
    "HeldKey",
    "HostPayloadSpec",
    "KeyCodec",
    "KeyPayloadSpec",
    "KeyedGenerator",
    "KeyedRandomState",
    "LegacyRandomState",
    "MT19937State",
    "PCG64State",
    "PayloadError",
    "PhiloxState",
    "PublishedCodecs",
    "ResidentSharedVariable",
    "ResidentStorage",
    "SFC64State",
    "SliceCodec",
    "TypedListCodec",
    "StateCodec",
    "THREEFRY_UNROLLED",
    "codec_for",
    "default_registry",
    "held_key_reader",
    "parse_rng_state",
    "published_codecs",
    "refresh_codecs",
    "register_codec",
    "resident_shared",
    "stays_on_host",
    "type_path",
]
