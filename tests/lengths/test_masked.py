"""Selections ``x[nonzero(mask)]`` of traced masks run inside jit, as Aesara computes them."""

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.raise_op import Assert, CheckAndRaise
from aesara.scan.utils import until
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from tests.reference import assert_matches_reference, assert_raises_like_reference

X = np.array([0.5, -1.0, 2.0, 3.5, -0.25])
LABELS = np.array([0, 1, 1, 0, 1])


@pytest.fixture
def x_and_selection():
    x, labels = at.dvector("x"), at.lvector("labels")
    return x, labels, at.nonzero(at.eq(labels, 1))


def _single_program(inputs, outputs, *args):
    f = aesara.function(inputs, outputs, mode=aejax.linker.mode)
    f(*args)
    return len(f.vm.jit_fn.segments) == 1


@pytest.mark.parametrize("update", [at.set_subtensor, at.inc_subtensor], ids=["set", "inc"])
def test_update_at_selected_positions_from_selected_values(x_and_selection, update):
    x, labels, idx = x_and_selection
    out = update(at.ones_like(x)[idx], at.exp(x[idx]) * 2)
    assert_matches_reference([x, labels], out, X, LABELS)
    assert _single_program([x, labels], out, X, LABELS)


def test_reduction_of_a_selection(x_and_selection):
    x, labels, idx = x_and_selection
    outputs = [at.sum(x[idx] ** 2), at.prod(x[idx]), at.max(x[idx])]
    assert_matches_reference([x, labels], outputs, X, LABELS)


def test_reduction_within_the_rows_of_a_selection_in_one_program(x_and_selection):
    x, labels, idx = x_and_selection
    m = at.dmatrix("m")
    outputs = [m[idx].sum(axis=1) + x[idx], m[idx].max(axis=1) * 2, at.sum(m[idx].prod(axis=1))]
    args = X, LABELS, np.arange(10.0).reshape(5, 2) - 4.0
    assert_matches_reference([x, labels, m], outputs, *args)
    assert _single_program([x, labels, m], outputs, *args)


def test_selection_as_an_output_is_cut_to_its_length(x_and_selection):
    x, labels, idx = x_and_selection
    assert_matches_reference([x, labels], x[idx] + 1, X, LABELS)


def test_empty_selection(x_and_selection):
    x, labels, idx = x_and_selection
    assert_matches_reference([x, labels], [at.sum(x[idx]), at.set_subtensor(x[idx], 0.0)], X, np.zeros(5, "int64"))


def test_selection_of_a_matrix_by_a_2d_mask():
    m = at.dmatrix("m")
    idx = at.nonzero(m > 0)
    value = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, 0.0]])
    assert_matches_reference([m], [at.set_subtensor(m[idx], at.log(m[idx])), at.sum(m[idx])], value)


def test_check_on_selected_values_sees_only_the_selection(x_and_selection):
    x, labels, idx = x_and_selection
    checked = Assert("selected values are above -2")(x[idx], at.all(x[idx] > -2))
    f = aesara.function([x, labels], at.sum(checked), mode=aejax.linker.mode)
    np.testing.assert_allclose(f(X, LABELS), X[LABELS == 1].sum())
    with pytest.raises(AssertionError, match="above -2"):
        f(np.array([0.5, -1.0, -3.0, 3.5, -0.25]), LABELS)
    np.testing.assert_allclose(f(np.array([-9.0, -1.0, 2.0, 3.5, -0.25]), LABELS), 0.75)


def test_other_consumers_split_the_program(x_and_selection):
    x, labels, idx = x_and_selection
    outputs = [at.sort(x[idx]), x[idx].shape[0] * 2]
    assert_matches_reference([x, labels], outputs, X, LABELS)


def test_selections_with_different_masks_combine_row_by_row_in_one_program(x_and_selection):
    """Each selection's rows move to the front; lengths that differ raise `ValueError`, as in the reference."""
    x, labels, idx = x_and_selection
    other = at.nonzero(at.eq(labels, 0))
    combined = x[idx][:2] + x[other]
    assert_matches_reference([x, labels], combined, X, LABELS)
    assert _single_program([x, labels], combined, X, LABELS)
    assert_raises_like_reference([x, labels], combined, (X, np.array([1, 1, 0, 0, 0])), ValueError, "differ in length")


