"""Scalar and elementwise special functions under aejax's mode against the reference backend.

The reference computes them with scipy; the grids reach the regions where a
naive formula overflows, cancels or rounds (large ``x`` for ``erfcx``, ``y``
near 0 and 2 for ``erfcinv``, large ``|x|`` for the Bessel functions).
"""

import aesara
import aesara.scalar as aes
import aesara.tensor as at
import numpy as np
import pytest
from aesara.scalar.math import gammal, gammau, tri_gamma
from aesara.tensor.elemwise import Elemwise
from aesara.tensor.xlogx import xlogx, xlogy0

import aejax.linker
from tests.reference import assert_matches_reference, compile_both

ERFCX_X = np.linspace(-5.0, 30.0, 3501)
ERFCINV_Y = np.concatenate([np.logspace(-300, 0, 301), np.linspace(0.0, 2.0, 401), 2 - np.logspace(-15, -1, 50)])
BESSEL_X = np.concatenate([np.linspace(-60.0, 60.0, 2401), np.linspace(60.0, 5000.0, 500)])
H, A = (g.ravel() for g in np.meshgrid(np.linspace(-12.0, 12.0, 49), np.linspace(-20.0, 20.0, 81)))


def unary(name, function, values, rtol=1e-12):
    return pytest.param(function, (values,), rtol, id=name)


CASES = [
    unary("erfcx", at.erfcx, ERFCX_X),
    unary("erfcinv", at.erfcinv, ERFCINV_Y),
    unary("j0", at.j0, BESSEL_X),
    unary("j1", at.j1, BESSEL_X),
    unary("trigamma", lambda x: Elemwise(tri_gamma)(x), np.linspace(0.1, 30.0, 300)),
    unary("round half away from zero", at.round_half_away_from_zero, np.arange(-5.0, 5.0, 0.25)),
    pytest.param(at.owens_t, (H, A), 1e-11, id="owens_t"),
    pytest.param(
        lambda k, x: Elemwise(gammau)(k, x), (np.linspace(0.5, 8, 40), np.linspace(0.1, 12, 40)), 1e-10, id="gammau"
    ),
    pytest.param(
        lambda k, x: Elemwise(gammal)(k, x), (np.linspace(0.5, 8, 40), np.linspace(0.1, 12, 40)), 1e-10, id="gammal"
    ),
]


@pytest.mark.parametrize("function, values, rtol", CASES)
def test_special_function_matches_reference(function, values, rtol):
    inputs = [at.dvector(f"x{i}") for i in range(len(values))]
    assert_matches_reference(inputs, [function(*inputs)], *values, rtol=rtol)


def test_special_functions_at_their_limits():
    x = at.dvector("x")
    limits = np.array([-np.inf, -30.0, 0.0, 1e300, np.inf])
    assert_matches_reference([x], [at.erfcx(x), at.j0(x[2:4]), at.j1(x[2:4])], limits)
    assert_matches_reference([x], [at.erfcinv(x)], np.array([-1.0, 0.0, 1.0, 2.0, 3.0]))
    h, a = at.dvector("h"), at.dvector("a")
    assert_matches_reference(
        [h, a], [at.owens_t(h, a)], np.array([0.0, 0.0, 3.0, 50.0]), np.array([np.inf, 0.5, -np.inf, 2.0])
    )


def test_float32_inputs_keep_float32():
    x = at.fvector("x")
    values = np.linspace(0.05, 1.9, 50).astype("float32")
    assert_matches_reference([x], [at.erfcx(x), at.erfcinv(x), at.j0(x), at.j1(x)], values, rtol=2e-5)


def test_integer_inputs_are_upcast():
    n = at.ivector("n")
    assert_matches_reference([n], [at.erfcx(n), at.j0(n)], np.arange(-3, 8, dtype="int32"), rtol=1e-12)


