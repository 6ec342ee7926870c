"""Compiled programs kept across processes, so that a new process skips tracing and lowering.

JAX's persistent compilation cache (`aejax.linker.program.persistent_cache`)
saves XLA's work, but it is asked only after the graph was traced (every
node lowered, nested Scans included) and the trace lowered to StableHLO: for
aehmc's NUTS that is most of what a second process still pays. A
`ProgramStore` keeps the compiled executable itself
(``jax.experimental.serialize_executable``), in ``<compiledir>/aejax-programs``
beside JAX's cache, and finds it again by a key made of

- what the program computes: the digest of its graph
  (`aejax.linker.graph.fingerprint`) and of its boundary (the caller's
  ``identity``: codecs, values left on the device, donated inputs);
- how it is called: what tracing found out (`Discovered`: static inputs,
  checks), the shapes and static values of the call, the dtypes and
  placement of its arguments;
- everything else the program depends on: the versions of Python, numpy,
  Aesara, JAX and jaxlib, a digest of aejax's own source files and the
  devices (`installation`, once per process), and JAX's and Aesara's
  settings and the ``AEJAX_*`` environment (`settings`, for each program).

The caller keeps a graph out of the store when that key cannot cover it (an
Op lowered by code from elsewhere, a value the fingerprint cannot capture);
a program is saved only if its trace staged no host call (a Python callback
cannot be saved), only if it holds no custom call but jaxlib's LAPACK
kernels (set up before a load; another may need a set-up that only its
lowering does), only if XLA compiled it in this process (XLA:CPU serializes
an executable that JAX's persistent cache handed back without its kernels,
so a process loading it would fail to run it), and only if tracing and
compiling it took at least JAX's
``jax_persistent_cache_min_compile_time_secs``. ``AEJAX_PERSISTENT_CACHE=0``
turns the store off with JAX's cache. Warnings given while tracing are not
given again when a program is loaded.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import platform
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import aesara
import jax
import jaxlib
import jaxlib.lapack
import numpy as np
from jax.experimental.serialize_executable import deserialize_and_load, serialize

import aejax.adapters
from aejax.linker.program.persistent_cache import (
    SWITCH,
    cache_directory,
    recording_cache_answers,
    use_persistent_cache,
)

FORMAT = 2
"""The version of the saved entries' layout; entries of another version are never read."""

SUBDIRECTORY = "aejax-programs"

LAPACK_PREFIX = "lapack_"
"""The custom calls of JAX's LAPACK kernels, the only custom calls a saved program may hold (`_set_up_lapack`)."""


@dataclass(frozen=True)
class Discovered:
    """What tracing has found out about a graph so far; replaced, never changed."""

    static_positions: tuple[int, ...] = ()
    checked: bool = False


class SavedAs(NamedTuple):
    """Where a program's programs are saved, and what the process that saved them found out."""

    store: ProgramStore
    found: tuple[Discovered, dict[int, str]] | None
    """`ProgramStore.discovered`, read when the function was made."""
    storable: Callable[[], bool] = lambda: True
    """Whether the program just traced can be replayed from a save (its outputs have static lengths)."""


class LoadedProgram:
    """An executable loaded from the store, called in place of the jitted program it was compiled from.

    Arguments it was not compiled for (another device or sharding) go to
    ``traced``, the jitted program, which traces and compiles for them.
    """

    __slots__ = ("_compiled", "_traced")

    def __init__(self, compiled: Callable[..., Any], traced: Callable[..., Any]) -> None:
        self._compiled = compiled
        self._traced = traced

    def __call__(self, *args: Any) -> Any:
        try:
            return self._compiled(*args)
        except (TypeError, ValueError):  # JAX checks the arguments' types and placement before it runs anything
            return self._traced(*args)


