"""The real Fourier transforms of `aesara.tensor.fft` under aejax's mode against the reference backend.

The reference computes them with numpy in double precision and rounds to
the input's dtype; the lowerings do the same, so a float32 spectrum agrees to
an ulp, and what is computed from it to an ulp of its values' scale.
"""

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.gradient import verify_grad
from aesara.tensor import fft

import aejax.linker
from aejax.linker import HostNodeWarning, ShapeInputWarning
from tests.reference import assert_matches_reference, assert_raises_like_reference, compile_both

rng = np.random.default_rng(5)
NORMS = [None, "ortho", "no_norm"]
SHAPES = [(1, 16), (3, 7), (2, 6, 5), (2, 3, 4, 6)]
TOLERANCE = {"float32": (2e-6, 2e-6), "float64": (1e-10, 1e-12)}
"""(rtol, atol) by dtype: the values are of order 1 to 100."""


def _tensor(dtype, ndim, name):
    return at.tensor(dtype, shape=(None,) * ndim, name=name)


def _spectrum_shape(shape):
    """The shape of ``rfft`` of a signal of ``shape``: half the last axis, and real and imaginary parts."""
    return (*shape[:-1], shape[-1] // 2 + 1, 2)


def assert_close_to_reference(inputs, outputs, *values):
    """Both backends' outputs of ``values`` agree in dtype and shape, and in value to `TOLERANCE` of their dtype."""
    reference, ours = compile_both(inputs, outputs)
    for expected, got in zip(reference(*values), ours(*values)):
        got = np.asarray(got)
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape)
        rtol, atol = TOLERANCE[got.dtype.name]
        # a transform's rounding is relative to the whole signal's size, not to each element's
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=max(atol, rtol * np.abs(expected).max()))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm", NORMS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_rfft_and_its_inverse_match_the_reference(shape, norm, dtype):
    """Odd and even last axes, one to three transformed axes; the inverse told the signal's parity."""
    x = _tensor(dtype, len(shape), "x")
    spectrum = fft.rfft(x, norm=norm)
    signal = fft.irfft(spectrum, norm=norm, is_odd=shape[-1] % 2 == 1)
    assert_close_to_reference([x], [spectrum, signal], rng.normal(size=shape).astype(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm", NORMS, ids=str)
@pytest.mark.parametrize("is_odd", [False, True], ids=["even", "odd"])
def test_irfft_of_any_spectrum_matches_the_reference(is_odd, norm, dtype):
    """A spectrum that is no real signal's: the imaginary parts numpy ignores (at 0, and at n / 2 for even n)."""
    spectrum = _tensor(dtype, 4, "spectrum")
    value = rng.normal(size=(2, 4, 5, 2)).astype(dtype)
    assert_close_to_reference([spectrum], [fft.irfft(spectrum, norm=norm, is_odd=is_odd)], value)


@pytest.mark.parametrize("sizes", [(6, 5), (4, 8), (9,), (3,)], ids=str)
def test_signal_sizes_crop_or_pad_the_transformed_axes(sizes):
    """The Ops take the sizes ``s`` of the last ``len(s)`` axes, as numpy's ``rfftn`` and ``irfftn``."""
    x, spectrum = at.dtensor3("x"), at.dtensor4("spectrum")
    s = at.constant(np.array(sizes))
    outputs = [fft.rfft_op(x, s), fft.irfft_op(spectrum, s)]
    assert_matches_reference([x, spectrum], outputs, rng.normal(size=(2, 6, 5)), rng.normal(size=(2, 6, 3, 2)))


def test_symbolic_signal_sizes():
    """Sizes of a fixed length are made static (one program per value); others run the node on the host."""
    x, value = at.dmatrix("x"), rng.normal(size=(2, 6))
    fixed = at.tensor("int64", shape=(1,), name="fixed")
    reference, ours = compile_both([x, fixed], fft.irfft_op(fft.rfft_op(x, fixed), fixed))
    with pytest.warns(ShapeInputWarning, match="fixed"):
        for size in (6, 4, 9):
            np.testing.assert_allclose(ours(value, [size]), reference(value, [size]), rtol=1e-12, atol=1e-12)
    sizes = at.lvector("sizes")
    with pytest.warns(HostNodeWarning):
        assert_matches_reference([x, sizes], fft.rfft_op(x, sizes), value, np.array([5]))


def test_a_signal_size_below_one_raises_value_error_as_numpy():
    x = at.dmatrix("x")
    output = fft.rfft_op(x, at.constant(np.array([0])))
    assert_raises_like_reference([x], output, (rng.normal(size=(2, 6)),), ValueError, "FFT data points")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm", NORMS, ids=str)
@pytest.mark.parametrize("shape", [(2, 7), (2, 8), (1, 4, 6)], ids=str)
def test_gradients_match_the_reference(shape, norm, dtype):
    """Gradients of both transforms (each the other's Op, half or double weights but at 0 and n / 2)."""
    x, spectrum = _tensor(dtype, len(shape), "x"), _tensor(dtype, len(shape) + 1, "spectrum")
    is_odd = shape[-1] % 2 == 1
    forward, inverse = fft.rfft(x, norm=norm), fft.irfft(spectrum, norm=norm, is_odd=is_odd)
    # Squares, so that the gradients depend on the values and not only on the shapes.
    gradients = [aesara.grad((forward**2).sum(), x), aesara.grad((inverse**2).sum(), spectrum)]
    values = [rng.normal(size=size).astype(dtype) for size in (shape, _spectrum_shape(shape))]
    assert_close_to_reference([x, spectrum], gradients, *values)


@pytest.mark.parametrize("norm", NORMS, ids=str)
def test_gradients_are_the_numerical_ones(norm):
    mode = aejax.linker.mode
    verify_grad(lambda x: fft.rfft(x, norm=norm), [rng.normal(size=(2, 4, 5))], rng=rng, mode=mode)
    verify_grad(lambda s: fft.irfft(s, norm=norm), [rng.normal(size=(2, 4, 4, 2))], rng=rng, mode=mode)
