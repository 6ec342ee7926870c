"""Tensor, linear algebra and BLAS Ops aejax lowers itself, against the reference backend."""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.compile.io import In
from aesara.tensor import nlinalg, slinalg
from aesara.tensor.basic import PermuteRowElements, Tri, choose, default
from aesara.tensor.blas import Dot22, Dot22Scalar, gemm_no_inplace, gemv_no_inplace, ger
from aesara.tensor.extra_ops import (
    CpuContiguous,
    Repeat,
    fill_diagonal,
    fill_diagonal_offset,
    ravel_multi_index,
    searchsorted,
    unravel_index,
)
from aesara.tensor.math import convolve, matmul
from aesara.tensor.sort import argtopk, topk, topk_and_argtopk
from aesara.tensor.type_other import NoneConst

import aejax.linker
from aejax.linker import CallbackWarning, HostNodeWarning, ShapeInputWarning
from tests.reference import REFERENCE, assert_matches_reference, assert_raises_like_reference, compile_both

rng = np.random.default_rng(7)
X = rng.normal(size=(3, 4))
SQUARE = rng.normal(size=(4, 4))
SPD = SQUARE @ SQUARE.T + 4 * np.eye(4)
V = rng.normal(size=4)


def _f64(value):
    return at.as_tensor_variable(np.float64(value))


def _m(name="x"):
    return at.dmatrix(name)


def test_split_with_constant_sizes():
    x = _m()
    assert_matches_reference([x], at.split(x, [1, 3], 2, axis=1), X)
    assert_matches_reference([x], at.split(x, [1, 0, 2], 3, axis=0), X)
    assert_matches_reference([x], [at.split(x, [4], 1, axis=1)], X)


def test_split_is_the_gradient_of_join():
    a, b = _m("a"), _m("b")
    cost = (at.horizontal_stack(a, b) ** 2 * at.arange(7)).sum()
    assert_matches_reference([a, b], aesara.grad(cost, [a, b]), X[:, :3], X)


def test_split_sizes_from_scalar_inputs_compile_per_value():
    x, n = _m(), at.lscalar("n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        for first in (1, 3):
            assert_matches_reference([x, n], at.split(x, at.stack([n, 4 - n]), 2, axis=1), X, first)


def test_split_with_traced_sizes_runs_on_the_host_between_programs():
    x, sizes = _m(), at.lvector("sizes")
    with pytest.warns(HostNodeWarning, match="Split"):
        assert_matches_reference([x, sizes], at.split(x, sizes, 2, axis=1), X, np.array([1, 3]))


def test_split_sizes_that_do_not_add_up_are_rejected_like_the_reference():
    x, n = _m(), at.lscalar("n")
    outs = at.split(x, at.stack([n, n]), 2, axis=1)
    for mode in ("FAST_COMPILE", aejax.linker.mode):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ShapeInputWarning)
            with pytest.raises(ValueError):
                aesara.function([x, n], outs, mode=mode)(X, 1)


def test_nonzero_of_concrete_values():
    big = at.constant(np.arange(300).reshape(20, 15) % 7 == 0)
    x = _m()
    assert_matches_reference([x], [*at.nonzero(big), at.flatnonzero(at.constant(np.arange(100) % 9)), x], X)


def test_nonzero_of_traced_values_is_cut_to_its_run_time_length():
    x = _m()
    assert_matches_reference([x], list(at.nonzero(x > 0)), X)


CASES = [
    pytest.param(lambda x: [Tri("float64")(x.shape[0], x.shape[1] + 1, 1), at.tril(x, -1), at.triu(x, 1)], id="tri"),
    pytest.param(lambda x: [choose(at.constant(np.array([[0, 1, 0, 1]])), at.stack([x, -x]))], id="choose"),
    pytest.param(
        lambda x: [
            PermuteRowElements()(x, at.constant(np.array([[2, 0, 3, 1]])), inverse) for inverse in (False, True)
        ],
        id="permute row elements",
    ),
    pytest.param(lambda x: [CpuContiguous()(x.T)], id="cpu contiguous"),
    pytest.param(
        lambda x: [searchsorted(at.sort(x[0]), x[1:]), searchsorted(x[0], x[2], side="right", sorter=at.argsort(x[0]))],
        id="searchsorted",
    ),
    pytest.param(lambda x: [convolve(x[0], x[1][:2], mode) for mode in ("full", "same", "valid")], id="convolve"),
    pytest.param(lambda x: [matmul(x, x.T), matmul(x[0], x.T), matmul(at.stack([x, x]), x.T)], id="matmul"),
    pytest.param(
        lambda x: (
            [at.sort(v, axis=1) for v in topk_and_argtopk(x, 2, axis=1, sorted=False)]
            + [at.sort(v, axis=0) for v in topk_and_argtopk(x, -2, axis=0, sorted=False)]
        ),
        id="topk",
    ),
    pytest.param(
        lambda x: [
            Dot22()(x, x.T),
            Dot22Scalar()(x.T, x, _f64(0.5)),
            gemm_no_inplace(x, _f64(2.0), x, at.eye(4), _f64(0.5)),
            gemm_no_inplace(x, _f64(2.0), x, at.eye(4), _f64(0.0)),
            gemv_no_inplace(x[:, 0], _f64(-1.0), x, x[0], _f64(3.0)),
            ger(x, _f64(2.0), x[:, 1], x[0]),
        ],
        id="blas",
    ),
]


