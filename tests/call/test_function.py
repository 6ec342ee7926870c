"""AejaxFunction: its direct call behaves as Aesara's `Function.__call__` does."""

import copy
import pickle

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.compile.io import In

import aejax.linker
from aejax.linker import AejaxFunction
from tests.reference import REFERENCE


def _both(inputs, outputs, **kwargs):
    return [aesara.function(inputs, outputs, mode=mode, **kwargs) for mode in (REFERENCE, aejax.linker.mode)]


def _same(a, b):
    assert type(a) is type(b)
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif a is not None:
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b)


def test_mode_builds_aejax_functions_with_a_direct_call():
    x = at.dvector("x")
    f = aesara.function([x], x + 1, mode=aejax.linker.mode)
    assert isinstance(f, AejaxFunction)
    assert f._direct is not None
    assert isinstance(aesara.function([x], x + 1, mode=aejax.linker.mode.excluding("fusion")), AejaxFunction)


@pytest.mark.parametrize(
    "outputs",
    [lambda x, y: x * y, lambda x, y: [x * y, (x + y).sum()], lambda x, y: {"prod": x * y, "sum": x + y}],
    ids=["single", "list", "dict"],
)
def test_direct_call_returns_what_aesara_returns(outputs):
    x, y = at.dvector("x"), at.dscalar("y")
    reference, ours = _both([x, y], outputs(x, y))
    args = (np.arange(3.0), 2.0)
    _same(reference(*args), ours(*args))


def test_arguments_are_converted_as_aesara_converts_them():
    x, n = at.dvector("x"), at.lscalar("n")
    reference, ours = _both([x, n], x * n)
    for args in [([1, 2, 3], 2), (np.arange(3, dtype="int32"), np.int8(2)), (np.arange(6.0)[::2], 3)]:
        _same(reference(*args), ours(*args))


@pytest.mark.parametrize("scalar", [2, 2.5, np.float64(2.5), np.int64(3), np.float32(1.5), np.array(4.0), True])
def test_scalar_arguments_are_converted_as_aesara_converts_them(scalar):
    a, n = at.dscalar("a"), at.lscalar("n")
    for var in (a, n):
        reference, ours = _both([var], var * 2)
        try:
            expected = reference(scalar)
        except TypeError:
            with pytest.raises(TypeError):
                ours(scalar)
        else:
            _same(expected, ours(scalar))


@pytest.mark.parametrize(
    "bad", [np.ones((2, 2)), np.ones(3, dtype="complex128"), "text", 2**70], ids=["rank", "dtype", "str", "huge-int"]
)
def test_bad_argument_raises_aesaras_own_error(bad):
    x = at.lscalar("x") if isinstance(bad, int) else at.dvector("x")
    reference, ours = _both([x], x + 1)
    with pytest.raises(Exception) as expected:
        reference(bad)
    with pytest.raises(expected.type) as got:
        ours(bad)
    assert str(got.value) == str(expected.value)


def test_keywords_and_defaults_take_aesaras_path():
    x, y = at.dvector("x"), at.dscalar("y")
    outputs = [x * y, x + y]
    reference, ours = _both([x, In(y, value=3.0)], outputs)
    assert ours._direct is None  # an input with a default value
    _same(reference(np.ones(2)), ours(np.ones(2)))
    reference, ours = _both([x, y], outputs)
    _same(reference(x=np.ones(2), y=2.0), ours(x=np.ones(2), y=2.0))


def test_updates_reach_shared_variables_and_copies_keep_their_own():
    x = at.dscalar("x")
    totals = [aesara.shared(np.float64(0.0)) for _ in range(2)]
    functions = [
        aesara.function([x], total * 2, updates={total: total + x}, mode=mode)
        for total, mode in zip(totals, (REFERENCE, aejax.linker.mode))
    ]
    for value in (1.0, 2.5):
        _same(*[f(value) for f in functions])
    assert totals[1].get_value() == totals[0].get_value() == 3.5
    twin = functions[1].copy(swap={totals[1]: aesara.shared(np.float64(10.0))})
    assert twin(1.0) == 20.0 and totals[1].get_value() == 3.5


def test_function_copies_and_pickles_as_an_aejax_function():
    x = at.dvector("x")
    f = aesara.function([x], x * 2, mode=aejax.linker.mode)
    for g in (copy.copy(f), pickle.loads(pickle.dumps(f))):
        assert isinstance(g, AejaxFunction)
        np.testing.assert_array_equal(g(np.arange(3.0)), np.arange(3.0) * 2)


