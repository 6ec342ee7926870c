"""The JAX backend's codecs: tensors, scalars and random states as PRNG keys."""

import pickle
import subprocess
import sys

import aesara
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from aesara.scalar import float64 as scalar_float64
from aesara.tensor.random.type import RandomGeneratorType, RandomStateType

from aejax.adapters import CodecError, PayloadError, codec_for
from aejax.adapters.jax import RandomGeneratorCodec, RandomStateCodec
from aejax.adapters.jax_api import disable_x64

GEN = RandomGeneratorType()
LEGACY = RandomStateType()
BIT_GENERATORS = [np.random.MT19937, np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64]


def words(key):
    return np.asarray(jax.random.key_data(key)).tolist()


HOST_KINDS = [*(bit_generator.__name__ for bit_generator in BIT_GENERATORS), "RandomState"]
HOSTS = [pytest.param(kind, seed, id=f"{kind} seed {seed}") for seed in range(20) for kind in HOST_KINDS]
"""Every host generator kind with every seed, as ``(kind, seed)``."""


def host_value(kind, seed):
    """The Type and a new host generator of ``kind`` (a bit generator's name, or ``"RandomState"``)."""
    if kind == "RandomState":
        return LEGACY, np.random.RandomState(seed)
    return GEN, np.random.Generator(getattr(np.random, kind)(seed))


@pytest.mark.parametrize("type_", [GEN, LEGACY])
def test_registry_serves_key_codecs(type_):
    codec = codec_for("jax", type_)
    assert isinstance(codec, (RandomGeneratorCodec, RandomStateCodec))
    assert codec.payload_spec(type_).key_data_shape == (2,)


@pytest.mark.parametrize("kind, seed", HOSTS)
def test_round_trip_is_exact(kind, seed):
    type_, host = host_value(kind, seed)
    codec = codec_for("jax", type_)
    key = codec.encode(host, type_)
    codec.validate(key, type_)
    decoded = codec.decode(key, type_)
    assert type_.filter(decoded) is decoded
    assert words(codec.encode(decoded, type_)) == words(key)
    assert words(codec.encode(pickle.loads(pickle.dumps(decoded)), type_)) == words(key)


def test_distinct_host_states_encode_to_distinct_keys():
    keys = set()
    for kind, seed in (param.values for param in HOSTS):
        type_, host = host_value(kind, seed)
        keys.add(tuple(words(codec_for("jax", type_).encode(host, type_))))
    assert len(keys) == len(HOSTS)


@pytest.mark.parametrize("type_", [GEN, LEGACY], ids=["Generator", "RandomState"])
def test_key_to_host_to_key_is_exact_for_arbitrary_keys(type_):
    rng = np.random.default_rng(0)
    codec = codec_for("jax", type_)
    for _ in range(50):
        data = rng.integers(0, 2**32, size=2, dtype=np.uint64).astype(np.uint32)
        key = jax.random.wrap_key_data(data)
        assert words(codec.encode(codec.decode(key, type_), type_)) == data.tolist()


def test_state_dicts_encode_like_their_objects():
    generator = np.random.default_rng(4)
    legacy = np.random.RandomState(4)
    assert words(codec_for("jax", GEN).encode(generator.bit_generator.state, GEN)) == words(
        codec_for("jax", GEN).encode(generator, GEN)
    )
    assert words(codec_for("jax", LEGACY).encode(legacy.get_state(legacy=False), LEGACY)) == words(
        codec_for("jax", LEGACY).encode(legacy, LEGACY)
    )


def test_key_depends_on_the_whole_state_not_its_first_words():
    codec = codec_for("jax", LEGACY)
    state = np.random.RandomState(9).get_state(legacy=False)
    changed = np.random.RandomState(9).get_state(legacy=False)
    changed["state"]["key"][-1] ^= 1
    assert words(codec.encode(state, LEGACY)) != words(codec.encode(changed, LEGACY))
    gauss = np.random.RandomState(9).get_state(legacy=False)
    gauss["has_gauss"], gauss["gauss"] = 1, 0.5
    assert words(codec.encode(state, LEGACY)) != words(codec.encode(gauss, LEGACY))

    pcg = np.random.PCG64(9).state
    inc_only = np.random.PCG64(9).state
    inc_only["state"]["inc"] ^= 2
    gen_codec = codec_for("jax", GEN)
    assert words(gen_codec.encode(pcg, GEN)) != words(gen_codec.encode(inc_only, GEN))


