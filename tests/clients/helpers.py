"""Shared pieces of the client-library tests: compile one graph on both
backends, compare deterministic outputs exactly, and compare Monte Carlo
summaries of chains within their Monte Carlo error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import aesara
import numpy as np

import aejax.linker
from tests.reference import REFERENCE

CANDIDATE = aejax.linker.mode
"""The backend under test; `REFERENCE` (Aesara's Python backend) is the oracle.

`compile_pair` reads it at call time: setting it to ``"FAST_COMPILE"`` runs
every client test with the reference on both sides, which checks the tests
themselves (their programs and their Monte Carlo tolerances).
"""


def compile_pair(inputs: Sequence[Any], outputs: Any, **kwargs: Any) -> tuple[Callable, Callable]:
    """``(reference, candidate)``: the same graph compiled on both backends."""
    reference = aesara.function(inputs, outputs, mode=REFERENCE, **kwargs)
    candidate = aesara.function(inputs, outputs, mode=CANDIDATE, **kwargs)
    return reference, candidate


def assert_same_outputs(expected: Any, got: Any, rtol: float = 1e-7, atol: float = 1e-10) -> None:
    """Outputs of the two backends agree in dtype, shape and value."""
    if not isinstance(expected, (list, tuple)):
        expected, got = [expected], [got]
    assert len(expected) == len(got)
    for i, (e, g) in enumerate(zip(expected, got)):
        e, g = np.asarray(e), np.asarray(g)
        assert g.dtype == e.dtype, (i, g.dtype, e.dtype)
        assert g.shape == e.shape, (i, g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {i}")


def assert_same_at_points(
    inputs: Sequence[Any], outputs: Any, points: Iterable[Sequence[Any]], rtol: float = 1e-7, **kwargs: Any
) -> None:
    """Compile once on both backends and compare at every point (a tuple of input values)."""
    reference, candidate = compile_pair(inputs, outputs, **kwargs)
    for args in points:
        assert_same_outputs(reference(*args), candidate(*args), rtol=rtol)


def batch_means_se(draws: np.ndarray, n_batches: int = 10) -> np.ndarray:
    """Monte Carlo standard error of the mean of a chain (axis 0), by batch means."""
    draws = np.asarray(draws, dtype=np.float64)
    n = (draws.shape[0] // n_batches) * n_batches
    batches = draws[-n:].reshape((n_batches, n // n_batches) + draws.shape[1:]).mean(axis=1)
    return batches.std(axis=0, ddof=1) / np.sqrt(n_batches)


def assert_means_agree(reference_draws: np.ndarray, candidate_draws: np.ndarray, z: float = 5.0) -> None:
    """The two chains' means differ by less than ``z`` combined Monte Carlo standard errors."""
    se = np.hypot(batch_means_se(reference_draws), batch_means_se(candidate_draws))
    diff = np.abs(np.mean(candidate_draws, axis=0) - np.mean(reference_draws, axis=0))
    assert np.all(diff < z * se), (np.mean(reference_draws, 0), np.mean(candidate_draws, 0), se)


def assert_sds_agree(reference_draws: np.ndarray, candidate_draws: np.ndarray, ratio: float = 1.5) -> None:
    """The two chains' standard deviations are within a factor ``ratio`` of each other."""
    r = np.std(candidate_draws, axis=0) / np.std(reference_draws, axis=0)
    assert np.all((r > 1 / ratio) & (r < ratio)), r
