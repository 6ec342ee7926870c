"""A program traced and compiled in one process is loaded, not traced again, by the next process that compiles the same graph."""

import gc
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.graph.op import Op
from aesara.tensor.random.utils import RandomStream

import aejax.linker  # noqa: F401  (registers the modes)
from aejax.linker.graph.fingerprint import NotFingerprintable, graph_fingerprint
from aejax.linker.program.saved_programs import SUBDIRECTORY, LoadedProgram

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent(
    """
    import json, sys
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
    class Halve(aesara.graph.op.Op):
        __props__ = ()

        def make_node(self, x):
            return aesara.graph.basic.Apply(self, [x], [x.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = inputs[0] / 2

    @aejax.linker.jax_funcify.register(Halve)
    def _halve(op, node=None, **kwargs):
        return lambda x: x / 2

    halve = Halve() if options.get("own_lowering") else lambda h: h * 0.5
    x = at.dvector("x")
    srng = RandomStream(seed=options["seed"])
    hs, updates = aesara.scan(lambda h: at.tanh(halve(h)) + srng.normal(0, 1, size=h.shape), outputs_info=[x], n_steps=5)
    total = Assert("x must be positive")(hs[-1].sum() + options["constant"], at.all(x > 0))
    if options.get("cholesky"):  # a LAPACK kernel in the program
        total = total + aesara.tensor.slinalg.cholesky(at.outer(x, x) + at.eye(x.shape[0])).sum()
    f = aesara.function([x], total, updates=updates, mode="AEJAX")

    traces = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, duration, **kw: traces.append(event) if event.endswith("jaxpr_trace_duration") else None
    )
    from aejax.linker.trace.lowering import DeferredLowering
    deferred = any(type(fn) is DeferredLowering for _, fn in f.vm.jit_fn.steps)
    values = [float(f(np.linspace(0.1, 1.0, options.get("length", 4)))) for _ in range(3)]
    traced = len(traces)
    try:
        f(-np.ones(4))
        raised = None
    except Exception as error:
        raised = [type(error).__name__, str(error).splitlines()[0]]  # Aesara appends the node, with addresses
    print(json.dumps({"values": values, "traced": traced, "raised": raised, "deferred": deferred}))
    """
)


