"""Lookup of state codecs by (backend, Aesara Type class).

Codecs are published in the entry-point group ``aejax.codecs``; an entry
point's name is its key, ``"<backend>:<module>.<TypeQualName>"``, and its value
is a codec object (or a codec class, instantiated without arguments)::

    [project.entry-points."aejax.codecs"]
    "jax:mypkg.types.MyType" = "mypkg.codecs:MyTypeJAXCodec"

The names are read on the first lookup (`published_codecs`, which imports
nothing); a codec module is imported only when its key is asked for. A
lookup walks the Type's MRO, so a codec for a base class serves its
subclasses unless a more specific codec exists.

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
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
        raise ValueError(f"codec entry point {name!r} must be named '<backend>:<module>.<Type>'")
    return backend, path


def _distribution(point: EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    return dist.name if dist is not None else "<unknown distribution>"


class PublishedCodecs(Mapping[Key, EntryPoint]):
    """The codec entry points by key, as `published_codecs` reads them.

    Listing, counting and ``in`` never fail; getting a key that two
    distributions publish with different values raises `CodecConflictError`
    naming both, so a conflict fails only its own key.
    """

    def __init__(self, points: Mapping[Key, Sequence[EntryPoint]]) -> None:
        self._points = {key: tuple(found) for key, found in points.items()}

    def __getitem__(self, key: Key) -> EntryPoint:
        points = self._points[key]
        if len(points) > 1:
            owners = " and ".join(f"{_distribution(p)} ({p.value})" for p in points)
            raise CodecConflictError(
                f"two codecs are published for {key[0]}:{key[1]}: {owners}; uninstall one "
                "or register the one to use with register()"
            )
        return points[0]

    def __contains__(self, key: object) -> bool:
        return key in self._points

    def __iter__(self) -> Iterator[Key]:
        return iter(self._points)

    def __len__(self) -> int:
        return len(self._points)


def published_codecs(points: Iterable[EntryPoint]) -> PublishedCodecs:
    """The codec entry points ``points`` by key, importing nothing.

    A name that is not ``"<backend>:<module>.<Type>"`` is skipped with a
    warning. The same value published twice (one distribution seen twice on
    ``sys.path``) counts once; different values under one key are a conflict
    that getting the key raises (`PublishedCodecs`).
    """
    found: dict[Key, list[EntryPoint]] = {}
    for point in points:
        try:
            key = parse_key(point.name)
        except ValueError as error:
            warnings.warn(f"{error} (from {_distribution(point)})", stacklevel=2)
            continue
        same_key = found.setdefault(key, [])
        if all(p.value != point.value for p in same_key):
            same_key.append(point)
    return PublishedCodecs(found)


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
            self._published: PublishedCodecs | None = None
            self._loaded: dict[Key, StateCodec] = {}
            self._failed: dict[Key, CodecError] = {}
            self._resolved: dict[tuple[str, type], StateCodec] = {}

    def register(self, codec: StateCodec, *, replace: bool = False) -> None:
        """Register ``codec`` in-process under its ``spec`` key.

        It takes precedence over entry points. Registering a second codec
        for the same key raises `CodecConflictError` unless ``replace``.
        """
        if not isinstance(codec, StateCodec):
            raise TypeError(f"{codec!r} is not a StateCodec: it needs spec, encode, decode, validate and payload_spec")
        if not isinstance(codec.spec, CodecSpec):
            raise TypeError(
                f"the spec of {codec!r} is a {type(codec.spec).__name__}; it must be an aejax.adapters.CodecSpec"
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
                return self._load(key, published)
        known = ", ".join(f"{b}:{t}" for b, t in self.keys()) or "none"
        raise CodecNotFoundError(
            f"no codec for Type {cls.__name__} ({type_path(cls)}) on backend "
            f"{backend!r}; registered: {known}. Publish one in the entry-point "
            f"group {self.group!r} or call register()."
        )

    def _read_published(self) -> PublishedCodecs:
        if self._published is None:
            self._published = published_codecs(entry_points(group=self.group))
        return self._published

    def _load(self, key: Key, published: PublishedCodecs) -> StateCodec:
        if key in self._loaded:
            return self._loaded[key]
        if key not in self._failed:
            try:
                self._loaded[key] = self._load_point(key, published[key])
                return self._loaded[key]
            except CodecError as error:
                self._failed[key] = error
                warnings.warn(str(error), stacklevel=4)
        raise self._failed[key]

    def _load_point(self, key: Key, point: EntryPoint) -> StateCodec:
        name = f"{key[0]}:{key[1]}"
        try:
            loaded = point.load()
            codec = loaded() if isinstance(loaded, type) else loaded
        except Exception as error:
            raise CodecLoadError(
                f"codec plugin {name} = {point.value} from distribution "
                f"{_distribution(point)} failed to load: {error!r}"
            ) from error
        if not isinstance(codec, StateCodec):
            raise CodecLoadError(f"codec plugin {name} from {_distribution(point)} is not a StateCodec")
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
