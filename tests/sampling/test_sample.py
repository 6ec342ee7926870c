"""`aejax.sampling.sample`: posteriors against exact ones, what InferenceData holds, keys, checks, starts, errors."""

import aesara.tensor as at
import arviz as az
import jax
import numpy as np
import pytest
from aeppl.logprob import ParameterValueError
from aeppl.transforms import LogTransform
from aesara.tensor.random.utils import RandomStream
from scipy import stats

from aejax.sampling import sample
from tests.processes import run_in_processes
from tests.two_devices import run_on_devices

DATA = np.random.default_rng(42).normal(1.5, 2.0, size=20)
"""Observations of the normal models below."""

SHORT = dict(chains=2, warmup=300, draws=500, progress=False)


def normal_mean_model():
    """``mu ~ N(0, 10)``, ``y ~ N(mu, 2)``: the posterior of ``mu`` is normal, known exactly."""
    srng = RandomStream(1)
    mu = srng.normal(0.0, 10.0, name="mu")
    y = srng.normal(mu, 2.0, size=len(DATA), name="y")
    return mu, y


def normal_scale_model():
    """``sigma ~ HalfNormal(1)``, ``y ~ N(0, sigma)``: the posterior of ``sigma`` lives on (0, inf)."""
    srng = RandomStream(2)
    sigma = srng.halfnormal(0.0, 1.0, name="sigma")
    y = srng.normal(0.0, sigma, size=len(DATA), name="y")
    return sigma, y


def exact_mean_posterior():
    """The mean and sd of ``mu``'s posterior in `normal_mean_model` (conjugate normal)."""
    precision = 1 / 10.0**2 + len(DATA) / 2.0**2
    return (DATA.sum() / 2.0**2) / precision, precision**-0.5


def quadrature_scale_posterior():
    """The mean and sd of ``sigma``'s posterior in `normal_scale_model`, by quadrature on a fine grid."""
    grid = np.linspace(1e-3, 12.0, 200_001)
    log_density = stats.halfnorm.logpdf(grid) + stats.norm.logpdf(DATA[:, None], 0.0, grid).sum(axis=0)
    weights = np.exp(log_density - log_density.max())
    weights /= weights.sum()
    mean = (weights * grid).sum()
    return mean, np.sqrt((weights * (grid - mean) ** 2).sum())


def assert_posterior(draws: np.ndarray, mean: float, sd: float) -> None:
    """posteriordb's criteria: the mean within 4 Monte Carlo standard errors, the sd within [0.8, 1.25] of the exact."""
    dataset = az.convert_to_dataset(draws)
    mcse = float(az.mcse(dataset)["x"])
    assert abs(draws.mean() - mean) < 4 * mcse, (draws.mean(), mean, mcse)
    assert 0.8 < draws.std() / sd < 1.25, (draws.std(), sd)


def installed(sampler: str, extra: str):
    """``sampler`` as a test parameter, skipped where its package (of the extra ``extra``) is not installed."""
    missing = __import__("importlib").util.find_spec(sampler) is None
    return pytest.param(
        sampler, marks=pytest.mark.skipif(missing, reason=f"{sampler} is not installed (extra {extra})")
    )


SAMPLERS = ["numpyro", installed("blackjax", "blackjax")]
"""The samplers the one-parameter posteriors below are checked on; aehmc's barely moves on one parameter (its
tests below have two)."""


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_the_posterior_of_a_normal_mean_is_the_exact_one(sampler):
    mu, y = normal_mean_model()
    idata = sample(mu, observed={y: DATA}, sampler=sampler, key=1, **SHORT)
    assert_posterior(idata.posterior["mu"].values, *exact_mean_posterior())


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_a_positive_variable_is_sampled_through_its_transform_jacobian_included(sampler):
    sigma, y = normal_scale_model()
    idata = sample(observed={y: DATA}, sampler=sampler, key=2, **SHORT)
    draws = idata.posterior["sigma"].values
    assert (draws > 0).all()
    assert_posterior(draws, *quadrature_scale_posterior())


def test_without_its_transform_a_checked_parameter_is_kept_positive_by_rejected_proposals():
    sigma, y = normal_scale_model()
    # Sampled as it is, sigma meets aeppl's check sigma > 0 at every negative proposal: rejected, not raised.
    idata = sample(sigma, observed={y: DATA}, transforms={sigma: None}, key=3, **SHORT)
    draws = idata.posterior["sigma"].values
    assert (draws > 0).all()
    assert_posterior(draws, *quadrature_scale_posterior())