def test_encoding_is_deterministic_across_processes():
    program = (
        "import numpy as np, jax\n"
        "from aejax.adapters import codec_for\n"
        "from aesara.tensor.random.type import RandomGeneratorType, RandomStateType\n"
        "for t, h in [(RandomGeneratorType(), np.random.Generator(np.random.Philox(77))),"
        " (RandomStateType(), np.random.RandomState(77))]:\n"
        "    print(jax.random.key_data(codec_for('jax', t).encode(h, t)).tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    here = [
        words(codec_for("jax", GEN).encode(np.random.Generator(np.random.Philox(77)), GEN)),
        words(codec_for("jax", LEGACY).encode(np.random.RandomState(77), LEGACY)),
    ]
    assert out.stdout.split("\n")[:2] == [str(w) for w in here]


@pytest.mark.parametrize("kind, seed", HOSTS)
def test_encode_does_not_mutate_the_host_value(kind, seed):
    type_, host = host_value(kind, seed)
    before = pickle.dumps(host)
    codec_for("jax", type_).encode(host, type_)
    assert pickle.dumps(host) == before


@pytest.mark.parametrize("type_", [GEN, LEGACY])
def test_drawing_from_a_decoded_generator_gives_a_new_key(type_):
    codec = codec_for("jax", type_)
    key = codec.encode(np.random.default_rng(1) if type_ is GEN else np.random.RandomState(1), type_)
    host = codec.decode(key, type_)
    host.standard_normal()
    assert words(codec.encode(host, type_)) != words(key)


@pytest.mark.parametrize("type_", [GEN, LEGACY])
def test_decoded_host_works_in_aesaras_reference_backend(type_):
    codec = codec_for("jax", type_)
    seed_host = np.random.default_rng(2) if type_ is GEN else np.random.RandomState(2)
    host = codec.decode(codec.encode(seed_host, type_), type_)
    rng = aesara.shared(host, borrow=True)
    draw = at.random.normal(0, 1, size=(4,), rng=rng)
    f = aesara.function([], draw, updates={rng: draw.owner.outputs[0]}, mode="FAST_RUN")
    first, second = f(), f()
    assert first.shape == (4,) and not np.array_equal(first, second)


def test_rbg_impl_has_four_words_and_round_trips():
    codec = RandomGeneratorCodec(impl="rbg")
    assert codec.payload_spec(GEN).key_data_shape == (4,)
    key = codec.encode(np.random.default_rng(5), GEN)
    assert str(jax.random.key_impl(key)) == "rbg"
    assert words(codec.encode(codec.decode(key, GEN), GEN)) == words(key)


def test_keys_come_from_uint32_words_without_x64():
    data = np.array([0xFFFFFFFF, 0x80000001], dtype=np.uint32)
    codec = codec_for("jax", GEN)
    with disable_x64():
        host = codec.decode(jax.random.wrap_key_data(data), GEN)
        assert words(codec.encode(host, GEN)) == data.tolist()


@pytest.mark.parametrize(
    "value, field",
    [
        (jnp.zeros(2, jnp.uint32), "key"),
        (np.zeros(2, np.uint32), "key"),
        (jax.random.split(jax.random.key(0), 2), "key.shape"),
        (jax.random.key(0, impl="rbg"), "key.impl"),
    ],
    ids=["raw uint32 key", "numpy words", "batched keys", "other impl"],
)
def test_validate_rejects_bad_keys(value, field):
    with pytest.raises(PayloadError) as info:
        codec_for("jax", GEN).validate(value, GEN)
    assert info.value.field == field


