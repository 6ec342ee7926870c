"""Keyed numpy generators: a decoded random state holds its JAX key until it is first used."""

import copy
import pickle
import threading

import aesara
import jax
import numpy as np
import pytest
from aesara.tensor.random.type import RandomGeneratorType, RandomStateType
from aesara.tensor.random.utils import RandomStream

import aejax.linker  # noqa: F401  (registers the AEJAX mode)
from aejax.adapters import KeyedGenerator
from aejax.adapters.jax import RandomGeneratorCodec, RandomStateCodec
from aejax.adapters.keyed import held_key

CASES = [
    (RandomGeneratorCodec, RandomGeneratorType(), np.random.Generator, lambda host: host.bit_generator.state),
    (RandomStateCodec, RandomStateType(), np.random.RandomState, lambda host: host.get_state(legacy=False)),
]


def key_words(seed):
    return jax.random.key_data(jax.random.key(seed))


def plain_from_state(numpy_class, state):
    if numpy_class is np.random.Generator:
        host = np.random.Generator(np.random.PCG64())
        host.bit_generator.state = state
        return host
    host = np.random.RandomState()
    host.set_state(state)
    return host


def same_state(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
    return np.array_equal(a, b)


@pytest.mark.parametrize("codec_class, type_, numpy_class, state_of", CASES)
def test_a_decoded_state_holds_its_key_and_gives_it_back_untouched(codec_class, type_, numpy_class, state_of):
    codec = codec_class()
    words = key_words(3)
    host = codec.decode_words(words, type_)
    assert isinstance(host, numpy_class)
    assert held_key(host) is not None
    assert codec.encode_words(host, type_) is words  # the JAX array itself: no trip through numpy
    assert held_key(host) is not None


@pytest.mark.parametrize("codec_class, type_, numpy_class, state_of", CASES)
def test_first_use_settles_the_embedding_of_the_key(codec_class, type_, numpy_class, state_of):
    codec = codec_class()
    words = key_words(4)
    host = codec.decode_words(words, type_)
    expected = codec.embed(np.asarray(words).ravel())
    assert same_state(state_of(host), expected)
    assert held_key(host) is None
    assert codec.encode_words(host, type_) is words  # still in the settled state: same key
    assert np.array_equal(host.standard_normal(5), plain_from_state(numpy_class, expected).standard_normal(5))


@pytest.mark.parametrize("codec_class, type_, numpy_class, state_of", CASES)
def test_drawing_after_settling_gives_a_new_key(codec_class, type_, numpy_class, state_of):
    codec = codec_class()
    words = key_words(5)
    host = codec.decode_words(words, type_)
    host.uniform()
    assert not np.array_equal(np.asarray(codec.encode_words(host, type_)), np.asarray(words))


@pytest.mark.parametrize("codec_class, type_, numpy_class, state_of", CASES)
@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy, lambda h: pickle.loads(pickle.dumps(h))])
def test_copies_and_pickles_are_plain_numpy_objects_of_the_key(codec_class, type_, numpy_class, state_of, duplicate):
    codec = codec_class()
    words = key_words(6)
    host = codec.decode_words(words, type_)
    twin = duplicate(host)
    assert type(twin) is numpy_class
    assert same_state(state_of(twin), codec.embed(np.asarray(words).ravel()))
    assert np.array_equal(np.asarray(codec.encode_words(twin, type_)), np.asarray(words))


@pytest.mark.parametrize("codec_class, type_, numpy_class, state_of", CASES)
def test_decoding_into_a_keyed_host_reuses_it_and_leaves_others_alone(codec_class, type_, numpy_class, state_of):
    codec = codec_class()
    host = codec.decode_words(key_words(7), type_)
    again = codec.decode_words(key_words(8), type_, into=host)
    assert again is host
    assert np.array_equal(np.asarray(codec.encode_words(host, type_)), np.asarray(key_words(8)))
    plain = np.random.default_rng(11) if numpy_class is np.random.Generator else np.random.RandomState(11)
    before = state_of(plain)
    fresh = codec.decode_words(key_words(9), type_, into=plain)
    assert fresh is not plain and same_state(state_of(plain), before)


def test_threads_settling_one_generator_see_one_state():
    codec = RandomGeneratorCodec()
    host = codec.decode_words(key_words(10), RandomGeneratorType())
    states = []
    barrier = threading.Barrier(8)

    def read():
        barrier.wait()
        states.append(host.bit_generator.state)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(states) == 8 and all(state == states[0] for state in states)
    assert states[0] == codec.embed(np.asarray(key_words(10)).ravel())


def test_a_shared_generator_advanced_by_aejax_is_one_object_that_the_reference_backend_reads():
    srng = RandomStream(17)
    draw = srng.normal(size=3)
    jax_fn = aesara.function([], draw, updates=srng.updates(), mode="AEJAX")
    reference = aesara.function([], draw, updates=srng.updates(), mode="FAST_COMPILE")
    shared = srng.state_updates[0][0]
    jax_fn()
    host = shared.get_value(borrow=True)
    assert isinstance(host, KeyedGenerator)
    draws = [jax_fn() for _ in range(5)]
    assert shared.get_value(borrow=True) is host  # advanced in place, never rebuilt
    assert held_key(host) is not None
    assert len({tuple(d) for d in draws}) == 5
    expected = copy.deepcopy(host).normal(size=3)  # what the reference backend must draw from this state
    assert np.array_equal(reference(), expected)