def test_updates_pass_the_shared_variables_filter():
    x = at.dscalar("x")
    count = aesara.shared(np.int64(0))
    f = aesara.function([x], x, updates={count: count + 1}, mode=aejax.linker.mode)
    f(1.0)
    f(2.0)
    value = count.get_value(borrow=True)
    assert isinstance(value, np.ndarray) and value.dtype == np.int64 and value == 2


def test_trusted_inputs_skip_the_filter_and_failed_calls_store_nothing():
    x = at.dvector("x")
    total = aesara.shared(np.float64(0.0))
    f = aesara.function([x], x.sum(), updates={total: total + x.sum()}, mode=aejax.linker.mode)
    f.trust_input = True
    assert f(np.ones(3)) == 3.0 and total.get_value() == 3.0
    f.trust_input = False
    with pytest.raises(TypeError):
        f(np.ones((2, 2)))
    assert total.get_value() == 3.0


def test_rewriting_folds_constants_without_compiling_c_code(monkeypatch):
    from aesara.link.c.cmodule import ModuleCache

    x = at.dvector("x")
    folded = at.exp(at.constant(np.arange(3.0))) * at.constant(2.0) + at.constant(1.5) ** 2
    ys, _ = aesara.scan(lambda y: y * at.cosh(at.constant(0.25)), outputs_info=[x], n_steps=3)
    reference = aesara.function([x], [x + folded, ys[-1]], mode=REFERENCE)
    compiled, cxx = [], aesara.config.cxx
    original = ModuleCache.module_from_key
    monkeypatch.setattr(
        ModuleCache, "module_from_key", lambda self, key, *a, **k: compiled.append(key) or original(self, key, *a, **k)
    )
    f = aesara.function([x], [x + folded, ys[-1]], mode=aejax.linker.mode)
    value = np.array([0.5, -1.0, 2.0])
    for ours, expected in zip(f(value), reference(value)):
        np.testing.assert_allclose(
            ours, expected, rtol=1e-6
        )  # cosh of a float32 constant: numpy and XLA may differ by an ulp
    assert compiled == []
    assert aesara.config.cxx == cxx  # restored after the rewriting (none under numpy 2: docs/limits.md, Two stacks)


@pytest.mark.parametrize(
    "maker, seed",
    [("default_rng", 3), ("RandomState", 3), ("default_rng", None)],
    ids=["generator", "random state", "unseeded"],
)
def test_an_output_that_is_a_new_generator_is_the_references_numpy_generator(maker, seed):
    """Aesara's ``test_random_maker_op``: the maker folds to a constant generator, returned as a copy each call."""
    from aesara.tensor.random import op as random_op

    make = getattr(random_op, maker)
    out = make() if seed is None else make(at.as_tensor_variable(seed))
    reference, ours = _both([], [out])
    expected = reference()[0]
    for _ in range(2):  # the first call and the exact call
        got = ours()[0]
        assert type(got) is type(expected)
        if seed is not None:
            assert make.random_type.values_eq(got, expected)
    assert ours()[0] is not ours()[0]


def test_graphs_of_no_node_run_as_under_the_reference():
    """Outputs that are inputs or constants, and updates that swap values: no node to run, as in Aesara's own tests."""
    found = []
    for mode in (REFERENCE, aejax.linker.mode):
        A, B = aesara.shared(np.zeros(2) + 0.5), aesara.shared(np.zeros(2) - 0.5)
        swap = aesara.function([], [], updates=[(A, B), (B, A)], mode=mode)
        held, a = aesara.shared(1.0), at.dscalar("a")
        trade = aesara.function([In(a, value=0.0, update=held)], [], updates={held: a}, mode=mode)
        x = at.dvector("x")
        same, constant = aesara.function([x], x, mode=mode), aesara.function([], at.constant([4]), mode=mode)
        values = [aesara.function([], [], mode=mode)()]
        for _ in range(3):
            swap()
            trade()
            values.append((A.get_value().tolist(), B.get_value().tolist(), float(held.get_value())))
        given = np.ones(2)
        returned = same(given)
        returned[0] = 5.0  # a copy: the next call's output is not changed
        first = constant()
        first[0] = 3
        values += [given.tolist(), same(given).tolist(), constant().tolist()]
        found.append(values)
    assert found[0] == found[1]
    assert found[1][1] == ([-0.5, -0.5], [0.5, 0.5], 0.0)
