"""A Scan whose step shapes depend on the step's own values runs on the host, inside the program."""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.linker import CallbackWarning, ShapeInputWarning
from tests.reference import assert_matches_reference, compile_both

COUNTS = np.array([0, 3, 7, 1], dtype="int64")


def test_step_shape_from_a_sequence_value_matches_reference():
    y = at.lvector("y")
    totals, _ = aesara.scan(lambda y_t: at.arange(2, y_t + 1).sum(), sequences=[y])
    with pytest.warns(CallbackWarning, match="depend on its values"):
        assert_matches_reference([y], totals, COUNTS)


def _crt_counts(seed):
    """Chinese-restaurant-table counts as aemcmc's negative-binomial sampler draws them."""
    y, h = at.lvector("y"), at.dscalar("h")
    srng = RandomStream(seed)

    def tables(y_t, h):
        seats = at.arange(2, y_t + 1)
        return at.switch(y_t < 1, 0, 1 + srng.bernoulli(h / (seats - 1 + h)).sum())

    counts, updates = aesara.scan(tables, sequences=[y], non_sequences=[h])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CallbackWarning)
        return aesara.function([y, h], counts, updates=updates, mode=aejax.linker.mode)


def test_random_step_of_value_dependent_size_has_the_right_mean_and_advances():
    f = _crt_counts(seed=3)
    y, h = np.array([40, 90]), 2.0
    draws = np.array([f(y, h) for _ in range(400)])
    expected = [1 + sum(h / (k - 1 + h) for k in range(2, n + 1)) for n in y]
    standard_error = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - expected) < 5 * standard_error)
    assert len({tuple(d) for d in draws[:20]}) > 1


def test_random_step_of_value_dependent_size_reproduces_per_seed():
    y = np.array([40, 90])
    first, second = _crt_counts(seed=5), _crt_counts(seed=5)
    np.testing.assert_array_equal([first(y, 2.0) for _ in range(3)], [second(y, 2.0) for _ in range(3)])


def test_shape_from_a_scalar_input_still_makes_it_static():
    n = at.iscalar("n")
    totals, _ = aesara.scan(lambda s: (at.arange(n) * s).sum() + 1, outputs_info=[at.as_tensor(np.int64(1))], n_steps=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CallbackWarning)
        reference, f = compile_both([n], totals)
        np.testing.assert_array_equal(f(4), reference(4))
        with pytest.warns(ShapeInputWarning):
            np.testing.assert_array_equal(f(5), reference(5))


def test_step_on_the_host_compiles_no_aejax_function_when_aejax_is_the_default_mode(monkeypatch):
    """Aesara compiles a Scan's step with the Scan's mode; made under ``config.mode = aejax``, the host
    step must not be an AEJAX function (one jit program per count, inside the callback)."""
    created = []
    original_init = aejax.linker.call.function.AejaxFunction.__init__

    def counting_init(self, *args, **kwargs):
        created.append(self)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(aejax.linker.call.function.AejaxFunction, "__init__", counting_init)
    with aesara.config.change_flags(mode=aejax.linker.mode):
        y = at.lvector("y")
        totals, _ = aesara.scan(lambda y_t: at.arange(2, y_t + 1).sum(), sequences=[y])
        with pytest.warns(CallbackWarning, match="depend on its values"):
            f = aesara.function([y], totals)
            got = [f(np.array([n, n + 40])) for n in range(5)]
    assert created == [f]
    reference = aesara.function([y], totals, mode="FAST_COMPILE")  # its step is an AEJAX function
    for n, values in enumerate(got):
        np.testing.assert_array_equal(values, reference(np.array([n, n + 40])))