def location_scale_model():
    """``mu ~ N(0, 10)``, ``sigma ~ HalfNormal(1)``, ``y ~ N(mu, sigma)``: two parameters."""
    srng = RandomStream(4)
    mu = srng.normal(0.0, 10.0, name="mu")
    sigma = srng.halfnormal(0.0, 1.0, name="sigma")
    y = srng.normal(mu, sigma, size=len(DATA), name="y")
    return mu, sigma, y


def assert_same_posterior(draws: np.ndarray, reference: np.ndarray) -> None:
    """Two samplers' draws of one parameter: means within 4 combined Monte Carlo standard errors, sds within
    [0.8, 1.25] of each other."""
    mcse = [float(az.mcse(az.convert_to_dataset(d))["x"]) for d in (draws, reference)]
    assert abs(draws.mean() - reference.mean()) < 4 * np.hypot(*mcse), (draws.mean(), reference.mean(), mcse)
    assert 0.8 < draws.std() / reference.std() < 1.25, (draws.std(), reference.std())


@pytest.mark.skipif(__import__("importlib").util.find_spec("aehmc") is None, reason="aehmc is not installed (clients)")
@pytest.mark.parametrize("transformed", [True, False], ids=["log-transformed", "checks-reject"])
def test_aehmc_samples_the_posterior_numpyro_samples(transformed):
    mu, sigma, y = location_scale_model()
    # untransformed, sigma's proposals below 0 fail aeppl's check sigma > 0 inside aehmc's trajectory: rejected
    options = dict(observed={y: DATA}, transforms=None if transformed else {sigma: None}, **{**SHORT, "chains": 4})
    reference = sample(mu, sigma, key=6, **options)
    idata = sample(mu, sigma, sampler="aehmc", key=7, **options)
    assert "tree_depth" in idata.sample_stats and (idata.posterior["sigma"].values > 0).all()
    for name in ("mu", "sigma"):
        assert_same_posterior(idata.posterior[name].values, reference.posterior[name].values)


def test_a_transform_given_by_name_replaces_the_default():
    sigma, y = normal_scale_model()
    default = sample(sigma, observed={y: DATA}, key=4, **SHORT)
    named = sample(sigma, observed={y: DATA}, transforms={"sigma": LogTransform()}, key=4, **SHORT)
    np.testing.assert_allclose(named.posterior["sigma"].values, default.posterior["sigma"].values, rtol=1e-9)


def test_inference_data_holds_the_posterior_deterministics_stats_log_likelihood_and_data():
    mu, y = normal_mean_model()
    idata = sample(
        mu, observed={y: DATA}, deterministics={"shifted": 2 * mu + 1}, dims={"y": ["observation"]}, key=5, **SHORT
    )
    mu_draws = idata.posterior["mu"].values
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "observation")
    assert idata.sample_stats.attrs["compile_time"] > 0 and idata.sample_stats.attrs["sampling_time"] > 0
    assert mu_draws.shape == (2, 500)
    np.testing.assert_allclose(idata.posterior["shifted"].values, 2 * mu_draws + 1, rtol=1e-12)
    assert set(idata.sample_stats) >= {"diverging", "acceptance_rate", "step_size", "n_steps", "energy", "lp"}
    assert idata.sample_stats["diverging"].dtype == bool
    log_likelihood = idata.log_likelihood["y"].values
    assert log_likelihood.shape == (2, 500, len(DATA))
    # 1e-8: aeppl's normal log-density is 1.9e-9 from scipy's (as Aesara's own backend computes it, too)
    np.testing.assert_allclose(log_likelihood, stats.norm.logpdf(DATA, mu_draws[..., None], 2.0), rtol=1e-8)
    np.testing.assert_array_equal(idata.observed_data["y"].values, DATA)
    exact_lp = stats.norm.logpdf(mu_draws, 0, 10) + stats.norm.logpdf(DATA, mu_draws[..., None], 2.0).sum(-1)
    np.testing.assert_allclose(idata.sample_stats["lp"].values, exact_lp, rtol=1e-8)
    assert np.isfinite(az.loo(idata).elpd_loo)


def test_the_key_decides_every_draw():
    mu, y = normal_mean_model()
    first, again, other = (sample(mu, observed={y: DATA}, key=key, **SHORT) for key in (7, 7, jax.random.key(8)))
    np.testing.assert_array_equal(first.posterior["mu"].values, again.posterior["mu"].values)
    assert not np.allclose(first.posterior["mu"].values, other.posterior["mu"].values)
    chains = first.posterior["mu"].values
    assert not np.allclose(chains[0], chains[1])


