"""Indexing constants with traced values, and boolean-mask updates, as Aesara computes them."""

import warnings

import aesara
import aesara.tensor as at
from aesara.scan.utils import until
import numpy as np
import pytest

import aejax.linker
from aejax.linker import ShapeInputWarning
from tests.reference import assert_matches_reference, compile_both

TABLE = np.arange(5.0) ** 2


@pytest.fixture(autouse=True)
def _rewrites_must_not_fail(monkeypatch):
    monkeypatch.setattr(aesara.config, "on_opt_error", "raise")


@pytest.fixture(autouse=True)
def _no_static_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShapeInputWarning)
        yield


def test_constant_indexed_by_a_traced_scalar():
    i = at.iscalar("i")
    assert_matches_reference([i], at.constant(TABLE)[i], 3)


def test_constant_indexed_by_a_traced_scalar_compiles_one_program():
    i = at.iscalar("i")
    f = aesara.function([i], at.constant(TABLE)[i], mode=aejax.linker.mode)
    assert [f(k) for k in range(5)] == list(TABLE)
    program = f.vm.jit_fn.segments[0].program
    assert program.static_positions == ()
    assert len(program.programs) == 1


def test_constant_indexed_by_a_traced_vector():
    idx = at.ivector("idx")
    assert_matches_reference([idx], at.constant(TABLE)[idx], np.array([4, 0, 2], "int32"))


def test_constant_matrix_with_advanced_indices():
    i, j = at.ivectors("i", "j")
    table = at.constant(np.arange(12.0).reshape(3, 4))
    assert_matches_reference([i, j], table[i, j], np.array([0, 2], "int32"), np.array([3, 1], "int32"))


def test_constant_indexed_inside_a_scan():
    ys, _ = aesara.scan(lambda k: at.constant(TABLE)[k % 5] * 2, sequences=[at.arange(7)])
    assert_matches_reference([], ys)


def test_constant_indexed_inside_an_until_loop():
    def step(k, acc):
        total = acc + at.constant(TABLE)[k]
        return total, until(total > 10)

    ys, _ = aesara.scan(step, sequences=[at.arange(5)], outputs_info=[at.as_tensor(np.float64(0.0))])
    assert_matches_reference([], ys[-1])


@pytest.mark.parametrize("update", [at.set_subtensor, at.inc_subtensor], ids=["set", "inc"])
def test_boolean_mask_update_with_one_value_per_selected_element(update):
    x, y = at.dvectors("x", "y")
    assert_matches_reference([x, y], update(x[x > 0], y), np.array([1.0, -1.0, 2.0]), np.array([5.0, 6.0]))


@pytest.mark.parametrize("update", [at.set_subtensor, at.inc_subtensor], ids=["set", "inc"])
def test_boolean_mask_update_with_a_broadcast_value(update):
    x = at.dvector("x")
    assert_matches_reference([x], update(x[x > 0], 3.0), np.array([1.0, -1.0, 2.0]))


def test_boolean_mask_over_rows_updates_whole_rows():
    m, y = at.dmatrix("m"), at.dvector("y")
    value = np.array([[1.0, 2.0], [-3.0, 1.0], [4.0, 4.0]])
    assert_matches_reference([m, y], at.set_subtensor(m[m.sum(axis=1) > 0], y), value, np.array([9.0, 8.0]))


def test_boolean_mask_update_with_too_many_values_raises_value_error():
    x, y = at.dvectors("x", "y")
    reference, ours = compile_both([x, y], at.set_subtensor(x[x > 0], y))
    args = (np.array([1.0, -1.0, 2.0]), np.array([5.0, 6.0, 7.0]))
    for f in (reference, ours):
        with pytest.raises(ValueError):
            f(*args)
