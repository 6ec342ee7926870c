"""A program traced and compiled in one process is loaded, not traced again, by the next process that compiles the same graph.

Its entry is an export (StableHLO) with its key: a damaged, swapped or foreign entry, or a store that
cannot be written, costs a compile, never a wrong value or an exception.
"""

import errno
import gc
import json
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import aesara
import aesara.tensor as at
import jax
import jax.export
import numpy as np
import pytest
from aesara.graph.fg import FunctionGraph
from aesara.graph.op import Op
from aesara.tensor.random.utils import RandomStream

import aejax.linker  # noqa: F401  (registers the modes)
from aejax.linker import ShapeInputWarning
from aejax.linker.graph.fingerprint import NotFingerprintable, graph_fingerprint
from aejax.linker.program.saved_programs import FORMAT, LARGE_GRAPH, SUBDIRECTORY, ExportingProgram
from tests.processes import reported_by_new_process, store_entries
from tests.program.entries import rewritten, signed_parts, with_key

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent(
    """
    import json, sys
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    import aesara, aesara.tensor as at, jax, numpy as np
    from aesara.raise_op import Assert
    from aesara.tensor.random.utils import RandomStream
    import aejax.linker

    options = json.loads(sys.argv[1])
    if "x64" in options:
        jax.config.update("jax_enable_x64", options["x64"])
    if options.get("shift_checks"):  # another check numbered first in this process
        y = at.dscalar("y")
        aesara.function([y], Assert("y is small")(y, y < 10), mode="AEJAX")(1.0)
    from tests.counting import Halve  # its lowering is registered by code aejax does not know

    halve = Halve() if options.get("own_lowering") else lambda h: h * 0.5
    x = at.dvector("x")
    srng = RandomStream(seed=options["seed"])
    hs, updates = aesara.scan(lambda h: at.tanh(halve(h)) + srng.normal(0, 1, size=h.shape), outputs_info=[x], n_steps=5)
    total = Assert("x must be positive")(hs[-1].sum() + options["constant"], at.all(x > 0))
    if options.get("cholesky"):  # a LAPACK kernel in the program
        total = total + aesara.tensor.slinalg.cholesky(at.outer(x, x) + at.eye(x.shape[0])).sum()
    f = aesara.function([x], total, updates=updates, mode="AEJAX")

    traces = []  # of the graph: a loaded program traces only its export's call, `program`
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, duration, fun_name="", **kw: traces.append(fun_name)
        if event.endswith("jaxpr_trace_duration") and fun_name != "program" else None
    )
    from aejax.linker.trace.lowering import DeferredLowering
    deferred = any(type(fn) is DeferredLowering for _, fn in f.vm.jit_fn.steps)
    values = [float(f(np.linspace(0.1, 1.0, options.get("length", 4)))) for _ in range(3)]
    traced = len(traces)
    if options.get("words"):  # the exact call takes its 64-bit arguments as words from now on (a trace of its own)
        f._direct.exact.take_words()
        values += [float(f(np.linspace(0.1, 1.0, options.get("length", 4)))) for _ in range(3)]
    words = f._direct.exact._wide is not None
    try:
        f(-np.ones(4))
        raised = None
    except Exception as error:
        named = next(line for line in str(error).splitlines() if line.startswith("Apply node that caused the error"))
        raised = [type(error).__name__, str(error).splitlines()[0], named]  # the node as Aesara's annotation names it
    print(json.dumps({"values": values, "traced": traced, "raised": raised, "deferred": deferred, "words": words}))
    """
)


ASSERT_NODE = "Apply node that caused the error: Assert{msg=x must be positive}(Elemwise{add,no_inplace}.0, All.0)"
"""How Aesara's annotation names the program's failing check, in the process that traced it and in those that load it."""