def test_incomplete_gammas_of_small_integers_are_computed_in_double_precision():
    """``gammau`` of uint8 is float32, but scipy computes it in double precision before rounding: so does aejax."""
    k, x = at.vector("k", dtype="uint8"), at.vector("x", dtype="uint8")
    outputs = [Elemwise(gammau)(k, x), Elemwise(gammal)(k, x)]
    ks, xs = np.array([5, 6, 1, 4, 2, 6], "uint8"), np.array([3, 2, 4, 3, 4, 3], "uint8")
    assert_matches_reference([k, x], outputs, ks, xs, rtol=1e-7)


def test_x_log_x_and_x_log_y0_are_zero_where_x_is():
    """Aesara's ``xlogx`` and ``xlogy0`` (no function of that name in JAX): 0 at ``x == 0``, ``nan`` below."""
    x, y = at.dvector("x"), at.dvector("y")
    values = np.array([0.0, 0.0, 0.5, 1.0, 3.0, -1.0]), np.array([0.0, 2.0, 0.5, 0.0, 4.0, 2.0])
    assert_matches_reference([x, y], [xlogx(x), xlogy0(x, y)], *values)
    f, n = at.fvector("f"), at.ivector("n")
    assert_matches_reference(
        [f, n],
        [xlogx(f), xlogy0(n, f)],
        np.array([0, 0.5, 2], "float32"),
        np.array([0, 1, 2], "int32"),
    )


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int64", "float32", "float64"])
def test_softplus_of_every_dtype_matches_the_reference(dtype):
    """``softplus`` over its whole range; an unsigned input must not be negated as it is (``-uint8(18)`` is 238)."""
    x = at.vector("x", dtype=dtype)
    info = np.iinfo(dtype) if dtype[0] in "iu" else None
    grid = np.arange(info.min, info.max + 1) if info is not None and info.bits == 8 else np.linspace(-800, 800, 3201)
    values = np.concatenate([grid, [-38, -37, 17, 18, 33, 34]]).astype(dtype)
    single = at.math.softplus(x).dtype == "float32"  # of float32 and 8-bit integers
    assert_matches_reference([x], [at.math.softplus(x)], values, rtol=1e-6 if single else 1e-12)


def test_scalar_ops_that_name_no_jax_function_run_through_a_callback():
    """Real-order Bessel functions and special functions' gradients (`MISSING` in test_coverage) give the reference's
    values from their ``perform``, with one `CallbackWarning` each, where Aesara's lowering would fail while tracing."""
    v, x = at.dvector("v"), at.dvector("x")
    outputs = [at.jv(v, x), at.iv(v, x), aesara.grad(at.gammainc(v, x).sum(), v)]
    with pytest.warns(aejax.linker.CallbackWarning):
        assert_matches_reference([v, x], outputs, np.array([0.5, 1.5, 2.0]), np.array([1.0, 2.0, 3.0]))


def test_complex_parts():
    x, y = at.dvector("x"), at.dvector("y")
    z = at.complex(x, y)
    polar = at.complex_from_polar(at.abs(x), y)
    assert_matches_reference(
        [x, y],
        [at.real(z * z), at.imag(z), at.real(polar), at.imag(polar)],
        np.linspace(-2, 2, 9),
        np.linspace(0, 3, 9),
    )


def test_composite_uses_our_scalar_lowerings():
    xs, ys = aes.float64("xs"), aes.float64("ys")
    composite = aes.Composite([xs, ys], [aes.erfcx(xs) * ys, aes.j0(xs) + aes.j1(ys)])
    x, y = at.dvector("x"), at.dmatrix("y")
    first, second = Elemwise(composite)(x, y)
    assert_matches_reference(
        [x, y], [first, second], np.linspace(-1, 5, 4), np.linspace(-2, 2, 12).reshape(3, 4), rtol=1e-11
    )


def test_erfcx_follows_its_asymptotic_series_far_out():
    x = at.dvector("x")
    _, ours = compile_both([x], at.erfcx(x))
    np.testing.assert_allclose(
        ours(np.array([40.0])), 1 / (40.0 * np.sqrt(np.pi)) * (1 - 1 / (2 * 40.0**2) + 3 / (4 * 40.0**4)), rtol=1e-9
    )