def test_a_progress_bar_changes_no_draw(capsys):
    mu, y = normal_mean_model()
    quiet = sample(mu, observed={y: DATA}, key=9, **SHORT)
    shown = sample(mu, observed={y: DATA}, key=9, **{**SHORT, "progress": True})
    np.testing.assert_array_equal(quiet.posterior["mu"].values, shown.posterior["mu"].values)
    assert "sampling" in capsys.readouterr().err


def test_a_dense_mass_matrix_samples_the_same_posterior():
    mu, y = normal_mean_model()
    idata = sample(mu, observed={y: DATA}, dense_mass=True, key=10, **SHORT)
    assert_posterior(idata.posterior["mu"].values, *exact_mean_posterior())


def test_initial_values_start_the_chains_and_a_failing_start_names_its_check_and_chain():
    sigma, y = normal_scale_model()
    run = dict(chains=2, warmup=0, draws=1, progress=False, key=11)
    idata = sample(sigma, observed={y: DATA}, initial={"sigma": [1.0, 2.0]}, **run)
    assert idata.posterior["sigma"].shape == (2, 1)
    with pytest.raises(ParameterValueError, match=r"sigma > 0 \(at the initial values given for chain 1\)"):
        sample(sigma, observed={y: DATA}, initial={"sigma": [1.0, -1.0]}, transforms={sigma: None}, **run)
    with pytest.raises(ValueError, match="initial value of 'sigma' for chain 1 lies outside its support"):
        sample(sigma, observed={y: DATA}, initial={"sigma": [1.0, -1.0]}, **run)


def test_the_free_variables_found_from_the_observed_ones_are_those_given():
    mu, y = normal_mean_model()
    found = sample(observed={y: DATA}, key=12, **SHORT)
    given = sample(mu, observed={y: DATA}, key=12, **SHORT)
    np.testing.assert_array_equal(found.posterior["mu"].values, given.posterior["mu"].values)


def unnamed():
    srng = RandomStream(0)
    mu = srng.normal(0, 1)
    return [mu], {srng.normal(mu, 1, name="y"): 0.0}


def discrete():
    srng = RandomStream(0)
    k = srng.poisson(3.0, name="k")
    return [k], {srng.normal(k, 1, name="y"): 0.0}


def wrong_shape():
    mu, y = normal_mean_model()
    return [mu], {y: DATA[:5]}


def wrong_dtype():
    srng = RandomStream(0)
    rate = srng.gamma(2.0, 1.0, name="rate")
    return [rate], {srng.poisson(rate, name="count"): 2.5}


@pytest.mark.parametrize(
    "model, options, error, match",
    [
        (unnamed, {}, ValueError, "has no name: name it"),
        (discrete, {}, TypeError, "'k' is discrete .* and not observed"),
        (wrong_shape, {}, ValueError, r"observed value of 'y' has shape \(5,\), but 'y' has shape \(20,\)"),
        (wrong_dtype, {}, TypeError, "observed value of 'count' .* cannot be taken as int64"),
        (normal_mean_model, {"sampler": "stan"}, ValueError, "sampler='stan' is not one of"),
        (normal_mean_model, {"initial": {"nu": 1.0}}, ValueError, r"initial= names \['nu'\]"),
        (normal_mean_model, {"transforms": {"nu": None}}, ValueError, "transforms= names 'nu'"),
        (normal_mean_model, {"draws": 0}, ValueError, "draws must be at least 1"),
    ],
)
def test_bad_input_is_named(model, options, error, match):
    if model is normal_mean_model:
        mu, y = normal_mean_model()
        free, observed = [mu], {y: DATA}
    else:
        free, observed = model()
    with pytest.raises(error, match=match):
        sample(*free, observed=observed, **{**SHORT, **options})


def test_a_deterministic_of_a_variable_neither_sampled_nor_observed_is_refused():
    mu, y = normal_mean_model()
    stray = RandomStream(3).normal(0, 1, name="stray")
    with pytest.raises(ValueError, match="'loose' depends on the random variable stray"):
        sample(mu, observed={y: DATA}, deterministics={"loose": mu + stray}, **SHORT)


