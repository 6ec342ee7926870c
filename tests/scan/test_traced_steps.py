"""Loops whose number of steps is known only at run time stay inside one jit program."""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.scan.checkpoints import scan_checkpoints
from aesara.scan.utils import until
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.linker import CallbackWarning, InvalidValueError, ShapeInputWarning
from aejax.linker.scan.lower import LoweredScan
from tests.reference import assert_matches_reference, compile_both


@pytest.fixture(autouse=True)
def _no_static_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShapeInputWarning)
        yield


def assert_one_program(inputs, outputs, *args, **kwargs):
    """The graph compiles to a single jit program with no static inputs."""
    f = aesara.function(inputs, outputs, mode=aejax.linker.mode, **kwargs)
    f(*args)
    (segment,) = f.vm.jit_fn.segments
    assert segment.program.static_positions == ()
    return f


def _steps_from_data(x):
    return at.cast(x.sum(), "int64")


def test_step_count_from_data_last_value():
    x = at.dvector("x")
    ys, _ = aesara.scan(
        lambda s: s * 0.5 + 1, outputs_info=[at.as_tensor(np.float64(0.0))], n_steps=_steps_from_data(x)
    )
    for value in (np.ones(3), np.ones(7)):
        assert_matches_reference([x], ys[-1], value)
    assert_one_program([x], ys[-1], np.ones(3))


def test_last_value_of_a_loop_that_ran_no_step_raises_as_the_reference_does():
    x = at.dvector("x")
    ys, _ = aesara.scan(
        lambda s: s * 0.5 + 1, outputs_info=[at.as_tensor(np.float64(0.0))], n_steps=_steps_from_data(x)
    )
    for f in compile_both([x], ys[-1]):
        with pytest.raises(IndexError):
            f(np.zeros(2))


def test_step_count_from_data_mit_sot_and_nit_sot_last_values():
    x = at.dvector("x")
    (a, b), _ = aesara.scan(
        lambda am2, am1: (am1 + am2 * 0.5, am1 * 2),
        outputs_info=[dict(initial=at.as_tensor(np.array([1.0, 2.0])), taps=[-2, -1]), None],
        n_steps=_steps_from_data(x),
    )
    assert_matches_reference([x], [a[-1], b[-1]], np.ones(5))
    assert_one_program([x], [a[-1], b[-1]], np.ones(5))


def test_step_count_from_data_with_a_shared_rng_advancing():
    x = at.dvector("x")
    srng = RandomStream(11)
    walk, updates = aesara.scan(
        lambda s: s + srng.normal(), outputs_info=[at.as_tensor(np.float64(0.0))], n_steps=_steps_from_data(x)
    )
    f = assert_one_program([x], walk[-1], np.ones(400), updates=updates)
    ends = np.array([f(np.ones(400)) for _ in range(200)])
    assert len(set(ends)) == len(ends)
    assert abs(ends.mean()) < 5 * np.sqrt(400 / len(ends))
    assert 0.7 < ends.std() / np.sqrt(400) < 1.3


def test_step_count_from_an_enclosing_loop_two_deep():
    """The middle loop runs over ``arange(1, n + 2)`` for a row ``n`` of the input ``counts``: bounded by the
    values of ``counts`` (static in a second program), all three loops run in JAX."""
    counts = at.lvector("counts")

    def middle(n):
        def inner(m):
            ys, _ = aesara.scan(lambda s: s + 1.5, outputs_info=[at.as_tensor(np.float64(0.0))], n_steps=m)
            return ys[-1]

        zs, _ = aesara.scan(inner, sequences=[at.arange(1, n + 2)])
        return zs.sum()

    totals, _ = aesara.scan(middle, sequences=[counts])
    with warnings.catch_warnings():
        warnings.simplefilter("error", CallbackWarning)  # the middle loop's nit-sot is sized by the bound of counts
        assert_matches_reference([counts], totals, np.array([0, 2, 5], "int64"))


def test_until_loop_inside_a_fixed_loop_with_a_limit_from_the_outer_loop():
    limits = at.lvector("limits")

    def outer(limit):
        ys, _ = aesara.scan(
            lambda s: (s * 2, until(s > 20)), outputs_info=[at.as_tensor(np.int64(1))], n_steps=limit + 1
        )
        return ys[-1]

    ends, _ = aesara.scan(outer, sequences=[limits])
    assert_matches_reference([limits], ends, np.array([0, 2, 10], "int64"))
    assert_one_program([limits], ends, np.array([0, 2, 10], "int64"))


def test_arange_sequence_with_traced_bounds_is_read_from_the_counter():
    steps = at.lvector("steps")

    def doubling(step):
        sums, _ = aesara.scan(
            lambda k, acc: acc + k, sequences=[at.arange(1, 1 + 2**step)], outputs_info=[at.as_tensor(np.int64(0))]
        )
        return sums[-1]

    totals, _ = aesara.scan(doubling, sequences=[steps])
    assert_matches_reference([steps], totals, np.arange(6, dtype="int64"))
    assert_one_program([steps], totals, np.arange(6, dtype="int64"))


@pytest.mark.parametrize("every", [2, 4, 5])
def test_scan_checkpoints_value_and_gradient(every):
    w = at.dscalar("w")
    ys, _ = scan_checkpoints(
        lambda s, w: s * w + 1,
        outputs_info=[at.as_tensor(np.float64(0.5))],
        non_sequences=[w],
        n_steps=12,
        save_every_N=every,
    )
    outputs = [ys[-1], aesara.grad(ys[-1], w)]
    assert_matches_reference([w], outputs, 0.9)
    assert_one_program([w], outputs, 0.9)


def test_sequence_shorter_than_a_traced_step_count_raises():
    x, seq = at.dvector("x"), at.dvector("seq")
    ys, _ = aesara.scan(
        lambda a, s: s + a, sequences=[seq], outputs_info=[at.as_tensor(np.float64(0.0))], n_steps=_steps_from_data(x)
    )
    reference, ours = compile_both([x, seq], ys[-1])
    np.testing.assert_allclose(ours(np.ones(2), np.arange(3.0)), 1.0)
    with pytest.raises(ValueError):
        reference(np.ones(4), np.arange(3.0))
    with pytest.raises(InvalidValueError, match="sequence 'seq' of Scan"):
        ours(np.ones(4), np.arange(3.0))


def test_while_loop_step_is_traced_once(monkeypatch):
    """A while loop's step is traced once (nit-sot shapes too): a Scan in it is lowered as often as the loop."""
    lowered = []
    outputs = LoweredScan.outputs

    def counted(self, *outer):
        lowered.append(self.layout.as_while)
        return outputs(self, *outer)

    monkeypatch.setattr(LoweredScan, "outputs", counted)
    s0 = at.dscalar("s0")

    def step(s):
        ys, _ = aesara.scan(lambda t: t + 1.0, outputs_info=[s], n_steps=3)
        return (ys[-1], ys.sum()), until(ys[-1] > 10)

    (states, sums), _ = aesara.scan(step, outputs_info=[s0, None], n_steps=20)
    assert_matches_reference([s0], [states, sums], 0.5)
    assert lowered.count(False) == lowered.count(True) > 0
