"""export_graph: a compiled graph as a serialized jax.export program, run back in this process and in a Python
that cannot import Aesara or aejax, against the compiled function and Aesara's reference backend."""

import io
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.scan.utils import until
from aesara.tensor.random.utils import RandomStream

from aejax.linker import CallbackWarning, ExportedGraph, LoweringError, export_graph, jaxify, loader
from aejax.linker.exporting import CHAINS, FORMAT
from tests.python_ops import PythonDouble
from tests.reference import REFERENCE

DOCS = Path(__file__).resolve().parents[2] / "docs" / "export.md"
RUNNER_START = "# A runner of aejax exports"


def noisy_sum(mode="AEJAX"):
    """A function with a random draw, a shared weight it updates and an input of open length."""
    srng = RandomStream(seed=5)
    x = at.dvector("x")
    w = aesara.shared(np.float64(1.5), name="w")
    outputs = [(x * w).sum() + srng.normal(0, 1), x[1:] - x[:-1]]
    return aesara.function([x], outputs, updates=[(w, w * 2), *srng.updates()], mode=mode)


def newton(a):
    """The last value of an until loop: Newton's iteration for the square root of ``a``."""

    def step(x, a):
        new = 0.5 * (x + a / x)
        return new, until(abs(new - x) < 1e-12)

    out, _ = aesara.scan(step, outputs_info=at.as_tensor_variable(np.float64(1.0)), non_sequences=a, n_steps=40)
    return out


def assert_values_equal(got, expected, rtol=1e-12):
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(np.asarray(g), e, rtol=rtol)


def test_round_trip_continues_the_random_stream_as_the_compiled_function_does():
    f = noisy_sum()
    loaded = ExportedGraph.deserialize(export_graph(f).serialize())
    assert loaded.inputs == ("x",)
    assert list(loaded.state) == ["w", "rng_0"] and loaded.keys == {"rng_0": "threefry2x32"}
    assert loaded.state["rng_0"].dtype == np.uint32
    state = loaded.state
    for x in (np.arange(3.0), np.linspace(-1.0, 2.0, 6)):
        outputs, state = loaded.call(state, x)
        assert_values_equal(outputs, f(x))
    assert float(state["w"]) == f.maker.inputs[1].variable.get_value() == 6.0


def test_a_float64_graph_exported_from_a_jaxgraph_matches_the_reference():
    x, y = at.dvector("x"), at.dvector("y")
    graph = jaxify([x, y], [at.exp(x) @ y, (x * y).cumsum()])
    loaded = ExportedGraph.deserialize(export_graph(graph, "n", "n").serialize())
    assert loaded.outputs == (None, None)
    reference = aesara.function([x, y], [at.exp(x) @ y, (x * y).cumsum()], mode=REFERENCE)
    for n in (2, 9):
        args = np.linspace(0.0, 1.0, n), np.linspace(1.0, 3.0, n)
        outputs, _ = loaded.call(loaded.state, *args)
        assert_values_equal(outputs, reference(*args))


def runner_code():
    """The runner of docs/export.md that loads an export with JAX, numpy and the standard library."""
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS.read_text(), re.MULTILINE | re.DOTALL)
    return next(block for block in blocks if block.startswith(RUNNER_START))


RUN_WITHOUT_AESARA = """
import sys
sys.modules["aesara"] = None  # importing it raises ImportError
sys.modules["aejax"] = None
for name in ("aesara", "aejax.linker"):
    try:
        __import__(name)
    except ImportError:
        continue
    raise SystemExit(f"{{name}} can be imported")
{runner}
import jax
path, inputs_path, out_path = sys.argv[1:]
with open(path, "rb") as file:
    description, program, state = load(file.read())
jax.config.update("jax_enable_x64", description["x64"])
inputs = np.load(inputs_path)
results = {{}}
for call in range(2):
    outputs, state = program.call(state, inputs[f"x{{call}}"])
    for k, value in enumerate(outputs):
        results[f"call{{call}}_out{{k}}"] = np.asarray(value)
np.savez(out_path, **results)
"""


def test_the_documented_runner_runs_an_export_where_aesara_and_aejax_cannot_be_imported(tmp_path):
    f = noisy_sum()
    (tmp_path / "model.aejax").write_bytes(export_graph(f).serialize())
    xs = [np.arange(4.0), np.linspace(0.0, 1.0, 7)]
    np.savez(tmp_path / "inputs.npz", x0=xs[0], x1=xs[1])
    script = RUN_WITHOUT_AESARA.format(runner=runner_code())
    shutil.copy(loader.__file__, tmp_path / "loader.py")  # as the docs say
    args = [str(tmp_path / name) for name in ("model.aejax", "inputs.npz", "outputs.npz")]
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    results = np.load(tmp_path / "outputs.npz")
    for call, x in enumerate(xs):
        assert_values_equal([results[f"call{call}_out0"], results[f"call{call}_out1"]], f(x))