def test_raw_key_error_says_how_to_wrap():
    with pytest.raises(PayloadError, match="wrap_key_data"):
        codec_for("jax", GEN).decode(jnp.zeros(2, jnp.uint32), GEN)


@pytest.mark.parametrize(
    "type_, host",
    [(GEN, np.random.RandomState(1)), (LEGACY, np.random.default_rng(1)), (GEN, 3)],
    ids=["legacy for generator", "generator for legacy", "int"],
)
def test_wrong_host_kind_is_a_payload_error(type_, host):
    with pytest.raises(PayloadError, match=str(type_)):
        codec_for("jax", type_).encode(host, type_)


def test_tensor_codec_round_trip_returns_writeable_numpy():
    type_ = at.dmatrix().type
    codec = codec_for("jax", type_)
    value = np.arange(6.0).reshape(2, 3)
    assert codec.encode(value, type_) is value
    backend = jnp.asarray(value)
    codec.validate(backend, type_)
    out = codec.decode(backend, type_)
    assert isinstance(out, np.ndarray) and out.flags.writeable
    np.testing.assert_array_equal(out, value)
    assert type_.filter(out, strict=True) is out


@pytest.mark.parametrize(
    "value, field",
    [
        (np.zeros((2, 3), np.float32), "dtype"),
        (np.zeros(3), "ndim"),
        (np.zeros((2, 4)), "shape[1]"),
        ([1.0], "<value>"),
    ],
)
def test_tensor_codec_checks_dtype_ndim_and_static_shape(value, field):
    type_ = at.TensorType("float64", shape=(None, 3))
    with pytest.raises(PayloadError) as info:
        codec_for("jax", type_).encode(value, type_)
    assert info.value.field == field


@pytest.mark.parametrize(
    ("kind", "narrowed"), [("dvector", np.float32), ("lvector", np.int32), ("zvector", np.complex64)]
)
def test_tensor_codec_narrows_64_bit_values_without_x64_and_decodes_them_back(kind, narrowed):
    type_ = getattr(at, kind)().type
    codec = codec_for("jax", type_)
    value = np.array([1.25, -3.0]).astype(type_.dtype)
    with disable_x64():
        encoded = codec.encode(value, type_)
        assert encoded.dtype == narrowed
        codec.validate(jnp.asarray(encoded), type_)
        with pytest.raises(PayloadError, match="dtype"):
            codec.validate(np.zeros(2, np.float16), type_)
        decoded = codec.decode(jnp.asarray(encoded), type_)
    assert decoded.dtype == type_.dtype and decoded.flags.writeable
    np.testing.assert_array_equal(decoded, value)


def test_tensor_codec_refuses_integers_that_do_not_fit_32_bits_without_x64():
    type_ = at.lvector().type
    with disable_x64(), pytest.raises(CodecError, match="outside int32"):
        codec_for("jax", type_).encode(np.array([1, 2**40]), type_)


def test_scalar_codec_narrows_without_x64():
    codec = codec_for("jax", scalar_float64)
    with disable_x64():
        encoded = codec.encode(np.float64(2.5), scalar_float64)
        assert encoded.dtype == np.float32
        out = codec.decode(jnp.asarray(encoded), scalar_float64)
    assert type(out) is np.float64 and out == 2.5


def test_scalar_codec_round_trip():
    codec = codec_for("jax", scalar_float64)
    out = codec.decode(codec.encode(np.float64(2.5), scalar_float64), scalar_float64)
    assert type(out) is np.float64 and out == 2.5
    assert scalar_float64.filter(out) == out
    with pytest.raises(PayloadError, match="dtype"):
        codec.encode(np.float32(2.5), scalar_float64)


def test_host_backends_use_type_filter():
    type_ = at.lvector().type
    for backend in ("py", "c"):
        codec = codec_for(backend, type_)
        assert codec.encode([1, 2], type_).dtype == np.int64
        with pytest.raises(PayloadError, match=r"field '<value>'"):
            codec.validate(np.zeros(2), type_)
        assert codec_for(backend, GEN).decode(np.random.default_rng(0), GEN) is not None
