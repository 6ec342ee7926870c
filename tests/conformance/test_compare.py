"""How the conformance run compares an output of AEJAX with its reference's."""

import jax.numpy as jnp
import numpy as np
import scipy.sparse

from conformance.compare import difference


def test_values_within_the_dtype_tolerance_agree():
    assert difference(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12])) is None
    assert difference(np.float32(1.0), np.float32(1.00001)) is None
    assert "values differ" in difference(np.array([1.0, 2.0]), np.array([1.0, 2.001]))


def test_integers_and_nans_compare_exactly():
    assert difference(np.array([1, 2]), np.array([1, 3])).startswith("values differ at 1 of 2 elements")
    assert difference(np.array([np.nan, 1.0]), np.array([np.nan, 1.0])) is None
    assert difference(np.array([np.nan, 1.0]), np.array([1.0, 1.0])) is not None


def test_kind_dtype_and_shape_must_agree():
    assert "NumPy scalar" in difference(np.float64(1.0), np.array(1.0))
    assert difference(np.array([1.0]), np.array([1.0], dtype="float32")).startswith("dtype float32")
    assert difference(np.ones((2, 1)), np.ones((1, 2))).startswith("shape (1, 2)")


def test_a_jax_array_of_the_reference_counts_as_an_array():
    assert difference(jnp.array([1.0, 2.0]), np.array([1.0, 2.0])) is None


def test_a_reference_off_its_declared_dtype_is_compared_in_the_declared_one():
    eigenvalues = np.array([3.0 + 0j, 1.0 + 0j])
    assert difference(eigenvalues, np.array([3.0, 1.0]), declared="float64") is None
    assert difference(eigenvalues, np.array([3.0, 2.0]), declared="float64").startswith("values differ")
    assert difference(eigenvalues, np.array([3.0, 1.0]), declared="complex128").startswith("dtype float64")


def test_random_outputs_compare_in_kind_dtype_and_dimensions_only():
    assert difference(np.ones(9), np.zeros(10), random=True) is None
    assert difference(np.ones(9), np.zeros((10, 1)), random=True).startswith("2 dimensions")


def test_lists_and_sparse_matrices_compare_item_by_item():
    assert difference([np.ones(2), 1], [np.ones(2), 1]) is None
    assert difference([np.ones(2)], [np.ones(3)]).startswith("item 0: shape (3,)")
    dense = np.eye(3)
    assert difference(scipy.sparse.csr_matrix(dense), scipy.sparse.csr_matrix(dense)) is None
    assert "format csc" in difference(scipy.sparse.csr_matrix(dense), scipy.sparse.csc_matrix(dense))


def test_random_outputs_keep_the_dimensions_of_their_type_even_where_the_reference_does_not():
    assert difference(np.ones((2, 1, 4)), np.ones((2, 4)), random=True, ndim=2) is None
    assert difference(np.ones((2, 4)), np.ones((2, 1, 4)), random=True, ndim=2).startswith("3 dimensions")


def test_a_scalar_of_the_reference_where_the_type_has_a_0d_array_is_compared_as_an_array():
    assert difference(np.float64(3.0), np.array(3.0), ndim=0, kind="array") is None
    assert difference(np.float64(3.0), np.array(4.0), ndim=0, kind="array").startswith("values differ")
    assert difference(np.float64(3.0), np.array(3.0)) is not None


def test_a_reference_that_strays_from_the_output_type_is_compared_in_values_where_aejax_does_not():
    assert difference(jnp.array(10.0), np.float64(10.0), ndim=0, kind="NumPy scalar") is None
    assert difference(jnp.array(10.0), np.float64(11.0), ndim=0, kind="NumPy scalar").startswith("values differ")
    shape = (jnp.array(20), jnp.array(3))
    assert difference(shape, np.array([20, 3]), ndim=1, kind="array") is None
    assert difference(shape, np.array([20, 4]), ndim=1, kind="array").startswith("values differ")
    assert difference(np.array([20, 3]), [20, 3], ndim=1, kind="array").startswith("a list")
    assert difference(np.array(3.0), np.float64(3.0), ndim=0, kind="array").startswith("a NumPy scalar")
