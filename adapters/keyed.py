"""numpy random generators that hold a JAX key until their state is first used.

A random state decoded from JAX is a `KeyedGenerator` (or `KeyedRandomState`):
a genuine numpy `Generator` (`RandomState`) that holds the key's words and
works out its numpy state (the codec's embedding of the key) the first time
anything touches it: a draw, ``bit_generator``, copying, pickling, Aesara's
other backends. Until then, handing it back to JAX costs nothing: the held
words, still a JAX array, are the key. A shared random generator updated by a
JAX function call after call therefore never pays for a numpy state, unless
something else uses it in between.

Copies and pickles of a keyed generator are plain numpy objects.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple, Protocol

import numpy as np


class KeyEmbedding(Protocol):
    """What a keyed generator needs of the codec that gave it its key."""

    def embed(self, words: np.ndarray) -> dict[str, Any]:
        """The numpy state dict that carries the key ``words``."""

    def set_host_state(self, host_value: Any, state: dict[str, Any]) -> None:
        """Put a host object into ``state`` without reading any of its attributes."""


class HeldKey(NamedTuple):
    """A key a generator holds: the codec it came from and a slot holding its words.

    The slot is a one-element list. Storing new words into it advances the
    key the generator holds, with nothing else to do: a caller that reads
    the words of a held key, and later has the advanced ones, may put them
    there (a generator settled meanwhile keeps the state it settled to).
    """

    codec: KeyEmbedding
    slot: list[Any]

    @property
    def words(self) -> Any:
        """The key's words."""
        return self.slot[0]


class SettledKey(NamedTuple):
    """The numpy state a held key was worked out to, and the key's words."""

    state: dict[str, Any]
    words: Any


_HELD = "_aejax_held_key"
_SETTLED = "_aejax_settled_key"
_LOCK = threading.Lock()


def _settle(host: Any, fields: dict[str, Any]) -> None:
    """Give ``host`` the numpy state of the key it holds (once; safe across threads)."""
    with _LOCK:
        held = fields.get(_HELD)
        if held is None:
            return  # another thread settled it meanwhile
        words = held.words  # read once: a caller may advance the slot meanwhile
        state = held.codec.embed(np.asarray(words, dtype=np.uint32).ravel())
        held.codec.set_host_state(host, state)
        fields[_SETTLED] = SettledKey(state, words)
        fields[_HELD] = None  # cleared last: a reader that sees no held key sees the state set


class _HoldsKey:
    """Settles a held key before any attribute of the object is read."""

    def __getattribute__(self, name: str) -> Any:
        fields = object.__getattribute__(self, "__dict__")
        if fields.get(_HELD) is not None:
            _settle(self, fields)
        return super().__getattribute__(name)

    def __reduce__(self) -> Any:
        _settle(self, object.__getattribute__(self, "__dict__"))
        return super().__reduce__()  # type: ignore[misc]

    def __reduce_ex__(self, protocol: Any) -> Any:
        _settle(self, object.__getattribute__(self, "__dict__"))
        return super().__reduce_ex__(protocol)  # type: ignore[misc]


class KeyedGenerator(_HoldsKey, np.random.Generator):
    """A numpy `Generator` over PCG64 whose state may still be a held JAX key."""


class KeyedRandomState(_HoldsKey, np.random.RandomState):
    """A numpy `RandomState` over MT19937 whose state may still be a held JAX key."""


def hold_key(host: Any, codec: KeyEmbedding, words: Any) -> None:
    """Let ``host`` (a keyed generator) hold the key ``words`` of ``codec``, dropping its numpy state."""
    fields = object.__getattribute__(host, "__dict__")
    with _LOCK:
        fields[_SETTLED] = None
        fields[_HELD] = HeldKey(codec, [words])


def _fields(host: Any) -> dict[str, Any] | None:
    """The attribute dict of ``host`` if it is a keyed generator, read without settling it."""
    return object.__getattribute__(host, "__dict__") if isinstance(host, _HoldsKey) else None


def held_key(host: Any) -> HeldKey | None:
    """The key ``host`` holds unsettled, if it is a keyed generator that holds one."""
    fields = _fields(host)
    return None if fields is None else fields.get(_HELD)


def held_key_reader(host: Any) -> Callable[[], HeldKey | None] | None:
    """A function giving the key ``host`` holds unsettled when it is called; ``None`` if ``host`` is not keyed.

    Calling it runs no Python code: for callers that read one generator's key
    call after call.
    """
    fields = _fields(host)
    return None if fields is None else partial(fields.get, _HELD)


def settled_key(host: Any) -> SettledKey | None:
    """The state and words of the key ``host`` last settled, if it is a keyed generator."""
    fields = _fields(host)
    return None if fields is None else fields.get(_SETTLED)