class ProgramStore:
    """The saved programs of one graph (its ``identity``); see the module docstring."""

    def __init__(self, identity: str, directory: Path) -> None:
        self.directory = directory
        self._identity = hashlib.sha256(f"{FORMAT}\n{installation()}\n{identity}".encode()).hexdigest()

    @classmethod
    def opened(cls, identity: str | None) -> ProgramStore | None:
        """The store of the graph ``identity`` names; ``None`` without one or when the store is turned off."""
        if identity is None or os.environ.get(SWITCH, "1") == "0" or _debugging_floats():
            return None
        use_persistent_cache()  # first: it changes a JAX setting the key holds
        return cls(identity, cache_directory().parent / SUBDIRECTORY)

    def discovered(self) -> tuple[Discovered, dict[int, str]] | None:
        """What tracing found out about this graph in the process that saved a program of it.

        With it, the node whose shape each static input decides (for the
        warning when one takes a new value).
        """
        found = self._read(self._hint_path())
        if found is None:
            return None
        static_positions, checked, shape_nodes = found
        return Discovered(static_positions, checked), shape_nodes

    @staticmethod
    def worth_saving(seconds: float) -> bool:
        """Whether a program that took ``seconds`` to trace and compile is saved (JAX's threshold for its own cache)."""
        return seconds >= min_compile_seconds()

    def entry(self, discovered: Discovered, key: Any, args: Sequence[Any]) -> str:
        """The name of the program for a call with ``args`` (the dynamic ones) under ``key``."""
        kinds = [(type(a).__name__, str(getattr(a, "dtype", "")), _placement(a)) for a in args]
        return _digest(self._identity, backends(), settings(), discovered, key, kinds)

    def load(self, entry: str, traced: Any) -> Any | None:
        """The saved program ``entry``, standing in for ``traced`` (a jitted or checked program), or ``None``."""
        path = self._path(entry)
        saved = self._read(path)
        if saved is None:
            return None
        devices = {d.id: d for d in jax.devices()}
        try:
            if hashlib.sha256(saved["payload"]).hexdigest() != saved["digest"]:
                raise ValueError("the payload is not the one saved")
            if saved["lapack"]:
                _set_up_lapack()
            device = [devices[saved["device"]]]
            compiled = deserialize_and_load(
                saved["payload"], saved["in_tree"], saved["out_tree"], execution_devices=device
            )
        except Exception:  # noqa: BLE001 - damaged, or for another jaxlib or devices: a miss, and never read again
            path.unlink(missing_ok=True)
            return None
        if saved["checks"] is None:
            return LoadedProgram(compiled, traced)
        return LoadedProgram(traced.running(compiled, saved["checks"]), traced)

    def save(
        self,
        entry: str,
        traced: Any,
        args: Sequence[Any],
        discovered: Discovered,
        checks: list[tuple[type, str]],
        shape_nodes: dict[int, str],
    ) -> None:
        """Save the program ``traced`` has just compiled for ``args``, and what tracing found out.

        ``checks`` numbers the checks a checked program's failure code names
        (`aejax.linker.checks.CHECKS`): another process numbers them anew.
        """
        jitted = traced.jitted if discovered.checked else traced
        try:
            with recording_cache_answers() as answered:
                lowered = jitted.lower(*args)  # traced and compiled already: found in JAX's caches
                compiled = lowered.compile()
            device = _single_device(compiled)
            if device is None or answered:  # answered: deserialized, XLA:CPU would serialize it without its kernels
                return
            custom_calls = set(re.findall(r"custom_call @([\w.$-]+)", lowered.as_text()))
            if any(not call.startswith(LAPACK_PREFIX) for call in custom_calls):
                return
            payload, in_tree, out_tree = serialize(compiled)
            digest = hashlib.sha256(payload).hexdigest()
            saved = {"payload": payload, "digest": digest, "in_tree": in_tree, "out_tree": out_tree, "checks": None}
            saved["device"], saved["lapack"] = device, bool(custom_calls)
            if discovered.checked:
                saved["checks"] = checks
            self._write(self._path(entry), saved)
            hint = (discovered.static_positions, discovered.checked, shape_nodes)
            self._write(self._hint_path(), hint)
        except Exception:  # noqa: BLE001 - a program that cannot be saved is only compiled again next time
            return

    def _hint_path(self) -> Path:
        return self._path(f"discovered-{_digest(settings())[:32]}")

    def _path(self, name: str) -> Path:
        return self.directory / f"{self._identity[:32]}-{name[:43]}.pickle"

    @staticmethod
    def _read(path: Path) -> Any | None:
        try:
            with open(path, "rb") as file:
                return pickle.load(file)
        except Exception:  # noqa: BLE001 - missing, or written by another version
            return None

    def _write(self, path: Path, value: Any) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(descriptor, "wb") as file:
                pickle.dump(value, file)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)  # readers see the old file or the whole new one
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def min_compile_seconds() -> float:
    """JAX's ``jax_persistent_cache_min_compile_time_secs``."""
    return float(jax.config.jax_persistent_cache_min_compile_time_secs)


