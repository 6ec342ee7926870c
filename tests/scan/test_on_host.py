"""A Scan whose step shapes depend on the step's own values runs on the host, inside the program.

Only where no bound helps: a size made from a sequence row is bounded by the
sequence's values and stays in JAX (``tests/scan/test_client_programs.py``);
a value of run-time length whose length the step needs (``dot(r, r)`` of
``r = arange(2, y_t + 1)``) is not.
"""

import sys
import threading
import traceback
import warnings

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.linker import CallbackWarning, ShapeInputWarning, jaxify
from tests.reference import assert_matches_reference, compile_both

COUNTS = np.array([0, 3, 7, 1], dtype="int64")


def squares_of_seats(y_t):
    """``dot(r, r)`` for ``r = arange(2, y_t + 1)``: the dot product needs the range's length while tracing."""
    seats = at.arange(2, y_t + 1)
    return at.dot(seats, seats)


def test_step_shape_from_a_sequence_value_matches_reference():
    y = at.lvector("y")
    totals, _ = aesara.scan(squares_of_seats, sequences=[y])
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
        totals, _ = aesara.scan(squares_of_seats, sequences=[y])
        with pytest.warns(CallbackWarning, match="depend on its values"):
            f = aesara.function([y], totals)
            got = [f(np.array([n, n + 40])) for n in range(5)]
    assert created == [f]
    reference = aesara.function([y], totals, mode="FAST_COMPILE")  # its step is an AEJAX function
    for n, values in enumerate(got):
        np.testing.assert_array_equal(values, reference(np.array([n, n + 40])))


@pytest.mark.parametrize("default_mode", [None, aejax.linker.mode], ids=["reference default", "aejax default"])
def test_step_on_the_host_is_compiled_once_while_tracing(monkeypatch, default_mode):
    """The host loop's step function is compiled once, while the program is traced, in the caller's thread: not
    inside the host callback (in a thread of XLA's, where a conformance run would compile it with AEJAX, one
    jit program per step), and not again when a new input shape traces the program again."""
    pfunc_module = sys.modules["aesara.compile.function.pfunc"]
    original = pfunc_module.orig_function
    compiled = []

    def recording(*args, **kwargs):
        in_callback = any("jax/_src/callback.py" in frame.filename for frame in traceback.extract_stack())
        compiled.append((threading.get_ident(), in_callback))
        return original(*args, **kwargs)

    monkeypatch.setattr(pfunc_module, "orig_function", recording)
    with aesara.config.change_flags(mode=default_mode or aesara.config.mode):
        y = at.lvector("y")
        totals, _ = aesara.scan(squares_of_seats, sequences=[y])
        f = aesara.function([y], totals, mode=aejax.linker.mode)
    arguments = [COUNTS, COUNTS[:2], np.array([4, 9, 2, 5, 6]), COUNTS]
    reference = aesara.function([y], totals, mode="FAST_COMPILE")
    expected = [reference(counts) for counts in arguments]
    compiled.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CallbackWarning)
        for counts, values in zip(arguments, expected):
            np.testing.assert_array_equal(f(counts), values)
    assert compiled == [(threading.get_ident(), False)]


def test_in_jaxify_a_step_sized_by_an_input_sequence_runs_on_the_host():
    """An exported graph is one function under the caller's jit: the bounds of ``y`` cannot be made static
    there, so the loop runs on the host, as it did before aejax bounded such sequences."""
    y = at.lvector("y")
    totals, _ = aesara.scan(lambda y_t: at.arange(2, y_t + 1).sum(), sequences=[y])
    graph = jaxify([y], totals)
    with pytest.warns(CallbackWarning, match="depend on its values"):
        got, _ = jax.jit(graph.fn)(graph.state, COUNTS)
    expected = aesara.function([y], totals, mode="FAST_COMPILE")(COUNTS)
    np.testing.assert_array_equal(np.asarray(got), expected)
