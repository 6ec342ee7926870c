"""Every example runs, on small sizes, and its numbers agree with the reference backend."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import aesara
import numpy as np

from tests.reference import REFERENCE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name):
    sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_codec_roundtrip_example():
    done = subprocess.run([sys.executable, str(EXAMPLES / "codec_roundtrip.py")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "encode(decode(key)) == key: True" in done.stdout


def test_seir_example_matches_reference(capsys):
    seir = load("seir")
    result = seir.main(days=60, calls=1, with_c=False)
    assert "log-likelihood" in capsys.readouterr().out
    assert result["loglik"] > result["wrong_loglik"]
    inputs, outputs = seir.seir_graph()
    cases = seir.synthetic_cases(60)
    start = (seir.POPULATION - 10.0, 0.0, 10.0, 0.0)
    loglik, expected, infectious = aesara.function(inputs, outputs, mode=REFERENCE)(*seir.TRUE_RATES, *start, cases)
    np.testing.assert_allclose(result["loglik"], loglik, rtol=1e-10)
    np.testing.assert_allclose(result["infectious"], infectious, rtol=1e-10)


def test_stochastic_volatility_example():
    result = load("stochastic_volatility").main(steps=100, chains=2000, calls=1, with_c=False)
    assert result["log_vol"].shape == result["returns"].shape == (100,)
    assert abs(result["finals"].mean() + 1.0) < 0.1
    assert abs(result["finals"].std() - 1.0) < 0.06


def test_rnn_training_example_matches_reference():
    rnn = load("rnn_training")
    losses = rnn.main(steps=30, batch=4, hidden=8, epochs=5, with_c=False)["aejax (JAX)"]
    assert losses[-1] < losses[0]
    xs, ys = rnn.sine_data(30, 4)
    train = rnn.training_function(8, REFERENCE)
    np.testing.assert_allclose(losses, [float(train(xs, ys)) for _ in range(5)], rtol=1e-9)


def test_newton_example():
    result = load("newton").main(size=1000, max_steps=200, calls=1, with_c=False)
    np.testing.assert_allclose(result["roots"], np.sqrt(result["values"]), rtol=1e-12)
    assert 5 < result["steps"] < 200