EIGHT_DEVICES = """
from aejax.sampling import sample
import jax, numpy as np
from aesara.tensor.random.utils import RandomStream
data = np.random.default_rng(42).normal(1.5, 2.0, size=20)
srng = RandomStream(1)
mu = srng.normal(0.0, 10.0, name="mu")
y = srng.normal(mu, 2.0, size=20, name="y")
run = dict(observed={y: data}, chains=8, warmup=100, draws=100, key=13, progress=False)
one = sample(**run).posterior["mu"].values
eight = sample(**run, mesh=jax.devices()).posterior["mu"].values
# XLA rounds a block of one chain and a batch of eight apart (1e-10), which 200 transitions grow to 5e-8
np.testing.assert_allclose(eight, one, rtol=1e-6)
starts = {"mu": np.linspace(-1.0, 1.0, 8)}  # one per chain: each device gets its own chain's
short = {**run, "warmup": 0, "draws": 1, "initial": starts}
one = sample(**short).posterior["mu"].values
eight = sample(**short, mesh=jax.devices()).posterior["mu"].values
np.testing.assert_allclose(eight, one, rtol=1e-6)
try:
    sample(**{**run, "chains": 12}, mesh=jax.devices())
except ValueError as error:
    assert "chains=12 cannot be split across the mesh's 8 devices" in str(error), error
else:
    raise AssertionError("12 chains on 8 devices")
print("same draws on eight devices")
"""


def test_a_mesh_of_eight_devices_draws_what_one_device_draws():
    assert "same draws on eight devices" in run_on_devices(EIGHT_DEVICES, 8)


TWO_PROCESSES = """
import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
import jax, numpy as np
from aesara.tensor.random.utils import RandomStream
from aejax.sampling import sample
assert len(jax.devices()) == 4 and len(jax.local_devices()) == 2, jax.devices()
data = np.random.default_rng(42).normal(1.5, 2.0, size=20)
srng = RandomStream(1)
mu = srng.normal(0.0, 10.0, name="mu")
sigma = srng.halfnormal(0.0, 1.0, name="sigma")
y = srng.normal(mu, sigma, size=20, name="y")
# short: XLA rounds a block of one chain and a batch of four apart, and NUTS's trajectories grow that apart
run = dict(observed={y: data}, chains=4, warmup=20, draws=20, key=5, progress=True)
alone = sample(**run, mesh=jax.local_devices()[:1])  # this process's first device, every chain
split = sample(**run, mesh=jax.devices())  # a block of chains on each device of both processes
for group, name in (("posterior", "mu"), ("posterior", "sigma"), ("sample_stats", "lp"), ("log_likelihood", "y")):
    np.testing.assert_allclose(split[group][name].values, alone[group][name].values, rtol=1e-6)
print("process", jax.process_index(), "drew what one device draws")
"""


def test_a_mesh_across_two_processes_draws_what_one_device_draws():
    outputs = run_in_processes(TWO_PROCESSES, processes=2, devices=2)
    assert [output.strip().splitlines()[-1] for output in outputs] == [
        f"process {rank} drew what one device draws" for rank in range(2)
    ]


COVARIANCE = np.array([[1.0, 0.8], [0.8, 2.0]])


def gaussian_log_density():
    """A correlated two-dimensional Gaussian's log-density of a value variable ``x`` of shape (2,)."""
    x = at.tensor("float64", shape=(2,), name="x")
    return -0.5 * x @ at.as_tensor(np.linalg.inv(COVARIANCE)) @ x, x


def test_a_log_density_of_value_variables_is_sampled_on_their_scale():
    log_density, x = gaussian_log_density()
    idata = sample(log_density=log_density, values=[x], deterministics={"total": x.sum()}, key=14, **SHORT)
    draws = idata.posterior["x"].values
    assert draws.shape == (2, 500, 2)
    for i in range(2):
        assert_posterior(draws[..., i], 0.0, np.sqrt(COVARIANCE[i, i]))
    np.testing.assert_allclose(idata.posterior["total"].values, draws.sum(-1), rtol=1e-12)
    assert "log_likelihood" not in idata.groups()


def test_a_model_is_random_variables_or_a_log_density_and_its_values_must_be_named_and_fixed():
    log_density, x = gaussian_log_density()
    mu, y = normal_mean_model()
    with pytest.raises(TypeError, match="either as random variables .* or as log_density="):
        sample(mu, observed={y: DATA}, log_density=log_density, values=[x], **SHORT)
    with pytest.raises(TypeError, match="either as random variables"):
        sample(**SHORT)
    free = at.dvector("free")
    with pytest.raises(ValueError, match=r"'free' has shape \(None,\): fix its shape"):
        sample(log_density=-(free**2).sum(), values=[free], **SHORT)
    unused = at.tensor("float64", shape=(3,), name="unused")
    with pytest.raises(ValueError, match="does not depend on the value variable 'unused'"):
        sample(log_density=log_density, values=[x, unused], **SHORT)
