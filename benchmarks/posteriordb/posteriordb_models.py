"""The suite's posteriors from posteriordb, each written twice: with Aesara random variables for aeppl (what
`aejax.sampling.sample` takes) and as NumPyro's own model, the comparison.

A model function takes posteriordb's data (a dict) and returns a `Model`
(aeppl) or a function NumPyro samples. Stan's improper flat priors are
uniform on (-FLAT, FLAT), sampled untransformed (a uniform density there:
the proposals beyond, never near the posterior, are rejected by aeppl's
bounds), and on (0, FLAT) for a positive scale; NumPyro's models use
``ImproperUniform``. Parameters keep Stan's names, so that ``beta``'s entry
``i`` is posteriordb's ``beta[i + 1]``.

Left out: ``arma-arma11``. From Stan's starts (uniform(-2, 2)), a moving-average
coefficient beyond 1 makes the errors grow as ``theta ** t`` over its 200
steps, a finite but astronomically low log-density from which the chains did
not return, NumPyro's own model's as aejax's (4 chains, every parameter's sd
20 to 1000 times the reference's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FLAT = 1e6
"""The half-width of the uniform priors standing for Stan's flat ones."""


@dataclass
class Model:
    """An aeppl model: the random variables to sample, the observed ones with their values, and options of
    `aejax.sampling.sample` (transforms, deterministics)."""

    free: list[Any]
    observed: dict[Any, Any]
    transforms: dict[Any, Any] = field(default_factory=dict)
    deterministics: dict[str, Any] = field(default_factory=dict)


def stream() -> Any:
    from aesara.tensor.random.utils import RandomStream

    return RandomStream(0)


def flat(srng: Any, name: str, size: int | None = None) -> Any:
    """Stan's flat prior on the real line: uniform on (-FLAT, FLAT), sampled untransformed."""
    return srng.uniform(-FLAT, FLAT, size=size, name=name)


def flat_positive(srng: Any, name: str) -> Any:
    """Stan's flat prior on a positive scale: uniform on (0, FLAT), on aeppl's default (log-odds) scale."""
    return srng.uniform(0.0, FLAT, name=name)


def column(data: dict, name: str) -> np.ndarray:
    return np.asarray(data[name], dtype=float)


def eight_schools_noncentered(data: dict) -> Model:
    srng = stream()
    theta_trans = srng.normal(0.0, 1.0, size=data["J"], name="theta_trans")
    mu = srng.normal(0.0, 5.0, name="mu")
    tau = srng.halfcauchy(0.0, 5.0, name="tau")
    theta = theta_trans * tau + mu
    y = srng.normal(theta, column(data, "sigma"), name="y")
    return Model([theta_trans, mu, tau], {y: column(data, "y")}, deterministics={"theta": theta})


def ar_lags(y: np.ndarray, order: int) -> np.ndarray:
    """Row ``t`` holds ``y[order + t - 1], ..., y[t]``: the ``order`` values before ``y[order + t]``."""
    return np.stack([y[order - k : len(y) - k] for k in range(1, order + 1)], axis=1)


def ark(data: dict) -> Model:
    srng = stream()
    y, order = column(data, "y"), data["K"]
    alpha = srng.normal(0.0, 10.0, name="alpha")
    beta = srng.normal(0.0, 10.0, size=order, name="beta")
    sigma = srng.halfcauchy(0.0, 2.5, name="sigma")
    observed = srng.normal(alpha + ar_lags(y, order) @ beta, sigma, name="y")
    return Model([alpha, beta, sigma], {observed: y[order:]})


def blr(data: dict) -> Model:
    srng = stream()
    beta = srng.normal(0.0, 10.0, size=data["D"], name="beta")
    sigma = srng.halfnormal(0.0, 10.0, name="sigma")
    y = srng.normal(np.asarray(data["X"], dtype=float) @ beta, sigma, name="y")
    return Model([beta, sigma], {y: column(data, "y")})


def regression(y: np.ndarray, design: np.ndarray, scale_prior: str) -> Model:
    """``y ~ normal(design @ beta, sigma)`` with a flat ``beta``, and ``sigma`` half-Cauchy(0, 2.5) or flat."""
    srng = stream()
    beta = flat(srng, "beta", design.shape[1])
    sigma = srng.halfcauchy(0.0, 2.5, name="sigma") if scale_prior == "cauchy" else flat_positive(srng, "sigma")
    observed = srng.normal(design @ beta, sigma, name="y")
    return Model([beta, sigma], {observed: y}, transforms={beta: None})


def with_intercept(*columns: np.ndarray) -> np.ndarray:
    return np.stack([np.ones_like(columns[0]), *columns], axis=1)


def kidscore_momiq(data: dict) -> Model:
    return regression(column(data, "kid_score"), with_intercept(column(data, "mom_iq")), "cauchy")


def kidscore_interaction(data: dict) -> Model:
    hs, iq = column(data, "mom_hs"), column(data, "mom_iq")
    return regression(column(data, "kid_score"), with_intercept(hs, iq, hs * iq), "cauchy")


def kidscore_momhsiq(data: dict) -> Model:
    design = with_intercept(column(data, "mom_hs"), column(data, "mom_iq"))
    return regression(column(data, "kid_score"), design, "cauchy")


def mesquite_design(data: dict) -> np.ndarray:
    names = ["diam1", "diam2", "canopy_height", "total_height", "density"]
    return with_intercept(*[np.log(column(data, name)) for name in names], column(data, "group"))


def logmesquite(data: dict) -> Model:
    return regression(np.log(column(data, "weight")), mesquite_design(data), "flat")


def earn_height(data: dict) -> Model:
    return regression(column(data, "earn"), with_intercept(column(data, "height")), "flat")


