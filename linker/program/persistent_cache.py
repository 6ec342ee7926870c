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

In the folder it chose, aejax keeps a file, `MARKER`, made (with the
folder, private to the user) before JAX's first write: Aesara removes the
empty folders of its compile directory when it loads its C modules (a Scan
compiles one), which would leave JAX nowhere to write. JAX 0.7.1 keeps an
entry it cannot read (one cut short by a kill or a full disk): each process
warns and compiles again, and JAX never writes over it. So each process,
when it first points JAX at the folder, removes the entries written since
the last such check that do not decompress whole; the marker's time says up
to when entries were checked, and the last `SETTLE_SECONDS` are left for a
later process (a write may be going on). JAX compresses with zlib unless
``zstandard`` is installed (or Python is 3.14): zstd entries are not checked.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
import zlib
from contextlib import suppress
from functools import cache
from pathlib import Path

import aesara
import jax

SWITCH = "AEJAX_PERSISTENT_CACHE"
"""The environment variable that turns the cache off when set to ``0``."""

SUBDIRECTORY = "aejax-xla"

MIN_COMPILE_SECONDS = 0.2
"""The shortest compile kept in aejax's cache directory. With JAX's default (1 s) a NUTS chain whose XLA compile
took 0.9 s on a two-core CPU was compiled again by every new process (0.6 of the first process's time, not 0.2)."""

JAX_MIN_COMPILE_SECONDS = 1.0
"""JAX's default ``jax_persistent_cache_min_compile_time_secs``: any other value is the user's, and is kept."""

MARKER = "aejax-checked"
"""The file that keeps aejax's folder of JAX's cache from being empty; its time: entries up to then were checked."""

SETTLE_SECONDS = 60.0
"""Entries younger than this may still be being written: a later process checks them."""

_CACHE_SUFFIX = "-cache"
_ACCESS_TIME_SUFFIX = "-atime"  # JAX's record of an entry's last use, when its cache has a size limit

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
        _kept_and_checked(cache_directory())
        jax.config.update("jax_compilation_cache_dir", str(cache_directory()))
        if jax.config.jax_persistent_cache_min_compile_time_secs == JAX_MIN_COMPILE_SECONDS:
            jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)


def _kept_and_checked(directory: Path) -> None:
    """Make ``directory`` (private) with its `MARKER`, and remove its entries written since the last check that JAX
    cannot read; a folder that refuses is left as it is (JAX warns when it cannot write)."""
    marker = directory / MARKER
    with suppress(OSError):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        checked_until = marker.stat().st_mtime if marker.exists() else 0.0
        now_settled = time.time() - SETTLE_SECONDS
        for entry in directory.glob(f"*{_CACHE_SUFFIX}"):
            _remove_if_cut_short(entry, checked_until, now_settled)
        marker.touch()
        os.utime(marker, (now_settled, now_settled))


def _remove_if_cut_short(entry: Path, since: float, until: float) -> None:
    """Remove JAX's ``entry``, if written between ``since`` and ``until``, when it does not decompress whole."""
    with suppress(OSError):  # removed meanwhile by another process, or a folder that refuses
        if since <= entry.stat().st_mtime < until and not _decompresses(entry.read_bytes()):
            entry.with_name(entry.name.removesuffix(_CACHE_SUFFIX) + _ACCESS_TIME_SUFFIX).unlink(missing_ok=True)
            entry.unlink()


def _decompresses(data: bytes) -> bool:
    """Whether ``data`` is a whole zlib stream, where JAX compresses with zlib (elsewhere: not known, taken as whole)."""
    if not _jax_compresses_with_zlib():
        return True
    decompressor = zlib.decompressobj()
    try:
        decompressor.decompress(data)
    except zlib.error:
        return False
    return decompressor.eof


@cache
def _jax_compresses_with_zlib() -> bool:
    """Whether JAX 0.7.1 compresses its entries with zlib: with neither Python 3.14's ``compression`` nor ``zstandard``."""
    return all(importlib.util.find_spec(name) is None for name in ("compression", "zstandard"))
