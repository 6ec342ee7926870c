"""Random variables inside Scan: PRNG keys threaded through the loop carry."""

import pickle

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from tests.reference import REFERENCE

CTORS = [np.random.RandomState, np.random.default_rng]


@pytest.mark.kind("random")
@pytest.mark.parametrize("ctor", CTORS, ids=["RandomState", "Generator"])
def test_problem_report_rng_scan(ctor):
    srng = RandomStream(seed=1930, rng_ctor=ctor)
    out, updates = aesara.scan(fn=lambda: srng.normal(0, 1), n_steps=3)
    f = aesara.function([], out, updates=updates, mode=aejax.linker.mode)
    shared_rng = srng.state_updates[0][0]
    before = pickle.dumps(shared_rng.get_value())
    first = f()
    after_first = pickle.dumps(shared_rng.get_value())
    second = f()
    assert first.shape == (3,) and first.dtype == np.float64
    assert len(set(first.tolist())) == 3
    assert not np.array_equal(first, second)
    assert before != after_first != pickle.dumps(shared_rng.get_value())

    again = RandomStream(seed=1930, rng_ctor=ctor)
    out2, updates2 = aesara.scan(fn=lambda: again.normal(0, 1), n_steps=3)
    np.testing.assert_array_equal(aesara.function([], out2, updates=updates2, mode=aejax.linker.mode)(), first)


@pytest.mark.kind("random")
@pytest.mark.parametrize("ctor", CTORS, ids=["RandomState", "Generator"])
def test_gaussian_random_walk_moments(ctor):
    srng = RandomStream(seed=5, rng_ctor=ctor)
    x0 = at.dvector("x0")
    walk, updates = aesara.scan(lambda x: x + srng.normal(0, 1, size=x.shape), outputs_info=x0, n_steps=50)
    f = aesara.function([x0], walk, updates=updates, mode=aejax.linker.mode)
    paths = f(np.zeros(4000))
    assert paths.shape == (50, 4000)
    steps = np.diff(np.concatenate([np.zeros((1, 4000)), paths]), axis=0)
    assert abs(steps.mean()) < 0.01
    assert abs(steps.var() - 1.0) < 0.02
    assert abs(paths[-1].var() - 50.0) < 5.0
    assert abs(np.corrcoef(steps[1:].ravel(), steps[:-1].ravel())[0, 1]) < 0.01


@pytest.mark.kind("random")
def test_draws_with_sequences_and_sit_sot_in_distribution():
    srng = RandomStream(seed=2)
    mu = at.dvector("mu")
    out, updates = aesara.scan(
        lambda m, s: s + srng.normal(m, 0.5), sequences=mu, outputs_info=at.as_tensor_variable(np.float64(0.0))
    )
    f = aesara.function([mu], out, updates=updates, mode=aejax.linker.mode)
    draws = np.array([f(np.array([1.0, 2.0])) for _ in range(2000)])
    np.testing.assert_allclose(draws.mean(axis=0), [1.0, 3.0], atol=0.05)
    np.testing.assert_allclose(draws.var(axis=0), [0.25, 0.5], atol=0.05)


@pytest.mark.kind("random")
def test_nested_scan_with_rng():
    srng = RandomStream(seed=9)

    def outer(i):
        inner, inner_updates = aesara.scan(lambda: srng.uniform(0, 1), n_steps=4)
        return inner.sum(), inner_updates

    out, updates = aesara.scan(outer, sequences=at.arange(3))
    f = aesara.function([], out, updates=updates, mode=aejax.linker.mode)
    first, second = f(), f()
    assert first.shape == (3,)
    assert np.all((first > 0) & (first < 4))
    assert len(set(first.tolist())) == 3
    assert not np.array_equal(first, second)


@pytest.mark.kind("random")
def test_c_backend_continues_the_shared_generator_after_a_scan():
    srng = RandomStream(seed=4)
    out, updates = aesara.scan(fn=lambda: srng.normal(0, 1), n_steps=3)
    jax_fn = aesara.function([], out, updates=updates, mode=aejax.linker.mode)
    c_fn = aesara.function([], out, updates=updates, mode="FAST_RUN")
    jax_fn()
    shared_rng = srng.state_updates[0][0]
    host = pickle.loads(pickle.dumps(shared_rng.get_value()))
    assert c_fn().shape == (3,)
    assert pickle.dumps(shared_rng.get_value()) != pickle.dumps(host)
    assert jax_fn().shape == (3,)


@pytest.mark.kind("random")
def test_runtime_n_steps_with_rng_and_a_draw_after_the_loop():
    import warnings

    from aejax.linker import ShapeInputWarning

    srng = RandomStream(seed=8)
    n = at.iscalar("n")
    out, updates = aesara.scan(lambda: srng.uniform(0, 1), n_steps=n)
    after = srng.normal(out.sum(), 1e-9)
    f = aesara.function([n], [out, after], updates=srng.updates(), mode=aejax.linker.mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        draws, total = f(5)
        more, _ = f(7)
    assert draws.shape == (5,) and more.shape == (7,)
    np.testing.assert_allclose(total, draws.sum(), atol=1e-6)


@pytest.mark.kind("random")
def test_until_loop_with_draws_stops_on_a_random_condition():
    from aesara.scan.utils import until

    srng = RandomStream(seed=12)

    def step(total):
        new = total + srng.uniform(0, 1)
        return new, until(new > 10)

    out, updates = aesara.scan(step, outputs_info=at.as_tensor_variable(np.float64(0.0)), n_steps=1000)
    f = aesara.function([], [out, out[-1]], updates=updates, mode=aejax.linker.mode)
    lengths = []
    for _ in range(20):
        trace, last = f()
        assert trace[-1] == last and last > 10 and np.all(trace[:-1] <= 10)
        assert np.all(np.diff(trace) > 0)
        lengths.append(len(trace))
    assert 15 < np.mean(lengths) < 27
    assert len(set(lengths)) > 1


@pytest.mark.kind("random")
@pytest.mark.parametrize("empty", [False, True], ids=["as_tensor([s1, s2])", "empty"])
def test_draws_of_a_size_given_to_the_scan_as_a_vector(empty):
    """Aesara's ``test_inner_get_vector_length``: each step draws of size ``as_tensor([s1, s2])``, a non-sequence
    given as the function's input, or of an empty size; the noise is drawn before the loop."""
    size = at.as_tensor([], "int64") if empty else at.as_tensor(at.lscalars("s1", "s2"))
    inputs, args = ([], ()) if empty else ([size], (np.array([1, 2]),))
    srng = RandomStream(seed=3)
    draws, _ = aesara.scan(lambda size: srng.normal(0, 1, size=size), non_sequences=[size], n_steps=10, strict=True)
    with aesara.config.change_flags(on_opt_error="raise", on_shape_error="raise"):
        expected = aesara.function(inputs, [draws.shape, draws], mode=REFERENCE)(*args)
        got = aesara.function(inputs, [draws.shape, draws], mode=aejax.linker.mode)(*args)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1].shape == expected[1].shape and got[1].dtype == expected[1].dtype
    assert len(set(got[1].ravel().tolist())) == got[1].size
