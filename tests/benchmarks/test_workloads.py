"""The benchmark workloads: the hand-written JAX computes what the Aesara graph computes."""

import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import aejax.linker

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import run  # noqa: E402
import workloads  # noqa: E402

SMALL = workloads.all_workloads(scale=0.01)


@pytest.mark.parametrize("work", SMALL, ids=[w.name for w in SMALL])
def test_hand_written_jax_matches_the_graph(work):
    ours = work.aesara_function(aejax.linker.mode)(*work.args)
    hand = jax.tree_util.tree_leaves(work.jax_fn(*work.jax_args))
    ours = ours if isinstance(ours, list) else [ours]
    if work.updates:
        assert np.shape(ours[0]) == np.shape(hand[-1])
        return
    assert len(ours) == len(hand)
    for got, want in zip(ours, hand):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-9, atol=1e-12)


def test_runner_reports_ratios():
    result = run.measure(SMALL[0], rounds=1, with_c=False)
    assert set(result["ratio"]) == {"aejax"}
    assert result["call"]["aejax"] > 0 and result["compile"]["jax"] > 0