def test_the_last_value_of_an_until_loop_exports_and_its_trace_names_the_loop():
    a = at.dscalar("a")
    out = newton(a)
    f = aesara.function([a], out[-1], mode="AEJAX")
    loaded = ExportedGraph.deserialize(export_graph(f).serialize())
    reference = aesara.function([a], out[-1], mode=REFERENCE)
    for value in (2.0, 10.0, 0.25):
        np.testing.assert_allclose(loaded.call(loaded.state, value)[0], reference(value), rtol=1e-14)
    with pytest.raises(LoweringError, match="until-loop"):
        export_graph(aesara.function([a], out, mode="AEJAX"))


def test_one_program_takes_every_length_that_the_types_leave_open():
    X, v = at.dmatrix("X"), at.dvector("v")
    outputs = [X @ v, (v**2).mean(), v[1:] - v[:-1], X.T.reshape((-1,))]
    f = aesara.function([X, v], outputs, mode="AEJAX")
    exported = export_graph(f, "n, m", "m")
    assert [entry["shape"] for entry in exported.description()["inputs"]] == [["n", "m"], ["m"]]
    loaded = ExportedGraph.deserialize(exported.serialize())
    reference = aesara.function([X, v], outputs, mode=REFERENCE)
    for rows, columns in ((2, 3), (5, 1)):
        args = np.arange(rows * columns, dtype=float).reshape(rows, columns), np.linspace(1.0, 2.0, columns)
        assert_values_equal(loaded.call(loaded.state, *args)[0], reference(*args))


def test_unrelated_open_lengths_say_how_to_name_them_equal():
    X, v = at.dmatrix("X"), at.dvector("v")
    f = aesara.function([X, v], X @ v, mode="AEJAX")
    with pytest.raises(LoweringError, match=r"(?s)symbolic \(X_0, X_1, v_0\).*export_graph\(f, 'n, 3', 'n'\)"):
        export_graph(f)


def test_a_size_from_an_open_length_asks_for_a_fixed_one_and_an_example_fixes_it():
    x = at.dvector("x")
    f = aesara.function([x], at.zeros(x.shape[0] + 1) + x.sum(), mode="AEJAX")
    with pytest.raises(LoweringError, match=r"(?s)node Alloc.*symbolic \(x_0\).*example arrays"):
        export_graph(f)
    loaded = export_graph(f, np.zeros(4))
    assert loaded.description()["inputs"][0]["shape"] == [4]
    expected = aesara.function([x], at.zeros(x.shape[0] + 1) + x.sum(), mode=REFERENCE)(np.arange(4.0))
    np.testing.assert_allclose(loaded.call(loaded.state, np.arange(4.0))[0], expected)


def test_a_shape_deciding_scalar_input_says_to_compile_it_as_a_constant():
    n, x0 = at.iscalar("n"), at.dscalar("x0")
    out, _ = aesara.scan(lambda x: x * 2, outputs_info=x0, n_steps=n)
    f = aesara.function([n, x0], out, mode="AEJAX")
    with pytest.raises(
        LoweringError, match=r"(?s)cannot make one static.*givens=\{n: aesara.tensor.constant\(5, dtype=n.dtype\)\}"
    ):
        export_graph(f)
    fixed = aesara.function([x0], out, givens={n: at.constant(3, dtype=n.dtype)}, mode="AEJAX")
    np.testing.assert_allclose(export_graph(fixed).call({}, 1.0)[0], [2.0, 4.0, 8.0])


def float32_walk():
    with aesara.config.change_flags(floatX="float32"):
        srng = RandomStream(seed=3)
        x0 = at.scalar("x0")
        walk, updates = aesara.scan(lambda x: x + srng.normal(0, 1), outputs_info=x0, n_steps=20)
        return aesara.function([x0], walk.sum(), updates=updates, mode="AEJAX")


@pytest.mark.parametrize("platforms", [["tpu"], ["cpu", "tpu"], "cuda"])
def test_a_float32_function_compiled_on_the_cpu_exports_for_an_accelerator_without_64_bit_types(platforms):
    f = float32_walk()
    assert f.x64  # on the CPU its program keeps Aesara's float64 accumulators
    exported = export_graph(f, platforms=platforms)
    text = exported.exported.mlir_module()
    assert not exported.x64 and "f32" in text and "f64" not in text and "i64" not in text
    assert export_graph(f, platforms=["cpu"]).x64


def walk_and_sum():
    """A random walk of fixed length (a Scan drawing at each step), a shared scale and an input of open length."""
    steps, last = RandomStream(seed=11), RandomStream(seed=12)
    x0, x = at.dscalar("x0"), at.dvector("x")
    scale = aesara.shared(np.float64(0.5), name="scale")
    walk, updates = aesara.scan(lambda v: v + scale * steps.normal(0, 1), outputs_info=x0, n_steps=6)
    outputs = [walk, (x * walk[-1]).sum() + last.uniform()]
    updates = [(scale, scale * 1.5), *updates.items(), *last.updates()]
    return aesara.function([x0, x], outputs, updates=updates, mode="AEJAX")