@pytest.mark.parametrize("labels", [LABELS, np.zeros(5, "int64"), np.ones(5, "int64")], ids=["some", "none", "all"])
def test_slices_and_loops_over_a_selection_in_one_program(labels):
    """Slicing a selection, or scanning over it, takes its rows moved to the front (a value of run-time length)."""
    x, labels_var = at.dvector("x"), at.lvector("labels")
    selected = x[at.nonzero(at.eq(labels_var, 1))]
    running, _ = aesara.scan(
        lambda v, total: total + v, sequences=[selected], outputs_info=[at.constant(0.0, dtype="float64")]
    )
    outputs = [selected[:2] * 3, selected[::-1] + selected, running, at.set_subtensor(selected[1:], 0.0)]
    assert_matches_reference([x, labels_var], outputs, X, labels)
    assert _single_program([x, labels_var], outputs, X, labels)


def test_a_row_of_a_selection_past_its_length_raises_index_error(x_and_selection):
    x, labels, idx = x_and_selection
    k = at.lscalar("k")
    row = x[idx][k] + 1
    for k_value in (0, 2, -3):
        assert_matches_reference([x, labels, k], row, X, LABELS, k_value)
    ours = aesara.function([x, labels, k], row, mode=aejax.linker.mode)
    for k_value in (3, -4):
        with pytest.raises(IndexError, match="out of bounds"):
            ours(X, LABELS, k_value)
    with pytest.raises(IndexError, match="out of bounds"):
        ours(X, np.zeros(5, "int64"), 0)
    assert len(ours.vm.jit_fn.segments) == 1


def test_a_selection_combined_with_an_until_trace_in_one_program(x_and_selection):
    x, labels, idx = x_and_selection
    x0 = at.dscalar("x0")
    trace, _ = aesara.scan(lambda v: (v * 2, until(v > 3)), outputs_info=x0, n_steps=20)
    inputs, combined = [x, labels, x0], trace + x[idx]
    assert_matches_reference(inputs, combined, X, LABELS, 1.0)
    assert _single_program(inputs, combined, X, LABELS, 1.0)


@pytest.mark.parametrize("labels", [LABELS, np.zeros(5, "int64"), np.ones(5, "int64")], ids=["some", "none", "all"])
def test_values_of_one_selection_meet_again_after_a_split(x_and_selection, labels):
    """``sort`` ends the program after ``exp(x[idx])``; the next one adds it to ``x[idx]``, cut to the same length."""
    x, labels_var, idx = x_and_selection
    selected = x[idx]
    outputs = [at.sort(at.exp(selected)) + selected, at.sum(at.exp(selected) * selected)]
    assert_matches_reference([x, labels_var], outputs, X, labels)


@pytest.mark.parametrize("labels", [LABELS, np.zeros(5, "int64"), np.ones(5, "int64")], ids=["some", "none", "all"])
def test_gradient_of_values_set_at_two_selections_is_one_program(labels):
    """aeppl's mixture log-density: ``logp[idx_k] = logp_k(x[idx_k])``, one term checked, and its gradient."""
    x, labels_var, sigma = at.dvector("x"), at.lvector("labels"), at.dscalar("sigma")
    first, second = at.nonzero(at.eq(labels_var, 0)), at.nonzero(at.eq(labels_var, 1))
    logp = at.set_subtensor(at.empty_like(x)[first], -0.5 * x[first] ** 2)
    checked = CheckAndRaise(ValueError, "sigma > 0")(-0.5 * (x[second] / sigma) ** 2 - at.log(sigma), at.gt(sigma, 0))
    total = at.sum(at.set_subtensor(logp[second], checked))
    outputs = [total, *aesara.grad(total, [x, sigma])]
    assert_matches_reference([x, labels_var, sigma], outputs, X, labels, 1.5)
    assert _single_program([x, labels_var, sigma], outputs, X, labels, 1.5)


