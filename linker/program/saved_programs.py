"""Programs kept across processes as `jax.export` exports, so that a new process skips tracing and lowering.

JAX's persistent compilation cache (`aejax.linker.program.persistent_cache`)
is asked only after the graph was traced (nested Scans included) and lowered
to StableHLO: for aehmc's NUTS most of what a second process pays. With a
`ProgramStore`, a program runs through its export (`ExportingProgram`): the
first process compiles the export's call and saves the export in
``<compiledir>/aejax-programs``; the next one compiles the same call, which
JAX's cache answers. A program is found by a key made of what it computes
(the caller's ``identity``: the digest of its graph,
`aejax.linker.graph.fingerprint`, and of its boundary), how it is called
(what tracing found out, `Discovered`; the call's shapes and static values,
its arguments' dtypes and placement) and everything else it depends on
(versions, aejax's sources, XLA's flags, the devices: `installation`,
`backends`; JAX's and Aesara's settings, the ``AEJAX_*`` variables: `settings`).

An entry is data, never code: `MAGIC`, its signature (an HMAC of the rest
under this user's key, `aejax.linker.program.signing`), a JSON header (the
format, the entry's full key, the checks' exception classes by name, with the
position and text of each check's node in the graph) and the export's bytes;
the hint of what tracing found out (`ProgramStore.discovered`) has no
payload. An entry is checked when it is loaded, before the call it was
loaded for: its signature and key, then JAX deserializes the export, and
traces, lowers (reading its StableHLO) and compiles the call, which the call
then reuses. A missing, truncated, damaged,
foreign, forged, swapped or newer entry, or one that fails any of these
steps, is a miss: the program is traced, compiled and saved anew (an entry
found unusable is replaced however fast the compile), and so is every entry
of a store that cannot be read or written. Several threads that need the
same program at once trace and save it once (`ProgramStore.compiling`).

The caller keeps a graph out of the store when that key cannot cover it (an
Op lowered by code from elsewhere, a value the fingerprint cannot capture);
a program is saved only if JAX can export it (no callback, no custom call
without JAX's stability guarantee), runs on one device, and took at least
JAX's ``jax_persistent_cache_min_compile_time_secs`` to trace and compile.
``AEJAX_PERSISTENT_CACHE=0`` turns the store off with JAX's cache. The hint
keeps the node whose shape each static input decides, so a function whose
programs are loaded gives the ``ShapeInputWarning`` a traced one would; what
JAX or another library warns while tracing is not given again on a load.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import aesara
import jax
import jax.export
import jaxlib
import jaxlib.lapack
import numpy as np
from aesara.graph.basic import Apply
from aesara.graph.fg import FunctionGraph
from aesara.scan.op import Scan

import aejax.adapters
from aejax.linker.checks import CheckedProgram, CheckTable
from aejax.linker.program.persistent_cache import SWITCH, cache_directory, use_persistent_cache
from aejax.linker.program.signing import signature, signed_by, store_key

FORMAT = 6
"""The version of the entries' layout; an entry of another version is a miss."""

MAGIC = b"aejax program store\n"

SUBDIRECTORY = "aejax-programs"

STALE_SECONDS = 3600
"""A temporary file of a save older than this is removed, even if its process still runs."""


@dataclass(frozen=True)
class Discovered:
    """What tracing has found out about a graph so far (its static inputs); replaced, never changed."""

    static_positions: tuple[int, ...] = ()


class SavedAs(NamedTuple):
    """Where a program's programs are saved, and what the process that saved them found out."""

    store: ProgramStore
    found: tuple[Discovered, dict[int, str]] | None
    """`ProgramStore.discovered`, read when the function was made."""


class ExportingProgram:
    """The jitted program ``traced`` called through its `jax.export` export (``exported``, made before it is traced).

    ``jitted`` is what runs: ``jax.jit`` of `program`, the same function in
    the process that exports and in the one that loads the export, so JAX's
    persistent cache compiles it once for both. Arguments the export does not
    fit (another shape, dtype or structure) are exported anew for that trace;
    a program JAX cannot export (a custom call without a stability guarantee)
    runs as ``traced``.
    """

    def __init__(self, traced: Callable[..., Any], donated: tuple[int, ...], exported: Any = None) -> None:
        self._traced = traced
        self.exported = exported
        self.jitted = jax.jit(self.program, donate_argnums=donated)

    def program(self, *args: Any) -> Any:
        """The export's call, traced by ``jitted``."""
        exported = self.exported if fits(self.exported, args) else _exported(self._traced, args)
        if exported is None:
            return self._traced(*args)
        return exported.call(*args)


