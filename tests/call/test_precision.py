"""Precision belongs to the program: ``jax_enable_x64`` stays as the user set it, a float64 graph computes in float64
whatever the flag, a float32 graph for an accelerator holds no float64 operation, and a mode may ask for either."""

import json
import os
import pickle
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import aesara
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from aesara.graph.fg import FunctionGraph
from aesara.scan.utils import until

import aejax.linker
from aejax.adapters.jax_api import disable_x64, enable_x64
from aejax.linker import AejaxDeviceMode, InputValueError, jaxify
from aejax.linker.call.precision import graph_variables, program_x64
from tests.reference import REFERENCE, assert_matches_reference

ROOT = Path(__file__).resolve().parents[2]
X32 = aejax.linker.mode.with_x64(False)

FLAG_PROGRAM = textwrap.dedent(
    """
    import json, sys
    import jax
    from aejax.adapters.jax_api import enable_x64
    if sys.argv[1] == "True":
        jax.config.update("jax_enable_x64", True)
    seen = {"before": jax.config.jax_enable_x64}
    if sys.argv[1] == "inside":  # imported while this thread's own setting says x64
        with enable_x64(True):
            import aejax.linker
    else:
        import aejax.linker
    seen["imported"] = jax.config.jax_enable_x64
    import aesara, aesara.tensor as at, numpy as np
    from aejax.linker import jaxify

    x, v = at.dvector("x"), at.fvector("v")
    for mode in ("AEJAX", "AEJAX_DEVICE"):
        for graph in ([x], (x + 1e-10) - x), ([v], v.sum()):
            f = aesara.function(*graph, mode=mode)
            [f(np.ones(3, graph[0][0].dtype)) for _ in range(3)]
    seen["called"] = jax.config.jax_enable_x64
    graph = jaxify([x], x * 2)
    jax.jit(graph.fn)(graph.state, np.ones(3))
    seen["exported"] = jax.config.jax_enable_x64
    print(json.dumps(seen))
    """
)


