"""The benchmark workloads: the hand-written JAX computes what the Aesara graph computes; the runner's tables."""

import contextlib
import dataclasses
import sys
import time
from pathlib import Path

import aesara.tensor
import jax
import numpy as np
import pytest

import aejax.linker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import run  # noqa: E402
import workloads  # noqa: E402

SMALL = workloads.suite(scale=0.01)


def as_list(outputs):
    return outputs if isinstance(outputs, list) else [outputs]


def hand_outputs(work, count):
    """The hand-written version's last ``count`` outputs, as numpy: those the graph's outputs correspond to
    (the random walk's hand-written version also returns its key, first)."""
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(work.jax_fn(*work.jax_args))[-count:]]


def calls(fn, args, times=3):
    return [as_list(fn(*args)) for _ in range(times)]


def advances(results):
    """Repeated calls from the same inputs did not all return the same first output."""
    return len({result[0].tobytes() for result in results}) > 1


RANDOM = [
    "Gaussian random walk",
    "P2 add normal noise",
    "HMC transition",
    "NUTS 2-D Gaussian",
    "NUTS logistic regression",
    "NUTS softplus regression",
]


SGD = [name for name in SMALL if name.startswith("SGD step")]


@pytest.mark.parametrize("name", [name for name in SMALL if name not in RANDOM + SGD])
def test_hand_written_jax_matches_the_graph(name):
    work = SMALL[name]()
    assert (work.name, work.updates) == (name, None)
    ours = as_list(work.aesara_function(work.aejax_mode)(*work.args))
    hand = hand_outputs(work, len(ours))
    assert len(ours) == len(hand)
    for got, want in zip(ours, hand):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", RANDOM)
def test_random_workloads_draw_finite_values_that_advance(name):
    """Same shapes as the hand-written version, finite, and the generators advance from call to call."""
    work = SMALL[name]()
    assert work.name == name and work.updates
    ours = calls(work.aesara_function(aejax.linker.mode), work.args)
    assert all(np.isfinite(out).all() for out in ours[0])
    assert advances(ours)
    if work.jax_fn is None:
        return
    hand = [hand_outputs(work, len(ours[0])) for _ in range(3)]
    assert [out.shape for out in ours[0]] == [out.shape for out in hand[0]]
    assert all(np.isfinite(out).all() for out in hand[0])
    if isinstance(work.jax_fn, workloads.KeyedJax):  # the random walk's takes the same key every call
        assert advances(hand)


@pytest.mark.parametrize("logprob", [workloads.logistic_logprob, workloads.softplus_logprob], ids=["aeppl", "softplus"])
def test_logistic_log_densities_are_the_negated_jax_potential(logprob):
    X, y = workloads.logistic_data()
    q = aesara.tensor.dvector("q")
    density = aesara.function([q], logprob(X, y)(q), mode="FAST_COMPILE")
    potential = workloads.logistic_potential(X, y)
    for point in ([0.0, 0.0, 0.0], [1.0, -0.5, 0.25], [-2.0, 3.0, 0.5]):
        np.testing.assert_allclose(density(np.array(point)), -potential(np.array(point)), rtol=1e-12)


def test_p1_on_device_takes_and_returns_jax_arrays_on_both_sides():
    work = SMALL["P1 on device"]()
    assert work.aejax_mode == "AEJAX_DEVICE" and isinstance(work.args[0], jax.Array)
    assert work.args == work.jax_args
    for fn in (work.aesara_function(work.aejax_mode), work.jax_fn):
        out = fn(*work.args)
        assert isinstance(out, jax.Array) and not isinstance(out, np.ndarray)


@pytest.mark.parametrize("name", SGD)
def test_sgd_steps_update_the_same_weights_as_the_donated_jax_step(name):
    """Three steps each: the same losses, and the shared ``W`` ends where the hand-written step's ``W`` does."""
    work = SMALL[name]()
    (W,) = work.updates
    assert W.get_value().shape == (int(name.rpartition("=")[2]),) * 2
    ours = work.aesara_function(work.aejax_mode)
    losses = [[float(fn(*args)) for _ in range(3)] for fn, args in ((ours, work.args), (work.jax_fn, work.jax_args))]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-10)
    assert losses[0][2] < losses[0][0]
    np.testing.assert_allclose(W.get_value(), np.asarray(work.jax_fn.W), rtol=1e-10, atol=1e-14)


