"""Indexing constants with traced values, and boolean-mask updates, as Aesara computes them."""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.scan.utils import until

import aejax.linker
from aejax.linker import ShapeInputWarning
from tests.reference import assert_matches_reference, assert_raises_like_reference, compile_both

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


@pytest.mark.parametrize("update", [at.set_subtensor, at.inc_subtensor], ids=["set", "inc"])
def test_rows_between_traced_bounds_updated_without_static_inputs(update):
    """``x[a:b] = 9``, ``x[a:] += v`` and a window at a loop's counter, for any bounds, in one program."""
    x, v, a, b = at.dvector("x"), at.dvector("v"), at.lscalar("a"), at.lscalar("b")
    outputs = [update(x[a:b], 9.0), update(x[:b], v), update(at.as_tensor(np.zeros((4, 3)))[a:b, 1:], 1.0)]
    for bounds in [(1, 3), (-2, 10), (4, 2)]:
        length = len(np.arange(6.0)[: bounds[1]])
        assert_matches_reference([x, v, a, b], outputs, np.arange(6.0), np.ones(length), *bounds)
    window, _ = aesara.scan(lambda i, acc: update(acc[i : i + 2], 1.0), sequences=at.arange(4), outputs_info=x)
    assert_matches_reference([x], window[-1], np.zeros(6))


def test_values_of_another_length_for_rows_between_traced_bounds_raise_value_error():
    x, v, b = at.dvector("x"), at.dvector("v"), at.lscalar("b")
    args = (np.arange(6.0), np.ones(2), 3)
    assert_raises_like_reference([x, v, b], at.set_subtensor(x[:b], v), args, ValueError, "another length")


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint64", "int8"])
def test_indices_of_narrow_and_unsigned_dtypes(dtype):
    """Their bounds checks do not wrap: ``x[i]``, ``inc_subtensor(x[i], 1)`` and ``x[k]`` in an axis of 200."""
    x, i, k = at.dvector("x"), at.vector("i", dtype=dtype), at.scalar("k", dtype=dtype)
    outputs = [x[i], at.inc_subtensor(x[i], 1.0), x[k]]
    assert_matches_reference([x, i, k], outputs, np.arange(200.0), np.array([1, 1, 120], dtype), np.array(100, dtype))


def test_any_index_into_an_empty_axis_raises_index_error():
    x, m, k, i = at.dvector("x"), at.dmatrix("m"), at.lscalar("k"), at.lvector("i")
    args = (np.zeros(0), np.zeros((3, 0)), 0, np.array([0]))
    for output in (x[k], m[:, k], x[i]):
        assert_raises_like_reference([x, m, k, i], output, args, IndexError, "size 0", on_unused_input="ignore")


def test_index_arrays_that_do_not_broadcast_raise_index_error():
    m, i, j = at.dmatrix("m"), at.lvector("i"), at.lvector("j")
    args = (np.zeros((3, 4)), np.array([0, 1]), np.array([0, 1, 2]))
    assert_raises_like_reference([m, i, j], m[i, j], args, IndexError, "cannot be broadcast")


def test_slices_mixed_with_index_arrays_and_their_gradients():
    """``m[1:, [0, 2]]``, ``m[[0, 1], 1:]``, ``m[1:, idx]``, ``t[:, [0, 1], 1:]`` and ``x[:, idx]`` of an advanced
    indexing's result, with the gradients (AdvancedIncSubtensor) of each."""
    m, t, idx = at.dmatrix("m"), at.dtensor3("t"), at.lvector("idx")
    reads = [m[1:, [0, 2]], m[[0, 1], 1:], m[1:, idx], t[:, [0, 1], 1:], m[[2, 0, 1]][1:, idx]]
    gradients = [aesara.grad((r**2).sum(), t if r.ndim == 3 else m) for r in reads]
    args = (np.arange(12.0).reshape(3, 4), np.arange(24.0).reshape(2, 3, 4), np.array([0, 2, 2]))
    assert_matches_reference([m, t, idx], reads + gradients, *args)


def test_a_traced_scalar_then_a_slice_then_an_index_array_put_the_indexed_axes_first():
    """``t[i, :, [0, 1]]`` with ``i`` traced is numpy's advanced indexing: the indexed axes come first (shape
    (2, 4)), unlike ``t[i][:, [0, 1]]``; ``t[i, [0, 2]]``, ``t[i, 1:, 2]`` and ``t[i]`` as well, into a buffer
    small enough for selects."""
    t, i = at.dtensor3("t"), at.lscalar("i")
    reads = [t[i, :, [0, 1]], t[i, 1:3, [0, 1, 4]], t[i, [0, 2]], t[i, [0, 2], 1:3], t[i, 1:, 2], t[i]]
    args = (np.arange(60.0).reshape(3, 4, 5),)
    for value in (1, -1):
        assert_matches_reference([t, i], reads + [aesara.grad((reads[0] ** 2).sum(), t)], *args, value)


@pytest.mark.parametrize("rows", [slice(1, None), slice(-1, None), slice(3, -9, -1)], ids=["1:", "-1:", "3:-9:-1"])
def test_rows_of_a_boolean_selection_sliced_then_indexed_by_an_array(rows):
    """``m[m[:, 0] > 3][rows, idx]``: the slice cuts the selected rows (of run-time number), not its buffer."""
    m, idx = at.dmatrix("m"), at.lvector("idx")
    selected = m[m[:, 0] > 3]
    outputs = [selected[rows, idx], selected[rows, idx].sum(), selected[rows, [0, 1]]]
    for value in (np.arange(12.0).reshape(3, 4), np.arange(20.0).reshape(5, 4)):
        assert_matches_reference([m, idx], outputs, value, np.array([3, 0]))
    args = (np.arange(12.0).reshape(3, 4), np.array([7]))
    assert_raises_like_reference(
        [m, idx], selected[rows, idx], args, IndexError, "out of bounds for axis 1 with size 4"
    )


