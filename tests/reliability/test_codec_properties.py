"""Property: key -> numpy generator -> key is exact for both generator kinds, pickled or not."""

import pickle

import jax
import numpy as np
from aesara.tensor.random.type import RandomGeneratorType, RandomStateType
from hypothesis import given, settings
from hypothesis import strategies as st

from aejax.adapters import codec_for

TYPES = st.sampled_from([RandomGeneratorType(), RandomStateType()])
WORDS = st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=2).map(lambda w: np.array(w, np.uint32))


@settings(max_examples=200, deadline=None)
@given(type_=TYPES, words=WORDS, pickled=st.booleans())
def test_key_round_trip_through_a_numpy_generator_is_exact(type_, words, pickled):
    codec = codec_for("jax", type_)
    host = codec.decode(jax.random.wrap_key_data(words), type_)
    if pickled:
        host = pickle.loads(pickle.dumps(host))
    again = jax.random.key_data(codec.encode(host, type_))
    np.testing.assert_array_equal(again, words)


@settings(max_examples=100, deadline=None)
@given(type_=TYPES, seed=st.integers(0, 2**64 - 1), pickled=st.booleans())
def test_a_seeded_generator_keeps_its_key_across_a_round_trip(type_, seed, pickled):
    codec = codec_for("jax", type_)
    host = (
        np.random.default_rng(seed) if isinstance(type_, RandomGeneratorType) else np.random.RandomState(seed % 2**32)
    )
    key = codec.encode(pickle.loads(pickle.dumps(host)) if pickled else host, type_)
    assert np.array_equal(jax.random.key_data(codec.encode(host, type_)), jax.random.key_data(key))
    back = codec.decode(key, type_)
    np.testing.assert_array_equal(jax.random.key_data(codec.encode(back, type_)), jax.random.key_data(key))