def test_length_of_a_selection_as_a_value_and_a_slice_bound_in_one_program(x_and_selection):
    x, labels, idx = x_and_selection
    m = at.dmatrix("m")
    y = at.dvector("y")
    inputs = [x, labels, y, m]
    outputs = [x[idx].shape[0] * 2, y[: x[idx].shape[0]] + 1, m[at.nonzero(m > 0)].shape, y[x[idx].shape[0] :]]
    y_value, m_value = np.linspace(0.0, 1.0, 7), np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, 0.0]])
    f = aesara.function(inputs, outputs, mode=aejax.linker.mode)
    f(X, LABELS, y_value, m_value)
    (segment,) = f.vm.jit_fn.segments
    compiled = segment.program.programs.compiled
    for labels_value in (LABELS, np.zeros(5, "int64"), np.ones(5, "int64")):
        assert_matches_reference(inputs, outputs, X, labels_value, y_value, m_value)
        f(X, labels_value, y_value, m_value)
    assert segment.program.programs.compiled == compiled


@pytest.mark.parametrize("labels", [LABELS, np.zeros(5, "int64"), np.ones(5, "int64")], ids=["some", "none", "all"])
def test_selections_joined_and_stacked_in_one_program(labels):
    """``concatenate``/``stack`` of selections: their rows move to the front, and the jit program goes on."""
    x, y, labels_var, m = at.dvector("x"), at.dvector("y"), at.lvector("labels"), at.dmatrix("m")
    ones, zeros = at.nonzero(at.eq(labels_var, 1)), at.nonzero(at.eq(labels_var, 0))
    joined = at.concatenate([x[ones], y, x[zeros] * 2])
    outputs = [
        joined,
        at.sum(joined * at.arange(joined.shape[0])),
        at.concatenate([m[ones], at.exp(m[ones])], axis=1),
        at.stack([x[ones], y[ones]], axis=1).sum(axis=0),
    ]
    inputs = [x, y, labels_var, m]
    args = X, np.linspace(-1.0, 1.0, 5), labels, np.arange(10.0).reshape(5, 2)
    assert_matches_reference(inputs, outputs, *args)
    assert _single_program(inputs, outputs, *args)


@pytest.mark.parametrize("labels", [LABELS, np.zeros(5, "int64"), np.ones(5, "int64")], ids=["some", "none", "all"])
def test_cumulative_sums_and_products_of_a_selection_in_one_program(labels):
    x, labels_var, m = at.dvector("x"), at.lvector("labels"), at.dmatrix("m")
    idx = at.nonzero(at.eq(labels_var, 1))
    outputs = [at.cumsum(x[idx]), at.sum(at.cumprod(x[idx] + 1)), at.cumsum(m[idx], axis=0), at.cumsum(m[idx])]
    inputs = [x, labels_var, m]
    args = X, labels, np.arange(10.0).reshape(5, 2)
    assert_matches_reference(inputs, outputs, *args)
    assert _single_program(inputs, outputs, *args)


def test_a_selection_with_a_whole_array_of_its_length(x_and_selection):
    """``x[idx] + y`` pairs the selected rows with ``y``'s rows: ``y`` as long as the selection, else `ValueError`."""
    x, labels, idx = x_and_selection
    y = at.dvector("y")
    assert_matches_reference([x, labels, y], x[idx] * 2 + y, X, LABELS, np.arange(3.0))
    assert_raises_like_reference(
        [x, labels, y], x[idx] + y, (X, LABELS, np.arange(5.0)), ValueError, "differ in length"
    )


