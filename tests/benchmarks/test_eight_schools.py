"""The eight-schools benchmark: a round of NumPyro's own model in a new process, and the table's ratios."""

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import eight_schools  # noqa: E402

CONTRACT = {"route", "chains", "warmup", "draws", "seconds", "ess_bulk", "leapfrog_steps_per_transition"}
CONTRACT |= {"divergences", "posterior_mean"}


def test_a_smoke_run_of_numpyro_s_own_model_writes_the_example_s_fields(tmp_path, capsys):
    pytest.importorskip("numpyro")
    pytest.importorskip("arviz")
    saved_path = tmp_path / "eight_schools.json"
    sizes = ["--chains", "2", "--warmup", "10", "--draws", "10", "--rounds", "1", "--variants", "cold"]
    eight_schools.main(["--routes", "numpyro_model", *sizes, "--save", str(saved_path), "--rst"])
    saved = json.loads(saved_path.read_text())
    (run,) = saved["runs"]
    assert CONTRACT <= set(run) and run["route"] == "numpyro_model" and run["chains"] == 2
    assert set(run["seconds"]) == {"imports", "compile", "warmup", "draws"}
    assert run["first_result_s"] > sum(run["seconds"].values()) > 0
    assert set(run["ess_bulk"]) == set(run["posterior_mean"]) == {"mu", "tau"}
    assert run["leapfrog_steps_per_transition"] >= 1
    (row,) = saved["rows"]
    assert row["vs_numpyro"]["first_result_s"] == 1.0
    printed = capsys.readouterr().out
    assert "NumPyro's own model" in printed and '   cold, 2, "NumPyro\'s own model", ' in printed


def a_run(route, round_number, first_result_s, ess, leapfrog):
    return {
        "variant": "cold",
        "round": round_number,
        "route": route,
        "chains": 4,
        "draws": 100,
        "first_result_s": first_result_s,
        "seconds": {"imports": 1.0, "compile": 2.0, "warmup": 3.0, "draws": 1.0},
        "ess_bulk": {"mu": ess, "tau": ess + 50},
        "leapfrog_steps_per_transition": leapfrog,
        "divergences": 0,
    }


def test_ratios_are_medians_of_each_round_s_ratio_to_numpyro_s_own_model():
    runs = [
        a_run("aehmc", 0, 30.0, 100.0, 5.0),
        a_run("numpyro_model", 0, 10.0, 400.0, 10.0),
        a_run("aehmc", 1, 20.0, 100.0, 5.0),
        a_run("numpyro_model", 1, 20.0, 400.0, 10.0),
        a_run("aehmc", 2, 90.0, 100.0, 5.0),
        a_run("numpyro_model", 2, 30.0, 400.0, 10.0),
        {"variant": "cold", "round": 3, "route": "aehmc", "chains": 4, "failed": 1, "stderr": "MemoryError"},
    ]
    rows = {row["route"]: row for row in eight_schools.summarize(runs)}
    aehmc = rows["aehmc"]
    assert aehmc["first_result_s"] == 30.0 and aehmc["vs_numpyro"]["first_result_s"] == 3.0  # rounds: 3, 1, 3
    assert aehmc["ess"] == 100.0 and aehmc["ess_per_s"] == 25.0  # min of mu, tau over 4 s of sampling
    assert aehmc["ess_per_draw"] == 100.0 / 400 and aehmc["vs_numpyro"]["ess_per_draw"] == 0.25
    assert aehmc["ess_per_step"] == 100.0 / 2000 and aehmc["vs_numpyro"]["ess_per_step"] == 0.5
    assert "aehmc NUTS on aejax" in eight_schools.table(list(rows.values()))


def test_a_route_that_counts_no_leapfrog_steps_has_no_ess_per_step():
    runs = [a_run("aehmc", 0, 30.0, 100.0, None), a_run("numpyro_model", 0, 10.0, 400.0, 10.0)]
    aehmc = next(row for row in eight_schools.summarize(runs) if row["route"] == "aehmc")
    assert aehmc["leapfrog_steps_per_transition"] is None and aehmc["ess_per_step"] is None
    assert "ess_per_step" not in aehmc["vs_numpyro"] and aehmc["vs_numpyro"]["ess_per_draw"] == 0.25
    assert " - " in eight_schools.table([aehmc])
