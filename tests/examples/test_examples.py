"""Every example runs, on small sizes, its numbers agree with the reference backend, and it draws its figure."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import aesara
import numpy as np
import pytest

from tests.reference import REFERENCE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def load(name):
    sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Run the example in an empty working directory, where its figure goes."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check_figure(directory, name, out):
    """The figure is written, non-empty and named in the output; without matplotlib, the output says how to get it."""
    if not HAVE_MATPLOTLIB:
        assert "pip install '.[examples]'" in out
        return
    figure = directory / name
    assert figure.stat().st_size > 5_000
    assert figure.read_bytes().startswith(b"\x89PNG")
    assert f"figure: {figure.resolve()}" in out


def has_timing(out, what, backend="aejax (JAX)", unit="call"):
    """A timing line labelled with the function it times and the backend."""
    return re.search(rf"^  {re.escape(what)} +{re.escape(backend)} +compile\+first {unit} .* per {unit} ", out, re.M)


def last_line(out):
    return out.strip().splitlines()[-1]


def test_codec_roundtrip_example():
    done = subprocess.run([sys.executable, str(EXAMPLES / "codec_roundtrip.py")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert last_line(done.stdout).endswith("encode(decode(key)) == key: yes")


def test_seir_example_matches_reference(in_tmp, capsys):
    seir = load("seir")
    result = seir.main(days=60, calls=1, with_c=False)
    captured = capsys.readouterr()
    assert has_timing(captured.out, "seir(true rates) -> loglik, cases, I")
    assert last_line(captured.out) == "log-likelihood at the true rates is higher than at beta=0.3: yes"
    assert "[seir(true rates) -> loglik, cases, I 1/1] compile and run on aejax (JAX)" in captured.err
    check_figure(in_tmp, "seir.png", captured.out)
    assert result["loglik"] > result["wrong_loglik"]
    assert abs(result["beta"] - seir.TRUE_RATES[0]) <= 0.02
    inputs, outputs = seir.seir_graph()
    cases = seir.synthetic_cases(60)
    reference = aesara.function(inputs, outputs, mode=REFERENCE)
    loglik, expected, infectious = reference(*seir.TRUE_RATES, *seir.START, cases)
    np.testing.assert_allclose(result["loglik"], loglik, rtol=1e-10)
    np.testing.assert_allclose(result["infectious"], infectious, rtol=1e-10)


def test_stochastic_volatility_example(in_tmp, capsys):
    result = load("stochastic_volatility").main(steps=100, chains=2000, calls=1, with_c=False)
    captured = capsys.readouterr()
    assert has_timing(captured.out, "jit(vmap(jaxify fn)), 100 chains", "JAX", "batch")
    assert "[chains 20/20] chains 1901-2000" in captured.err
    assert last_line(captured.out).endswith("within 10% of sigma*sqrt(steps)=1.000: yes")
    check_figure(in_tmp, "stochastic_volatility.png", captured.out)
    assert result["log_vol"].shape == result["returns"].shape == (100,)
    assert abs(result["finals"].mean() + 1.0) < 0.1
    assert abs(result["finals"].std() - 1.0) < 0.06


def test_rnn_training_example_matches_reference(in_tmp, capsys):
    rnn = load("rnn_training")
    losses = rnn.main(steps=30, batch=4, hidden=8, epochs=5, with_c=False)["aejax (JAX)"]
    captured = capsys.readouterr()
    assert has_timing(captured.out, "train epoch: loss, grad, update", unit="epoch")
    assert last_line(captured.out).startswith("the loss fell below a tenth of its first value: ")
    check_figure(in_tmp, "rnn_training.png", captured.out)
    assert losses[-1] < losses[0]
    xs, ys = rnn.sine_data(30, 4)
    train = rnn.training_function(8, REFERENCE)
    np.testing.assert_allclose(losses, [float(train(xs, ys)) for _ in range(5)], rtol=1e-9)


def test_nuts_example(in_tmp, capsys):
    result = load("nuts").main(chains=2, draws=200, with_c=False)
    captured = capsys.readouterr()
    assert has_timing(captured.out, "NUTS chain: 300 transitions -> q, accept", unit="chain")
    assert "[NUTS chains on aejax (JAX) 2/2] chain 2" in captured.err
    assert last_line(captured.out) == (
        "aejax (JAX) posterior mean agrees with the target's within Monte Carlo error (4 s.e.): yes"
    )
    check_figure(in_tmp, "nuts_posterior.png", captured.out)
    positions, accepts = result["samples"]["aejax (JAX)"], result["accepts"]["aejax (JAX)"]
    assert positions.shape == (2, 200, 2) and accepts.shape == (2, 200)
    assert np.all((accepts >= 0) & (accepts <= 1 + 1e-12)), accepts.max()  # sums of exponentials round up
    assert abs(np.corrcoef(positions.reshape(-1, 2).T)[0, 1] - 0.5) < 0.15


@pytest.mark.filterwarnings("error:the check:UserWarning")  # every check of the graph is checked
def test_many_chains_example(in_tmp, capsys):
    pytest.importorskip("arviz")
    example = load("many_chains")
    result = example.main(chains=8, draws=150)
    out = capsys.readouterr().out
    idata = result["idata"]
    assert dict(idata.posterior["beta"].sizes) == {"chain": 8, "draw": 150, "coefficient": 3}
    positions = result["positions"]
    assert len({tuple(chain[0]) for chain in positions}) == 8  # the chains are distinct
    assert np.all((result["accepts"] >= 0) & (result["accepts"] <= 1 + 1e-12))
    # The exact posterior is computed here independently of the example's own formula.
    X, y = example.regression_data()
    precision = X.T @ X + np.eye(3) / example.PRIOR_SD**2
    exact_mean = np.linalg.solve(precision, X.T @ y)
    exact_sd = np.sqrt(np.diag(np.linalg.inv(precision)))
    drawn = positions.reshape(-1, 3)
    assert np.all(np.abs(drawn.mean(0) - exact_mean) < 0.5 * exact_sd), (drawn.mean(0), exact_mean)
    assert np.all(np.abs(drawn.std(0) / exact_sd - 1) < 0.3), drawn.std(0) / exact_sd
    assert re.search(r"^largest R-hat 1\.\d{4}, below 1.01: (yes|no)$", out, re.M)
    check_figure(in_tmp, "many_chains_trace.png", out)


@pytest.mark.parametrize("name", ["many_chains", "numpyro_aeppl"])
def test_a_picture_asked_for_without_a_path_goes_to_the_current_directory(name):
    """Not over a file of the repository (the README's picture is redrawn by giving its path)."""
    pytest.importorskip("numpyro" if name == "numpyro_aeppl" else "arviz")
    figure = load(name).FIGURE
    assert Path(figure).name == str(figure)


def test_newton_example(capsys):
    result = load("newton").main(size=1000, max_steps=200, calls=1, with_c=False)
    out = capsys.readouterr().out
    assert has_timing(out, "newton -> roots (trace[-1])") and has_timing(out, "newton -> steps (trace.shape[0])")
    assert last_line(out) == "every root matches numpy.sqrt to 1e-12 (relative): yes"
    np.testing.assert_allclose(result["roots"], np.sqrt(result["values"]), rtol=1e-12)
    assert 5 < result["steps"] < 200


def test_examples_without_matplotlib_say_how_to_get_the_pictures(in_tmp, capsys, monkeypatch):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    load("seir").main(days=30, calls=1, with_c=False)
    out = capsys.readouterr().out
    assert "figure seir.png not written: matplotlib is not installed" in out
    assert "(pip install '.[examples]' for the pictures)" in out
    assert last_line(out).endswith(": yes")
    assert not (in_tmp / "seir.png").exists()


def test_progress_draws_a_bar_on_a_terminal(capsys):
    progress_module = load("progress")

    class Terminal:
        def __init__(self):
            self.text = ""

        def isatty(self):
            return True

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    terminal = Terminal()
    with progress_module.Progress("work", 4, terminal) as progress:
        progress.step("one")
        progress.step("two")
        progress.print("result of one")
    assert "work [#####---------------] 1/4 two" in terminal.text
    assert terminal.text.endswith("\r\033[K")
    assert capsys.readouterr().out == "result of one\n"
