"""JAX's persistent compilation cache, on by default, in Aesara's compile directory.

Compiling a sampler's program (NUTS: seconds of XLA) is paid again by every
new process. Before aejax compiles its first program it points JAX's
persistent compilation cache (``jax_compilation_cache_dir``) at
``<aesara.config.compiledir>/aejax-xla``, so ``AESARA_FLAGS=base_compiledir=...``
moves it and removing Aesara's compile directory removes it. It is left as it
is when the user chose a cache directory for JAX, or set
``AEJAX_PERSISTENT_CACHE=0`` in the environment. Where aejax chose the
directory, it also lowers JAX's ``jax_persistent_cache_min_compile_time_secs``
(the shortest compile JAX keeps; 1 s by default) to `MIN_COMPILE_SECONDS`,
unless the user changed it. Both settings are JAX's and process-wide: other
JAX programs of the process are cached there too. The exports of whole
programs, which spare a new process the tracing as well, are kept beside it
(`aejax.linker.program.saved_programs`); their compiles are JAX's cache's.
"""

from __future__ import annotations

import os
import threading
from contextlib import suppress
from pathlib import Path

import aesara
import jax

SWITCH = "AEJAX_PERSISTENT_CACHE"
"""The environment variable that turns the cache off when set to ``0``."""

SUBDIRECTORY = "aejax-xla"

NOTE = "README"
"""A file that keeps the cache folder from being empty (`_made_with_note`)."""

MIN_COMPILE_SECONDS = 0.2
"""The shortest compile kept in aejax's cache directory. With JAX's default (1 s) a NUTS chain whose XLA compile
took 0.9 s on a two-core CPU was compiled again by every new process (0.6 of the first process's time, not 0.2)."""

JAX_MIN_COMPILE_SECONDS = 1.0
"""JAX's default ``jax_persistent_cache_min_compile_time_secs``: any other value is the user's, and is kept."""

_lock = threading.Lock()
_decided = False


def cache_directory() -> Path:
    """Where aejax keeps JAX's persistent compilation cache: a folder of Aesara's compile directory."""
    return Path(aesara.config.compiledir) / SUBDIRECTORY


def use_persistent_cache() -> None:
    """Point JAX's persistent compilation cache at `cache_directory`, keeping compiles of `MIN_COMPILE_SECONDS`,
    once per process, unless told otherwise."""
    global _decided
    if _decided:
        return
    with _lock:
        if _decided:
            return
        _decided = True
        if os.environ.get(SWITCH, "1") == "0" or jax.config.jax_compilation_cache_dir is not None:
            return
        _made_with_note(cache_directory())
        jax.config.update("jax_compilation_cache_dir", str(cache_directory()))
        if jax.config.jax_persistent_cache_min_compile_time_secs == JAX_MIN_COMPILE_SECONDS:
            jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)


def _made_with_note(directory: Path) -> None:
    """Make ``directory`` with `NOTE` in it, so that it is never empty.

    Aesara's module cache removes the empty folders of its compile directory
    when it looks through it; JAX makes its cache folder empty, and once it is
    gone JAX warns on every entry it fails to write. A compile directory that
    cannot be written is left as it is: JAX's cache then only misses.
    """
    with suppress(OSError):
        directory.mkdir(parents=True, exist_ok=True)
        note = directory / NOTE
        if not note.exists():
            note.write_text("JAX's persistent compilation cache, kept here by aejax; delete the folder to clear it.\n")