@pytest.mark.parametrize("build", CASES)
def test_tensor_op_matches_reference(build):
    x = _m()
    assert_matches_reference([x], build(x), X, rtol=1e-10)


LINALG = [
    pytest.param(
        lambda a: [nlinalg.Inv()(a), nlinalg.pinv(a[:, :3]), nlinalg.pinv(a @ a.T, hermitian=True)], id="inverses"
    ),
    pytest.param(
        lambda a: [
            nlinalg.tensorinv(a.reshape((2, 2, 4)), ind=2),
            nlinalg.tensorsolve(a.reshape((2, 2, 2, 2)), a[0].reshape((2, 2))),
        ],
        id="tensor",
    ),
    # lstsq's rank output is left out: the reference returns int32 where it declares int64.
    pytest.param(lambda a: [nlinalg.lstsq(a, a[:, :2], -1)[i] for i in (0, 3)], id="lstsq"),
    pytest.param(
        lambda a: [
            slinalg.cho_solve((slinalg.cholesky(a), True), a[0]),
            slinalg.cho_solve((slinalg.Cholesky(lower=False)(a), False), a[:, :2]),
        ],
        id="cho_solve",
    ),
    pytest.param(
        lambda a: [slinalg.Eigvalsh()(a, NoneConst), slinalg.Eigvalsh(lower=False)(a.T, NoneConst)], id="eigvalsh"
    ),
    pytest.param(lambda a: [slinalg.expm(a / 10)], id="expm"),
    pytest.param(
        lambda a: [
            slinalg.solve_continuous_lyapunov(-a, a[:2, :2].sum() * at.eye(4) + a.T),
            slinalg.solve_discrete_lyapunov(a / 20, a, method="bilinear"),
        ],
        id="lyapunov",
    ),
]


@pytest.mark.parametrize("build", LINALG)
def test_linalg_op_matches_reference(build):
    a = _m("a")
    assert_matches_reference([a], build(a), SPD, rtol=1e-8)


def test_lstsq_residuals_for_a_tall_full_rank_system():
    a, b = _m("a"), _m("b")
    assert_matches_reference([a, b], [nlinalg.lstsq(a, b, -1)[1]], X.T, X.T[:, :2], rtol=1e-8)


@pytest.mark.parametrize("axis", [None, 1])
def test_repeat_by_a_small_integer_constant_counts_in_64_bits(axis):
    """An int8 count of 3 over 100 elements repeats them into 300 (under numpy 2, JAX computed it in int8: 44)."""
    x = _m()
    repeated = Repeat(axis=axis)(x, at.constant(3, dtype="int8"))
    got = assert_matches_reference([x], [repeated, aesara.grad(repeated.sum(), x)], rng.normal(size=(10, 10)))
    assert got[0].size == 300


def test_fill_diagonal_of_a_cube_fills_its_main_diagonal_only():
    """``x[i, i, i]``, as numpy's ``fill_diagonal``; matrices may be rectangular."""
    t, m, s = at.dtensor3("t"), _m(), at.dscalar("s")
    outputs = [fill_diagonal(t, s), fill_diagonal(m, s), fill_diagonal(m.T, s)]
    assert_matches_reference([t, m, s], outputs, np.zeros((3, 3, 3)), np.zeros((2, 4)), 5.0)


def test_fill_diagonal_of_a_tensor_with_axes_of_different_lengths_raises_value_error():
    t, s = at.dtensor3("t"), at.dscalar("s")
    assert_raises_like_reference([t, s], fill_diagonal(t, s), (np.zeros((2, 3, 3)), 5.0), ValueError, "one length")


