"""A bounded, thread-safe cache of compiled programs, least recently used first out."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class ProgramCache:
    """At most ``size()`` programs by key; the least recently used one leaves first.

    ``size`` is a callable so that the bound can be changed after the cache
    is made (`StaticInputProgram.cache_size`). ``compiled`` counts every
    program ever added and ``evicted`` those that had to leave: a function
    that keeps evicting keeps recompiling.
    """

    def __init__(self, size: Callable[[], int]) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._programs: OrderedDict[Hashable, Any] = OrderedDict()
        self.compiled = 0
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._programs)

    def values(self) -> list[Any]:
        """The cached programs, least recently used first."""
        with self._lock:
            return list(self._programs.values())

    def get(self, key: Hashable) -> Any | None:
        """The program of ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            program = self._programs.get(key)
            if program is not None:
                self._programs.move_to_end(key)
            return program

    def add(self, key: Hashable, program: Any) -> Any:
        """Keep ``program`` under ``key`` unless another thread was first; return the one kept."""
        with self._lock:
            kept = self._programs.setdefault(key, program)
            if kept is program:
                self.compiled += 1
                while len(self._programs) > max(1, self._size()):
                    self._programs.popitem(last=False)
                    self.evicted += 1
            return kept

    def clear(self) -> None:
        """Forget every program."""
        with self._lock:
            self._programs.clear()