def chain_states(exported, n_chains):
    """One state per chain: each random state's key split ``n_chains`` ways, each other entry scaled by its chain."""
    states = [{} for _ in range(n_chains)]
    for name, value in exported.state.items():
        if name in exported.keys:
            keys = jax.random.split(jax.random.wrap_key_data(value, impl=exported.keys[name]), n_chains)
            rows = list(np.asarray(jax.random.key_data(keys)))
        else:
            rows = [value * (k + 1) for k in range(n_chains)]
        for state, row in zip(states, rows):
            state[name] = row
    return states


def stacked(values):
    """Values of the same structure, one per chain, stacked along a new leading axis."""
    return jax.tree.map(lambda *rows: np.stack(rows), *values)


def test_a_chains_export_gives_what_the_export_of_one_chain_gives_on_each_chain():
    f = walk_and_sum()
    one = export_graph(f, platforms="cpu")
    chained = ExportedGraph.deserialize(export_graph(f, platforms="cpu", chains=CHAINS).serialize())
    assert chained.chains == "chains" and chained.description()["chains"] == "chains"
    shapes = {entry["name"]: entry["shape"] for entry in chained.description()["state"]}
    assert shapes == {"scale": ["chains"], "rng_0": ["chains", 2], "rng_1": ["chains", 2]}
    assert chained.description()["inputs"][1]["shape"] == ["chains", "x_0"]
    for n_chains, length in ((3, 4), (5, 2)):
        states = chain_states(one, n_chains)
        inputs = [(np.float64(k), np.linspace(-1.0, k, length)) for k in range(n_chains)]
        expected = stacked([one.call(state, *args) for state, args in zip(states, inputs)])
        got = chained.call(stacked(states), *stacked(inputs))
        jax.tree.map(np.testing.assert_array_equal, jax.tree.map(np.asarray, got), expected)


def test_a_fixed_number_of_chains_is_in_the_shapes_and_the_program_takes_no_other():
    f = noisy_sum()
    exported = export_graph(f, "n", platforms="cpu", chains=np.int64(4))
    assert exported.chains == 4 and type(exported.chains) is int
    assert exported.description()["inputs"][0]["shape"] == [4, "n"]
    states = stacked(chain_states(exported, 4))
    outputs, _ = exported.call(states, np.ones((4, 3)))
    assert [np.shape(out) for out in outputs] == [(4,), (4, 2)]
    with pytest.raises(ValueError, match="shape"):
        exported.call(stacked(chain_states(exported, 3)), np.ones((3, 3)))


@pytest.mark.parametrize(
    "chains, error, message",
    [
        (0, ValueError, r"chains=0: a program runs at least 1 chain; give a positive number or 'chains'"),
        (True, TypeError, r"chains=True: give the number of chains \(an int\), the name of a symbolic number"),
        (2.0, TypeError, r"chains=2.0: give the number of chains"),
        ("a, b", ValueError, r"chains='a, b' names 2 dimensions; give one name, such as 'chains'"),
        ("3 chains", ValueError, r"chains='3 chains' is not the name of one dimension \(syntax error"),
    ],
)
def test_a_wrong_number_of_chains_says_what_to_give(chains, error, message):
    with pytest.raises(error, match=message):
        export_graph(noisy_sum(), chains=chains)


def test_errors_name_what_is_wrong():
    f = noisy_sum()
    with pytest.raises(ValueError, match=r"'tpuu' is not one JAX exports for; name one or more of 'cpu'"):
        export_graph(f, platforms=["cpu", "tpuu"])
    with pytest.raises(TypeError, match="not compiled with aejax's mode"):
        export_graph(noisy_sum(mode=REFERENCE))
    with pytest.raises(TypeError, match="takes a function compiled with aesara.function.*not int"):
        export_graph(3)
    with pytest.raises(TypeError, match=r"one shape argument per input \(x\), or none, not 2"):
        export_graph(f, "n", "n")
    with pytest.raises(TypeError, match=r"input 'x' \(argnum 1\).*1 dimension.*shape \(2, 3\)"):
        export_graph(f, np.zeros((2, 3)))


def test_an_op_run_through_a_callback_says_to_register_a_lowering():
    x = at.tensor("float64", shape=(2,), name="x")
    f = aesara.function([x], PythonDouble()(x) + 1, mode="AEJAX")
    with pytest.warns(CallbackWarning), pytest.raises(LoweringError, match="cannot serialize a callback: register"):
        export_graph(f)


def test_bytes_that_are_not_an_export_say_so():
    with pytest.raises(ValueError, match="not a serialized aejax export"):
        ExportedGraph.deserialize(b"not a zip archive")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("description.json", json.dumps({"format": "other-format"}))
    with pytest.raises(ValueError, match=f"does not describe an aejax export.*{FORMAT}"):
        ExportedGraph.deserialize(buffer.getvalue())


def test_the_docs_examples_run_as_written(tmp_path):
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS.read_text(), re.MULTILINE | re.DOTALL)
    assert len(blocks) == 4 and "from loader import load" in runner_code()
    shutil.copy(loader.__file__, tmp_path / "loader.py")
    checks = "assert len(outputs) == 3 and description['x64'] and chain_outputs.shape == (8, 3)"
    script = "\n".join([*blocks, checks])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
