"""The numpy random-state schemas and their error messages."""

import numpy as np
import pytest

from aejax.adapters import CodecSpec, PayloadError, parse_rng_state

BIT_GENERATORS = [np.random.MT19937, np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64]


@pytest.mark.parametrize("bit_generator", BIT_GENERATORS)
def test_generator_states_of_every_bit_generator_parse(bit_generator):
    state = bit_generator(11).state
    model = parse_rng_state("T", state, legacy=False)
    assert model.bit_generator == state["bit_generator"]
    restored = bit_generator()
    restored.state = model.to_numpy()
    assert (
        np.random.Generator(restored).integers(0, 2**31, 5).tolist()
        == np.random.Generator(bit_generator(11)).integers(0, 2**31, 5).tolist()
    )


def test_legacy_random_state_parses_and_keeps_cached_gaussian():
    rng = np.random.RandomState(3)
    rng.standard_normal()
    model = parse_rng_state("T", rng.get_state(legacy=False), legacy=True)
    assert model.has_gauss == 1
    assert model.gauss == rng.get_state(legacy=False)["gauss"]


def _legacy():
    return np.random.RandomState(1).get_state(legacy=False)


def _without(state, *path):
    *parents, last = path
    target = state
    for part in parents:
        target = target[part]
    del target[last]
    return state


def _with(state, value, *path):
    *parents, last = path
    target = state
    for part in parents:
        target = target[part]
    target[last] = value
    return state


BAD_PAYLOADS = [
    ("legacy missing gauss", True, lambda: _without(_legacy(), "gauss"), "gauss"),
    ("legacy missing pos", True, lambda: _without(_legacy(), "state", "pos"), "state.pos"),
    ("legacy key dtype", True, lambda: _with(_legacy(), np.zeros(624, np.int64), "state", "key"), "state.key"),
    ("legacy key shape", True, lambda: _with(_legacy(), np.zeros(623, np.uint32), "state", "key"), "state.key"),
    ("legacy pos type", True, lambda: _with(_legacy(), 1.5, "state", "pos"), "state.pos"),
    ("legacy has_gauss range", True, lambda: _with(_legacy(), 2, "has_gauss"), "has_gauss"),
    ("legacy wrong generator", True, lambda: _with(_legacy(), "PCG64", "bit_generator"), "bit_generator"),
    ("no bit_generator", False, lambda: _without(np.random.PCG64(1).state, "bit_generator"), "bit_generator"),
    (
        "unknown bit_generator",
        False,
        lambda: _with(np.random.PCG64(1).state, "Xoshiro", "bit_generator"),
        "bit_generator",
    ),
    ("pcg64 missing inc", False, lambda: _without(np.random.PCG64(1).state, "state", "inc"), "state.inc"),
    ("pcg64 state type", False, lambda: _with(np.random.PCG64(1).state, 1.0, "state", "state"), "state.state"),
    ("pcg64 state range", False, lambda: _with(np.random.PCG64(1).state, 2**128, "state", "state"), "state.state"),
    ("pcg64 missing uinteger", False, lambda: _without(np.random.PCG64(1).state, "uinteger"), "uinteger"),
    (
        "mt19937 key dtype",
        False,
        lambda: _with(np.random.MT19937(1).state, np.zeros(624, np.float64), "state", "key"),
        "state.key",
    ),
    (
        "philox counter shape",
        False,
        lambda: _with(np.random.Philox(1).state, np.zeros(3, np.uint64), "state", "counter"),
        "state.counter",
    ),
    (
        "philox key dtype",
        False,
        lambda: _with(np.random.Philox(1).state, np.zeros(2, np.uint32), "state", "key"),
        "state.key",
    ),
    ("philox buffer_pos range", False, lambda: _with(np.random.Philox(1).state, 5, "buffer_pos"), "buffer_pos"),
    (
        "sfc64 state dtype",
        False,
        lambda: _with(np.random.SFC64(1).state, np.zeros(4, np.int64), "state", "state"),
        "state.state",
    ),
    ("sfc64 extra field", False, lambda: _with(np.random.SFC64(1).state, 0, "extra"), "extra"),
    ("not a dict", False, lambda: [1, 2], "<state>"),
]


@pytest.mark.parametrize("legacy, make, field", [b[1:] for b in BAD_PAYLOADS], ids=[b[0] for b in BAD_PAYLOADS])
def test_bad_payload_names_the_field(legacy, make, field):
    with pytest.raises(PayloadError) as info:
        parse_rng_state("RandomGeneratorType", make(), legacy=legacy)
    assert info.value.field == field
    assert f"field {field!r}" in str(info.value)
    assert "RandomGeneratorType" in str(info.value)


def test_numpy_integer_fields_are_accepted():
    state = np.random.PCG64(1).state
    state["has_uint32"] = np.int64(1)
    state["uinteger"] = np.uint32(7)
    assert parse_rng_state("T", state, legacy=False).uinteger == 7


def test_fingerprint_differs_in_any_word():
    state = np.random.MT19937(5).state
    other = np.random.MT19937(5).state
    other["state"]["key"] = other["state"]["key"].copy()
    other["state"]["key"][-1] ^= 1
    first = parse_rng_state("T", state, legacy=False)
    second = parse_rng_state("T", other, legacy=False)
    assert first.fingerprint() != second.fingerprint()
    assert first != second
    assert first == parse_rng_state("T", np.random.MT19937(5).state, legacy=False)


@pytest.mark.parametrize(
    "fields",
    [dict(backend="JAX", type="a.B"), dict(backend="jax", type="NoModule"), dict(backend="jax", type="a.B", version=0)],
)
def test_codec_spec_rejects_bad_fields(fields):
    with pytest.raises(ValueError):
        CodecSpec(**fields)


def test_codec_spec_entry_point_name():
    assert CodecSpec(backend="jax", type="pkg.mod.MyType").entry_point_name == "jax:pkg.mod.MyType"
