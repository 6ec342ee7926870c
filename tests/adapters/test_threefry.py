"""The unrolled Threefry keys (`aejax.adapters.threefry`): JAX's ``threefry2x32`` bits, no loop in the program."""

import pickle
from collections.abc import Callable
from typing import Any

import aesara
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from aesara.tensor.random.type import RandomGeneratorType, RandomStateType
from aesara.tensor.random.utils import RandomStream

import aejax.linker  # noqa: F401  (registers the modes)
from aejax.adapters import THREEFRY_UNROLLED, PayloadError, codec_for, default_registry
from aejax.adapters.jax import RandomGeneratorCodec, RandomStateCodec
from aejax.adapters.jax_api import disable_x64, enable_x64
from aejax.adapters.threefry import SAME_BITS_AS, bits_of, key_impl, threefry2x32_hash

JAX_IMPL = "threefry2x32"
KEY_DATA = np.random.default_rng(20240).integers(0, 2**32, size=(200, 2), dtype=np.uint64).astype(np.uint32)
KEY_DATA[:3] = [[0, 0], [0xFFFFFFFF, 0xFFFFFFFF], [0, 0x80000000]]
SCALAR_KEYS = KEY_DATA[:6]
SHAPES = [(), (0,), (1,), (3,), (7,), (4, 5), (2, 0, 3), (3, 3, 3)]
PARTITIONABLE = pytest.mark.parametrize("partitionable", [True, False], ids=["partitionable", "sequential"])

Op = Callable[[Any], Any]


def _split(shape: Any) -> Op:
    return lambda key: jax.random.key_data(jax.random.split(key, shape))


def _fold_in(data: int) -> Op:
    return lambda key: jax.random.key_data(jax.random.fold_in(key, data))


def _bits(dtype: str, shape: tuple[int, ...]) -> Op:
    return lambda key: jax.random.bits(key, shape, dtype=dtype)


OPERATIONS: dict[str, Op] = {
    **{f"split {n}": _split(n) for n in (1, 2, 3, 0)},
    "split (2, 3)": _split((2, 3)),
    **{f"fold_in {data}": _fold_in(data) for data in (0, 1, 12345, 2**31, 2**32 - 1)},
    **{f"bits {dtype} {shape}": _bits(dtype, shape) for dtype in ("uint8", "uint16", "uint32") for shape in SHAPES},
    **{
        f"uniform {dtype} {shape}": (lambda d, s: lambda k: jax.random.uniform(k, s, d))(dtype, shape)
        for dtype in ("float32", "float16")
        for shape in SHAPES
    },
    "normal float32 (5, 3)": lambda key: jax.random.normal(key, (5, 3), jnp.float32),
    "randint int32": lambda key: jax.random.randint(key, (9,), -50, 1000, jnp.int32),
    "randint int8": lambda key: jax.random.randint(key, (3, 3), -5, 100, jnp.int8),
    "gamma float32": lambda key: jax.random.gamma(key, jnp.array([0.3, 1.0, 7.5], jnp.float32)),
    "choice": lambda key: jax.random.choice(key, 10, (4,), replace=False),
    "choice weighted": lambda key: jax.random.choice(key, 5, (7,), p=jnp.array([0.1, 0.2, 0.3, 0.2, 0.2])),
    "permutation": lambda key: jax.random.permutation(key, 11),
    "bernoulli": lambda key: jax.random.bernoulli(key, 0.3, (6,)),
    "categorical": lambda key: jax.random.categorical(key, jnp.log(jnp.array([0.2, 0.5, 0.3])), shape=(5,)),
    "truncated normal": lambda key: jax.random.truncated_normal(key, -1.0, 2.0, (4,), jnp.float32),
    "split then uniform": lambda key: jax.random.uniform(jax.random.split(key, 3)[2], (3,), jnp.float32),
    "split then exponential": lambda key: jax.random.exponential(jax.random.split(key, 3)[2], (3,), jnp.float32),
}
"""Operations without 64-bit values: they run with and without x64."""

