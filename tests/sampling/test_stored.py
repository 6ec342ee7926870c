"""`sample`'s programs are kept in aejax's store: a second process that samples the same model loads them, traces no
sampler, and draws what the first drew; other settings make other programs."""

import textwrap

import numpy as np

from tests.processes import reported_by_new_process, store_entries

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    import importlib
    import numpy as np
    from aesara.tensor.random.utils import RandomStream
    from aejax.sampling import sample

    programs = importlib.import_module("aejax.sampling.programs")
    traced = []
    for name in ("begin", "advance", "finish"):  # the chains' functions, called only while a program is traced
        def counted(*args, _traced=getattr(programs, name), _name=name):
            traced.append(_name)
            return _traced(*args)
        setattr(programs, name, counted)

    options = json.loads(sys.argv[1])
    srng = RandomStream(1)
    mu = srng.normal(0.0, 10.0, name="mu")
    sigma = srng.halfnormal(0.0, 1.0, name="sigma")
    y = srng.normal(mu, sigma, size=20, name="y")
    data = np.random.default_rng(4).normal(1.5, 2.0, size=20)
    idata = sample(mu, sigma, observed={y: data}, chains=2, warmup=100, key=3, **options)
    print(json.dumps({
        "mu": idata.posterior["mu"].values.tolist(),
        "lp": idata.sample_stats["lp"].values.tolist(),
        "log_likelihood": idata.log_likelihood["y"].values.sum(axis=-1).tolist(),
        "traced": sorted(set(traced)),
    }))
    """
)


def sampled(tmp_path, switch="1", **options):
    """What a new process samples with ``options``, its compile directory in ``tmp_path``, and what it traced."""
    return reported_by_new_process(SCRIPT, {"draws": 100, "progress": False, **options}, tmp_path, switch)


def draws(run):
    return run["mu"], run["lp"], run["log_likelihood"]


def test_a_second_process_loads_the_chains_programs_traces_no_sampler_and_draws_the_same(tmp_path):
    first = sampled(tmp_path)
    assert first["traced"] == ["advance", "begin", "finish"]
    assert len(store_entries(tmp_path)) == 3
    second = sampled(tmp_path)
    assert second["traced"] == []
    assert draws(second) == draws(first)
    assert draws(sampled(tmp_path / "off", switch="0")) == draws(first)
    assert not (tmp_path / "off").exists() or not store_entries(tmp_path / "off")


def test_a_bar_uses_the_same_programs_and_other_settings_make_their_own(tmp_path):
    first = sampled(tmp_path)
    shown = sampled(tmp_path, progress=True)
    assert shown["traced"] == [] and draws(shown) == draws(first)
    longer = sampled(tmp_path, draws=150)
    assert longer["traced"] == ["advance", "begin", "finish"]
    assert len(longer["mu"][0]) == 150
    # more draws, more steps a call: the first draws are the same ones (a step is a function of its index alone)
    np.testing.assert_allclose(np.asarray(longer["mu"])[:, :100], first["mu"], rtol=1e-9)
    assert len(store_entries(tmp_path)) == 6