def _placement(value: Any) -> Any:
    sharding = getattr(value, "sharding", None)
    if sharding is None:
        return "host"
    return (repr(sharding), sorted(d.id for d in sharding.device_set))


def _single_device(compiled: Any) -> int | None:
    """The id of the one device ``compiled`` runs on; ``None`` for a program over several (not saved)."""
    shardings = jax.tree_util.tree_leaves((compiled.input_shardings, compiled.output_shardings))
    devices = {d.id for sharding in shardings for d in sharding.device_set}
    return devices.pop() if len(devices) == 1 else None


@cache
def _set_up_lapack() -> None:
    """Set up jaxlib's LAPACK kernels, as JAX's lowering of a LAPACK call does first (jaxlib 0.7.1).

    A process that loads a program lowers none: without this, the program's
    first LAPACK call runs through an unset pointer (a segmentation fault).
    """
    jaxlib.lapack.prepare_lapack_call("potrf_ffi", np.float64)


def _debugging_floats() -> bool:
    """Whether JAX re-runs programs that make a NaN or an infinity, to name the operation (not done for a loaded one)."""
    return bool(jax.config.jax_debug_nans or jax.config.jax_debug_infs)


def _digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


@cache
def installation() -> str:
    """The digest of what cannot change while a process runs: versions, aejax's sources, XLA's flags, the CPU."""
    versions = (sys.version, np.__version__, aesara.__version__, jax.__version__, jaxlib.__version__)
    xla_flags = [os.environ.get(name) for name in ("XLA_FLAGS", "LIBTPU_INIT_ARGS")]
    xla_flags += [arg for arg in sys.argv if arg.startswith("--xla")]
    return _digest(versions, xla_flags, _cpu(), _source_digest())


@cache
def backends() -> str:
    """The digest of the devices and of their backends' versions (once the first program is compiled)."""
    devices = [(d.platform, d.device_kind, d.id, d.process_index) for d in jax.devices()]
    clients = {(d.client.platform, d.client.platform_version, d.client.runtime_type) for d in jax.devices()}
    return _digest(devices, sorted(clients))


def _cpu() -> list[str]:
    """The CPU's model and features, which XLA:CPU compiles for (Linux's ``/proc/cpuinfo``, else the processor's name)."""
    try:
        with open("/proc/cpuinfo") as file:
            lines = file.read().split("\n\n")[0].splitlines()
    except OSError:
        return [platform.processor()]
    return [line for line in lines if line.startswith(("model name", "flags", "vendor_id"))]


def settings() -> str:
    """The digest of what may change while a process runs: JAX's and Aesara's settings, the ``AEJAX_*`` variables.

    Worked out for each new program (about a millisecond), so a setting
    changed between two compiles (``jax_enable_x64``, say) keys the second.
    """
    jax_settings = sorted((name, repr(value)) for name, value in jax.config.values.items())
    aejax_env = sorted((k, v) for k, v in os.environ.items() if k.startswith("AEJAX_"))
    return _digest(jax_settings, _aesara_settings(), aejax_env)


TRANSIENT_AESARA_SETTINGS = frozenset({"traceback__limit", "cxx"})
"""Aesara settings changed for the time of a compile (by Aesara, by aejax's function maker): left out of the key."""


def _aesara_settings() -> list[tuple[str, str]]:
    """Every Aesara setting but the transient ones, with its value, as ``str(aesara.config)`` shows them."""
    found, name = [], None
    for line in str(aesara.config).splitlines():
        if line and not line[0].isspace():
            name = line.split(" ", 1)[0]
        elif line.strip().startswith("Value:") and name not in TRANSIENT_AESARA_SETTINGS:
            found.append((str(name), line.strip()))
    return found


def _source_digest() -> str:
    """A digest of aejax's source files: a change to aejax's code is a change of every key."""
    digest = hashlib.sha256()
    for root in (Path(aejax.adapters.__file__).parent, Path(__file__).parents[1]):
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()
