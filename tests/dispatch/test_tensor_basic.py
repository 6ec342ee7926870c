"""``arange`` bit for bit the reference's: numpy fills a range with ``start + i * ((start + step) - start)``.

And ``eye``/``tri`` given ``None`` for ``M`` (as many columns as rows), as Aesara passes it to the graph.
"""

import aesara.tensor as at
import numpy as np
import pytest

from tests.reference import compile_both

FLOAT_RANGES = [(0, 5, 1), (-5, 1.1, 1.2), (1.3, 2, -2.1), (0.1, 7.3, 0.7), (-5, 1.1, 1.2e-4), (0.3, 37000.0, 0.37)]


def _assert_identical(inputs, out, *args):
    reference, ours = compile_both(inputs, out)
    expected, got = reference(*args), np.asarray(ours(*args))
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("bounds", FLOAT_RANGES)
def test_arange_of_scalar_inputs_is_the_references_bit_for_bit(bounds, dtype):
    start, stop, step = (at.scalar(name, dtype=dtype) for name in ("start", "stop", "step"))
    _assert_identical([start, stop, step], at.arange(start, stop, step), *np.asarray(bounds, dtype))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("bounds", [*FLOAT_RANGES, (1e7, 1.2e7, 0.77)])
def test_arange_of_constants_is_the_references_bit_for_bit(bounds, dtype):
    _assert_identical([], at.arange(*(at.constant(np.asarray(b, dtype)) for b in bounds)))


@pytest.mark.parametrize("dtype", ["int64", "int32", "float64", "float32"])
def test_arange_of_integer_inputs_in_any_dtype_is_the_references(dtype):
    start, stop, step = at.lscalars(3)
    _assert_identical([start, stop, step], at.arange(start, stop, step, dtype=dtype), -(2**20), 2**20 + 70000, 3)


@pytest.mark.parametrize("build", [at.eye, at.tri], ids=["eye", "tri"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "complex64"])
def test_eye_and_tri_given_none_for_m_are_square_as_in_the_reference(build, dtype):
    n, m, k = at.iscalars("n", "m", "k")
    reference, ours = compile_both([n, m, k], build(n, m, k, dtype=dtype))
    for args in [(3, None, 0), (4, None, -1), (3, 5, 1), (2, None, 1)]:
        expected, got = reference(*args), np.asarray(ours(*args))
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
