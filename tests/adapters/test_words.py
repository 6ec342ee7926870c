"""64-bit values crossing as their 32-bit words (`aejax.adapters.words`) come back bit for bit.

Any 64 bits are a value: the words of a float64 hold float32 NaN and
subnormal patterns in either half, and the value itself may be a NaN with a
payload, a subnormal or -0.0. Each must come back with the same bits, through
the program's joining of the words and through the host's.
"""

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aejax.adapters.jax_api import enable_x64
from aejax.adapters.words import host_words, host_words_value, program_value, program_words

WIDE = [np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.complex128)]
HALVES = [0, 1, 0x7F800001, 0x7FC00000, 0xFF800001, 0x007FFFFF, 0x80000000, 0xFFFFFFFF, 0x3FF00000]
"""32-bit halves that a float32 operation would change: signalling and quiet NaNs, subnormals, -0.0."""


def _bits(dtype: np.dtype, words: np.ndarray) -> np.ndarray:
    """The values of ``dtype`` whose words are the ``uint32`` array ``words``, as their raw bytes."""
    return np.ascontiguousarray(words, np.uint32).view(dtype)


@pytest.mark.parametrize("dtype", WIDE, ids=str)
def test_every_pair_of_awkward_halves_joins_in_the_program_to_the_same_bits(dtype):
    pairs = np.array([[low, high] for low in HALVES for high in HALVES], np.uint32)
    words = np.concatenate([pairs, pairs[::-1]], 1) if dtype.kind == "c" else pairs  # complex: two pairs a value
    values = _bits(dtype, words.reshape(-1))
    with enable_x64(True):
        joined = np.asarray(jax.jit(lambda w: program_value(w, dtype))(host_words(values)))
        split = np.asarray(jax.jit(program_words)(values))
    assert joined.dtype == dtype
    np.testing.assert_array_equal(joined.view(np.uint8), values.view(np.uint8))
    np.testing.assert_array_equal(host_words_value(split, dtype).view(np.uint8), values.view(np.uint8))


def _laid_out(values: np.ndarray, layout: str) -> np.ndarray:
    """``values`` as a caller may hold them: an array of its own, a strided view (a matrix's column), a numpy scalar."""
    if layout == "strided":
        wider = np.zeros((*values.shape, 2), values.dtype)
        wider[..., 0] = values
        return wider[..., 0]
    if layout == "scalar" and not values.shape:
        return values[()]
    return values


@settings(max_examples=80, deadline=None)
@given(
    dtype=st.sampled_from(WIDE),
    shape=st.sampled_from([(), (1,), (3,), (2, 3), (0,)]),
    layout=st.sampled_from(["own", "strided", "scalar"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_bits_of_any_shape_and_layout_cross_as_words_unchanged(dtype, shape, layout, seed):
    raw = np.random.default_rng(seed).integers(0, 2**32, size=(*shape, dtype.itemsize // 4), dtype=np.uint32)
    values = raw.view(dtype)[..., 0]
    with enable_x64(True):
        joined = np.asarray(jax.jit(lambda w: program_value(w, dtype))(host_words(_laid_out(values, layout))))
        split = np.asarray(jax.jit(program_words)(values))
    assert (joined.dtype, joined.shape) == (dtype, shape)
    np.testing.assert_array_equal(joined.reshape(-1).view(np.uint8), values.reshape(-1).view(np.uint8))
    back = host_words_value(split, dtype)
    assert back.shape == shape
    np.testing.assert_array_equal(back.reshape(-1).view(np.uint8), values.reshape(-1).view(np.uint8))
