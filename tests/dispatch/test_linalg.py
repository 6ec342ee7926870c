"""Linear algebra against the reference backend: solutions, and the reference's errors for singular matrices."""

import warnings

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.gradient import verify_grad
from aesara.tensor import nlinalg, slinalg
from jax import export

import aejax.linker
from aejax.adapters.jax_api import enable_x64
from aejax.linker import CallbackWarning, jaxify
from tests.reference import assert_matches_reference, assert_raises_like_reference, compile_both

rng = np.random.default_rng(11)
SQUARE = rng.normal(size=(4, 4))
SPD = SQUARE @ SQUARE.T + 4 * np.eye(4)
B = rng.normal(size=(4, 2))
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
INDEFINITE = np.array([[1.0, 2.0], [2.0, 1.0]])
LinAlgError = np.linalg.LinAlgError


@pytest.mark.parametrize("rcond", [1, -1, 0, 2], ids=lambda r: f"rcond={r}")
def test_lstsq_of_integer_matrices(rcond):
    """Aesara's ``TestLstsq.test_correct_solution``: LAPACK reads an ``rcond`` outside (0, 1) as the machine
    precision; a square system has no residuals."""
    x, y, z = at.lmatrix("x"), at.lmatrix("y"), at.lscalar("z")
    solution, residuals, rank, singular_values = nlinalg.lstsq(x, y, z)
    args = (np.array([[2, 1], [3, 4]]), np.array([[17, 20], [43, 50]]), rcond)
    assert_matches_reference([x, y, z], [solution, residuals, singular_values], *args, rtol=1e-10)
    reference, ours = compile_both([x, y, z], rank)
    assert int(ours(*args)) == int(reference(*args))  # the reference's rank is int32, where it declares int64


@pytest.mark.parametrize("rcond", [-1.0, 0.5], ids=lambda r: f"rcond={r}")
def test_lstsq_residuals_of_a_tall_system_only_at_full_rank(rcond):
    """numpy returns no residuals for a rank-deficient system: their number is known only at run time."""
    a, b, r = at.dmatrix("a"), at.dmatrix("b"), at.dscalar("r")
    _, residuals, _, singular_values = nlinalg.lstsq(a, b, r)
    outputs = [residuals, residuals.sum(), residuals.shape[0], at.concatenate([residuals, singular_values])]
    tall = rng.normal(size=(5, 3))
    for value in (tall, np.column_stack([tall[:, :2], tall[:, 0]])):
        assert_matches_reference([a, b, r], outputs, value, rng.normal(size=(5, 2)), rcond, rtol=1e-10)


def _solve_with(**options):
    return lambda a: slinalg.Solve(**options)(a, at.constant(B[:2]))


def _eigvalsh_of_b(b):
    return slinalg.eigvalsh(at.constant(SPD[:2, :2]), b)


@pytest.mark.parametrize(
    "build, value, match",
    [
        pytest.param(nlinalg.matrix_inverse, SINGULAR, "singular", id="matrix_inverse"),
        pytest.param(nlinalg.Inv(), np.stack([np.eye(2), SINGULAR]), "singular", id="Inv of a stack"),
        pytest.param(
            lambda a: nlinalg.tensorinv(a.reshape((2, 2, 4)), ind=2), np.zeros((4, 4)), "singular", id="tensorinv"
        ),
        pytest.param(slinalg.cholesky, INDEFINITE, "not positive definite", id="cholesky"),
        pytest.param(slinalg.Cholesky(lower=False), INDEFINITE, "not positive definite", id="cholesky upper"),
        pytest.param(slinalg.cholesky, SINGULAR, "not positive definite", id="cholesky of a singular matrix"),
        pytest.param(_solve_with(), SINGULAR, "singular", id="solve"),
        pytest.param(_solve_with(assume_a="sym", lower=True), SINGULAR, "singular", id="solve sym"),
        pytest.param(_solve_with(assume_a="pos"), INDEFINITE, "not positive definite", id="solve pos"),
        pytest.param(
            lambda a: slinalg.solve_triangular(a, at.constant(B[:2])),
            np.array([[1.0, 2.0], [0.0, 0.0]]),
            "zero on its diagonal",
            id="triangular",
        ),
        pytest.param(_eigvalsh_of_b, INDEFINITE, "b is not positive definite", id="eigvalsh with b"),
        pytest.param(_eigvalsh_of_b, SINGULAR, "b is not positive definite", id="eigvalsh with a singular b"),
        pytest.param(
            lambda b: aesara.grad(_eigvalsh_of_b(b).sum(), b), INDEFINITE, "b is not positive definite", id="grad"
        ),
    ],
)
def test_singular_or_indefinite_matrices_raise_lin_alg_error(build, value, match):
    a = at.tensor("float64", shape=(None,) * value.ndim, name="a")
    assert_raises_like_reference([a], build(a), (value,), LinAlgError, match)