@pytest.mark.parametrize("update", [at.set_subtensor, at.inc_subtensor], ids=["set", "inc"])
def test_values_with_one_row_per_selected_row(x_and_selection, update):
    x, labels, idx = x_and_selection
    y = at.dvector("y")
    assert_matches_reference([x, labels, y], update(x[idx], y), X, LABELS, np.arange(3.0))
    assert_raises_like_reference(
        [x, labels, y], update(x[idx], y), (X, LABELS, np.arange(4.0)), ValueError, "another length"
    )


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_max_and_min_of_a_selection_and_of_an_empty_one(x_and_selection, dtype):
    x, labels, idx = x_and_selection
    selected = at.cast(x[idx] * 4, dtype)
    outputs = [at.max(selected), at.min(selected)]
    assert_matches_reference([x, labels], outputs, X, LABELS)
    for output in outputs:
        assert_raises_like_reference([x, labels], output, (X, np.zeros(5, "int64")), ValueError, "empty selection")


def test_an_index_array_of_run_time_length_is_checked_against_the_axis():
    """``y[k]`` and ``inc_subtensor(y[k], 1)`` for ``k`` an until loop's integer trace (it enters the next program masked)."""
    limit, y = at.dscalar("limit"), at.dvector("y")
    k, _ = aesara.scan(lambda k: (k + 1, until(k + 1 > limit)), outputs_info=at.constant(0, dtype="int64"), n_steps=10)
    outputs = [y[k], at.inc_subtensor(y[k], at.constant(1.0, dtype="float64"))]
    assert_matches_reference([limit, y], outputs, 3.0, np.arange(6.0))
    for output in outputs:
        assert_raises_like_reference([limit, y], output, (3.0, np.arange(2.0)), IndexError, "out of bounds")


@pytest.mark.parametrize("limit", [0.0, 10.0, -10.0], ids=["some", "none", "all"])
def test_a_traced_boolean_mask_selects_inside_jit(limit):
    """``x[x > limit]`` (Aesara's ``AdvancedSubtensor`` with a boolean index) is a selection, its gradient an update at the mask."""
    x, m, bound = at.dvector("x"), at.dmatrix("m"), at.dscalar("bound")
    selected = x[x > bound]
    outputs = [
        selected * 2,
        at.sum(at.exp(selected)) + selected.shape[0],
        aesara.grad(at.sum(at.exp(selected)), x),
        m[m > bound],
        m[m[:, 0] > bound],
        at.set_subtensor(selected, at.log(at.abs(selected))),
    ]
    inputs, args = [x, m, bound], (X, np.array([[1.0, -2.0], [-3.0, 4.0], [5.0, 6.0]]), limit)
    assert_matches_reference(inputs, outputs, *args)
    assert _single_program(inputs, outputs, *args)


def test_values_set_at_a_traced_boolean_mask_one_per_selected_element():
    x, y = at.dvector("x"), at.dvector("y")
    updated = at.set_subtensor(x[x > 0], y)
    assert_matches_reference([x, y], updated, X, np.arange(3.0))
    assert_raises_like_reference([x, y], updated, (X, np.arange(2.0)), ValueError, "not one per element")


def test_a_selection_stacked_beside_other_values_of_its_length(x_and_selection):
    """``stack([x[idx], y], axis=1)`` joins across the rows: ``y`` (or another selection) must have the selection's length."""
    x, labels, idx = x_and_selection
    y = at.dvector("y")
    others = at.nonzero(at.eq(labels, 0))
    outputs = [at.stack([x[idx], y], axis=1), at.stack([x[idx][:2], x[others]], axis=1)]
    assert_matches_reference([x, labels, y], outputs, X, LABELS, np.arange(3.0))
    assert _single_program([x, labels, y], outputs, X, LABELS, np.arange(3.0))
    assert_raises_like_reference(
        [x, labels, y], outputs[0], (X, LABELS, np.arange(4.0)), ValueError, "differ in length"
    )


@pytest.mark.parametrize("labels", [LABELS, np.ones(5, "int64")], ids=["some", "all"])
def test_argmax_of_a_selection_counts_selected_rows_in_one_program(labels):
    x, labels_var, m = at.dvector("x"), at.lvector("labels"), at.dmatrix("m")
    idx = at.nonzero(at.eq(labels_var, 1))
    outputs = [at.argmax(x[idx]), at.argmax(m[idx], axis=0), at.argmax(m[idx], axis=1)]
    args = X, labels, np.arange(10.0).reshape(5, 2) % 3
    assert_matches_reference([x, labels_var, m], outputs, *args)
    assert _single_program([x, labels_var, m], outputs, *args)
    assert_raises_like_reference([x, labels_var], at.argmax(x[idx]), (X, np.zeros(5, "int64")), ValueError, "empty")