@pytest.mark.parametrize("shape", [(3, 5), (5, 3)], ids=["wide", "tall"])
def test_fill_diagonal_offset_with_a_traced_offset_runs_in_jax(shape):
    """Also past the matrix: an offset past a tall matrix's width writes where the reference's slice of ``a.flat``
    does."""
    m, s, offset = _m(), at.dscalar("s"), at.lscalar("offset")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for value in (-6, -3, -1, 0, 2, 4, 5):
            assert_matches_reference([m, s, offset], fill_diagonal_offset(m, s, offset), np.ones(shape), 5.0, value)
    assert not [w for w in record if issubclass(w.category, CallbackWarning)]


def test_default_takes_the_default_for_an_input_given_as_none():
    """Aesara's ``test_default``: an input given as ``None`` reaches the program as ``None``, not as nan."""
    x, y = at.dscalars("x", "y")
    reference, ours = compile_both([x, y], default(x, y) * 2)
    for args in [(1.0, 2.0), (None, 2.0), (1.0, None), (None, 3.0)]:
        assert ours(*args) == reference(*args)


def test_default_of_a_state_set_to_none():
    """Aesara's ``test_default_state``: with a constant default the node is folded with numpy, where ``None`` stays."""
    results = {}
    for mode in (REFERENCE, aejax.linker.mode):
        x, y = at.dscalars("x", "y")
        new_x = y + default(x, 3.8)
        f = aesara.function([y, In(x, update=new_x, value=12.0)], new_x, mode=mode)
        first = f(3.0)
        f["x"] = None
        results[mode] = [first, f(1.0), f(2.2), f["x"]]
    np.testing.assert_allclose(results[aejax.linker.mode], results[REFERENCE])


@pytest.mark.parametrize("order", ["C", "F"])
def test_unravel_index_in_either_order_matches_reference(order):
    i = at.lvector("i")
    assert_matches_reference([i], unravel_index(i, (3, 4), order=order), np.array([1, 5, 11]))
    assert_matches_reference([i], unravel_index(i, (2, 3, 4), order=order), np.array([0, 7, 23]))


def test_unravel_index_out_of_bounds_raises_like_reference():
    i = at.lvector("i")
    assert_raises_like_reference([i], unravel_index(i, (3, 4)), [np.array([1, 12])], ValueError, "out of bounds")


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_ravel_multi_index_in_each_order_and_mode_matches_reference(order, mode):
    a, b = at.lvector("a"), at.lvector("b")
    inside = (np.array([0, 1, 2]), np.array([3, 0, 2]))
    outside = (np.array([1, 5, -1]), np.array([7, 0, -2]))
    out = ravel_multi_index((a, b), (3, 4), mode=mode, order=order)
    assert_matches_reference([a, b], out, *inside)
    if mode != "raise":
        assert_matches_reference([a, b], out, *outside)


def _extremes(dtype):
    """A vector holding ``dtype``'s minimum and maximum, and values between."""
    if dtype == "bool":
        return np.array([True, False, True, False])
    info = np.finfo(dtype) if dtype.startswith("float") else np.iinfo(dtype)
    return np.array([info.min, 5, info.min + 2, info.max, 0], dtype=dtype)


TOPK_DTYPES = ["bool", "uint8", "uint64", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


@pytest.mark.parametrize("k", [1, 2, -1, -2, 4])
@pytest.mark.parametrize("dtype", TOPK_DTYPES)
def test_topk_of_a_dtypes_extremes_matches_reference(dtype, k):
    """Negative k selects the smallest entries, the dtype's minimum too (negating it overflows)."""
    x = at.vector("x", dtype=dtype)
    values = _extremes(dtype)
    reference, ours = compile_both([x], [topk(x, k, sorted=False), argtopk(x, k, sorted=False)])
    (expected_values, expected_indices), (got_values, got_indices) = reference(values), ours(values)
    np.testing.assert_array_equal(np.sort(got_values), np.sort(expected_values))
    np.testing.assert_array_equal(np.sort(values[got_indices]), np.sort(values[expected_indices]))
    assert got_values.dtype == expected_values.dtype
    assert got_indices.dtype == expected_indices.dtype


def test_topk_of_int8_minimum_is_the_smallest():
    x = at.bvector("x")
    values = np.array([-128, 5, -126], dtype="int8")
    assert_matches_reference([x], [topk(x, -1, sorted=False), argtopk(x, -1, sorted=False)], values)
