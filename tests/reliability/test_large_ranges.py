"""Item 3: large ranges compile in time independent of their size, with Aesara's values."""

import time
import warnings

import aesara
import aesara.tensor as at
import pytest

import aejax.linker
from aejax.linker import ShapeInputWarning
from tests.reference import assert_matches_reference


def test_first_call_of_a_sum_over_ten_million_is_fast():
    n = at.lscalar("n")
    f = aesara.function([n], at.arange(n).sum(), mode=aejax.linker.mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        start = time.perf_counter()
        total = f(10**7)
        elapsed = time.perf_counter() - start
    assert total == 10**7 * (10**7 - 1) // 2
    assert elapsed < 1.0


@pytest.mark.parametrize(
    "bounds",
    [(3, 100_003, 7), (0.5, 70_000.0, 0.75), (10, -5, -1), (0.5, 10.0, 0.3)],
    ids=["int", "float", "down", "small float"],
)
def test_ranges_match_reference(bounds):
    start, stop, step = (
        at.dscalar(name) if isinstance(b, float) else at.lscalar(name) for name, b in zip("abc", bounds)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        assert_matches_reference([start, stop, step], at.arange(start, stop, step), *bounds, rtol=1e-15)
