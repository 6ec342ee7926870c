"""Faults of the program store and of JAX's cache folder cost a compile, never a wrong value, an exception, or a
compile in every later process.

Each process test runs fresh processes with their own compile directory (and the test session's store key).
"""

import dataclasses
import hashlib
import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import warnings
import zlib
from pathlib import Path

import aesara
import aesara.tensor as at
import jax.export
import numpy as np
import pytest

import aejax.linker  # noqa: F401  (registers the modes)
from aejax.linker.program import saved_programs, signing
from aejax.linker.program.persistent_cache import MARKER
from aejax.linker.program.persistent_cache import SUBDIRECTORY as XLA_SUBDIRECTORY
from aejax.linker.program.saved_programs import SUBDIRECTORY
from tests.counting import TRACES
from tests.program.entries import rewritten, signed_parts, with_key

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys, warnings
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    import aesara, aesara.tensor as at, jax, numpy as np
    import aejax.linker
    from tests.counting import TRACES

    options = json.loads(sys.argv[1])
    hits = []
    jax.monitoring.register_event_listener(
        lambda event, **kw: hits.append(event) if event.endswith("compilation_cache/cache_hits") else None
    )
    warnings.simplefilter("always")
    found = {"scales": {}}
    with warnings.catch_warnings(record=True) as caught:
        if options.get("quick_first"):  # a compile JAX does not keep: its cache folder is made and left empty
            y = at.dscalar("y")
            aesara.function([y], y + 1, mode="AEJAX")(1.0)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # as the next processes set it
        for scale in options["scales"]:
            x = at.dvector("x")
            hs, _ = aesara.scan(lambda h: at.tanh(h * scale) + h, outputs_info=[x], n_steps=5)
            start = np.linspace(0.1, 1.0, 4)
            del hits[:]
            with TRACES.counting() as traced:
                value = float(aesara.function([x], hs[-1].sum(), mode="AEJAX")(start))  # a Scan: Aesara's cleanup
            reference = float(aesara.function([x], hs[-1].sum(), mode="FAST_COMPILE")(start))
            found["scales"][str(scale)] = {"value": value, "reference": reference, "traced": len(traced), "hits": len(hits)}
    found["warnings"] = [str(w.message) for w in caught if "compilation cache" in str(w.message)]
    print(json.dumps(found))
    """
)


def run(compiledir, scales, quick_first=False, threshold="0"):
    """A fresh process compiling and calling the Scan graph of each of ``scales``; ``threshold`` is JAX's minimum
    compile time to keep (``None``: aejax's)."""
    env = {
        **{k: v for k, v in os.environ.items() if k != "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"},
        "AESARA_FLAGS": f"base_compiledir={compiledir}",
        "PYTHONPATH": str(ROOT),
        **({} if threshold is None else {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": threshold}),
    }
    options = {"scales": scales, "quick_first": quick_first}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(options)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    for scale, got in found["scales"].items():
        np.testing.assert_allclose(got["value"], got["reference"], rtol=1e-7, err_msg=scale)
    return found


def entries(compiledir):
    """The store's entries, in the order they were saved."""
    return sorted(compiledir.rglob(f"{SUBDIRECTORY}/*.exported"), key=lambda p: p.stat().st_mtime_ns)


def test_damaged_forged_and_cut_short_entries_are_misses_replaced_at_once_after_aesaras_cleanup(tmp_path):
    """One process saves three graphs' programs after a quick compile, a Scan compile in between (Aesara then
    removes the empty folders of its compile directory); then one graph's export is damaged but signed with the
    key, another's is forged (the third's export with a plain digest), and the forged one's XLA entry is cut short.
    The next process compiles the faulty ones anew and hits JAX's cache for the third; the one after loads all."""
    scales = [0.5, 0.25, 1.5]
    first = run(tmp_path, scales, quick_first=True, threshold=None)
    assert first["warnings"] == []  # JAX could write
    assert all(got["traced"] > 0 for got in first["scales"].values())
    damaged, foreign, forged = entries(tmp_path)  # saved in the order compiled
    _, line, payload = signed_parts(damaged)
    exported = jax.export.deserialize(bytearray(payload))
    hlo = bytes(exported.mlir_module_serialized)
    cut = dataclasses.replace(exported, mlir_module_serialized=hlo[: len(hlo) // 2])  # JAX deserializes it
    rewritten(damaged, line, bytes(cut.serialize()), with_key)
    _, line, _ = signed_parts(forged)
    rewritten(forged, line, signed_parts(foreign)[2], lambda signed: hashlib.sha256(signed).hexdigest().encode())
    folder = next(tmp_path.rglob(XLA_SUBDIRECTORY))
    xla_entry = max(folder.glob("jit_program-*-cache"), key=lambda p: p.stat().st_mtime_ns)  # the forged graph's
    whole = xla_entry.read_bytes()
    xla_entry.write_bytes(whole[: len(whole) // 2])  # a write cut short by a kill or a full disk
    checked = (folder / MARKER).stat().st_mtime  # cut short just after the last check
    os.utime(xla_entry, (checked, checked))
    second = run(tmp_path, scales)
    assert second["warnings"] == []  # JAX never met the entry cut short: removed, compiled and written anew
    assert zlib.decompress(xla_entry.read_bytes())
    third = run(tmp_path, scales)
    for scale in map(str, scales):
        assert second["scales"][scale]["value"] == first["scales"][scale]["value"], scale
        assert (second["scales"][scale]["traced"] > 0) == (scale != "0.25"), scale  # the faulty ones compiled anew
        assert third["scales"][scale]["traced"] == 0 and third["scales"][scale]["hits"] > 0, scale  # saved anew
    assert second["scales"]["0.25"]["hits"] > 0  # neither traced nor compiled
    assert first["scales"]["0.25"]["value"] != first["scales"]["1.5"]["value"]


@pytest.fixture
def store_here(tmp_path, monkeypatch):
    """Save this process's programs under ``tmp_path``, however quickly they compile."""
    monkeypatch.setattr(saved_programs, "cache_directory", lambda: tmp_path / "aejax-xla")
    monkeypatch.setattr(saved_programs, "min_compile_seconds", lambda: 0.0)
    return tmp_path


def _scan_graph():
    x = at.dvector("x")
    hs, _ = aesara.scan(lambda h: at.tanh(h * 0.75) + h, outputs_info=[x], n_steps=4)
    return [x], hs[-1].sum()


@pytest.mark.parametrize("how", ["one function", "a function each"])
def test_eight_threads_on_an_empty_store_trace_and_save_a_program_once(store_here, monkeypatch, how):
    saves = []
    save = saved_programs.ProgramStore.save
    monkeypatch.setattr(saved_programs.ProgramStore, "save", lambda store, *a: saves.append(save(store, *a)))
    inputs, output = _scan_graph()
    if how == "one function":
        functions = [aesara.function(inputs, output, mode="AEJAX")] * 8
    else:
        functions = [aesara.function(*_scan_graph(), mode="AEJAX") for _ in range(8)]
    reference = aesara.function(inputs, output, mode="FAST_COMPILE")
    start = np.linspace(0.1, 1.0, 4)
    ready = threading.Barrier(8)

    def first_call(f):
        ready.wait()
        return float(f(start))

    with TRACES.counting() as traced:
        threads = [_Returning(first_call, f) for f in functions]
        values = [thread.result() for thread in threads]
    np.testing.assert_allclose(values, [float(reference(start))] * 8, rtol=1e-12)
    assert traced.count("coded") == 1  # the graph's function (`aejax.linker.checks.coded_program`)
    assert len(saves) == 1


class _Returning(threading.Thread):
    """A started thread running ``target(arg)``, whose result it returns when it ends."""

    def __init__(self, target, arg):
        super().__init__()
        self._call = lambda: target(arg)
        self.start()

    def run(self):
        self._value = self._call()

    def result(self):
        self.join()
        return self._value


def test_the_key_is_made_private_outside_the_compile_directory_and_a_shared_one_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv(signing.KEY_DIRECTORY, str(tmp_path / "keys"))
    key = signing.store_key()
    path = tmp_path / "keys" / signing.KEY_FILE
    assert len(key) == signing.KEY_BYTES and path.read_bytes() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not path.is_relative_to(Path(aesara.config.compiledir))
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o700)
    (shared / signing.KEY_FILE).write_bytes(key)
    (shared / signing.KEY_FILE).chmod(0o644)
    monkeypatch.setenv(signing.KEY_DIRECTORY, str(shared))
    inputs, output = _scan_graph()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = aesara.function(inputs, output, mode="AEJAX")
    assert [w.category for w in caught] == [signing.StoreKeyWarning]
    assert "-rw-r--r--" in str(caught[0].message) and "saves and loads no programs" in str(caught[0].message)
    assert f.vm.jit_fn.saved is None
    expected = aesara.function(inputs, output, mode="FAST_COMPILE")(np.ones(4))
    np.testing.assert_allclose(f(np.ones(4)), expected, rtol=1e-12)
