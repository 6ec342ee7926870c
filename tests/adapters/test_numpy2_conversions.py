"""`aejax.adapters.numpy2`'s conversions: ``np.array``/``np.asarray`` of a Python int or with a dtype named by an
Aesara type, and ``np.unique``'s inverse, as numpy 1.26 made them.

As in ``test_numpy2.py``: under numpy 1.x each stand-in is compared with numpy's own function over many
inputs; on either numpy it gives the values recorded here from numpy 1.26; and the Aesara code that uses
it (the rewrite of ``-x``, the gradients of ``deg2rad`` and ``rad2deg``, ``Unique``'s reference) runs on
either stack, compared with numpy computed directly.
"""

import warnings

import aesara
import aesara.scalar as aes
import aesara.tensor as at
import numpy as np
import pytest
from aesara.tensor.extra_ops import Unique
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aejax.adapters import numpy2

NUMPY2 = numpy2.NUMPY2
numpy1_only = pytest.mark.skipif(NUMPY2, reason="compares with numpy 1.x's own function, which numpy 2 changed")
CONVERSIONS = [numpy2.numpy1_array, numpy2.numpy1_asarray]
NUMPY_CONVERSIONS = {numpy2.numpy1_array: np.array, numpy2.numpy1_asarray: np.asarray}

ARRAYS = [
    (-1, "uint8", 255),
    (300, "int8", 44),
    (-129, "int8", 127),
    (-1, "uint64", 2**64 - 1),
    (5, "int8", 5),
    (-1, "int16", -1),
    (1.5, "float32", 1.5),
]
"""``np.array(value, dtype=dtype)`` of a Python scalar under numpy 1.26, recorded (numpy 2 raises ``OverflowError``
for the integers out of the dtype's range)."""


def _outcome(function, *args):
    """``function(*args)`` as an array, or the type of its error; numpy 1.26's ``DeprecationWarning``s silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return function(*args)
        except Exception as error:  # noqa: BLE001 - the error's type is the outcome compared
            return type(error)


@pytest.mark.parametrize("conversion", CONVERSIONS)
@pytest.mark.parametrize(("value", "dtype", "expected"), ARRAYS)
def test_a_python_scalars_array_is_as_recorded_from_numpy_1_26(conversion, value, dtype, expected):
    """The stand-in's array of ``value`` is numpy 1.26's: in ``dtype``, an integer out of its range as its low bits."""
    array = conversion(value, dtype)
    assert array.dtype == dtype and array.shape == ()
    assert array == expected
    if not NUMPY2:
        np.testing.assert_array_equal(_outcome(NUMPY_CONVERSIONS[conversion], value, dtype), array)


@pytest.mark.parametrize("conversion", CONVERSIONS)
@pytest.mark.parametrize(("value", "dtype"), [(2**63, "int64"), (2**64 - 1, "int32"), (-(2**63) - 1, "int8")])
def test_a_python_int_beyond_64_bits_overflows_as_under_numpy_1_26(conversion, value, dtype):
    """numpy 1.26 took a Python int through a C long: one that does not fit raised ``OverflowError``, as numpy 2 does."""
    with pytest.raises(OverflowError):
        conversion(value, dtype)


@pytest.mark.parametrize("conversion", CONVERSIONS)
@pytest.mark.parametrize("scalar_type", [aes.float64, aes.float32, aes.int8, aes.uint32])
def test_a_dtype_named_by_an_aesara_scalar_type_is_that_dtype(conversion, scalar_type):
    """``np.asarray(value, scalar_type)`` is the array in the dtype the type names, as numpy 1.26 read it (numpy 2
    raises ``ValueError``: it takes an object's ``dtype`` only if that is a numpy dtype)."""
    array = conversion(3, scalar_type)
    assert array.dtype == scalar_type.dtype and array == 3
    assert NUMPY2 or _outcome(NUMPY_CONVERSIONS[conversion], 3, scalar_type).dtype == scalar_type.dtype


def test_without_a_dtype_and_for_arrays_the_conversions_are_numpys():
    """What numpy 2 did not change is passed on: no dtype, arrays, keyword options."""
    values = np.arange(6).reshape(2, 3)
    assert numpy2.numpy1_asarray(values) is values
    np.testing.assert_array_equal(numpy2.numpy1_array(values, "int8", ndmin=3), np.array(values, "int8", ndmin=3))
    assert numpy2.numpy1_array(values, copy=False) is values or NUMPY2


@numpy1_only
@pytest.mark.parametrize("conversion", CONVERSIONS)
@settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=False), st.booleans()),
    dtype=st.sampled_from(["int8", "uint8", "int16", "uint32", "int64", "uint64", "float16", "float64", "bool"]),
)
def test_the_conversions_are_numpy_1_26s(conversion, value, dtype):
    """Under numpy 1.x the stand-in is numpy's own conversion, value for value (or the same error)."""
    ours, numpys = _outcome(conversion, value, dtype), _outcome(NUMPY_CONVERSIONS[conversion], value, dtype)
    if isinstance(numpys, type):
        assert ours is numpys
    else:
        assert ours.dtype == numpys.dtype
        np.testing.assert_array_equal(ours, numpys)


