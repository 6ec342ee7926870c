"""The posteriordb suite's models (benchmarks/posteriordb): each one's parameters are posteriordb's, and one small
posterior, sampled briefly, passes the suite's criteria against its reference."""

import importlib.util
import sys

import pytest

from aejax.sampling.model import model_graphs
from tests.two_devices import ROOT

SUITE = ROOT / "benchmarks" / "posteriordb"
sys.path.insert(0, str(SUITE))  # the suite's run.py imports posteriordb_models from beside it
from posteriordb_models import MODELS  # noqa: E402


def suite_module():
    """The suite's run.py, by its path: a module named ``run`` may be another (benchmarks/run.py)."""
    spec = importlib.util.spec_from_file_location("posteriordb_run", SUITE / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


suite = suite_module()

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