def _growing_trace(x0, limit=20.0):
    """An until loop's trace of a scalar growing by half until it passes ``limit``."""
    trace, _ = aesara.scan(lambda x: (x * 1.5, until(x * 1.5 > limit)), outputs_info=x0, n_steps=50)
    return trace


def test_selections_of_an_until_trace_by_its_own_values_in_one_program():
    """``trace[trace > 3]``, ``trace[nonzero(trace > 3)]`` and uses of them, for a trace of run-time length."""
    x0 = at.dscalar("x0")
    trace = _growing_trace(x0)
    selected = trace[trace > 3]
    outputs = [
        selected,
        trace[at.nonzero(trace > 3)],
        (selected * 2).mean(),
        at.nonzero(selected > 10)[0],
        at.sort(selected),
    ]
    assert_matches_reference([x0], outputs, 1.0)
    assert _single_program([x0], outputs[:4], 1.0)


def test_selection_of_a_selection(x_and_selection):
    """``x[idx][x[idx] > 1]`` and ``x[idx][nonzero(...)]``: positions count the first selection's rows."""
    x, labels, idx = x_and_selection
    selected = x[idx]
    outputs = [selected[selected > 1.0], selected[at.nonzero(selected > 1.0)], selected[selected > 1.0].sum()]
    assert_matches_reference([x, labels], outputs, X, LABELS)
    assert _single_program([x, labels], outputs, X, LABELS)


def test_rows_of_values_of_run_time_length_by_an_index_array():
    """``trace[[0, -1, k]]`` and ``x[idx][[k, 0]]``: negative indices count from the run-time end, and are checked."""
    x0, k = at.dscalar("x0"), at.lscalar("k")
    x, labels = at.dvector("x"), at.lvector("labels")
    trace = _growing_trace(x0)
    rows = [trace[at.stack([at.constant(0, dtype="int64"), at.constant(-1, dtype="int64"), k])]]
    assert_matches_reference([x0, k], rows, 1.0, -2)
    assert _single_program([x0, k], rows, 1.0, -2)
    assert_raises_like_reference([x0, k], rows[0], (1.0, 9), IndexError, "out of bounds")
    idx = at.nonzero(at.eq(labels, 1))
    picked = x[idx][at.stack([k, at.constant(0, dtype="int64")])]
    assert_matches_reference([x, labels, k], picked, X, LABELS, -1)
    assert_raises_like_reference([x, labels, k], picked, (X, LABELS, 3), IndexError, "out of bounds")


def test_boolean_masks_of_an_until_trace_of_two_dimensions():
    """A row mask ``trace[trace.sum(1) > 10]``, an element mask ``trace[trace > 5]`` and its positions."""
    v0 = at.dvector("v0")
    trace, _ = aesara.scan(lambda v: (v * 1.5, until((v * 1.5).sum() > 40)), outputs_info=v0, n_steps=50)
    outputs = [trace[trace.sum(axis=1) > 10], trace[trace > 5], at.nonzero(trace > 5)[1]]
    assert_matches_reference([v0], outputs, np.array([1.0, 2.0]))


def test_a_boolean_mask_of_another_length_raises_index_error():
    """``y[trace > 3]``, ``trace[y > 3]`` and ``x[m > 0]`` with lengths that differ, as numpy refuses them.

    A shorter mask of a static length used to select from the first rows.
    """
    x0, y = at.dscalar("x0"), at.dvector("y")
    trace = _growing_trace(x0)
    for output in (y[trace > 3], trace[y > 3]):
        assert_raises_like_reference([x0, y], output, (1.0, np.arange(10.0)), IndexError, "boolean index")
    assert_matches_reference([x0, y], y[: trace.shape[0]][trace > 3], 1.0, np.arange(10.0))
    x, m = at.dvector("x"), at.dvector("m")
    for mask in (np.arange(3.0) - 1, np.arange(5.0) - 1):
        assert_raises_like_reference([x, m], x[m > 0], (np.arange(4.0), mask), IndexError, "the mask has")