@pytest.mark.parametrize(
    "build",
    [
        slinalg.cholesky,
        lambda a: slinalg.solve(a, at.constant(B[:2])),
        lambda a: slinalg.eigvalsh(a, a),
        _eigvalsh_of_b,
    ],
    ids=["cholesky", "solve", "eigvalsh of a", "eigvalsh of b"],
)
def test_inputs_that_are_not_finite_raise_value_error_as_scipy_checks(build):
    a = at.dmatrix("a")
    assert_raises_like_reference([a], build(a), (np.array([[np.nan, 0.0], [0.0, 1.0]]),), ValueError, "inf or nan")


def test_good_matrices_get_the_reference_values():
    """Also the triangle scipy reads: ``assume_a="sym"`` and ``"pos"`` take only the one ``lower`` names."""
    a, b = at.dmatrix("a"), at.dmatrix("b")
    outputs = [
        nlinalg.matrix_inverse(a),
        slinalg.cholesky(a),
        slinalg.Cholesky(lower=False)(a),
        slinalg.solve(a, b),
        slinalg.solve(a, b, assume_a="sym", lower=True),
        slinalg.solve(a, b, assume_a="pos"),
        slinalg.solve_triangular(a, b, lower=True),
        nlinalg.det(a),
        nlinalg.det(at.constant(SINGULAR) * a[0, 0]),
    ]
    assert_matches_reference([a, b], outputs, SPD + np.triu(np.ones((4, 4)), 1), B, rtol=1e-12)


def test_cholesky_on_error_nan_gives_a_matrix_of_nans():
    a = at.dmatrix("a")
    assert_matches_reference([a], slinalg.Cholesky(on_error="nan")(a), INDEFINITE)


def test_a_call_failing_on_a_singular_matrix_updates_no_shared_variable():
    a = at.dmatrix("a")
    calls = aesara.shared(np.float64(0.0), name="calls")
    f = aesara.function([a], nlinalg.matrix_inverse(a).sum(), updates={calls: calls + 1}, mode=aejax.linker.mode)
    f(SPD)
    with pytest.raises(LinAlgError, match="singular"):
        f(SINGULAR)
    assert calls.get_value() == 1.0


def test_singular_matrix_inside_a_scan_raises_lin_alg_error():
    matrices = at.dtensor3("matrices")
    inverses, _ = aesara.scan(nlinalg.matrix_inverse, sequences=[matrices])
    assert_raises_like_reference([matrices], inverses, (np.stack([SPD[:2, :2], SINGULAR]),), LinAlgError, "singular")


@pytest.mark.parametrize(
    "make_rcond, rcond", [(at.dscalar, 1.0), (at.dvector, np.array([2.0, 1.0]))], ids=["scalar rcond", "vector rcond"]
)
def test_lstsq_of_vectors_raises_linalg_error_as_numpy(make_rcond, rcond):
    """Aesara's ``TestLstsq.test_wrong_coefficient_matrix`` and ``test_wrong_rcond_dimension``."""
    x, y, z = at.dvector("x"), at.dvector("y"), make_rcond("z")
    outputs = list(nlinalg.lstsq(x, y, z))
    args = (np.array([2.0, 1.0]), np.array([2.0, 1.0]), rcond)
    assert_raises_like_reference([x, y, z], outputs, args, LinAlgError, "1-dimensional array 'x' given")


