"""The exact call: after a first call, calls with arguments like its own skip the general path.

Every call here comes after a warm-up call with other values of the same
kinds, so that the function has its `ExactCall`; each test compares what the
call returns, raises or stores with Aesara's reference backend.
"""

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.raise_op import Assert
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.linker.call.direct_call import ExactCall
from tests.reference import REFERENCE


def _warm_pair(inputs, outputs, warm_args, **kwargs):
    """The reference function and ours, both called once with ``warm_args``."""
    functions = [aesara.function(inputs, outputs, mode=mode, **kwargs) for mode in (REFERENCE, aejax.linker.mode)]
    for f in functions:
        f(*warm_args)
    return functions


def _assert_same(expected, got):
    assert type(expected) is type(got)
    if isinstance(expected, dict):
        assert sorted(expected) == sorted(got)
        _assert_same([expected[k] for k in sorted(expected)], [got[k] for k in sorted(expected)])
    elif isinstance(expected, list):
        assert len(expected) == len(got)
        for e, g in zip(expected, got):
            _assert_same(e, g)
    else:
        assert np.asarray(expected).dtype == np.asarray(got).dtype
        assert np.shape(expected) == np.shape(got)
        np.testing.assert_allclose(expected, got)


def test_a_call_like_the_first_takes_the_exact_call(monkeypatch):
    x, s = at.dvector("x"), at.dscalar("s")
    reference, ours = _warm_pair([x, s], [x * s, (x + s).sum()], (np.zeros(3), np.float64(1.0)))
    assert isinstance(ours._direct.exact, ExactCall)
    monkeypatch.setattr(ours._direct, "call", None)  # the general path would fail now
    args = (np.arange(3.0), np.float64(2.5))
    _assert_same(reference(*args), ours(*args))


@pytest.mark.parametrize(
    "args",
    [
        (np.arange(4.0), 2.0),
        (np.arange(3, dtype="int32"), 2.0),
        (np.arange(6.0)[::2], 3.0),
        ([1.0, 2.0, 3.0], 2.0),
        (np.arange(3.0), np.array(2.0)),
        (np.arange(3.0), 2),
        (np.arange(3.0).astype(">f8"), 2.0),
        (np.arange(3.0).astype(np.dtype("f8", metadata={"unit": "m"})), 2.0),
    ],
    ids=["new shape", "int32 array", "strided", "list", "0-d array", "python int", "big-endian", "dtype with metadata"],
)
def test_arguments_unlike_the_first_give_what_aesara_gives(args):
    x, s = at.dvector("x"), at.dscalar("s")
    reference, ours = _warm_pair([x, s], x * s, (np.zeros(3), np.float64(1.0)))
    _assert_same(reference(*args), ours(*args))


@pytest.mark.parametrize(
    "outputs",
    [lambda x: x * 2, lambda x: [x * 2, x.sum()], lambda x: {"twice": x * 2, "sum": x.sum()}, lambda x: [x * 2]],
    ids=["single", "list", "dict", "list of one"],
)
def test_the_exact_call_returns_outputs_as_aesara_returns_them(outputs):
    x = at.dvector("x")
    reference, ours = _warm_pair([x], outputs(x), (np.zeros(3),))
    assert isinstance(ours._direct.exact, ExactCall)
    _assert_same(reference(np.arange(3.0)), ours(np.arange(3.0)))


def test_a_copied_function_returns_outputs_as_aesaras_copy():
    x = at.dvector("x")
    copies = [f.copy() for f in _warm_pair([x], [x * 2], (np.zeros(3),))]
    for f in copies:
        f(np.zeros(3))
    _assert_same(copies[0](np.arange(3.0)), copies[1](np.arange(3.0)))


def test_an_unaligned_array_raises_aesaras_error():
    x = at.dvector("x")
    reference, ours = _warm_pair([x], x + 1, (np.zeros(3),))
    buffer = np.zeros(3 * 8 + 1, dtype=np.uint8)
    unaligned = np.frombuffer(buffer.data, dtype=np.float64, count=3, offset=1)
    assert not unaligned.flags.aligned
    with pytest.raises(TypeError) as expected:
        reference(unaligned)
    with pytest.raises(TypeError) as got:
        ours(unaligned)
    assert str(got.value) == str(expected.value)


def test_a_strict_input_refuses_a_numpy_scalar_as_aesara_does():
    s = at.dscalar("s")
    strict = aesara.In(s, strict=True)
    reference, ours = _warm_pair([strict], s * 2, (np.array(1.0),))
    with pytest.raises(TypeError):
        reference(np.float64(2.0))
    with pytest.raises(TypeError):
        ours(np.float64(2.0))
    _assert_same(reference(np.array(3.0)), ours(np.array(3.0)))


