"""The posteriordb suite's models (benchmarks/posteriordb): each one's parameters are posteriordb's, and one small
posterior, sampled briefly, passes the suite's criteria against its reference."""

import sys

import pytest

from aejax.sampling.model import model_graphs
from tests.two_devices import ROOT

sys.path.insert(0, str(ROOT / "benchmarks" / "posteriordb"))
import run as suite  # noqa: E402
from models import MODELS  # noqa: E402

POSTERIORS = suite.posteriors()


def entry_names(name, shape):
    """posteriordb's names of the entries of a variable of ``shape`` (``beta[1]``, ...)."""
    import numpy as np

    return set(suite.stan_names(name, np.zeros((1, 1, *shape))))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_each_model_has_the_reference_posterior_s_parameters(name):
    model = MODELS[name](POSTERIORS[name]["data"])
    graphs = model_graphs(model.free, model.observed, model.transforms, model.deterministics)
    import aesara

    shapes = aesara.function(
        list(graphs.values), [v.shape for v in graphs.posterior.values()], mode="FAST_COMPILE", on_unused_input="ignore"
    )(*[__import__("numpy").zeros(shape) for shape in graphs.layout.shapes])
    ours = set().union(*(entry_names(n, tuple(s)) for n, s in zip(graphs.posterior, shapes)))
    assert set(POSTERIORS[name]["reference"]) <= ours


def test_a_small_posterior_sampled_briefly_passes_against_its_reference():
    settings = {"chains": 2, "warmup": 500, "draws": 500, "seed": 0}
    name = "sblrc-blr"
    idata = suite.sample_aejax(name, POSTERIORS[name]["data"], "numpyro", settings)
    rows = suite.checked(idata, POSTERIORS[name]["reference"])
    assert len(rows) == 6
    assert all(row["passed"] for row in rows.values()), rows