def test_nuts_has_no_anchor_without_numpyro(monkeypatch):
    monkeypatch.setitem(sys.modules, "numpyro", None)
    monkeypatch.setitem(sys.modules, "numpyro.infer.hmc", None)
    assert workloads.numpyro_nuts(workloads.gaussian_logprob, 5, 0.25, 2, seed=0) is None


def test_runner_reports_ratios():
    result = run.measure(SMALL["scalar recurrence"](), rounds=1, with_c=False)
    assert set(result["ratio"]) == set(result["round_ratios"]) == {"aejax"}
    assert result["ratio"]["aejax"] == result["round_ratios"]["aejax"][0] > 0
    assert result["call"]["aejax"] > 0 and result["compile"]["jax"] > 0


def test_runner_compiles_each_workload_in_its_own_mode(monkeypatch):
    work = SMALL["P1 on device"]()
    modes, compile_in = [], work.aesara_function
    monkeypatch.setattr(work, "aesara_function", lambda mode: modes.append(mode) or compile_in(mode))
    found = run.systems(work, with_c=False)
    assert modes == ["AEJAX_DEVICE"]
    assert isinstance(found["aejax"][1](), jax.Array)


def test_runner_measures_a_workload_without_hand_written_jax():
    work = dataclasses.replace(workloads.add_one(), jax_fn=None, jax_args=())
    result = run.measure(work, rounds=1, with_c=False)
    assert result["ratio"] == {}
    assert set(result["call"]) == set(result["compile"]) == {"aejax"}


UNANCHORED = {"name": "unanchored", "target": 1.5, "call": {"aejax": 0.0805}, "compile": {"aejax": 20.0}, "ratio": {}}


def test_table_shows_a_dash_for_each_missing_system_and_ratio():
    assert run.table_row(UNANCHORED).split() == ["unanchored", "80.500", "-", "-", "-", "1.5", "-", "20.00/-/-"]


def test_readme_row_shows_a_dash_for_each_missing_system_and_ratio():
    assert run.rst_row(UNANCHORED) == '   "unanchored", 80.5, -, -, -, 1.5, -, "20.00 / - / -"'


def test_chart_leaves_out_workloads_without_hand_written_jax(monkeypatch):
    drawn = {}
    monkeypatch.setattr(run.figures, "ratio_bars", lambda path, title, names, ratios: drawn.update(names=names))
    with_anchor = {"name": "a", "ratio": {"aejax": 1.1, "aesara C": 3.0}}
    run.plot([with_anchor, {"name": "b", "ratio": {}}], "chart.png")
    assert drawn["names"] == ["a"]


def test_only_picks_workloads_by_part_of_their_name():
    assert run.chosen(list(SMALL), ["nuts"]) == [
        "NUTS 2-D Gaussian",
        "NUTS logistic regression",
        "NUTS softplus regression",
    ]
    with pytest.raises(SystemExit, match="no workload matches --only nothing"):
        run.chosen(list(SMALL), ["nothing"])


def test_microsecond_calls_are_timed_many_times():
    count = []
    run.interleaved_medians({"a": lambda: count.append(1)}, budget=1.0, max_calls=500)
    assert len(count) == 500


def test_systems_take_turns_within_a_round():
    calls = []

    def call(name):
        return lambda: calls.append(name)

    medians = run.interleaved_medians({"b": call("b"), "a": call("a")}, turn=0.0, max_calls=3)
    assert calls == ["b", "a"] * 3
    assert set(medians) == {"a", "b"}
    calls.clear()
    run.interleaved_medians({"b": call("b"), "a": call("a")}, turn=10.0, max_calls=4)
    assert calls == ["b"] * 4 + ["a"] * 4


def test_the_c_backend_is_called_apart_from_the_jax_systems():
    assert run.call_groups(["aejax", "jax", "aesara C"]) == [["aejax", "jax"], ["aesara C"]]
    assert run.call_groups(["aejax"]) == [["aejax"]]


def test_a_slow_call_is_timed_once_per_round():
    calls = []
    run.interleaved_medians({"slow": lambda: calls.append(time.sleep(0.02))}, budget=0.001)
    assert len(calls) == 1