UNIQUE = [
    ({"return_inverse": True}, [[1, 2, 3], [2, 0, 0, 1]]),
    ({"return_index": True, "return_inverse": True}, [[1, 2, 3], [1, 3, 0], [2, 0, 0, 1]]),
    ({"return_inverse": True, "return_counts": True}, [[1, 2, 3], [2, 0, 0, 1], [2, 1, 1]]),
    ({"return_inverse": True, "axis": 0}, [[[1, 2], [3, 1]], [1, 0]]),
    ({}, [1, 2, 3]),
]
"""``np.unique([[3, 1], [1, 2]], **options)`` under numpy 1.26, recorded: without an axis, the inverse is flat."""


@pytest.mark.parametrize(("options", "expected"), UNIQUE)
def test_unique_is_as_recorded_from_numpy_1_26(options, expected):
    """``numpy1_unique``'s outputs are numpy 1.26's (numpy 2 gives the inverse the input's shape)."""
    found = numpy2.numpy1_unique(np.array([[3, 1], [1, 2]]), **options)
    if not options:
        np.testing.assert_array_equal(found, expected)
        return
    assert len(found) == len(expected)
    for array, recorded in zip(found, expected):
        assert np.shape(array) == np.shape(recorded)
        np.testing.assert_array_equal(array, recorded)
    if not NUMPY2:
        for array, numpys in zip(found, np.unique(np.array([[3, 1], [1, 2]]), **options)):
            np.testing.assert_array_equal(array, numpys)


@numpy1_only
@settings(max_examples=200, deadline=None)
@given(
    array=hnp.arrays(np.int8, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=st.integers(-3, 3)),
    flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    axis=st.sampled_from([None, 0]),
)
def test_unique_is_numpy_1_26s(array, flags, axis):
    """Under numpy 1.x ``numpy1_unique`` is ``np.unique``, output for output."""
    options = dict(zip(("return_index", "return_inverse", "return_counts"), flags), axis=axis)
    found, numpys = numpy2.numpy1_unique(array, **options), np.unique(array, **options)
    for ours, theirs in zip(found if any(flags) else [found], numpys if any(flags) else [numpys]):
        assert ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)


# ---- Aesara's code that uses each item, on either stack ----


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "int8"])
def test_the_negation_of_integers_compiles_and_wraps(dtype):
    """``-x`` is rewritten to ``-1 * x`` (``np.array(-1, dtype)``): for unsigned ``x``, numpy's wrapped negation."""
    x = at.vector(dtype=dtype)
    values = np.array([0, 1, 2, 100], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a failed rewrite warns
        negated = aesara.function([x], -x, mode="FAST_RUN")(values)
    assert negated.dtype == dtype
    np.testing.assert_array_equal(negated, np.negative(values))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("function", "factor"), [(at.deg2rad, np.pi / 180), (at.rad2deg, 180 / np.pi)])
def test_the_gradients_of_the_angle_conversions_evaluate(function, factor, dtype):
    """``aesara.grad`` of ``deg2rad`` and ``rad2deg`` (``np.asarray(factor, scalar_type)``) is the factor, in the
    input's dtype."""
    x = at.scalar(dtype=dtype)
    gradient = aesara.function([x], aesara.grad(function(x), x), mode="FAST_COMPILE")(np.asarray(0.5, dtype))
    assert gradient.dtype == dtype
    np.testing.assert_allclose(gradient, factor, rtol=np.finfo(dtype).eps)


def test_uniques_inverse_of_a_matrix_is_flat_as_its_type_says():
    """Aesara's ``Unique`` of a matrix (no axis) gives the 1-d inverse its type declares, which rebuilds the input."""
    x = at.matrix(dtype="int64")
    values, inverse = Unique(return_inverse=True)(x)
    assert inverse.ndim == 1
    data = np.array([[3, 1], [1, 2], [3, 3]])
    found, indices = aesara.function([x], [values, inverse], mode="FAST_COMPILE")(data)
    assert indices.shape == (data.size,)
    np.testing.assert_array_equal(found[indices], data.ravel())