def run(tmp_path, switch="1", **options):
    settings = {"seed": 3, "constant": 2.0, **options}
    return reported_by_new_process(PROGRAM, settings, tmp_path, switch, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")


def test_a_second_process_loads_the_program_and_gets_the_same_values(tmp_path):
    first = run(tmp_path)
    assert first["traced"] > 0 and store_entries(tmp_path) and not first["deferred"]
    second = run(tmp_path)
    assert second["traced"] == 0 and second["deferred"]  # lowered only if a call needs a new program
    assert second["values"] == first["values"]
    assert second["raised"] == first["raised"] == ["AssertionError", "x must be positive", ASSERT_NODE]
    assert second["values"] == run(tmp_path / "off", switch="0")["values"]
    shifted = run(tmp_path, shift_checks=True)  # this process numbers its checks otherwise
    assert shifted["traced"] == 0
    assert shifted["raised"] == ["AssertionError", "x must be positive", ASSERT_NODE]
    longer = run(tmp_path, length=5)
    assert longer["deferred"] and longer["traced"] > 0
    assert longer["values"] == run(tmp_path / "off", switch="0", length=5)["values"]


@pytest.mark.parametrize("flags", [(False, True), (True, False)], ids=["x64 off then on", "x64 on then off"])
def test_a_program_saved_under_one_process_flag_is_loaded_under_the_other(tmp_path, flags):
    first = run(tmp_path, x64=flags[0])
    assert first["traced"] > 0
    second = run(tmp_path, x64=flags[1])  # the float64 program computes with x64 either way: the same key
    assert second["traced"] == 0 and second["deferred"]
    assert second["values"] == first["values"]
    assert second["raised"] == first["raised"] == ["AssertionError", "x must be positive", ASSERT_NODE]


def test_a_loaded_program_runs_with_64_bit_arguments_as_words_in_a_process_without_x64(tmp_path):
    """The store keeps the program as traced; a function made without x64 compiles the one taking words from it,
    saved nor loaded, and computes the same values (the words program's first calls) as a process without the store."""
    first = run(tmp_path, x64=False, words=True)
    assert first["traced"] > 0 and store_entries(tmp_path) and first["words"]
    second = run(tmp_path, x64=False, words=True)
    assert second["traced"] == 0 and second["words"]
    assert second["values"] == first["values"] == run(tmp_path / "off", switch="0", x64=False, words=True)["values"]
    assert second["raised"] == first["raised"] == ["AssertionError", "x must be positive", ASSERT_NODE]
    assert len(store_entries(tmp_path)) == 1


def test_a_loaded_program_with_a_lapack_kernel_runs_in_a_process_that_never_lowered_one(tmp_path):
    """JAX sets up its LAPACK kernels when it lowers a call of one: a process that only loads must do it first."""
    first = run(tmp_path, cholesky=True)
    assert first["traced"] > 0 and store_entries(tmp_path)
    loaded = run(tmp_path, cholesky=True)
    assert loaded["traced"] == 0
    assert loaded["values"] == first["values"] == run(tmp_path / "off", switch="0", cholesky=True)["values"]


def test_a_different_graph_is_not_given_the_saved_program_and_another_state_draws_from_that_state(tmp_path):
    first = run(tmp_path)
    other = run(tmp_path, constant=3.0)
    assert other["traced"] > 0
    assert other["values"] != first["values"]
    assert other["values"] == run(tmp_path / "off", switch="0", constant=3.0)["values"]
    reseeded = run(tmp_path, seed=4)
    assert reseeded["traced"] == 0
    assert reseeded["values"] != first["values"]
    assert reseeded["values"] == run(tmp_path / "off", switch="0", seed=4)["values"]


def test_a_graph_lowered_by_code_from_elsewhere_is_never_saved(tmp_path):
    run(tmp_path, own_lowering=True)
    assert not store_entries(tmp_path)


def test_nothing_is_saved_when_the_cache_is_switched_off(tmp_path):
    run(tmp_path, switch="0")
    assert not store_entries(tmp_path)


class PythonOnly(Op):
    """An Op with no JAX lowering: aejax runs its ``perform`` on the host."""

    def make_node(self, x):
        return aesara.graph.basic.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] * 2


@pytest.fixture
def store_here(tmp_path, monkeypatch):
    """Save this process's programs under ``tmp_path``, however quickly they compile."""
    from aejax.linker.program import saved_programs

    monkeypatch.setattr(saved_programs, "cache_directory", lambda: tmp_path / "aejax-xla")
    monkeypatch.setattr(saved_programs, "min_compile_seconds", lambda: 0.0)
    return lambda: list(tmp_path.rglob("*.exported"))


@pytest.mark.parametrize("on_host", [False, True], ids=["jax only", "with a callback"])
def test_a_program_with_a_callback_is_never_saved(store_here, on_host):
    x = at.dvector("x")
    doubled = PythonOnly()(x) if on_host else x * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the callback's own warning
        f = aesara.function([x], doubled.sum(), mode="AEJAX")
        assert float(f(np.ones(3))) == 6.0
    assert bool(store_here()) is not on_host