def fits(exported: Any, args: Sequence[Any]) -> bool:
    """Whether ``exported`` takes ``args``: the same structure, shapes and dtypes."""
    if exported is None or exported.in_tree != jax.tree_util.tree_structure((tuple(args), {})):
        return False
    leaves = jax.tree_util.tree_leaves(args)
    return all(
        a.shape == np.shape(v) and a.dtype == getattr(v, "dtype", None) for a, v in zip(exported.in_avals, leaves)
    )


def _exported(traced: Any, args: Sequence[Any]) -> Any | None:
    """The export of ``traced`` for arguments like ``args``; ``None`` if JAX refuses to export it."""
    specs = jax.tree_util.tree_map(lambda v: jax.ShapeDtypeStruct(v.shape, v.dtype), tuple(args))
    traced.trace(*specs)  # alone: what tracing raises (a static input) reaches the caller; traced already, mostly
    try:
        return jax.export.export(traced)(*specs)  # traced: JAX's trace cache answers
    except Exception:  # noqa: BLE001 - a custom call without a stability guarantee, say
        return None


class _EntryLock:
    """The lock of one store entry, held while a thread traces, compiles and saves its program."""

    __slots__ = ("lock", "__weakref__")

    def __init__(self) -> None:
        self.lock = threading.RLock()


_entry_locks: weakref.WeakValueDictionary[Path, _EntryLock] = weakref.WeakValueDictionary()
_entry_locks_lock = threading.Lock()