def test_shared_array_updates_and_new_shapes_follow_aesara():
    values = []
    for mode in (REFERENCE, aejax.linker.mode):
        total = aesara.shared(np.zeros(2), name="total")
        x = at.dvector("x")
        f = aesara.function([x], total.sum(), updates={total: total + x}, mode=mode)
        got = [f(np.ones(2)), f(np.full(2, 2.0))]
        total.set_value(np.zeros(3))
        got += [f(np.ones(3)), f(np.ones(3)), total.get_value()]
        values.append(got)
    _assert_same(*values)


def test_a_shared_generator_advances_each_exact_call_reproducibly_and_stays_usable():
    def three_draws():
        srng = RandomStream(7)
        draw = srng.normal(size=2000)
        f = aesara.function([], draw, updates=srng.updates(), mode=aejax.linker.mode)
        return srng, draw, [f(), f(), f()]

    srng, draw, samples = three_draws()
    assert all(not np.array_equal(a, b) for a, b in zip(samples, samples[1:]))
    for sample in samples:
        assert abs(sample.mean()) < 0.1 and abs(sample.std() - 1) < 0.1
    for a, b in zip(samples, three_draws()[2]):
        np.testing.assert_array_equal(a, b)
    reference = aesara.function([], draw, updates=srng.updates(), mode=REFERENCE)
    assert not np.array_equal(reference(), reference())


def test_a_generator_set_by_the_user_is_used_then_advanced():
    srng = RandomStream(7)
    draw = srng.uniform(size=3)
    f = aesara.function([], draw, updates=srng.updates(), mode=aejax.linker.mode)
    f(), f()
    (rng, _) = srng.state_updates[0]
    rng.set_value(np.random.default_rng(123))
    after_set = f()
    rng.set_value(np.random.default_rng(123))
    assert np.array_equal(after_set, f())
    assert not np.array_equal(after_set, f())


def test_a_generator_drawn_from_in_numpy_between_calls_continues_from_its_new_state():
    def second_draw(numpy_draws):
        srng = RandomStream(11)
        draw = srng.normal(size=4)
        f = aesara.function([], draw, updates=srng.updates(), mode=aejax.linker.mode)
        f(), f()
        generator = srng.state_updates[0][0].get_value(borrow=True)
        generator.normal(size=numpy_draws)  # advances the generator the shared variable holds
        return f()

    assert not np.array_equal(second_draw(0), second_draw(5))
    np.testing.assert_array_equal(second_draw(5), second_draw(5))


def test_two_shared_variables_holding_one_generator_advance_as_in_the_general_path():
    generator = np.random.default_rng(5)
    a = aesara.shared(generator, borrow=True)
    b = aesara.shared(generator, borrow=True)
    srng_draws = [at.random.normal(size=3, rng=a), at.random.normal(size=3, rng=b)]
    updates = {a: srng_draws[0].owner.outputs[0], b: srng_draws[1].owner.outputs[0]}
    f = aesara.function([], srng_draws, updates=updates, mode=aejax.linker.mode)
    f()
    a.set_value(generator, borrow=True)
    b.set_value(generator, borrow=True)
    first, second = f()
    assert a.get_value(borrow=True) is not b.get_value(borrow=True)
    assert not np.array_equal(first, f()[0])


def test_a_failed_exact_call_stores_nothing():
    x = at.dvector("x")
    total = aesara.shared(np.zeros(2), name="total")
    guarded = Assert("x must be positive")(x, at.all(x > 0))
    f = aesara.function([x], guarded.sum(), updates={total: total + guarded}, mode=aejax.linker.mode)
    f(np.ones(2))
    f(np.ones(2))
    before = total.get_value()
    with pytest.raises(AssertionError, match="x must be positive"):
        f(-np.ones(2))
    np.testing.assert_array_equal(total.get_value(), before)


def test_a_shape_deciding_input_is_never_taken_as_exact():
    x, n = at.dvector("x"), at.lscalar("n")
    reference, ours = _warm_pair([x, n], at.zeros(n) + x[:n].sum(), (np.arange(5.0), np.array(2)))
    ours(np.arange(5.0), np.array(2))
    for size in (2, 3, 4):
        _assert_same(reference(np.arange(5.0), np.array(size)), ours(np.arange(5.0), np.array(size)))