def test_lstsq_with_too_few_rows_on_the_right_raises_linalg_error_as_numpy():
    a, b = at.dmatrix("a"), at.dvector("b")
    outputs = list(nlinalg.lstsq(a, b, -1.0))
    assert_raises_like_reference([a, b], outputs, (SQUARE, np.ones(3)), LinAlgError, "incompatible dimensions")


def _not_symmetric(matrix):
    """``matrix`` with its strict upper triangle replaced by noise: scipy reads only one triangle."""
    return matrix + np.triu(rng.normal(size=matrix.shape), 1)


@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
def test_eigvalsh_reads_one_triangle_of_a(lower):
    """JAX's ``eigh`` averages ``a`` with its transpose; scipy's ``eigvalsh`` reads the triangle ``lower`` names."""
    a = at.dmatrix("a")
    assert_matches_reference([a], slinalg.Eigvalsh(lower)(a, at.NoneConst), _not_symmetric(SPD - 4 * np.eye(4)))


@pytest.mark.parametrize("dtype, tolerance", [("float64", 1e-10), ("float32", 1e-5)])
@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
@pytest.mark.parametrize("size", [1, 3, 5])
def test_generalized_eigvalsh_and_its_gradients_match_the_reference(size, lower, dtype, tolerance):
    """``a v = w b v`` for a symmetric ``a`` and a positive definite ``b``, each read from one triangle, as Aesara's
    ``test_eigvalsh`` and ``test_eigvalsh_grad`` build them; the gradients of a weighted sum of the eigenvalues.

    In float32 both backends round differently along the way: the values agree to ``tolerance`` of their scale.
    Both Ops run as JAX code, not on the host through a callback.
    """
    a, b = at.matrix("a", dtype=dtype), at.matrix("b", dtype=dtype)
    w = slinalg.Eigvalsh(lower)(a, b)
    a_value = rng.normal(size=(size, size))
    values = [m.astype(dtype) for m in (a_value + a_value.T, 10 * np.eye(size) + rng.normal(size=(size, size)))]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        reference, ours = compile_both([a, b], [w, *aesara.grad((w * np.arange(1.0, size + 1)).sum(), [a, b])])
        got_values = ours(*values)
    assert not [warning for warning in record if issubclass(warning.category, CallbackWarning)]
    for expected, got in zip(reference(*values), got_values):
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance * np.abs(expected).max())


def test_generalized_eigvalsh_gradients_are_the_numerical_ones():
    a_value = rng.normal(size=(4, 4))
    values = [a_value + a_value.T, SPD]
    verify_grad(lambda a, b: slinalg.eigvalsh(a, b).dot(np.arange(1.0, 5.0)), values, rng=rng, mode=aejax.linker.mode)


CPU_ONLY = pytest.mark.skipif(jax.default_backend() != "cpu", reason="numpy's double precision is the CPU program's")


def _symmetric(a):
    return a + a.T


NUMPY_LINALG = [
    pytest.param(lambda x: nlinalg.eigh(x), _symmetric, id="eigh"),
    pytest.param(lambda x: nlinalg.Eigh("U")(x), _symmetric, id="eigh upper"),
    pytest.param(lambda x: nlinalg.svd(x), None, id="svd"),
    pytest.param(lambda x: nlinalg.svd(x, full_matrices=False), None, id="svd reduced"),
    pytest.param(lambda x: nlinalg.svd(x, compute_uv=False), None, id="singular values"),
    pytest.param(nlinalg.matrix_inverse, None, id="matrix_inverse"),
    pytest.param(nlinalg.Inv(), None, id="Inv"),
    pytest.param(nlinalg.det, None, id="det"),
    pytest.param(lambda x: list(nlinalg.qr(x)), None, id="qr"),
    pytest.param(lambda x: nlinalg.tensorinv(x, ind=1), None, id="tensorinv"),
    pytest.param(lambda x: nlinalg.lstsq(x, x[:, :2], np.float32(-1))[0], None, id="lstsq"),
]