class ProgramStore:
    """The saved programs of one graph (its ``identity``), signed with ``key``; see the module docstring."""

    def __init__(self, identity: str, directory: Path, key: bytes, fgraph: FunctionGraph | None = None) -> None:
        self.directory = directory
        self._fgraph = fgraph
        self._key = key
        self._identity = _digest(FORMAT, installation(), identity)
        self._exporting: weakref.WeakValueDictionary[str, ExportingProgram] = weakref.WeakValueDictionary()
        self._unusable: set[str] = set()  # entries found but refused: replaced however fast their compile

    @classmethod
    def opened(cls, fgraph: FunctionGraph, identity_of: Callable[[], str | None]) -> ProgramStore | None:
        """The store of ``fgraph``, whose identity ``identity_of()`` gives; ``None`` without one, for a graph that
        compiles fast (`may_compile_long`), when the store is turned off, or without a key to sign its entries.

        The identity is worked out only for a store that is on: a digest of
        a NUTS graph takes 50 ms.
        """
        if not may_compile_long(fgraph):
            return None
        return cls.of(identity_of, fgraph)

    @classmethod
    def of(cls, identity_of: Callable[[], str | None], fgraph: FunctionGraph | None = None) -> ProgramStore | None:
        """The store of the programs whose identity ``identity_of()`` gives (of ``fgraph``, if any); ``None`` without
        an identity, when the store is turned off, or without a key to sign its entries."""
        if os.environ.get(SWITCH, "1") == "0" or _debugging_floats():
            return None
        key = store_key()
        identity = None if key is None else identity_of()
        if identity is None:
            return None
        use_persistent_cache()  # first: it changes a JAX setting the key holds
        return cls(identity, cache_directory().parent / SUBDIRECTORY, key, fgraph)

    def nodes(self) -> list[Apply]:
        """The graph's nodes in order, as lowered (a lowering may give a Scan a new node): a saved check names its
        node by its position here."""
        return [] if self._fgraph is None else self._fgraph.toposort()

    def discovered(self) -> tuple[Discovered, dict[int, str]] | None:
        """What tracing found out about this graph in the process that saved a program of it.

        With it, the node whose shape each static input decides (for the
        warning when one takes a new value).
        """
        found = self._read(self._hint_key(), ".discovered")
        try:
            header, _ = found
            static_positions = tuple(int(p) for p in header["static_positions"])
            shape_nodes = {int(p): str(node) for p, node in header["shape_nodes"].items()}
            return Discovered(static_positions), shape_nodes
        except (TypeError, ValueError, KeyError, AttributeError):  # none, or not a hint's header
            return None

    def worth_saving(self, entry: str, seconds: float) -> bool:
        """Whether the program of ``entry``, which took ``seconds`` to trace and compile, is saved: it took JAX's
        threshold for its own cache, or replaces an entry found unusable."""
        return seconds >= min_compile_seconds() or entry in self._unusable

    def entry(self, discovered: Discovered, key: Any, args: Sequence[Any]) -> str:
        """The full key of the program for a call with ``args`` (the dynamic ones) under ``key``."""
        kinds = [(type(a).__name__, str(getattr(a, "dtype", "")), _placement(a)) for a in args]
        return _digest(self._identity, backends(), settings(), discovered, key, kinds)

    @contextmanager
    def compiling(self, entry: str) -> Iterator[None]:
        """Hold the lock of ``entry`` in this process, so that one thread at a time loads or makes its program."""
        with _entry_locks_lock:
            held = _entry_locks.setdefault(self._path(entry, ".exported"), _EntryLock())
        with held.lock:
            yield

    def loaded(
        self, entry: str, traced: Callable[..., Any], donated: tuple[int, ...], args: Sequence[Any], table: CheckTable
    ) -> Callable[..., Any] | None:
        """The program saved under ``entry``, run through its export and compiled for ``args``; ``None`` if there is
        none or it cannot be compiled.

        ``traced`` is the jitted function it computes (it runs where the
        export does not fit the arguments); ``donated`` are the arguments
        whose buffers it may reuse, unless it has checks; ``table``, empty,
        numbers ``traced``'s checks, and the saved ones in their order.
        """
        loaded = self._load(entry, args)
        if loaded is None:
            return None
        exported, checks = loaded
        jitted = ExportingProgram(traced, donated if checks is None else (), exported).jitted
        try:  # now, not at the call (which reuses JAX's lowering and compile): lowering reads the StableHLO
            jitted.trace(*args).lower().compile()
        except Exception:  # noqa: BLE001 - StableHLO that JAX cannot read or XLA cannot compile: a miss
            self._unusable.add(entry)
            return None
        if checks is None:
            return jitted
        table.extend(checks)
        return CheckedProgram(jitted, table)

    def exporting(
        self, entry: str, traced: Callable[..., Any], donated: tuple[int, ...], args: Sequence[Any]
    ) -> Callable[..., Any]:
        """The jitted program ``traced`` run through its export for arguments like ``args``, made now for `save`."""
        exporting = ExportingProgram(traced, donated, _exported(traced, args))
        self._exporting[entry] = exporting
        return exporting.jitted

    def save(
        self, entry: str, args: Sequence[Any], discovered: Discovered, checks: CheckTable | None, shape_nodes: dict
    ) -> None:
        """Save the export of the program of ``entry`` (just called with ``args``), and what tracing found out.

        ``checks`` numbers the checks a program with checks names by its
        failure code (its `aejax.linker.checks.CheckTable`): another process
        numbers them anew, each with the position of its node among `nodes`
        and the node's text, so that its error names the node; ``None`` for
        a program without checks.
        """
        exported = getattr(self._exporting.pop(entry, None), "exported", None)
        if not fits(exported, args) or exported.nr_devices != 1:
            return
        try:
            payload = bytes(exported.serialize())
        except Exception:  # noqa: BLE001 - outputs of a structure JAX cannot serialize: compiled again next time
            return
        self._write(entry, ".exported", {"checks": None if checks is None else self._saved_checks(checks)}, payload)
        hint = {"static_positions": list(discovered.static_positions), "shape_nodes": shape_nodes}
        self._write(self._hint_key(), ".discovered", hint, b"")
        self._unusable.discard(entry)

    def _saved_checks(self, checks: CheckTable) -> list[list[Any]]:
        """Each check of ``checks``: its exception class by name, its message, its node's position and text."""
        positions = {node: position for position, node in enumerate(self.nodes())}
        saved = []
        for (exc_type, message), node in zip(checks.entries(), checks.nodes()):
            position = positions.get(node)
            text = None if position is None else str(node)
            saved.append([f"{exc_type.__module__}:{exc_type.__qualname__}", message, position, text])
        return saved

    @staticmethod
    def _check_node(nodes: Sequence[Apply], position: Any, text: Any) -> Apply | None:
        """The node a saved check names by its ``position`` among ``nodes``, if the node there has the saved ``text``."""
        if not isinstance(position, int) or not 0 <= position < len(nodes):
            return None
        return nodes[position] if str(nodes[position]) == text else None

    def _load(self, entry: str, args: Sequence[Any]) -> tuple[Any, list[tuple[type, str, Apply | None]] | None] | None:
        """The export saved under ``entry`` and its checks, or ``None``: missing, damaged, not for ``args`` on one
        device, or its checks unknown here."""
        found = self._read(entry, ".exported")
        if found is None:
            return None
        header, payload = found
        checks = header.get("checks")
        try:
            if checks is not None:
                nodes = self.nodes()
                checks = [
                    (_exception_type(name), str(message), self._check_node(nodes, position, text))
                    for name, message, position, text in checks
                ]
            exported = jax.export.deserialize(bytearray(payload))
        except Exception:  # noqa: BLE001 - an unknown exception type, or bytes JAX cannot read: a miss
            self._unusable.add(entry)
            return None
        if not fits(exported, args) or exported.nr_devices != 1:
            self._unusable.add(entry)
            return None
        if b"lapack_" in payload:
            _set_up_lapack()
        return exported, checks

    def _hint_key(self) -> str:
        return _digest(self._identity, "discovered", settings())

    def _path(self, key: str, suffix: str) -> Path:
        return self.directory / f"{self._identity[:32]}-{key[:43]}{suffix}"

    def _read(self, key: str, suffix: str) -> tuple[dict[str, Any], bytes] | None:
        """The header and payload of the entry of ``key``, if it is signed with this user's key and carries ``key``."""
        try:
            data = self._path(key, suffix).read_bytes()
        except OSError:
            return None
        claimed, _, signed = data.removeprefix(MAGIC).partition(b"\n")
        if not (data.startswith(MAGIC) and signed_by(self._key, signed, claimed)):
            self._unusable.add(key)
            return None
        line, _, payload = signed.partition(b"\n")
        try:
            header = json.loads(line)
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("key") != key:
            self._unusable.add(key)
            return None
        return header, payload

    def _write(self, key: str, suffix: str, header: dict[str, Any], payload: bytes) -> None:
        """Write a signed entry so that readers see the old file or the whole new one; a store that refuses it is left
        as it is."""
        path = self._path(key, suffix)
        signed = json.dumps({"format": FORMAT, "key": key, **header}).encode() + b"\n" + payload
        temporary = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            _remove_stale(self.directory)
            temporary.write_bytes(MAGIC + signature(self._key, signed) + b"\n" + signed)
            os.replace(temporary, path)
        except OSError:
            with suppress(OSError):
                temporary.unlink(missing_ok=True)


