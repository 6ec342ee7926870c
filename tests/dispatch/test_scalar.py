"""Float32 ``exp2``, ``cosh`` and ``sinh`` as accurate as numpy's ufuncs, the reference's."""

import aesara.tensor as at
import numpy as np
import pytest

from tests.reference import assert_matches_reference, compile_both

FLOAT32 = np.random.default_rng(5).uniform(-80, 80, size=4000).astype("float32")


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32"])
def test_exp2_of_integers_is_exact(dtype):
    x = at.vector("x", dtype=dtype)
    # -126 to 126: smaller powers of two are subnormal, which XLA on the CPU
    # flushes to zero, and numpy's own float32 exp2(127) is an ulp above 2**127.
    values = np.arange(max(np.iinfo(dtype).min, -126), min(np.iinfo(dtype).max, 126) + 1).astype(dtype)
    reference, ours = compile_both([x], at.exp2(x))
    expected, got = reference(values), np.asarray(ours(values))
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("fn", [at.exp2, at.cosh, at.sinh], ids=["exp2", "cosh", "sinh"])
def test_float32_is_within_aesaras_tolerance_of_the_reference(fn):
    x = at.fvector("x")
    assert_matches_reference([x], fn(x), FLOAT32, rtol=1e-6)


@pytest.mark.parametrize("fn", [at.cosh, at.sinh], ids=["cosh", "sinh"])
def test_of_int32_in_float64_matches_reference(fn):
    x = at.ivector("x")
    assert_matches_reference([x], fn(x), np.arange(-40, 41, dtype="int32"), rtol=1e-12)


def test_inside_a_composite_matches_reference():
    x = at.fvector("x")
    assert_matches_reference([x], at.cosh(x) * 2 + at.sinh(x) + at.exp2(x), FLOAT32 / 4, rtol=1e-6)