def test_the_saved_table_says_whether_cpu_computations_ran_inline():
    assert run.run_info(run.parse_args(["--cpu-sync-dispatch"]))["cpu_sync_dispatch"] is True
    assert run.run_info(run.parse_args([]))["cpu_sync_dispatch"] is False


def test_the_saved_table_says_which_xla_flags_it_ran_under(monkeypatch):
    loop_kernels = "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=65536"
    monkeypatch.setenv("XLA_FLAGS", loop_kernels)
    assert run.run_info(run.parse_args([]))["xla_flags"] == loop_kernels
    monkeypatch.delenv("XLA_FLAGS")
    assert run.run_info(run.parse_args([]))["xla_flags"] == ""


@pytest.mark.parametrize("mode", ["AEJAX", "FAST_COMPILE"])
def test_the_evaluation_counter_counts_the_leapfrog_steps_of_an_hmc_transition(mode):
    """Six integration steps from a given state and gradient: six evaluations, on AEJAX and in Python."""
    counter = workloads.EvaluationCounter()
    q, energy, grad = aesara.tensor.dvector(), aesara.tensor.dscalar(), aesara.tensor.dvector()
    srng = workloads.RandomStream(0)
    kernel = workloads.hmc.new_kernel(srng, lambda x: workloads.gaussian_logprob(counter(x)))
    (q_new, *_), _ = kernel(q, energy, grad, np.float64(0.25), aesara.tensor.ones(2), 6)
    with pytest.warns(aejax.linker.CallbackWarning) if mode == "AEJAX" else contextlib.nullcontext():
        step = aesara.function([q, energy, grad], q_new, updates=srng.updates(), mode=mode)
        step(*workloads.gaussian_state(np.zeros(2)))
    assert counter.count == 6, mode


def test_nuts_workloads_count_gradients_per_transition_for_both_samplers():
    work = SMALL["NUTS 2-D Gaussian"]()
    counts = work.gradients()
    assert work.transitions == 5 and set(counts) == {"aejax", "jax"}
    assert all(1 <= count <= 2**10 for count in counts.values()), counts  # NUTS takes 1 to 2**max_depth steps


def test_runner_reports_time_per_transition_and_per_gradient():
    result = {"call": {"aejax": 0.02, "jax": 0.01}, "transitions": 100, "gradients": {"aejax": 4.0, "jax": 10.0}}
    steps = run.per_step(result)
    assert steps["transition"] == pytest.approx({"aejax": 2e-4, "jax": 1e-4})
    assert steps["gradient"] == pytest.approx({"aejax": 5e-5, "jax": 1e-5})
    assert run.sampler_cells(result) == ["200.0/100.0", "4.0/10.0", "50.00/10.00", "5.00"]
    assert run.per_step({"call": {"aejax": 1.0}}) is None


def test_the_eight_schools_log_density_is_numpyro_s_model_s_in_both_aesara_and_jax():
    """Against NumPyro's own model's potential energy (log tau unconstrained): equal up to one constant."""
    pytest.importorskip("numpyro")
    import eight_schools_numpyro
    from numpyro.infer.util import potential_energy

    points = np.random.default_rng(2).normal(size=(4, 10)) * [5.0, 1.0, *[1.0] * 8]
    q = aesara.tensor.dvector("q")
    logprob = aesara.function([q], workloads.eight_schools_setup(1).logprob(q), mode="FAST_COMPILE")
    sigma, y = np.array(eight_schools_numpyro.STANDARD_ERRORS), np.array(eight_schools_numpyro.TREATMENT_EFFECTS)
    numpyro_potentials = [
        float(
            potential_energy(
                eight_schools_numpyro.model,
                (sigma,),
                {"y": y},
                {"mu": point[0], "tau": point[1], "theta_tilde": point[2:]},
            )
        )
        for point in points
    ]
    offsets = [logprob(point) + theirs for point, theirs in zip(points, numpyro_potentials)]
    np.testing.assert_allclose(offsets, offsets[0], rtol=1e-9, atol=1e-9)
    jax_potential = workloads.eight_schools_setup(1).potential
    np.testing.assert_allclose([-float(jax_potential(point)) for point in points], [logprob(p) for p in points])