def nes_design(data: dict) -> np.ndarray:
    age = np.asarray(data["age_discrete"])
    names = ["real_ideo", "race_adj"]
    later = ["educ1", "gender", "income"]
    ages = [(age == k).astype(float) for k in (2, 3, 4)]
    return with_intercept(*[column(data, n) for n in names], *ages, *[column(data, n) for n in later])


def nes(data: dict) -> Model:
    return regression(column(data, "partyid7"), nes_design(data), "flat")


def gp_pois_regr(data: dict) -> Model:
    import aesara.tensor as at
    from aesara.tensor.slinalg import cholesky

    srng = stream()
    x = column(data, "x")
    rho = srng.gamma(25.0, 4.0, name="rho")
    alpha = srng.halfnormal(0.0, 2.0, name="alpha")
    f_tilde = srng.normal(0.0, 1.0, size=data["N"], name="f_tilde")
    squared = (x[:, None] - x[None, :]) ** 2
    cov = alpha**2 * at.exp(-0.5 * squared / rho**2) + 1e-10 * np.eye(data["N"])
    f = cholesky(cov) @ f_tilde
    k = srng.poisson(at.exp(f), name="k")
    return Model([rho, alpha, f_tilde], {k: np.asarray(data["k"], dtype="int64")}, deterministics={"f": f})


MODELS: dict[str, Callable[[dict], Model]] = {
    "eight_schools-eight_schools_noncentered": eight_schools_noncentered,
    "arK-arK": ark,
    "sblrc-blr": blr,
    "sblri-blr": blr,
    "kidiq-kidscore_momiq": kidscore_momiq,
    "kidiq-kidscore_interaction": kidscore_interaction,
    "kidiq-kidscore_momhsiq": kidscore_momhsiq,
    "mesquite-logmesquite": logmesquite,
    "earnings-earn_height": earn_height,
    "nes1972-nes": nes,
    "gp_pois_regr-gp_pois_regr": gp_pois_regr,
}
"""The aeppl model of each posterior, by posteriordb's name."""


def numpyro_regression(y: np.ndarray, design: np.ndarray, scale_prior: str) -> Callable[[], None]:
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions import constraints

    def model() -> None:
        beta = numpyro.sample("beta", dist.ImproperUniform(constraints.real, (), (design.shape[1],)))
        if scale_prior == "cauchy":
            sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
        else:
            sigma = numpyro.sample("sigma", dist.ImproperUniform(constraints.positive, (), ()))
        numpyro.sample("y", dist.Normal(design @ beta, sigma), obs=y)

    return model


def numpyro_model(name: str, data: dict) -> Callable[[], None]:
    """NumPyro's own model of the posterior ``name``."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    def eight_schools() -> None:
        theta_trans = numpyro.sample("theta_trans", dist.Normal(jnp.zeros(data["J"]), 1.0))
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        theta = numpyro.deterministic("theta", theta_trans * tau + mu)
        numpyro.sample("y", dist.Normal(theta, column(data, "sigma")), obs=column(data, "y"))

    def ar() -> None:
        y, order = column(data, "y"), data["K"]
        alpha = numpyro.sample("alpha", dist.Normal(0.0, 10.0))
        beta = numpyro.sample("beta", dist.Normal(jnp.zeros(order), 10.0))
        sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
        numpyro.sample("y", dist.Normal(alpha + ar_lags(y, order) @ beta, sigma), obs=y[order:])

    def linear() -> None:
        beta = numpyro.sample("beta", dist.Normal(jnp.zeros(data["D"]), 10.0))
        sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
        numpyro.sample("y", dist.Normal(np.asarray(data["X"], dtype=float) @ beta, sigma), obs=column(data, "y"))

    def gp() -> None:
        x = column(data, "x")
        rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
        alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
        f_tilde = numpyro.sample("f_tilde", dist.Normal(jnp.zeros(data["N"]), 1.0))
        cov = alpha**2 * jnp.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / rho**2) + 1e-10 * jnp.eye(data["N"])
        f = numpyro.deterministic("f", jnp.linalg.cholesky(cov) @ f_tilde)
        numpyro.sample("k", dist.Poisson(jnp.exp(f)), obs=np.asarray(data["k"]))

    hs, iq = column(data, "mom_hs") if "mom_hs" in data else None, data.get("mom_iq")
    builders = {
        "eight_schools-eight_schools_noncentered": lambda: eight_schools,
        "arK-arK": lambda: ar,
        "sblrc-blr": lambda: linear,
        "sblri-blr": lambda: linear,
        "kidiq-kidscore_momiq": lambda: numpyro_regression(
            column(data, "kid_score"), with_intercept(np.asarray(iq, dtype=float)), "cauchy"
        ),
        "kidiq-kidscore_interaction": lambda: numpyro_regression(
            column(data, "kid_score"),
            with_intercept(hs, np.asarray(iq, dtype=float), hs * np.asarray(iq, dtype=float)),
            "cauchy",
        ),
        "kidiq-kidscore_momhsiq": lambda: numpyro_regression(
            column(data, "kid_score"), with_intercept(hs, np.asarray(iq, dtype=float)), "cauchy"
        ),
        "mesquite-logmesquite": lambda: numpyro_regression(
            np.log(column(data, "weight")), mesquite_design(data), "flat"
        ),
        "earnings-earn_height": lambda: numpyro_regression(
            column(data, "earn"), with_intercept(column(data, "height")), "flat"
        ),
        "nes1972-nes": lambda: numpyro_regression(column(data, "partyid7"), nes_design(data), "flat"),
        "gp_pois_regr-gp_pois_regr": lambda: gp,
    }
    return builders[name]()