@pytest.mark.parametrize("update", [at.set_subtensor, at.inc_subtensor], ids=["set", "inc"])
def test_updates_of_an_until_trace_at_its_own_selections(update):
    """``set_subtensor(trace[trace > 3], v)``, by rows ``trace[[k, 0]]``, and their sums, in one program."""
    x0, k = at.dscalar("x0"), at.lscalar("k")
    trace = _growing_trace(x0)
    rows = at.stack([k, at.constant(0, dtype="int64")])
    outputs = [
        update(trace[trace > 3], 0.5),
        update(trace[trace > 3], trace[trace > 3] * 2),
        update(trace[rows], at.as_tensor([7.0, 8.0])),
        update(trace[trace > 3], 0.5).sum(),
    ]
    for row in (1, -1):
        assert_matches_reference([x0, k], outputs, 1.0, row)
    assert _single_program([x0, k], outputs, 1.0, 1)
    assert_raises_like_reference([x0, k], outputs[2], (1.0, 8), IndexError, "out of bounds")


@pytest.mark.parametrize("update", [at.set_subtensor, at.inc_subtensor], ids=["set", "inc"])
def test_updates_of_a_selection_at_its_own_selections(x_and_selection, update):
    """``set_subtensor(x[idx][x[idx] > 1], v)`` and at rows ``x[idx][[k, 0]]``, positions counting selected rows."""
    x, labels, idx = x_and_selection
    k = at.lscalar("k")
    selected = x[idx]
    outputs = [
        update(selected[selected > 1.0], -1.0),
        update(selected[at.stack([k, at.constant(0, dtype="int64")])], 9.0),
    ]
    assert_matches_reference([x, labels, k], outputs, X, LABELS, -1)
    assert _single_program([x, labels, k], outputs, X, LABELS, -1)


def test_values_of_run_time_length_set_one_per_selected_row():
    """``y[arange(n)] = trace``, ``y[y > 3] += trace[trace > 3]``: lengths checked as Aesara checks them."""
    x0, y = at.dscalar("x0"), at.dvector("y")
    trace = _growing_trace(x0)
    outputs = [at.set_subtensor(y[at.arange(trace.shape[0])], trace), at.inc_subtensor(y[y > 3], trace[trace > 3])]
    assert_matches_reference([x0, y], outputs, 1.0, np.arange(10.0))
    assert _single_program([x0, y], outputs, 1.0, np.arange(10.0))
    assert_raises_like_reference([x0, y], outputs[1], (1.0, np.arange(9.0)), ValueError, "not one per element")


def test_gradients_through_selections_of_run_time_length():
    """Gradients of ``cumsum(x[idx])``, ``trace[trace > 3]``, ``trace[[0, -1]]`` and ``x[idx][x[idx] > 1]``."""
    x, labels, x0 = at.dvector("x"), at.lvector("labels"), at.dscalar("x0")
    idx = at.nonzero(at.eq(labels, 1))
    trace = _growing_trace(x0)
    selected = x[idx]
    outputs = [
        aesara.grad((at.cumsum(selected) ** 2).sum(), x),
        aesara.grad(trace[trace > 3].sum(), x0),
        aesara.grad(trace[at.as_tensor([0, -1])].sum(), x0),
        aesara.grad((selected[selected > 1.0] ** 2).sum(), x),
    ]
    assert_matches_reference([x, labels, x0], outputs, X, LABELS, 1.0)
    assert _single_program([x, labels, x0], outputs, X, LABELS, 1.0)