@pytest.mark.parametrize("flag", ["unset", "True", "inside"])
def test_importing_and_using_aejax_leaves_jax_enable_x64_as_the_user_set_it(flag):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("JAX_ENABLE_X64", None)
    done = subprocess.run(
        [sys.executable, "-c", FLAG_PROGRAM, flag], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == dict.fromkeys(seen, flag == "True")


def test_a_float64_graph_computes_in_float64_with_x64_off():
    x = at.dscalar("x")
    with disable_x64():
        (got,) = assert_matches_reference([x], x + 1e-10, 1.0, rtol=0)
        device = aesara.function([x], x + 1e-10, mode="AEJAX_DEVICE")(1.0)
        by_keyword = aesara.function([x], x + 1e-10, mode="AEJAX")(x=1.0)  # Aesara's own call path
        assert not jax.config.jax_enable_x64
    assert float(got) - 1.0 == (1.0 + 1e-10) - 1.0  # float32 holds no value between 1 and 1 + 1.2e-7
    assert device.dtype == np.float64 and float(device) == float(got) == float(by_keyword)


def test_a_float64_scan_computes_in_float64_with_x64_off():
    x = at.dscalar("x")
    steps, _ = aesara.scan(lambda h: h + 1e-10, outputs_info=x, n_steps=5)
    with disable_x64():
        (got,) = assert_matches_reference([x], steps[-1], 1.0, rtol=0)
    assert float(got) - 1.0 == pytest.approx(5e-10, rel=1e-6)


def test_a_float64_shared_variable_updated_with_x64_off_keeps_float64_precision():
    total = aesara.shared(np.float64(1.0), name="total")
    step = aesara.function([], [], updates={total: total + 1e-10}, mode="AEJAX")
    with disable_x64():
        for _ in range(3):
            step()
    value = total.get_value()
    assert value.dtype == np.float64
    np.testing.assert_allclose(value - 1.0, 3e-10, rtol=1e-6)
    assert aesara.function([], total * 1, mode=REFERENCE)() == value  # the reference backend reads it


def float32_layer():
    X, W = at.fmatrix("X"), at.fmatrix("W")
    return [X, W], at.tanh(X @ W).sum()


def test_an_inner_graph_held_by_several_nodes_is_walked_once():
    xs = at.dvector("xs")
    doubled, _ = aesara.scan(lambda x: x * 2, sequences=[xs])
    scan_node = doubled.owner
    while not hasattr(scan_node.op, "inner_outputs"):
        scan_node = scan_node.inputs[0].owner
    inputs = [at.dvector(f"xs{i}") for i in range(3)]
    # The same Scan Op on three sequences: three nodes holding one inner graph.
    outputs = [scan_node.op(*[xs_i if var is xs else var for var in scan_node.inputs]) for xs_i in inputs]
    seen = list(graph_variables(inputs, outputs))
    inner = set(scan_node.op.inner_inputs + scan_node.op.inner_outputs)
    assert inner <= set(seen)
    assert all(seen.count(var) == 1 for var in inner)


def test_a_float32_graph_for_an_accelerator_computes_without_x64():
    inputs, loss = float32_layer()
    f = aesara.function(inputs, loss, mode="AEJAX")
    assert program_x64(f.maker.fgraph, None, backend="tpu") is False
    assert program_x64(f.maker.fgraph, None, backend="cpu") is True  # Aesara's float64 accumulator, as in C
    assert program_x64(f.maker.fgraph, True, backend="tpu") is True


def test_a_float64_value_in_a_scan_step_makes_the_program_compute_with_x64():
    x = at.fvector("x")
    steps, _ = aesara.scan(lambda h: at.cast(at.cast(h, "float64") * 1.5, "float32"), outputs_info=x, n_steps=3)
    f = aesara.function([x], steps[-1], mode="AEJAX")
    assert all(var.type.dtype != "float64" for var in f.maker.fgraph.variables)
    assert program_x64(f.maker.fgraph, None, backend="tpu") is True


def test_a_constant_array_lowered_with_x64_and_then_without_it_computes_in_each_precision():
    # One numpy array object in both programs (a model's module-level constant): JAX 0.12 kept the float64 trace of
    # the loop body's constant for the 32-bit program, which XLA then rejected.
    shift = np.array([1.0, -2.0])
    x = at.dvector("x")
    steps, _ = aesara.scan(lambda h: (h - shift, until(at.sum(h) > 10.0)), outputs_info=x, n_steps=5)
    expected = np.array([-1.0, 5.0])  # x - 2 * shift: the loop has not stopped by its second step
    f64 = aesara.function([x], steps[1], mode="AEJAX")
    np.testing.assert_array_equal(f64(np.ones(2)), expected)
    with disable_x64():
        graph = jaxify([x], steps[1])
        computed = jax.jit(graph.fn)(graph.state, np.ones(2, np.float32))[0]
    assert computed.dtype == np.float32
    np.testing.assert_array_equal(computed, expected)


def test_the_program_of_a_float32_graph_without_x64_holds_no_float64_operation():
    inputs, loss = float32_layer()
    args = (np.ones((4, 3), np.float32), np.ones((3, 2), np.float32))
    f = aesara.function(inputs, loss, mode=X32)
    assert f.x64 is False
    np.testing.assert_allclose(f(*args), np.tanh(3.0) * 8, rtol=1e-6)
    program = f.vm.jit_fn.shortcut().program
    with disable_x64():
        text = program.lower(*args).as_text()
    assert "f32" in text and "f64" not in text


def test_on_the_cpu_a_float32_sum_accumulates_in_float64_without_a_conditional_in_the_program():
    v = at.fvector("v")
    f = aesara.function([v], v.sum(), mode="AEJAX")
    values = np.full(10, 0.1, np.float32)
    f(values)
    assert f.x64 is True
    with enable_x64(True):
        lowered = f.vm.jit_fn.shortcut().program.lower(values)
        assert "f64" in lowered.as_text()
        # the platform's branch was chosen while lowering (the op, not the word: newer HLO names Python frames)
        assert " conditional(" not in lowered.compile().as_text()


@pytest.mark.parametrize(("reduce", "in_jax"), [(at.sum, jnp.sum), (at.mean, jnp.mean)], ids=["sum", "mean"])
def test_a_float32_reduction_on_the_cpu_is_the_reference_backends_float64_accumulation(reduce, in_jax):
    v = at.fvector("v")
    values = np.full(10**6, 0.1, np.float32)
    assert_matches_reference([v], reduce(v), values, rtol=0)
    in_float32 = aesara.function([v], reduce(v), mode=X32)(values)
    with disable_x64():
        assert in_float32 == jax.jit(in_jax)(values)  # JAX's own float32 accumulation
    # JAX 0.7.1's XLA:CPU accumulates float32 in float32, off the reference here (so the check above can fail);
    # JAX 0.12's is exact.
    assert in_float32.dtype == np.float32


def test_with_x64_survives_including_excluding_clone_and_pickling():
    assert aejax.linker.mode.x64 is None
    for asked in (True, False, None):
        mode = aejax.linker.mode.with_x64(asked)
        assert mode.x64 is asked and aejax.linker.mode.x64 is None
        for derived in (
            mode.including("fast_run"),
            mode.excluding("fusion"),
            mode.clone(),
            pickle.loads(pickle.dumps(mode)),
        ):
            assert derived.x64 is asked
    device = aejax.linker.device_mode.with_x64(False)
    assert isinstance(device, AejaxDeviceMode) and device.x64 is False
    x = at.dvector("x")
    first, second = (FunctionGraph([x], [x * n]) for n in (2, 3))
    assert device.linker.clone().accept(first).accept(second).x64 is False  # a linker Aesara makes anew
    with pytest.raises(TypeError, match="with_x64"):
        aejax.linker.mode.with_x64("yes")


def test_a_mode_asking_for_x64_gives_a_float32_graph_float64_accumulation_on_any_backend():
    v = at.fvector("v")
    f = aesara.function([v], v.sum(), mode=aejax.linker.mode.with_x64(True))
    assert f.x64 is True
    g = aesara.function([v], v.sum(), mode=aejax.linker.device_mode.with_x64(False).excluding("fusion"))
    assert g.x64 is False and isinstance(g(np.ones(3, np.float32)), jax.Array)


def test_without_x64_64_bit_inputs_are_narrowed_and_outputs_widened_to_their_types():
    v, i = at.fvector("v"), at.lscalar("i")
    f = aesara.function([v, i], [v[i], i + 1], mode=X32)
    values = np.arange(4, dtype=np.float32)
    for _ in range(3):  # the first call, and the calls after it
        element, following = f(values, 2)
        assert element.dtype == np.float32 and element == 2.0
        assert following.dtype == np.int64 and following == 3
    with pytest.raises(InputValueError, match="input 'i'.*outside int32"):
        f(values, 2**40)


def test_a_float64_shared_variable_updated_by_a_program_without_x64_keeps_its_dtype():
    weights = aesara.shared(np.zeros(3), name="weights")
    step = aesara.function([], weights.sum(), updates={weights: weights + 1.5}, mode=X32)
    with enable_x64(True):
        for _ in range(2):
            total = step()
    assert total.dtype == np.float64 and total == 1.5 * 3
    assert weights.get_value().dtype == np.float64
    np.testing.assert_array_equal(aesara.function([], weights * 1, mode=REFERENCE)(), [3.0, 3.0, 3.0])


def test_the_switch_is_this_threads_only():
    x = at.dvector("x")
    f = aesara.function([x], x + 1e-10, mode="AEJAX")
    seen, results = [], []

    def call_without_x64():
        with disable_x64():
            results.extend(float(f(np.ones(1))[0]) for _ in range(200))
            seen.append(jax.config.jax_enable_x64)

    before = jax.config.jax_enable_x64
    threads = [threading.Thread(target=call_without_x64) for _ in range(4)]
    for thread in threads:
        thread.start()
    flags = [jax.config.jax_enable_x64 for _ in range(2000)]  # this thread's setting, read meanwhile
    for thread in threads:
        thread.join()
    assert set(flags) == {before} and seen == [False] * 4
    assert set(results) == {1.0 + 1e-10}


PLAIN_MODE = aesara.compile.mode.Mode(linker=aejax.linker.mode.linker, optimizer="fast_run")


def precision_graphs():
    """A float64 graph that float32 would get wrong, and a float32 sum that the CPU accumulates in float64."""
    x, v = at.dvector("x"), at.fvector("v")
    return [
        ([x], (x + 1e-10) - x, np.ones(3)),
        ([v], v.sum(), np.full(10**5, 0.1, np.float32)),
    ]


def plain_function(inputs, output):
    """A plain Aesara `Function` of a `Mode` built on aejax's linker."""
    return aesara.function(inputs, output, mode=PLAIN_MODE)


def made_by_function_maker(inputs, output):
    """Aesara's own `FunctionMaker` with aejax's mode, as a tool that swaps a mode in builds it."""
    return aesara.compile.function.types.FunctionMaker(
        [aesara.In(var) for var in inputs], output, mode=aejax.linker.mode
    ).create([None] * len(inputs))


def copied(inputs, output):
    return aesara.function(inputs, output, mode="AEJAX").copy()


def unpickled(inputs, output):
    return pickle.loads(pickle.dumps(aesara.function(inputs, output, mode="AEJAX")))


def plain_unpickled(inputs, output):
    return pickle.loads(pickle.dumps(plain_function(inputs, output)))


def in_another_thread(make):
    """``make``'s function, each call run in a new thread that sets its own ``jax_enable_x64`` as the caller's."""

    def wrapper(inputs, output):
        f = make(inputs, output)

        def call(*args):
            x64, results = jax.config.jax_enable_x64, []

            def run():
                with enable_x64(x64):
                    results.append(f(*args))

            thread = threading.Thread(target=run)
            thread.start()
            thread.join()
            return results[0]

        return call

    return wrapper


WRAPPERS = {
    "plain Mode": plain_function,
    "FunctionMaker": made_by_function_maker,
    "copy": copied,
    "plain copy": lambda inputs, output: plain_function(inputs, output).copy(),
    "pickle": unpickled,
    "plain pickle": plain_unpickled,
    "thread": in_another_thread(lambda inputs, output: aesara.function(inputs, output, mode="AEJAX")),
    "plain thread": in_another_thread(plain_function),
}


@pytest.mark.parametrize("make", WRAPPERS.values(), ids=WRAPPERS.keys())
@pytest.mark.parametrize("x64", [False, True], ids=["x64 off", "x64 on"])
def test_whatever_wraps_the_program_it_computes_in_its_precision(make, x64):
    for inputs, output, value in precision_graphs():
        expected = aesara.function(inputs, output, mode=REFERENCE)(value)
        with enable_x64(x64):
            f = make(inputs, output)
            got = [f(value) for _ in range(3)]  # the first call, and the calls after it
            assert jax.config.jax_enable_x64 is x64
        for result in got:
            result = np.asarray(result)
            assert result.dtype == expected.dtype
            np.testing.assert_allclose(result, expected, rtol=1e-12, atol=0)


WRAPPERS_PROGRAM = textwrap.dedent(
    """
    import json, pickle, threading
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    import aesara, aesara.tensor as at, jax, numpy as np
    import aejax.linker
    from aesara.compile.function.types import FunctionMaker

    x = at.dscalar("x")
    plain = aesara.compile.mode.Mode(linker=aejax.linker.mode.linker, optimizer="fast_run")
    f = aesara.function([x], x + 1e-10, mode=plain)
    made = FunctionMaker([aesara.In(x)], x + 1e-10, mode=aejax.linker.mode).create([None])
    ours = aesara.function([x], x + 1e-10, mode="AEJAX")
    functions = {
        "plain Mode": f, "FunctionMaker": made, "copy": ours.copy(), "plain copy": f.copy(),
        "pickle": pickle.loads(pickle.dumps(ours)), "plain pickle": pickle.loads(pickle.dumps(f)),
    }
    seen = {name: [float(g(1.0)) - 1 for _ in range(2)] for name, g in functions.items()}
    threads = {"thread": ours, "plain thread": f}
    for name, g in threads.items():
        thread = threading.Thread(target=lambda: seen.setdefault(name, [float(g(1.0)) - 1 for _ in range(2)]))
        thread.start()
        thread.join()
    seen["reference"] = [float(aesara.function([x], x + 1e-10, mode="FAST_COMPILE")(1.0)) - 1]
    seen["x64"] = jax.config.jax_enable_x64
    print(json.dumps(seen))
    """
)


def _fresh_process_report(args, timeout=300):
    """The last line of what ``python *args`` prints, as JSON, run in a process as a new user has it (no
    ``jax_enable_x64`` set, unlike this suite's)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("JAX_ENABLE_X64", None)
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_with_jaxs_default_x64_off_every_wrapper_computes_a_float64_graph_in_float64():
    """The process as a new user has it (no ``jax_enable_x64`` set), unlike this suite's."""
    seen = _fresh_process_report(["-c", WRAPPERS_PROGRAM])
    assert seen.pop("x64") is False
    (expected,) = seen.pop("reference")
    assert expected == pytest.approx(1e-10, rel=1e-6)
    assert seen == {name: [expected, expected] for name in WRAPPERS}


CALLBACK_PROGRAM = textwrap.dedent(
    """
    import json
    import warnings

    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    import aesara
    import aesara.tensor as at
    import jax
    import numpy as np
    from aesara.graph.basic import Apply
    from aesara.graph.op import Op

    import aejax.linker

    class Scaled(Op):
        # perform only: aejax runs it through a host callback
        __props__ = ()

        def make_node(self, x):
            x = at.as_tensor_variable(x)
            return Apply(self, [x], [x.type(), at.TensorType("int64", shape=x.type.shape)()])

        def perform(self, node, inputs, outputs):
            (x,) = inputs
            outputs[0][0] = x * 3.0
            outputs[1][0] = (x * 1e9).astype("int64")

        def infer_shape(self, fgraph, node, shapes):
            return [shapes[0], shapes[0]]  # so it runs inside the program, through a callback

    class Digits(Op):
        # an int32 output: nothing 64-bit comes back, so a rounded input went unnoticed
        __props__ = ()

        def make_node(self, x):
            x = at.as_tensor_variable(x)
            return Apply(self, [x], [at.TensorType("int32", shape=x.type.shape)()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = ((inputs[0] * 1e9).astype("int64") % 1000).astype("int32")

        def infer_shape(self, fgraph, node, shapes):
            return shapes

    warnings.simplefilter("ignore")
    x = at.dvector("x")
    scaled, big = Scaled()(at.exp(x) * (1 + 1e-12))
    outputs = [at.sum(scaled), at.max(big), at.min(big), at.sum(Digits()(at.exp(x)))]
    # Large enough that XLA runs the program, and its callback, on threads of its own.
    values = np.random.default_rng(0).normal(size=2_000_000)
    reference = [v.item() for v in aesara.function([x], outputs, mode="FAST_COMPILE")(values)]
    ours = [v.item() for v in aesara.function([x], outputs, mode="AEJAX")(values)]
    print(json.dumps({"x64": jax.config.jax_enable_x64, "reference": reference, "aejax": ours}))
    """
)


def test_a_host_callback_in_a_large_float64_program_keeps_64_bits_with_x64_off():
    """XLA runs the callback on its own thread, where JAX's default (x64 off) holds: its float64 input was rounded
    to float32 there and its float64 output refused, before the values crossed as 32-bit words."""
    seen = _fresh_process_report(["-c", CALLBACK_PROGRAM])
    assert seen["x64"] is False
    total, largest, smallest, digits = seen["aejax"]
    assert total == pytest.approx(seen["reference"][0], rel=1e-13)
    assert [largest, smallest, digits] == seen["reference"][1:]
    assert largest > 2**31  # beyond int32


def test_with_x64_off_a_repeated_call_takes_64_bit_arguments_as_words_and_computes_as_the_reference():
    """A function made and called with JAX's default x64 off: its exact calls run the program with no switch of the
    setting, every 64-bit argument entering as its words, and every result is the reference's
    (`tests/call/x64_off_cases.py`: float64, int64 beyond 2**31, uint64, complex128, bool, 0-d and empty arrays, a
    float32 graph, an Assert, shared variables, a RandomStream, Python arguments, a Scan, one with a progress bar,
    arguments changed in place between calls)."""
    report = _fresh_process_report(["-m", "tests.call.x64_off_cases"], timeout=600)
    assert report.pop("x64") is False
    failed = {case: seen for case, seen in report.items() if isinstance(seen, str)}
    assert not failed, "\n".join(f"{case}:\n{error}" for case, error in failed.items())
    assert report.pop("python_arguments") is None  # lists and Python numbers: the general path, checked only
    for case, seen in report.items():
        assert len(seen) >= 3, case
        assert all(not set(dtypes) & {"float64", "int64", "uint64", "complex128"} for _, dtypes in seen), (case, seen)
        assert [x64 for x64, _ in seen[:3]] == [False] * 3, (case, seen)  # no switch to x64 around the program