OPERATIONS_X64: dict[str, Op] = {
    **{f"bits uint64 {shape}": _bits("uint64", shape) for shape in SHAPES},
    **{
        f"uniform float64 {shape}": (lambda s: lambda k: jax.random.uniform(k, s, jnp.float64))(shape)
        for shape in SHAPES
    },
    "normal float64 (1001,)": lambda key: jax.random.normal(key, (1001,), jnp.float64),
    "gamma float64": lambda key: jax.random.gamma(key, jnp.array([0.3, 1.0, 7.5]), (2, 3)),
    "beta float64": lambda key: jax.random.beta(key, 2.0, 3.0, (4,)),
    "randint int64": lambda key: jax.random.randint(key, (9,), -(2**40), 2**40, jnp.int64),
    "choice float64 weights": lambda key: jax.random.choice(key, 5, (3,), p=jnp.array([0.1, 0.2, 0.3, 0.2, 0.2])),
}

ALL = {**OPERATIONS, **OPERATIONS_X64}

TRANSCENDENTAL = {
    "normal float32 (5, 3)",
    "gamma float32",
    "truncated normal",
    "split then exponential",
    "normal float64 (1001,)",
    "gamma float64",
    "beta float64",
}
"""Draws that pass the bits through ``log``, ``exp`` or ``erf``: compared within `ULPS`.

XLA's CPU compiler emits those functions differently depending on the
program around them (vectorized or not), so the same maths on the same bits
may differ in the last place between two programs: JAX's own ``threefry2x32``
gives such differences between its ``jit`` and its ``vmap`` of one draw, and
under ``vmap`` JAX 0.7.1 runs ``gamma`` (and ``beta``) elementwise in a loop
for any impl but its own. The bits, keys, integers and uniform draws are
compared exactly.
"""
ULPS = 16


def keys(data: np.ndarray, impl: str) -> Any:
    return jax.random.wrap_key_data(jnp.asarray(data, jnp.uint32), impl=key_impl(impl))


def assert_same(ours: Any, theirs: Any, ulps: int = 0) -> None:
    """The same dtype, shape and values (floats within ``ulps`` units in the last place)."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    if ulps:
        np.testing.assert_array_max_ulp(ours, theirs, maxulp=ulps)
    else:
        np.testing.assert_array_equal(ours, theirs)


def assert_same_bits(name: str, run: Callable[[Op, Any], Any], data: np.ndarray, partitionable: bool) -> None:
    """``ALL[name]`` run by ``run`` on keys of ``data`` gives the same with our impl as with JAX's."""
    op = ALL[name]
    with jax.threefry_partitionable(partitionable):
        ours, theirs = run(op, keys(data, THREEFRY_UNROLLED)), run(op, keys(data, JAX_IMPL))
    assert_same(ours, theirs, ULPS if name in TRANSCENDENTAL else 0)


def in_jit(op: Op, key: Any) -> Any:
    return jax.jit(op)(key)


def in_vmap(op: Op, batch: Any) -> Any:
    return jax.jit(jax.vmap(op))(batch)


def in_nested_vmap(op: Op, batch: Any) -> Any:
    return jax.vmap(jax.vmap(op))(batch.reshape(10, -1))


def eager(op: Op, key: Any) -> Any:
    return op(key)


@PARTITIONABLE
@pytest.mark.parametrize("name", list(ALL))
def test_200_keys_under_vmap_and_jit_give_jaxs_bits(name, partitionable):
    assert_same_bits(name, in_vmap, KEY_DATA, partitionable)


@PARTITIONABLE
@pytest.mark.parametrize("name", ["split 3", "fold_in 12345", "bits uint8 (7,)", "normal float64 (1001,)", "choice"])
def test_nested_vmap_gives_jaxs_bits(name, partitionable):
    assert_same_bits(name, in_nested_vmap, KEY_DATA, partitionable)