def test_selected_rows_of_a_matrix_cut_by_a_slice(x_and_selection):
    """``m[idx, 1:]`` and ``m[idx, 1]``: a selection of rows, then a slice or an index of each."""
    _, labels, idx = x_and_selection
    m = at.dmatrix("m")
    outputs = [m[idx[0], 1:], m[idx[0], 1:].sum(), m[idx[0], 1]]
    matrix = np.arange(15.0).reshape(5, 3)
    assert_matches_reference([m, labels], outputs, matrix, LABELS)
    assert _single_program([m, labels], outputs, matrix, LABELS)


def test_negative_indices_of_a_narrow_dtype_into_a_long_axis():
    """``y[cast(v[v < 0], int8)]``: -1 counts from the end of 300 rows (a narrow dtype must not wrap)."""
    y, v = at.dvector("y"), at.lvector("v")
    picked = y[at.cast(v[at.nonzero(v < 0)], "int8")]
    assert_matches_reference([y, v], picked, np.arange(300.0), np.array([-1, 5, -3]))


def test_a_boolean_mask_of_another_width_raises_index_error():
    m, k = at.dmatrix("m"), at.dmatrix("k")
    assert_raises_like_reference([m, k], m[k > 0], (np.ones((4, 3)), np.ones((4, 4))), IndexError, "mask of shape")


def test_a_constant_mask_set_from_an_until_trace():
    x0, y = at.dscalar("x0"), at.dvector("y")
    trace = _growing_trace(x0)
    length = aesara.function([x0], trace.shape[0], mode="FAST_COMPILE")(1.0)
    mask = np.arange(40) % 2 == 0
    mask[2 * length :] = False
    assert_matches_reference([x0, y], at.set_subtensor(y[at.constant(mask)], trace), 1.0, np.zeros(40))


def test_rows_picked_by_a_traced_mask_then_cut_by_a_slice():
    """``m[mk, 1:]`` and ``m[m[:, 0] > 3, ::2]``: a boolean mask of the rows, then slices of the other axes."""
    m, mk = at.dmatrix("m"), at.bvector("mk")
    outputs = [m[at.neq(mk, 0), 1:], m[m[:, 0] > 3, ::2], m[m[:, 0] > 3, ::2].sum()]
    assert_matches_reference([m, mk], outputs, np.arange(12.0).reshape(3, 4), np.array([1, 0, 1], "int8"))
    assert _single_program([m, mk], outputs, np.arange(12.0).reshape(3, 4), np.array([1, 0, 1], "int8"))


def test_sums_of_rows_picked_by_a_mask_of_a_square_matrix():
    """``m[m[:, 0] > 3].sum()``: Aesara's JAX rewrite of such sums (left out) masked columns of a square matrix."""
    m = at.dmatrix("m")
    outputs = [m[m[:, 0] > 3].sum(), m[m[:, 0] > 3, ::2].sum(), m[m > 3].sum()]
    assert_matches_reference([m], outputs, np.arange(16.0).reshape(4, 4))
    assert _single_program([m], outputs, np.arange(16.0).reshape(4, 4))


def test_draws_from_a_selection_keep_its_rows(x_and_selection):
    """An elementwise draw from a selection is a selection of the same rows (probabilities 0 and 1, a scale of 0:
    the same numbers on every backend), in the one program."""
    x, labels, idx = x_and_selection
    srng = RandomStream(5)
    outputs = [srng.bernoulli(at.switch(at.gt(x[idx], 1), 1.0, 0.0)) * 3, srng.normal(x[idx], 0.0) + 1]
    assert_matches_reference([x, labels], outputs, X, LABELS)
    assert _single_program([x, labels], outputs, X, LABELS)


def test_draws_from_an_until_trace_keep_its_length():
    """An elementwise draw from an until loop's trace has the trace's run-time length, in the one program."""
    x0 = at.dscalar("x0")
    trace, _ = aesara.scan(lambda x: (x * 2, until(x > 10)), outputs_info=x0, n_steps=20)
    srng = RandomStream(6)
    outputs = [srng.normal(trace, 0.0).sum(), srng.bernoulli(at.switch(at.gt(trace, 4), 1.0, 0.0)).sum()]
    assert_matches_reference([x0], outputs, 0.75)
    assert _single_program([x0], outputs, 0.75)