@CPU_ONLY
@pytest.mark.parametrize("build, prepare", NUMPY_LINALG)
def test_float32_linear_algebra_is_numpys_double_precision_rounded(build, prepare):
    """numpy computes a float32 matrix in float64 and rounds the results: each value is the reference's to its last
    bit, or within float64's error of it (for values far smaller than the largest). JAX's float32 computation was up
    to 10^7 times that apart (eigenvectors of nearby eigenvalues), or flipped eigenvectors' signs."""
    x = at.fmatrix("x")
    reference, ours = compile_both([x], build(x))
    for seed in range(4):
        value = np.random.default_rng(seed).normal(size=(6, 6)).astype("float32")
        value = value if prepare is None else prepare(value)
        expected, got = reference(value), ours(value)
        for e, g in zip(*(v if isinstance(v, list) else [v] for v in (expected, got))):
            e, g = np.asarray(e), np.asarray(g)
            assert (g.shape, g.dtype) == (e.shape, e.dtype) or g.dtype == "float64"  # Lstsq declares float64
            tolerance = np.spacing(np.abs(e)) + 1e-12 * np.abs(e).max()
            assert np.all(np.abs(g.astype("float64") - e) <= tolerance), (seed, g, e)


@CPU_ONLY
def test_float32_pinv_keeps_the_singular_values_numpy_keeps():
    """numpy's ``pinv`` inverts singular values above 1e-15 times the largest (JAX's, above 10 * 2 float32 epsilons):
    a float32 matrix with singular values 1 and 1e-6 has a pseudo-inverse of norm 1e6."""
    x = at.fmatrix("x")
    rotation = np.array([[0.6, -0.8], [0.8, 0.6]])
    value = (rotation @ np.diag([1.0, 1e-6]) @ rotation.T).astype("float32")
    for hermitian in (False, True):
        got = assert_matches_reference([x], nlinalg.pinv(x, hermitian=hermitian), value, rtol=1e-6)
        assert np.abs(got[0]).max() > 1e5


def test_float32_linear_algebra_without_x64_stays_float32():
    """A program without x64 has no double precision: it computes in float32, near numpy's values."""
    x = at.fmatrix("x")
    outputs = [nlinalg.eigh(_symmetric(x))[0], nlinalg.matrix_inverse(x), nlinalg.svd(x, compute_uv=False)]
    value = rng.normal(size=(5, 5)).astype("float32")
    expected = aesara.function([x], outputs, mode="FAST_COMPILE")(value)
    got = aesara.function([x], outputs, mode=aejax.linker.mode.with_x64(False))(value)
    for e, g in zip(expected, got):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5 * np.abs(e).max())


@pytest.mark.parametrize("build", [nlinalg.eigh, nlinalg.matrix_inverse, nlinalg.det, nlinalg.qr])
def test_float32_linear_algebra_for_an_accelerator_holds_no_float64(build):
    """The double precision branch is the CPU's only: a program exported for a TPU or a GPU computes in float32."""
    x = at.fmatrix("x")
    with enable_x64(True):
        graph = jaxify([x], build(x))
        argument = jax.ShapeDtypeStruct((3, 3), np.float32)
        modules = {
            platform: export.export(jax.jit(graph.fn), platforms=[platform])(graph.state, argument).mlir_module()
            for platform in ("cpu", "tpu", "cuda")
        }
    assert "f64" in modules["cpu"]
    assert "f64" not in modules["tpu"] and "f64" not in modules["cuda"]


@CPU_ONLY
@pytest.mark.parametrize("build", [nlinalg.matrix_inverse, lambda a: nlinalg.tensorinv(a, ind=1)])
def test_a_singular_float32_matrix_raises_lin_alg_error_from_the_double_precision_branch(build):
    a = at.fmatrix("a")
    assert_raises_like_reference([a], build(a), (SINGULAR.astype("float32"),), LinAlgError, "singular")