def _remove_stale(directory: Path) -> None:
    """Remove the temporary files of saves whose process is gone (killed while saving), or that are an hour old."""
    for path in directory.glob("*.tmp"):
        with suppress(OSError, ValueError, IndexError):  # another user's process, a name not ours, a refusing store
            pid = int(path.name.rsplit(".", 2)[-2].split("-")[0])
            if time.time() - path.stat().st_mtime > STALE_SECONDS or not _running(pid):
                path.unlink()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _exception_type(name: str) -> type[BaseException]:
    """The exception class ``module:qualname`` names, from a module already imported (a saved entry imports nothing)."""
    module, _, qualname = str(name).partition(":")
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        raise LookupError(f"no exception class {name!r} in the modules imported")
    return found


LARGE_GRAPH = 200
"""Nodes from which a graph without a loop may take JAX's threshold to trace and compile: on a two-core CPU a chain
of small matrix products and ``tanh`` of 300 nodes took 0.84 s, of 900 nodes 2.9 s."""


def may_compile_long(fgraph: FunctionGraph) -> bool:
    """Whether tracing and compiling ``fgraph`` may take `min_compile_seconds`: it holds a Scan or `LARGE_GRAPH` nodes.

    Only such a graph is run through its export and saved: exporting costs
    a program's first call 30 to 60 ms, which a small program would pay for
    nothing (P1's first call: 0.05 s, 0.08 to 0.11 s exported).
    """
    if min_compile_seconds() <= 0:
        return True
    nodes = fgraph.apply_nodes
    return len(nodes) >= LARGE_GRAPH or any(isinstance(node.op, Scan) for node in nodes)


def min_compile_seconds() -> float:
    """JAX's ``jax_persistent_cache_min_compile_time_secs``."""
    return float(jax.config.jax_persistent_cache_min_compile_time_secs)


def _placement(value: Any) -> Any:
    sharding = getattr(value, "sharding", None)
    if sharding is None:
        return "host"
    return (repr(sharding), sorted(d.id for d in sharding.device_set))


@cache
def _set_up_lapack() -> None:
    """Set up jaxlib's LAPACK kernels, as JAX's lowering of a LAPACK call does first (jaxlib 0.7.1).

    A process that compiles a loaded export lowers no LAPACK call: without
    this, a program JAX's cache answers runs its first LAPACK call through
    an unset pointer (a segmentation fault).
    """
    jaxlib.lapack.prepare_lapack_call("potrf_ffi", np.float64)


def _debugging_floats() -> bool:
    """Whether JAX re-runs programs that make a NaN or an infinity, to name the operation (not done for a loaded one)."""
    return bool(jax.config.jax_debug_nans or jax.config.jax_debug_infs)


def _digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


@cache
def installation() -> str:
    """The digest of what cannot change while a process runs: versions, aejax's sources, XLA's flags."""
    versions = (sys.version, np.__version__, aesara.__version__, jax.__version__, jaxlib.__version__)
    xla_flags = [os.environ.get(name) for name in ("XLA_FLAGS", "LIBTPU_INIT_ARGS")]
    xla_flags += [arg for arg in sys.argv if arg.startswith("--xla")]
    return _digest(versions, xla_flags, _source_digest())


@cache
def backends() -> str:
    """The digest of the devices and of their backends' versions (once the first program is compiled)."""
    devices = [(d.platform, d.device_kind, d.id, d.process_index) for d in jax.devices()]
    clients = {(d.client.platform, d.client.platform_version, d.client.runtime_type) for d in jax.devices()}
    return _digest(devices, sorted(clients))


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
