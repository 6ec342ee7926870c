"""JAX's persistent compilation cache, on by default, in Aesara's compile directory.

Compiling a sampler's program (NUTS: seconds of XLA) is paid again by every
new process. Before aejax compiles its first program it points JAX's
persistent compilation cache (``jax_compilation_cache_dir``) at
``<aesara.config.compiledir>/aejax-xla``, so ``AESARA_FLAGS=base_compiledir=...``
moves it and removing Aesara's compile directory removes it. It is left as it
is when the user chose a cache directory for JAX, or set
``AEJAX_PERSISTENT_CACHE=0`` in the environment. JAX caches only programs
that took at least ``jax_persistent_cache_min_compile_time_secs`` (1 s by
default) to compile. The setting is JAX's and process-wide: other JAX
programs of the process are cached there too. Whole programs, which spare a
new process the tracing as well, are kept beside it
(`aejax.linker.program.saved_programs`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aesara
import jax

SWITCH = "AEJAX_PERSISTENT_CACHE"
"""The environment variable that turns the cache off when set to ``0``."""

SUBDIRECTORY = "aejax-xla"

CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
"""The event JAX records when its persistent cache answers a compile (in the compiling thread)."""

_lock = threading.Lock()
_decided = False


def cache_directory() -> Path:
    """Where aejax keeps JAX's persistent compilation cache: a folder of Aesara's compile directory."""
    return Path(aesara.config.compiledir) / SUBDIRECTORY


def use_persistent_cache() -> None:
    """Point JAX's persistent compilation cache at `cache_directory`, once per process, unless told otherwise."""
    global _decided
    if _decided:
        return
    with _lock:
        if _decided:
            return
        _decided = True
        if os.environ.get(SWITCH, "1") == "0" or jax.config.jax_compilation_cache_dir is not None:
            return
        jax.config.update("jax_compilation_cache_dir", str(cache_directory()))


_answers = threading.local()
_listening = False


@contextmanager
def recording_cache_answers() -> Iterator[list[str]]:
    """A list that gets an entry for each compile of this thread that JAX's persistent cache answered in the block.

    An executable the cache handed back was deserialized, and XLA:CPU
    serializes such an executable again without its kernels: it cannot be
    saved (`aejax.linker.program.saved_programs`).
    """
    _listen_for_cache_answers()
    outer = getattr(_answers, "seen", None)
    _answers.seen = seen = []
    try:
        yield seen
    finally:
        _answers.seen = outer
        if outer is not None:
            outer.extend(seen)


def _listen_for_cache_answers() -> None:
    """Register, once per process, the listener that notes JAX's cache answers in the thread's open record."""
    global _listening
    if _listening:
        return
    with _lock:
        if not _listening:
            jax.monitoring.register_event_listener(_note_cache_answer)
            _listening = True


def _note_cache_answer(event: str, **kwargs: object) -> None:
    seen = getattr(_answers, "seen", None)
    if event == CACHE_HIT_EVENT and seen is not None:
        seen.append(event)