def test_a_loaded_export_exports_anew_for_arguments_it_does_not_fit():
    def total(x):
        return (x * 2).sum()

    loaded = jax.export.export(jax.jit(total))(jax.ShapeDtypeStruct((3,), np.float32))
    program = ExportingProgram(jax.jit(total), (), loaded)
    assert float(program.jitted(np.ones(3, np.float32))) == 6.0 and program.exported is loaded
    assert float(program.jitted(np.ones(4, np.float32))) == 8.0
    assert program.exported is loaded  # the export for 4 rows serves that trace only: nothing is written while tracing


def _graph(constant=2.0, dtype="float64", length=None):
    x = at.tensor(dtype, shape=(length,), name="x")
    y = at.exp(x * constant).sum()
    return [x], [y]


def test_the_fingerprint_is_the_same_for_the_same_graph_and_differs_for_any_change():
    same = graph_fingerprint(*_graph())
    assert graph_fingerprint(*_graph()) == same
    for other in (_graph(3.0), _graph(dtype="float32"), _graph(length=4)):
        assert graph_fingerprint(*other) != same


def test_a_value_the_fingerprint_cannot_capture_leaves_the_graph_without_one():
    class Opaque(Op):
        __props__ = ("fn",)

        def __init__(self, fn):
            self.fn = fn

        def make_node(self, x):
            return aesara.graph.basic.Apply(self, [x], [x.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = self.fn(inputs[0])

    x = at.dvector("x")
    with pytest.raises(NotFingerprintable, match="lambda"):
        graph_fingerprint([x], [Opaque(lambda v: v + 1)(x)])


def test_a_scan_graph_fingerprint_ignores_names_and_counters():
    def built():
        srng = RandomStream(seed=1)
        x = at.dvector()
        hs, updates = aesara.scan(lambda h: h + srng.normal(0, 1, size=h.shape), outputs_info=[x], n_steps=3)
        fgraph = aesara.function([x], hs[-1], updates=updates, mode="AEJAX").maker.fgraph
        return graph_fingerprint(fgraph.inputs, fgraph.outputs)

    assert built() == built()


def test_a_jax_setting_changed_between_compiles_keys_the_next_program(store_here):
    def compiled_and_called():
        x = at.dvector("x")
        f = aesara.function([x], at.exp(x * 2).sum(), mode="AEJAX")
        return float(f(np.ones(3)))

    def programs():
        return store_here()

    first = compiled_and_called()
    assert len(programs()) == 1
    assert compiled_and_called() == first and len(programs()) == 1  # loaded: the same key
    previous = jax.config.jax_default_matmul_precision
    jax.config.update("jax_default_matmul_precision", "highest")
    try:
        assert compiled_and_called() == first
    finally:
        jax.config.update("jax_default_matmul_precision", previous)
    assert len(programs()) == 2


def test_a_program_whose_small_outputs_leave_packed_is_saved_and_loaded(store_here):
    """Its outputs' pytree (`PackedResults`) is serialized with the export, as JSON data."""

    def compiled_and_called():
        x = at.dvector("x")
        f = aesara.function([x], [x.sum(), (x * 2).sum(), at.exp(x)], mode="AEJAX")
        return [np.asarray(v).tolist() for v in f(np.arange(3.0))]

    first = compiled_and_called()
    (entry,) = store_here()
    payload = signed_parts(entry)[2]
    assert "PackedResults" in str(jax.export.deserialize(bytearray(payload)).out_tree)
    assert compiled_and_called() == first and first[:2] == [3.0, 6.0]
    np.testing.assert_allclose(first[2], np.exp(np.arange(3.0)))


def test_a_function_given_its_programs_by_the_store_warns_when_a_shape_input_takes_a_new_value(tmp_path, store_here):
    """The warning follows a trace; a loaded program has none, so the store keeps which node each input sizes."""

    def compiled():
        n = at.iscalar("n")
        step = lambda s: (at.arange(n) * s).sum() + 1
        totals, _ = aesara.scan(step, outputs_info=[at.as_tensor(np.int64(1))], n_steps=3)
        return aesara.function([n], totals, mode="AEJAX"), aesara.function([n], totals, mode="FAST_COMPILE")

    first, reference = compiled()
    first(4)
    with pytest.warns(ShapeInputWarning, match="input 'n' decides a shape"):
        first(5)
    saves = {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*") if path.is_file()}
    assert len(store_here()) == 2
    second, _ = compiled()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShapeInputWarning)
        np.testing.assert_array_equal(second(4), reference(4))
    with pytest.warns(ShapeInputWarning, match="input 'n' decides a shape"):
        np.testing.assert_array_equal(second(5), reference(5))
    assert {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*") if path.is_file()} == saves  # both loaded


TWO_DEVICES = textwrap.dedent(
    """
    import json, sys
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    import aesara, aesara.tensor as at, jax, numpy as np
    from aesara.raise_op import Assert
    import aejax.linker

    jax.config.update("jax_enable_x64", True)  # device_put of float64 values for the float64 graph
    if sys.argv[1] == "shifted":  # another check numbered first in this process
        y = at.dscalar("y")
        aesara.function([y], Assert("y is small")(y, y < 10), mode="AEJAX_DEVICE")(1.0)
    x = at.dvector("x")
    f = aesara.function([x], Assert("x must be positive")(at.exp(x).sum(), at.all(x > 0)), mode="AEJAX_DEVICE")
    on_first = float(f(np.ones(3)))
    second = jax.devices()[1]
    on_second = float(f(jax.device_put(np.ones(3), second)))
    try:
        f(jax.device_put(-np.ones(3), second))
        raised = None
    except AssertionError as error:
        raised = str(error).splitlines()[0]
    print(json.dumps([on_first, on_second, raised]))
    """
)


def test_with_two_devices_a_loaded_program_runs_and_hands_the_other_device_to_the_traced_one(tmp_path):
    env = {
        **os.environ,
        "AESARA_FLAGS": f"base_compiledir={tmp_path}",
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
        "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": str(ROOT),
    }

    def run_two(how):
        done = subprocess.run(
            [sys.executable, "-c", TWO_DEVICES, how], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run_two("plain")
    assert list(tmp_path.rglob(f"{SUBDIRECTORY}/*.exported"))
    expected = [3 * np.e, 3 * np.e, "x must be positive"]
    for got in (first, run_two("plain"), run_two("shifted")):
        np.testing.assert_allclose(got[:2], expected[:2])
        assert got[2] == expected[2]


FAULTS = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    import aesara, aesara.tensor as at, jax, numpy as np
    from aesara.raise_op import Assert
    from aesara.tensor.random.utils import RandomStream
    import aejax.linker

    traces = []  # of the graph: a loaded program traces only its export's call, `program`
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, duration, fun_name="", **kw: traces.append(fun_name)
        if event.endswith("jaxpr_trace_duration") and fun_name != "program" else None
    )
    store = Path(aesara.config.compiledir) / "aejax-programs"
    found = {}
    for scale in json.loads(sys.argv[1]):
        before = set(store.glob("*")) if store.exists() else set()
        x = at.dvector("x")
        y = at.exp(x * scale) + RandomStream(seed=1).normal(0, 1, size=x.shape)
        f = aesara.function([x], Assert("x must be positive")(y.sum(), at.all(x > 0)), mode="AEJAX")
        del traces[:]
        values = [float(f(np.linspace(0.1, 1.0, 4))) for _ in range(2)]
        traced = len(traces)
        try:
            f(-np.ones(4))
            raised = None
        except AssertionError as error:
            raised = str(error).splitlines()[0]
        made = sorted(str(p) for p in set(store.glob("*")) - before)
        found[str(scale)] = {"values": values, "traced": traced, "raised": raised, "made": made}
    print(json.dumps(found))
    """
)
SCALES = [0.5, 0.25, 1.0, 1.5, 2.0, 2.5, 3.0]


def run_faults(tmp_path, count=1):
    """``count`` processes at once compiling and calling the graph of each of `SCALES`, with the store in ``tmp_path``."""
    env = {
        **os.environ,
        "AESARA_FLAGS": f"base_compiledir={tmp_path}",
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-c", FAULTS, json.dumps(SCALES)]
    running = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(count)]
    results = []
    for process in running:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err.decode()[-3000:]
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    return results


class Marker:
    """An old-style store entry: unpickling it would create the file ``path``."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def _files(made, suffix):
    (path,) = [Path(p) for p in made if p.endswith(suffix)]
    return path


def _newer_format(entry):
    """``entry`` rewritten as a newer aejax would write it (signed with the key)."""
    _, line, payload = signed_parts(entry)
    rewritten(entry, json.dumps({**json.loads(line), "format": FORMAT + 1}).encode(), payload, with_key)


def test_a_damaged_swapped_or_foreign_entry_is_a_miss_and_the_next_processes_save_it_at_once(tmp_path):
    """Each graph's entry gets one fault; two processes then compile them all at once, and a third loads them."""
    (first,) = run_faults(tmp_path)
    entry = {scale: _files(got["made"], ".exported") for scale, got in first.items()}
    hint = {scale: _files(got["made"], ".discovered") for scale, got in first.items()}
    entry["0.5"].write_bytes(entry["0.25"].read_bytes())  # another graph's entry of the same signature
    hint["1.0"].write_bytes(entry["1.0"].read_bytes())
    entry["1.5"].write_bytes(entry["1.5"].read_bytes()[: entry["1.5"].stat().st_size // 2])
    entry["2.0"].write_bytes(b"")
    _newer_format(entry["2.5"])
    marker = tmp_path / "unpickled"
    entry["3.0"].write_bytes(pickle.dumps(Marker(marker)))
    hint["3.0"].write_bytes(os.urandom(100))
    (entry["3.0"].parent / "old-entry.pickle").write_bytes(pickle.dumps(Marker(marker)))
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()
    killed = entry["0.5"].with_name(f"{entry['0.5'].name}.{gone.pid}-1.tmp")  # a save killed before its rename
    killed.write_bytes(b"half an entry")
    saving = entry["0.5"].with_name(f"{entry['0.5'].name}.{os.getpid()}-1.tmp")  # a save going on now
    saving.write_bytes(b"half an entry")
    *together, last = run_faults(tmp_path, count=2) + run_faults(tmp_path)
    for got in [*together, last]:
        for scale, result in got.items():
            assert result["values"] == first[scale]["values"], scale
            assert result["raised"] == "x must be positive"
    assert not marker.exists()
    assert not killed.exists() and saving.exists()
    assert first["0.5"]["values"] != first["0.25"]["values"]
    assert all(first[scale]["traced"] > 0 for scale in first)
    loaded = [scale for scale, result in last.items() if result["traced"] == 0]
    assert loaded == list(first)  # 1.0's damaged hint is a miss, but with no static input its entry's key is the same


def _compiled_and_called():
    x = at.dvector("x")
    f = aesara.function([x], at.exp(x * 2).sum(), mode="AEJAX")
    return float(f(np.ones(3)))


@pytest.mark.parametrize("how", ["read-only folder", "read-only filesystem", "full disk"])
def test_a_store_that_cannot_be_written_never_fails_a_call(store_here, monkeypatch, how):
    expected = _compiled_and_called()
    (entry,) = store_here()
    entry.write_bytes(entry.read_bytes()[:-10])
    if how == "read-only folder":
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only folder: the read-only filesystem case stands in")
        entry.parent.chmod(0o555)
    else:
        code = errno.EROFS if how == "read-only filesystem" else errno.ENOSPC

        def refused(*args, **kwargs):
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(Path, "write_bytes", refused)
        if code == errno.EROFS:  # nothing can be created, removed or renamed there either
            for name in ("mkdir", "unlink"):
                monkeypatch.setattr(Path, name, refused)
            monkeypatch.setattr(os, "replace", refused)
    try:
        assert _compiled_and_called() == expected
    finally:
        entry.parent.chmod(0o755)


def test_the_store_is_not_used_while_jax_debugs_nans(store_here):
    from aejax.linker.program.saved_programs import ProgramStore

    x = at.dvector("x")
    fgraph = FunctionGraph([x], [x * 2])
    assert ProgramStore.opened(fgraph, lambda: "some graph") is not None
    jax.config.update("jax_debug_nans", True)
    try:
        assert ProgramStore.opened(fgraph, lambda: "some graph") is None
    finally:
        jax.config.update("jax_debug_nans", False)


def test_only_a_graph_that_may_compile_for_a_second_is_run_through_its_export():
    x = at.dvector("x")
    small = aesara.function([x], (x * 2).sum(), mode="AEJAX")
    looped, _ = aesara.scan(lambda h: at.tanh(h), outputs_info=[x], n_steps=3)
    large = x
    for k in range(LARGE_GRAPH):  # distinct constants: nothing merges
        large = at.sin(large) * (k + 2.0)
    assert small.vm.jit_fn.saved is None
    assert aesara.function([x], looped[-1], mode="AEJAX").vm.jit_fn.saved is not None
    large_f = aesara.function([x], large, mode="AEJAX", on_unused_input="ignore")
    assert len(large_f.maker.fgraph.apply_nodes) >= LARGE_GRAPH
    assert large_f.vm.jit_fn.saved is not None


def test_a_process_forked_during_a_pause_collects_garbage():
    from aejax.linker.program.collection import collection_paused

    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
        child = os.fork()
        if child == 0:
            os._exit(0 if gc.isenabled() else 1)
        _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert gc.isenabled()