@pytest.mark.parametrize("run", [eager, in_jit], ids=["eager", "jit"])
@pytest.mark.parametrize("name", list(ALL))
def test_scalar_keys_give_jaxs_bits(name, run):
    for data in SCALAR_KEYS:
        assert_same_bits(name, run, data, partitionable=True)


@PARTITIONABLE
@pytest.mark.parametrize("name", list(OPERATIONS))
def test_without_x64_gives_jaxs_bits(name, partitionable):
    with disable_x64():
        assert_same_bits(name, in_vmap, KEY_DATA, partitionable)


def seeded(seed: Any, impl: str) -> Any:
    """The key data of ``jax.random.key(seed, impl=key_impl(impl))``, or the type of the exception it raises."""
    try:
        return np.asarray(jax.random.key_data(jax.random.key(seed, impl=key_impl(impl)))).tolist()
    except Exception as error:  # without x64 JAX refuses seeds of more than 32 bits
        return type(error)


@pytest.mark.parametrize(
    "seed",
    [
        0,
        1,
        42,
        -1,
        -(2**31),
        2**31 - 1,
        2**32 + 7,
        -(2**40),
        2**63 - 1,
        np.int32(-5),
        np.uint32(2**32 - 1),
        np.int8(-3),
        np.uint16(65535),
        np.uint64(2**64 - 1),
        np.int64(-(2**62)),
    ],
    ids=repr,
)
def test_seeds_give_jaxs_key_data(seed):
    for x64 in (enable_x64, disable_x64):
        with x64():
            assert seeded(seed, THREEFRY_UNROLLED) == seeded(seed, JAX_IMPL)


def test_seeds_under_jit_and_vmap_give_jaxs_key_data():
    seeds = jnp.asarray(KEY_DATA[:, 0].astype(np.int64) - 2**31 + (KEY_DATA[:, 1].astype(np.int64) << 31))
    make = jax.jit(
        jax.vmap(lambda s, impl: jax.random.key_data(jax.random.key(s, impl=key_impl(impl))), (0, None)),
        static_argnums=1,
    )
    assert_same(make(seeds, THREEFRY_UNROLLED), make(seeds, JAX_IMPL))


def test_hash_matches_the_threefry_known_answers():
    """The Random123 known-answer vectors of Threefry-2x32 with 20 rounds (Salmon et al., 2011)."""
    vectors = [
        ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ]
    for key, counter, expected in vectors:
        words = threefry2x32_hash(*(jnp.uint32(w) for w in key), *(jnp.uint32(w) for w in counter))
        assert [int(w) for w in words] == list(expected)


def _draws(key: Any) -> Any:
    first, second = jax.random.split(key)
    return jax.random.normal(first, (3,)) + jax.random.uniform(jax.random.fold_in(second, 3), (3,))


@pytest.mark.parametrize("impl, has_loop", [(THREEFRY_UNROLLED, False), (JAX_IMPL, True)])
def test_lowered_draws_have_no_while_loop(impl, has_loop):
    """JAX's own impl is lowered with a loop on the CPU (the reason for ours): the check tells them apart."""
    assert jax.default_backend() == "cpu"
    text = jax.jit(_draws).lower(jax.random.key(0, impl=key_impl(impl))).as_text()
    assert ("while" in text) is has_loop
    batched = jax.jit(jax.vmap(_draws)).lower(keys(KEY_DATA, impl)).as_text()
    assert ("while" in batched) is has_loop


def test_impl_is_known_to_jax_by_name():
    key = jax.random.key(3, impl=key_impl(THREEFRY_UNROLLED))
    assert str(jax.random.key_impl(key)) == THREEFRY_UNROLLED
    assert jax.random.key_data(key).shape == (2,)
    assert bits_of(THREEFRY_UNROLLED) == SAME_BITS_AS == JAX_IMPL and bits_of("rbg") == "rbg"


def test_keys_pickle():
    key = jax.random.split(jax.random.key(11, impl=key_impl(THREEFRY_UNROLLED)), 3)
    again = pickle.loads(pickle.dumps(key))
    assert str(jax.random.key_impl(again)) == THREEFRY_UNROLLED
    assert_same(jax.random.key_data(again), jax.random.key_data(key))
    assert_same(jax.random.normal(again[1], (4,)), jax.random.normal(key[1], (4,)))


