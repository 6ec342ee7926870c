"""The many-chain NUTS programs: exported here, run by the runner in a process where Aesara cannot be imported."""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from aejax.adapters.jax_api import disable_x64
from aejax.linker import export_graph

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import many_chains  # noqa: E402
import workloads  # noqa: E402

CHAINS = 2
TRANSITIONS = 5

# Run as `python -I -c`: the runner with Aesara, aejax and the samplers' packages
# blocked, and flatbuffers found only in a folder named like the builder's copy,
# so the runner must put that copy on sys.path itself.
WITHOUT_AESARA = """
import importlib.machinery, runpy, sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("aesara", "aejax", "aehmc", "aeppl", "numpyro"):
            raise ImportError(f"{name} is blocked")
        if name == "flatbuffers":
            copies = [entry for entry in sys.path if entry.endswith("flatbuffers_pkg")]
            spec = importlib.machinery.PathFinder.find_spec(name, copies)
            if spec is None:
                raise ImportError("flatbuffers is blocked but for the builder's copy")
            return spec
        return None

sys.meta_path.insert(0, Blocker())
runner = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(runner, run_name="__main__")
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The Gaussian programs at 2 chains and 5 transitions: built, then run by the runner without Aesara."""
    folder = tmp_path_factory.mktemp("many_chains")
    programs = many_chains.make_programs(["gaussian"], TRANSITIONS)
    manifest = many_chains.write_programs(programs, folder / "programs", (CHAINS,))
    results_file, outputs = folder / "results.json", folder / "outputs"
    command = [
        sys.executable,
        "-I",
        "-c",
        WITHOUT_AESARA,
        str(BENCHMARKS / "chains_runner.py"),
        str(folder / "programs"),
    ]
    command += ["--out", str(results_file), "--pair-s", "0.2", "--max-calls", "6", "--save-outputs", str(outputs)]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return programs, manifest, json.loads(results_file.read_text()), outputs


def test_the_runner_times_and_checks_both_programs(run):
    _, manifest, results, _ = run
    assert manifest["programs"][0]["inputs"][0]["shape"] == ["chains", 4, 2]
    assert results["platform"] == "cpu" and results["jax_version"] == jax.__version__
    assert results["xla_flags"] == os.environ.get("XLA_FLAGS", "")
    assert sorted(r["implementation"] for r in results["programs"]) == ["aejax", "numpyro"]
    for record in results["programs"]:
        assert record["chains"] == CHAINS and record["calls"] >= 5
        times = [record["compile_s"], record["first_run_s"], record["median_ms"], *record["call_ms"]]
        assert np.all(np.isfinite(times)) and min(times) > 0
        assert record["check"]["finite"] and record["check"]["shapes_ok"]


# Tracing warns of the checks the program cannot raise and of each value made 32 bits.
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_each_chain_of_the_run_program_is_what_the_export_of_one_chain_gives(run):
    programs, _, _, outputs = run
    program = next(p for p in programs if p.implementation == "aejax")
    graph = many_chains.aejax_graph(workloads.gaussian_setup(TRANSITIONS))
    with disable_x64():
        one = export_graph(graph, np.zeros(2), platforms="cpu")
    key_data = many_chains.chain_key_data(program, CHAINS)
    exported = np.load(outputs / f"{program.name}-{CHAINS}.npz")
    assert exported["positions"].shape == (CHAINS, TRANSITIONS, 2)
    for chain in range(CHAINS):
        state = {name: key_data[chain, row] for row, name in enumerate(graph.state)}
        (positions, acceptance), new_state = one.call(state, np.zeros(2, np.float32))
        expected = np.stack([new_state[name] for name in graph.state]), positions, acceptance
        for name, value in zip(("key_data", "positions"), expected):
            np.testing.assert_array_equal(exported[name][chain], np.asarray(value), err_msg=f"{name} of chain {chain}")
        # JAX 0.12's XLA:CPU rounds the batched program's float32 acceptance (an exp) 1 ulp apart from one chain's
        np.testing.assert_array_max_ulp(exported["acceptance"][chain], np.asarray(expected[2]), maxulp=1)


def test_the_tables_and_op_counts(run, capsys):
    _, manifest, results, outputs = run
    row = many_chains.result_rows(results)[0]
    assert row["aejax/NumPyro"] == pytest.approx(row["aejax ms"] / row["numpyro ms"])
    assert "| gaussian | 2 |" in many_chains.markdown_table(results)
    assert ".. list-table:: cpu" in many_chains.rst_table(results)
    counts = many_chains.count_ops('%1 = "stablehlo.gather"(%0) <{operand_batching_dims = [0]}>')
    assert counts["gathers"] == counts["batched gathers"] == 1 and counts["scatters"] == 0
    assert manifest["programs"][1]["name"] == "numpyro-gaussian"
    aejax_ops = manifest["programs"][0]["ops"]
    assert aejax_ops["tpu"]["batched gathers"] == aejax_ops["tpu"]["batched scatters"] == 0
    many_chains.ops(argparse.Namespace(dir=outputs.parent / "programs"))
    assert "| aejax-gaussian | tpu |" in capsys.readouterr().out


def test_eight_schools_exported_with_leapfrog_steps_and_the_ess_of_the_runner_s_draws(tmp_path):
    pytest.importorskip("arviz")
    programs = many_chains.make_programs(["eight_schools"], transitions=8)
    manifest = many_chains.write_programs(programs, tmp_path / "programs", (CHAINS,), count_steps=True)
    assert all(
        entry["true_mean"] is None and entry["leapfrog_steps_per_transition"] >= 1 for entry in manifest["programs"]
    )
    chains_runner = pytest.importorskip("chains_runner")
    results_file, outputs = tmp_path / "results.json", tmp_path / "outputs"
    options = ["--out", str(results_file), "--pair-s", "0.1", "--max-calls", "3", "--save-outputs", str(outputs)]
    chains_runner.main([str(tmp_path / "programs"), *options])
    rows = many_chains.ess_rows(manifest, json.loads(results_file.read_text()), outputs)
    assert sorted(row["implementation"] for row in rows) == ["aejax", "numpyro"]
    steps = {entry["name"]: entry["leapfrog_steps_per_transition"] for entry in manifest["programs"]}
    for row in rows:  # the second half of 8 transitions is kept
        assert row["ess"] > 0 and row["ess_per_draw"] == pytest.approx(row["ess"] / (CHAINS * 4))
        assert row["ess_per_step"] == pytest.approx(row["ess_per_draw"] / steps[row["name"]])
    numpyro_row = next(row for row in rows if row["implementation"] == "numpyro")
    assert numpyro_row["ess_per_step / NumPyro"] == 1.0


def test_the_jaxify_route_runs_numpyro_s_nuts_on_the_aesara_log_density_as_on_numpyro_s_potential():
    numpyro_program, jaxify_program = many_chains.make_programs(
        ["eight_schools"], transitions=4, implementations=["numpyro", "jaxify"]
    )
    key_data = many_chains.chain_key_data(numpyro_program, CHAINS)
    q0 = np.random.default_rng(0).uniform(-2, 2, size=(CHAINS, numpyro_program.dims)).astype(np.float32)
    with disable_x64():
        _, expected, _ = jax.jit(numpyro_program.batched(("cpu",)))(key_data, q0)
        _, positions, _ = jax.jit(jaxify_program.batched(("cpu",)))(key_data, q0)
    assert positions.shape == (CHAINS, 4, numpyro_program.dims)
    np.testing.assert_allclose(np.asarray(positions), np.asarray(expected), rtol=1e-3, atol=1e-3)
