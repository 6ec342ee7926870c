"""Lookup of state codecs by (backend, Aesara Type class).

Codecs are published in the entry-point group ``aejax.codecs``; an entry
point's name is its key, ``"<backend>:<module>.<TypeQualName>"``, and its value
is a codec object (or a codec class, instantiated without arguments)::

    [project.entry-points."aejax.codecs"]
    "jax:mypkg.types.MyType" = "mypkg.codecs:MyTypeJAXCodec"

The names are read on the first lookup; a codec module is imported only
when its key is asked for. A lookup walks the Type's MRO, so a codec for a
base class serves its subclasses unless a more specific codec exists.

Precedence and conflicts:

- A codec registered in-process with `CodecRegistry.register` wins over
  entry points for the same key (an explicit choice of the program).
- Two entry points of the same key that name different objects are a
  conflict: looking that key up raises `CodecConflictError` naming both
  distributions. Identical duplicates (one distribution seen twice on
  ``sys.path``) are not a conflict.
- A plugin that fails to import is reported with a warning naming it; its
  own key then raises `CodecLoadError`, while every other key works.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from aejax.adapters.codec import (
    CodecConflictError,
    CodecError,
    CodecLoadError,
    CodecNotFoundError,
    StateCodec,
)
from aejax.adapters.schemas import CodecSpec

ENTRY_POINT_GROUP = "aejax.codecs"

Key = tuple[str, str]


def type_path(cls: type) -> str:
    """The dotted path that names a Type class in codec keys."""
    return f"{cls.__module__}.{cls.__qualname__}"


def parse_key(name: str) -> Key:
    """Split an entry-point name ``"backend:dotted.Type"`` into a key."""
    backend, sep, path = name.partition(":")
    if not sep or not backend or "." not in path:
        raise ValueError(
            f"codec entry point {name!r} must be named '<backend>:<module>.<Type>'"
        )
    return backend, path


@dataclass
class _Published:
    """The entry points published for one key."""

    points: list[EntryPoint] = field(default_factory=list)

    def add(self, point: EntryPoint) -> None:
        if all(p.value != point.value for p in self.points):
            self.points.append(point)


def _distribution(point: EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    return dist.name if dist is not None else "<unknown distribution>"


class CodecRegistry:
    """A registry of state codecs, filled from entry points and explicit calls."""

    def __init__(self, group: str = ENTRY_POINT_GROUP) -> None:
        self.group = group
        self._lock = threading.RLock()
        self._explicit: dict[Key, StateCodec] = {}
        self.refresh()

    def refresh(self) -> None:
        """Forget what was read from entry points; the next lookup reads them again."""
        with self._lock:
            self._published: dict[Key, _Published] | None = None
            self._loaded: dict[Key, StateCodec] = {}
            self._failed: dict[Key, CodecError] = {}
            self._resolved: dict[tuple[str, type], StateCodec] = {}

    def register(self, codec: StateCodec, *, replace: bool = False) -> None:
        """Register ``codec`` in-process under its ``spec`` key.

        It takes precedence over entry points. Registering a second codec
        for the same key raises `CodecConflictError` unless ``replace``.
        """
        if not isinstance(codec, StateCodec):
            raise TypeError(
                f"{codec!r} is not a StateCodec: it needs spec, encode, decode, "
                "validate and payload_spec"
            )
        if not isinstance(codec.spec, CodecSpec):
            raise TypeError(
                f"the spec of {codec!r} is a {type(codec.spec).__name__}; it must be an "
                "aejax.adapters.CodecSpec"
            )
        key = (codec.spec.backend, codec.spec.type)
        with self._lock:
            existing = self._explicit.get(key)
            if existing is not None and existing is not codec and not replace:
                raise CodecConflictError(
                    f"a codec for {key[0]}:{key[1]} is already registered "
                    f"({existing!r}); pass replace=True to replace it"
                )
            self._explicit[key] = codec
            self._resolved.clear()

    def codec_for(self, backend: str, type: Any) -> StateCodec:
        """The codec of ``backend`` for the Aesara Type instance ``type``."""
        cache_key = (backend, type.__class__)
        codec = self._resolved.get(cache_key)
        if codec is None:
            with self._lock:
                codec = self._resolve(backend, type.__class__)
                self._resolved[cache_key] = codec
        return codec

    def keys(self) -> list[Key]:
        """Every key known: registered in-process or published as an entry point."""
        with self._lock:
            return sorted(set(self._explicit) | set(self._read_published()))

    def _resolve(self, backend: str, cls: type) -> StateCodec:
        published = self._read_published()
        for base in cls.__mro__:
            key = (backend, type_path(base))
            if key in self._explicit:
                return self._explicit[key]
            if key in published:
                return self._load(key, published[key])
        known = ", ".join(f"{b}:{t}" for b, t in self.keys()) or "none"
        raise CodecNotFoundError(
            f"no codec for Type {cls.__name__} ({type_path(cls)}) on backend "
            f"{backend!r}; registered: {known}. Publish one in the entry-point "
            f"group {self.group!r} or call register()."
        )

    def _read_published(self) -> dict[Key, _Published]:
        if self._published is None:
            published: dict[Key, _Published] = {}
            for point in entry_points(group=self.group):
                try:
                    key = parse_key(point.name)
                except ValueError as error:
                    warnings.warn(f"{error} (from {_distribution(point)})", stacklevel=3)
                    continue
                published.setdefault(key, _Published()).add(point)
            self._published = published
        return self._published

    def _load(self, key: Key, published: _Published) -> StateCodec:
        if key in self._loaded:
            return self._loaded[key]
        if key not in self._failed:
            try:
                self._loaded[key] = self._load_point(key, published)
                return self._loaded[key]
            except CodecError as error:
                self._failed[key] = error
                warnings.warn(str(error), stacklevel=4)
        raise self._failed[key]

    def _load_point(self, key: Key, published: _Published) -> StateCodec:
        name = f"{key[0]}:{key[1]}"
        if len(published.points) > 1:
            owners = " and ".join(
                f"{_distribution(p)} ({p.value})" for p in published.points
            )
            raise CodecConflictError(
                f"two codecs are published for {name}: {owners}; uninstall one "
                "or register the one to use with register()"
            )
        point = published.points[0]
        try:
            loaded = point.load()
            codec = loaded() if isinstance(loaded, type) else loaded
        except Exception as error:
            raise CodecLoadError(
                f"codec plugin {name} = {point.value} from distribution "
                f"{_distribution(point)} failed to load: {error!r}"
            ) from error
        if not isinstance(codec, StateCodec):
            raise CodecLoadError(
                f"codec plugin {name} from {_distribution(point)} is not a StateCodec"
            )
        if not isinstance(codec.spec, CodecSpec):
            raise CodecLoadError(
                f"codec plugin {name} = {point.value} from distribution {_distribution(point)} "
                f"has a spec of type {type(codec.spec).__name__}; it must be an "
                "aejax.adapters.CodecSpec"
            )
        if (codec.spec.backend, codec.spec.type) != key:
            raise CodecLoadError(
                f"codec plugin {name} from {_distribution(point)} declares "
                f"{codec.spec.entry_point_name} in its spec; the names must agree"
            )
        return codec


default_registry = CodecRegistry()


def codec_for(backend: str, type: Any) -> StateCodec:
    """The codec of ``backend`` for ``type`` in the default registry."""
    return default_registry.codec_for(backend, type)


def register_codec(codec: StateCodec, *, replace: bool = False) -> None:
    """Register ``codec`` in the default registry (see `CodecRegistry.register`)."""
    default_registry.register(codec, replace=replace)


def refresh_codecs() -> None:
    """Re-read the ``aejax.codecs`` entry points on the next lookup."""
    default_registry.refresh()