def test_more_counters_than_one_block_is_refused():
    key = jax.random.key(0, impl=key_impl(THREEFRY_UNROLLED))
    with pytest.raises(NotImplementedError, match="4294967296 counters"):
        jax.jit(lambda k: jax.random.bits(k, (2**32 + 1,))).lower(key)


def test_jax_poisson_takes_only_its_own_threefry():
    """Why the codecs' default stays JAX's impl: ``jax.random.poisson`` (Aesara's Poisson and negative binomial) refuses others.

    JAX 0.7.1 compares the impl with its own object; when this test fails,
    JAX has lifted the restriction.
    """
    assert jax.random.poisson(jax.random.key(0), 3.5, (2,)).shape == (2,)
    with pytest.raises(NotImplementedError, match="only implemented for the threefry2x32"):
        jax.random.poisson(jax.random.key(0, impl=key_impl(THREEFRY_UNROLLED)), 3.5, (2,))


# --- the codecs: the same seeds give the same streams with either impl


HOSTS = [
    (RandomGeneratorType(), lambda seed: np.random.default_rng(seed), RandomGeneratorCodec),
    (RandomGeneratorType(), lambda seed: np.random.Generator(np.random.Philox(seed)), RandomGeneratorCodec),
    (RandomStateType(), lambda seed: np.random.RandomState(seed), RandomStateCodec),
]


@pytest.mark.parametrize("type_, host, codec_class", HOSTS, ids=["PCG64", "Philox", "RandomState"])
def test_codecs_of_both_impls_give_the_same_keys_and_states(type_, host, codec_class):
    ours, theirs = codec_class(THREEFRY_UNROLLED), codec_class(JAX_IMPL)
    assert ours.payload_spec(type_).impl == THREEFRY_UNROLLED
    for seed in range(10):
        key, their_key = ours.encode(host(seed), type_), theirs.encode(host(seed), type_)
        assert str(jax.random.key_impl(key)) == THREEFRY_UNROLLED
        assert_same(jax.random.key_data(key), jax.random.key_data(their_key))
        decoded, decoded_theirs = ours.decode(key, type_), theirs.decode(their_key, type_)
        if codec_class is RandomGeneratorCodec:
            assert decoded.bit_generator.state == decoded_theirs.bit_generator.state
        else:
            assert_same(decoded.get_state()[1], decoded_theirs.get_state()[1])
        assert_same(jax.random.key_data(theirs.encode(decoded, type_)), jax.random.key_data(key))


def test_codec_takes_keys_of_the_same_bits_and_refuses_others():
    gen = RandomGeneratorType()
    codec = RandomGeneratorCodec(THREEFRY_UNROLLED)
    codec.validate(jax.random.key(5), gen)  # a JAX user's own key
    host = codec.decode(jax.random.key(5), gen)
    assert_same(jax.random.key_data(codec.encode(host, gen)), jax.random.key_data(jax.random.key(5)))
    RandomGeneratorCodec(JAX_IMPL).validate(jax.random.key(5, impl=key_impl(THREEFRY_UNROLLED)), gen)
    with pytest.raises(PayloadError, match="key.impl"):
        codec.validate(jax.random.key(5, impl="rbg"), gen)


def _seeded_draws(ctor: Any) -> list[list[Any]]:
    """Two calls of an AEJAX function of a seeded `RandomStream`, then a numpy draw from a generator it left."""
    srng = RandomStream(seed=2024, rng_ctor=ctor)
    normal, uniform = srng.normal(0, 1, size=(3,)), srng.uniform(0, 1, size=(2,))
    counts = srng.integers(0, 100, size=(4,)) if ctor is np.random.default_rng else srng.randint(0, 100, size=(4,))
    f = aesara.function([], [normal, uniform, counts], mode="AEJAX")
    calls = [[value.tolist() for value in f()] for _ in range(2)]
    rng = srng.state_updates[0][0].get_value(borrow=True)
    return [*calls, (rng.random(2) if ctor is np.random.default_rng else rng.random_sample(2)).tolist()]