@pytest.mark.parametrize("set_instead_of_inc", [False, True], ids=["inc", "set"])
def test_repeated_positions_with_ignore_duplicates_take_one_value_as_numpy_writes_them(set_instead_of_inc):
    """``inc_subtensor(m[i, j], v, ignore_duplicates=True)`` is numpy's ``m[i, j] += v``: a repeated position takes
    its old value plus one increment; without the flag (`AdvancedIncSubtensor1` too) increments accumulate."""
    m, x, i, j, v, w = (
        at.dmatrix("m"),
        at.dvector("x"),
        at.lvector("i"),
        at.lvector("j"),
        at.dvector("v"),
        at.dmatrix("w"),
    )

    def update(target, value, ignore_duplicates):
        return at.inc_subtensor(
            target, value, set_instead_of_inc=set_instead_of_inc, ignore_duplicates=ignore_duplicates
        )

    outputs = [
        update(m[i, j], v, True),
        update(m[i, j], 5.0, True),
        update(m[i], w, True),
        update(m[i, 1:], 1.0, True),
        update(x[i], v, True),
        update(m[i, j], v, False),
        update(x[i], v, False),
    ]
    args = (np.arange(12.0).reshape(4, 3), np.arange(3.0), np.array([0, 2, 0, 0]), np.array([1, 1, 1, 2]))
    assert_matches_reference([m, x, i, j, v, w], outputs, *args, np.array([1.0, 2.0, 3.0, 4.0]), np.ones((4, 3)))


def test_ignore_duplicates_with_index_arrays_of_run_time_length():
    """The indices of an until-loop's trace, or of a boolean selection, repeating positions."""
    x, n, flags = at.dvector("x"), at.lscalar("n"), at.bvector("flags")
    trace, _ = aesara.scan(lambda k: (k % 2, until(k >= n)), sequences=at.arange(10, dtype="int64"))
    selected = at.nonzero(flags)[0] % 2
    outputs = [at.inc_subtensor(x[index], 1.0, ignore_duplicates=True) for index in (trace, selected)]
    assert_matches_reference([x, n, flags], outputs, np.zeros(3), 3, np.array([1, 1, 1, 0, 1], "int8"))


@pytest.mark.parametrize(
    "index, expected",
    [
        (lambda x: (at.as_tensor_variable([0]), x[0] > 0.5), [1.0, 2.0]),
        (lambda x: (x[:, 0] > 2, x[0] > 0.5), [4.0, 5.0]),
        (lambda x: (slice(None), x[0] > 0.5), [[1.0, 2.0], [4.0, 5.0]]),
        (lambda x: (slice(1, None), x[0] > 0.5, None), [[[4.0], [5.0]]]),
    ],
    ids=["index list and mask", "two masks", "slice and mask", "slice, mask and newaxis"],
)
def test_traced_boolean_masks_beside_other_indices_run_on_the_host(index, expected):
    """numpy turns each mask into its ``nonzero()`` index arrays, broadcast together: a length known only from the
    masks' values, so the node runs on the host with Aesara's implementation (Aesara's ``test_boolean``)."""
    x = at.dmatrix("x")
    with pytest.warns(aejax.linker.HostNodeWarning, match="AdvancedSubtensor"):
        got = assert_matches_reference([x], x[index(x)], np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(got[0], expected)


def test_boolean_masks_selecting_different_numbers_of_elements_raise_as_numpy():
    x = at.dmatrix("x")
    with pytest.warns(aejax.linker.HostNodeWarning):
        assert_raises_like_reference(
            [x], x[x[:, 0] > -1, x[0] > -1], [np.arange(6.0).reshape(2, 3)], IndexError, "shape mismatch"
        )


@pytest.mark.parametrize(
    "update",
    [
        lambda x: at.inc_subtensor(x[x[:, 0, 0] > 2, ...], 1.0),
        lambda x: at.set_subtensor(x[x[:, :, 0] > 2, :], 5.0),
    ],
    ids=["inc at mask, ellipsis", "set at 2-d mask, full slice"],
)
def test_updates_at_a_traced_mask_and_full_slices_stay_in_one_program(update):
    """Aesara's ``test_boolean``: ``x[mask, ...]`` is ``x[mask]``, an update written with ``where``."""
    x = at.dtensor3("x")
    assert_matches_reference([x], update(x), np.arange(24.0).reshape(2, 3, 4))
    f = aesara.function([x], update(x), mode=aejax.linker.mode)
    f(np.arange(24.0).reshape(2, 3, 4))
    assert len(f.vm.jit_fn.segments) == 1


def test_an_update_at_a_traced_mask_and_a_partial_slice_runs_on_the_host():
    x = at.dtensor3("x")
    with pytest.warns(aejax.linker.HostNodeWarning, match="AdvancedIncSubtensor"):
        assert_matches_reference([x], at.inc_subtensor(x[x[:, 0, 0] > 2, 1:], 1.0), np.arange(24.0).reshape(2, 3, 4))