def run(tmp_path, switch="1", **options):
    settings = {"seed": 3, "constant": 2.0, **options}
    env = {
        **os.environ,
        "AESARA_FLAGS": f"base_compiledir={tmp_path / 'aesara'}",
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "AEJAX_PERSISTENT_CACHE": switch,
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, json.dumps(settings)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def saved(tmp_path):
    return sorted(p.name for p in (tmp_path / "aesara").rglob(f"{SUBDIRECTORY}/*.pickle"))


def test_a_second_process_loads_the_program_and_gets_the_same_values(tmp_path):
    first = run(tmp_path)
    assert first["traced"] > 0 and saved(tmp_path)
    second = run(tmp_path)
    assert second["traced"] == 0
    assert second["values"] == first["values"]
    assert second["raised"] == first["raised"] == ["AssertionError", "x must be positive"]
    assert second["values"] == run(tmp_path / "off", switch="0")["values"]


def test_a_graph_saved_before_is_lowered_only_if_a_call_needs_a_new_program(tmp_path):
    first = run(tmp_path)
    assert not first["deferred"]
    again = run(tmp_path)
    assert again["deferred"] and again["traced"] == 0
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
    assert second["raised"] == first["raised"] == ["AssertionError", "x must be positive"]


def test_a_loaded_program_raises_its_own_check_when_the_process_numbers_checks_otherwise(tmp_path):
    run(tmp_path)
    shifted = run(tmp_path, shift_checks=True)
    assert shifted["traced"] == 0
    assert shifted["raised"] == ["AssertionError", "x must be positive"]


def test_a_loaded_program_with_a_lapack_kernel_runs_in_a_process_that_never_lowered_one(tmp_path):
    """JAX sets up its LAPACK kernels when it lowers a call of one: a process that only loads must do it first."""
    first = run(tmp_path, cholesky=True)
    assert first["traced"] > 0 and saved(tmp_path)
    loaded = run(tmp_path, cholesky=True)
    assert loaded["traced"] == 0
    assert loaded["values"] == first["values"] == run(tmp_path / "off", switch="0", cholesky=True)["values"]


def test_a_different_graph_is_not_given_the_saved_program(tmp_path):
    first = run(tmp_path)
    other = run(tmp_path, constant=3.0)
    assert other["traced"] > 0
    assert other["values"] != first["values"]
    assert other["values"] == run(tmp_path / "off", switch="0", constant=3.0)["values"]


def test_the_same_graph_with_another_state_loads_the_program_and_draws_from_that_state(tmp_path):
    first = run(tmp_path)
    reseeded = run(tmp_path, seed=4)
    assert reseeded["traced"] == 0
    assert reseeded["values"] != first["values"]
    assert reseeded["values"] == run(tmp_path / "off", switch="0", seed=4)["values"]


def test_a_graph_lowered_by_code_from_elsewhere_is_never_saved(tmp_path):
    run(tmp_path, own_lowering=True)
    assert not saved(tmp_path)


def test_nothing_is_saved_when_the_cache_is_switched_off(tmp_path):
    run(tmp_path, switch="0")
    assert not saved(tmp_path)


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
    return lambda: list(tmp_path.rglob("*.pickle"))


@pytest.mark.parametrize("on_host", [False, True], ids=["jax only", "with a host call"])
def test_a_program_with_a_host_call_is_never_saved(store_here, on_host):
    x = at.dvector("x")
    doubled = PythonOnly()(x) if on_host else x * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the host call's own warning
        f = aesara.function([x], doubled.sum(), mode="AEJAX")
        assert float(f(np.ones(3))) == 6.0
    assert bool(store_here()) is not on_host


def test_a_loaded_program_hands_arguments_it_was_not_compiled_for_to_the_traced_one():
    def compiled(*args):
        raise ValueError("compiled for another sharding")

    assert LoadedProgram(compiled, lambda *args: sum(args))(1, 2) == 3


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
        return [p for p in store_here() if "discovered" not in p.name]

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


TWO_DEVICES = textwrap.dedent(
    """
    import json, sys
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
    assert list(tmp_path.rglob(f"{SUBDIRECTORY}/*.pickle"))
    expected = [3 * np.e, 3 * np.e, "x must be positive"]
    for got in (first, run_two("plain"), run_two("shifted")):
        np.testing.assert_allclose(got[:2], expected[:2])
        assert got[2] == expected[2]


def _programs_saved(tmp_path):
    return [p for p in (tmp_path / "aesara").rglob(f"{SUBDIRECTORY}/*.pickle") if "discovered" not in p.name]


def _jax_cache(tmp_path):
    (directory,) = (tmp_path / "aesara").rglob("aejax-xla")
    return directory


def test_a_damaged_entry_is_a_miss_and_is_removed(tmp_path):
    first = run(tmp_path)
    (entry,) = _programs_saved(tmp_path)
    saved = pickle.loads(entry.read_bytes())
    payload = bytearray(saved["payload"])
    payload[len(payload) // 2] ^= 0x10
    entry.write_bytes(pickle.dumps({**saved, "payload": bytes(payload)}))
    shutil.rmtree(_jax_cache(tmp_path))  # else JAX's cache answers the compile, and the program is not saved again
    again = run(tmp_path)
    assert again["traced"] > 0 and again["values"] == first["values"]
    anew = pickle.loads(entry.read_bytes())  # saved anew by that process
    assert anew["payload"] != bytes(payload) and hashlib.sha256(anew["payload"]).hexdigest() == anew["digest"]


def test_a_program_jax_s_cache_answered_is_not_saved_and_the_next_process_runs(tmp_path):
    """XLA:CPU serializes an executable it deserialized without its kernels: saved, it would fail to run when loaded."""
    first = run(tmp_path)
    for entry in _programs_saved(tmp_path):
        entry.unlink()
    answered = run(tmp_path)  # traced again, compiled by JAX's cache
    assert answered["traced"] > 0 and not _programs_saved(tmp_path)
    after = run(tmp_path)
    assert after["values"] == answered["values"] == first["values"]
    assert after["raised"] == first["raised"]


def test_the_store_is_not_used_while_jax_debugs_nans():
    from aejax.linker.program.saved_programs import ProgramStore

    assert ProgramStore.opened("some graph") is not None
    jax.config.update("jax_debug_nans", True)
    try:
        assert ProgramStore.opened("some graph") is None
    finally:
        jax.config.update("jax_debug_nans", False)


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