SEEDED_WITH_JAXS_IMPL = {
    "Generator": [
        [
            [1.0747168811703276, -1.748330783233711, 0.6900648056470815],
            [0.8591472632745953, 0.22493773244136306],
            [77, 8, 94, 25],
        ],
        [
            [-1.7182242741833733, 1.568723232185187, 1.2741905109992753],
            [0.3540768901685012, 0.8016518683009988],
            [4, 13, 18, 4],
        ],
        [0.025619815968757287, 0.9533988893917436],
    ],
    "RandomState": [
        [
            [-0.048585185913461136, -0.042681709995668456, -0.8911621431670229],
            [0.6059340548910164, 0.7328147247005252],
            [34, 69, 87, 75],
        ],
        [
            [0.07880318766661697, -1.3051256042239348, 0.6607418283887073],
            [0.11071266268540803, 0.11040400621271118],
            [50, 12, 39, 70],
        ],
        [0.2862962200327468, 0.4737685924922962],
    ],
}
"""`_seeded_draws`, recorded with aejax's codecs on JAX's ``threefry2x32`` as they were before this module."""


def use_impl(impl: str) -> None:
    """Make the JAX backend's key codecs in the default registry ones of ``impl``."""
    for codec in (RandomGeneratorCodec(impl), RandomStateCodec(impl)):
        default_registry.register(codec, replace=True)


@pytest.fixture
def restore_codecs():
    """The default registry's key codecs as they were, after the test."""
    defaults = [codec_for("jax", type_) for type_ in (RandomGeneratorType(), RandomStateType())]
    yield
    for codec in defaults:
        default_registry.register(codec, replace=True)


@pytest.mark.parametrize("ctor", [np.random.default_rng, np.random.RandomState], ids=["Generator", "RandomState"])
def test_seeded_functions_draw_the_same_with_either_impl(ctor, restore_codecs):
    name = "Generator" if ctor is np.random.default_rng else "RandomState"
    for impl in (JAX_IMPL, THREEFRY_UNROLLED):
        use_impl(impl)
        assert codec_for("jax", RandomGeneratorType()).impl == impl
        assert_same_draws(_seeded_draws(ctor), SEEDED_WITH_JAXS_IMPL[name])


def assert_same_draws(drawn: list[Any], recorded: list[Any]) -> None:
    """Integer draws equal, float64 ones within 8 ulp: JAX 0.12's float64 transforms differ from 0.7.1's in their
    last bits (the keys' bits are the same)."""
    assert len(drawn) == len(recorded)
    for ours, theirs in zip(drawn, recorded):
        if isinstance(theirs[0], list):
            assert_same_draws(ours, theirs)
        elif isinstance(theirs[0], int):
            assert ours == theirs
        else:
            np.testing.assert_array_max_ulp(np.array(ours), np.array(theirs), maxulp=8)


def _random_walk() -> list[list[float]]:
    """Two calls of an AEJAX function of a Scan drawing from a seeded `RandomStream` at every step."""
    srng = RandomStream(seed=7)
    walk, updates = aesara.scan(
        lambda x: x + srng.normal(0, 1) * srng.uniform(0, 1, size=(2,)), outputs_info=np.zeros(2), n_steps=25
    )
    f = aesara.function([], walk, updates=updates, mode="AEJAX")
    return [f().tolist(), f().tolist()]


def test_scan_of_draws_is_the_same_with_either_impl(restore_codecs):
    use_impl(JAX_IMPL)
    theirs = _random_walk()
    use_impl(THREEFRY_UNROLLED)
    assert _random_walk() == theirs


def test_the_codecs_default_to_the_unrolled_implementation():
    assert codec_for("jax", RandomGeneratorType()).impl == THREEFRY_UNROLLED
