"""Sorting along an axis given by the graph: the axis must be static, and aejax makes it so."""

import warnings

import aesara.tensor as at
import numpy as np
import pytest
from aesara.tensor.sort import argsort, sort

from aejax.linker import ShapeInputWarning
from tests.reference import assert_matches_reference

MATRIX = np.random.default_rng(3).normal(size=(3, 4))


@pytest.mark.parametrize("fn", [sort, argsort], ids=["sort", "argsort"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_along_a_scalar_input_axis_matches_reference(fn, axis):
    a, ax = at.dmatrix("a"), at.lscalar("axis")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        assert_matches_reference([a, ax], fn(a, ax), MATRIX, axis)


@pytest.mark.parametrize("fn", [sort, argsort], ids=["sort", "argsort"])
def test_sort_along_a_computed_axis_matches_reference(fn):
    a, ax = at.dmatrix("a"), at.lscalar("axis")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        assert_matches_reference([a, ax], fn(a, 2 * ax - 1), MATRIX, 1)


@pytest.mark.parametrize("fn", [sort, argsort], ids=["sort", "argsort"])
def test_sort_of_the_flattened_array_matches_reference(fn):
    a = at.dmatrix("a")
    assert_matches_reference([a], fn(a, None), MATRIX)
