"""Scans with an ``until`` condition, lowered to ``lax.while_loop``."""

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.scan.op import Scan
from aesara.scan.utils import until

import aejax.linker
from tests.jaxprs import inner_jaxprs
from tests.reference import assert_matches_reference, assert_raises_like_reference


def newton_sqrt(max_steps=100):
    x0, a = at.dscalar("x0"), at.dscalar("a")

    def step(x, a):
        new = 0.5 * (x + a / x)
        return new, until(abs(new - x) < 1e-10)

    out, _ = aesara.scan(step, outputs_info=x0, non_sequences=a, n_steps=max_steps)
    return [x0, a], out


@pytest.mark.kind("until")
def test_final_value_stays_in_one_program():
    inputs, out = newton_sqrt()
    f = aesara.function(inputs, out[-1], mode=aejax.linker.mode)
    np.testing.assert_allclose(f(1.0, 2.0), np.sqrt(2.0))
    assert len(f.vm.jit_fn.segments) == 1
    assert_matches_reference(inputs, out[-1], 1.0, 9.0)


@pytest.mark.kind("until")
@pytest.mark.parametrize(
    "use",
    [lambda o: o, lambda o: o.sum(), lambda o: [o[-1], o.shape[0]], lambda o: [o, o * 2]],
    ids=["trace", "trace.sum()", "last and length", "trace feeds more work"],
)
def test_trace_has_the_run_time_length(use):
    inputs, out = newton_sqrt()
    for a in (2.0, 1e6):
        assert_matches_reference(inputs, use(out), 1.0, a)


def largest_leading_size(fn, *args):
    """The largest first dimension of any value in ``jax.jit(fn)``'s program on ``args``, loop bodies included."""
    sizes = [0]

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            sizes.extend(var.aval.shape[0] for var in eqn.outvars if getattr(var.aval, "shape", ()))
            for sub in inner_jaxprs(eqn.params):
                walk(sub)

    walk(jax.make_jaxpr(fn)(*args).jaxpr)
    return max(sizes)


@pytest.mark.kind("until")
def test_the_last_value_and_the_steps_taken_keep_no_trace():
    """``xs[-1]`` and ``xs.shape[0]`` of a 1000-step until loop: the reference's values, from a loop that keeps
    its last value and counts its steps instead of filling a 1001-row buffer (8 MB for a 1000-vector)."""
    a = at.dvector("a")

    def step(x, a):
        new = 0.5 * (x + a / x)
        return new, until(at.max(abs(new - x)) < 1e-12)

    xs, _ = aesara.scan(step, outputs_info=at.ones_like(a), non_sequences=a, n_steps=1000)
    outputs = [xs[-1], xs.shape[0], xs[3:].shape[0], xs[50:].shape[0]]
    for values in (np.linspace(1.0, 1e4, 7), np.full(7, 4.0)):
        assert_matches_reference([a], outputs, values)
    graph = aejax.linker.jaxify([a], outputs)
    assert largest_leading_size(lambda v: graph.fn({}, v)[0], np.ones(7)) < 1000


@pytest.mark.kind("until")
def test_the_last_row_of_a_loop_that_runs_at_least_once_is_read_unchecked():
    """A loop that may run steps runs one, so its trace's last row exists and is read without a run-time check
    (no checked program, no host sync); with ``n_steps=0`` it raises as the reference does."""
    inputs, out = newton_sqrt(max_steps=1000)
    assert_matches_reference(inputs, [out, out[-1]], 1.0, 9.0)
    f = aesara.function(inputs, [out, out[-1]], mode=aejax.linker.mode)
    f(1.0, 9.0)
    assert [segment.program.checked for segment in f.vm.jit_fn.segments] == [False]
    inputs, out = newton_sqrt(max_steps=0)
    assert_raises_like_reference(inputs, [out, out[-1]], (1.0, 9.0), IndexError, "out of bounds")


@pytest.mark.kind("until")
def test_loop_that_reaches_max_steps():
    inputs, out = newton_sqrt(max_steps=3)
    assert_matches_reference(inputs, [out, out[-1]], 1.0, 1e6)


@pytest.mark.kind("until")
def test_until_with_sequences_mit_sot_and_nit_sot():
    a, init = at.dvector("a"), at.dvector("init")

    def step(x, s2, s1):
        new = s1 + s2 * 0.5 + x
        return [new, new * 2], until(new > 10)

    (s, doubled), _ = aesara.scan(step, sequences=a, outputs_info=[dict(initial=init, taps=[-2, -1]), None])
    values = np.linspace(0.5, 3.0, 12)
    assert_matches_reference([a, init], [s, doubled, s[-1], doubled.sum()], values, np.array([0.0, 1.0]))


@pytest.mark.kind("until")
def test_split_programs_are_reused_per_length():
    inputs, out = newton_sqrt()
    f = aesara.function(inputs, at.dot(out, out), mode=aejax.linker.mode)
    first = f(1.0, 2.0)
    assert len(f.vm.jit_fn.segments) == 2
    np.testing.assert_allclose(f(1.0, 2.0), first)


@pytest.mark.kind("until")
@pytest.mark.parametrize(
    "use",
    [
        lambda o: at.zeros(o.shape[0]) + o,
        lambda o: at.arange(o.shape[0]) * o,
        lambda o: at.ones((o.shape[0], 2)).sum(0),
    ],
    ids=["zeros(len)+trace", "arange(len)*trace", "ones((len, 2))"],
)
def test_arrays_sized_by_the_run_time_length(use):
    inputs, out = newton_sqrt()
    for a in (2.0, 1e6, 3.0):
        assert_matches_reference(inputs, use(out), 1.0, a)


@pytest.mark.kind("until")
@pytest.mark.parametrize(
    "use",
    [
        lambda o, x: at.concatenate([o, o[::-1] * x[0]]),
        lambda o, x: at.concatenate([o, at.zeros(x.shape[0] - o.shape[0])]) + x,
        lambda o, x: x[o.shape[0] - 1 :: -1] * o,
        lambda o, x: x[: o.shape[0]] + o,
        lambda o, x: at.stack([o, x[: o.shape[0]]], axis=1) * x[:2],
        lambda o, x: at.cumsum(o) * x[: o.shape[0]],
    ],
    ids=[
        "join rows",
        "pad to an input's length",
        "input reversed from the length",
        "input cut to the length",
        "stacked with an input cut to the length",
        "cumulative sum",
    ],
)
def test_values_built_from_the_run_time_length_stay_in_one_program(use):
    """Joins, zeros up to an input's length and slices of inputs at the trace's length: no split, no static input."""
    (x0, a), out = newton_sqrt()
    x = at.dvector("x")
    inputs, result = [x0, a, x], use(out, x)
    values = np.linspace(-1.0, 1.0, 40)
    f = aesara.function(inputs, result, mode=aejax.linker.mode)
    f(1.0, 2.0, values)
    (segment,) = f.vm.jit_fn.segments
    compiled = segment.program.programs.compiled
    for a_value in (2.0, 1e6, 3.0):
        assert_matches_reference(inputs, result, 1.0, a_value, values)
        f(1.0, a_value, values)
    assert segment.program.static_positions == ()
    assert segment.program.programs.compiled == compiled


@pytest.mark.kind("until")
def test_columns_of_traces_joined_in_one_program():
    x0 = at.dvector("x0")
    xs, _ = aesara.scan(lambda x: (x * 1.5, until(x.sum() * 1.5 > 40)), outputs_info=x0, n_steps=50)
    joined = at.concatenate([xs, xs[:, :1] * 2], axis=1)
    for start in ([1.0, 2.0, 0.5], [0.1, 0.1, 0.1]):
        assert_matches_reference([x0], joined, np.array(start))
    f = aesara.function([x0], joined, mode=aejax.linker.mode)
    f(np.ones(3))
    assert len(f.vm.jit_fn.segments) == 1


@pytest.mark.kind("until")
def test_trace_of_a_specified_length_is_checked_in_one_program():
    inputs, out = newton_sqrt()
    length = len(aesara.function(inputs, out, mode="FAST_COMPILE")(1.0, 2.0))
    doubled = at.specify_shape(out, (length,)) * 2
    assert_matches_reference(inputs, doubled, 1.0, 2.0)
    f = aesara.function(inputs, doubled, mode=aejax.linker.mode)
    f(1.0, 2.0)
    assert len(f.vm.jit_fn.segments) == 1
    with pytest.raises(AssertionError, match=rf"has shape \(\?,\), .*specifies shape \({length},\)"):
        f(1.0, 1e6)


@pytest.mark.kind("until")
@pytest.mark.parametrize(
    "use",
    [lambda o, k: o[k], lambda o, k: at.set_subtensor(o[k], 0.0), lambda o, k: at.arange(o.shape[0])[k]],
    ids=["row of the trace", "update of a row", "row of arange(length)"],
)
def test_a_row_past_the_run_time_length_raises_index_error(use):
    """Rows inside the trace match the reference; one past either end raises `IndexError` as it does, not padding."""
    (x0, a), out = newton_sqrt()
    k = at.lscalar("k")
    inputs, result = [x0, a, k], use(out, k)
    length = len(aesara.function([x0, a], out, mode="FAST_COMPILE")(1.0, 2.0))
    for row in (0, length - 1, -length):
        assert_matches_reference(inputs, result, 1.0, 2.0, row)
    reference = aesara.function(inputs, result, mode="FAST_COMPILE")
    ours = aesara.function(inputs, result, mode=aejax.linker.mode)
    for row in (length, -length - 1):
        with pytest.raises(IndexError):
            reference(1.0, 2.0, row)
        with pytest.raises(IndexError, match="out of bounds"):
            ours(1.0, 2.0, row)


def doubling_until_above(x0, limit):
    """The trace of ``x0`` doubled until it exceeds ``limit`` (its length is known only at run time)."""
    trace, _ = aesara.scan(lambda v: (v * 2, until(v > limit)), outputs_info=x0, n_steps=50)
    return trace


@pytest.mark.kind("until")
def test_traces_of_different_run_time_lengths_combined_raise_value_error():
    x0, first, second, x = at.dscalar("x0"), at.dscalar("first"), at.dscalar("second"), at.dvector("x")
    out, shorter = doubling_until_above(x0, first), doubling_until_above(x0, second)
    inputs, result = [x0, first, second, x], [out + shorter, out + x[: shorter.shape[0]]]
    values = np.linspace(0.0, 1.0, 60)
    assert_matches_reference(inputs, result, 1.0, 100.0, 100.0, values)
    assert_raises_like_reference(inputs, result, (1.0, 100.0, 10.0, values), ValueError, "differ in length")


@pytest.mark.kind("until")
def test_until_loops_with_alike_conditions_keep_their_own_lengths():
    """Aesara's ``scan_merge`` would merge these two loops (same condition graph, other values) into one."""
    x0, x1, first, second = at.dscalar("x0"), at.dscalar("x1"), at.dscalar("first"), at.dscalar("second")
    inputs = [x0, x1, first, second]
    outputs = [doubling_until_above(x0, first), doubling_until_above(x0, second), doubling_until_above(x1, first)]
    assert_matches_reference(inputs, outputs, 1.0, 20.0, 100.0, 10.0)


def test_fixed_length_loops_are_still_merged():
    x0, x1 = at.dscalar("x0"), at.dscalar("x1")
    doubled, _ = aesara.scan(lambda v: v * 2, outputs_info=x0, n_steps=10)
    counted, _ = aesara.scan(lambda v: v + 1, outputs_info=x1, n_steps=10)
    f = aesara.function([x0, x1], [doubled, counted], mode=aejax.linker.mode)
    assert sum(isinstance(node.op, Scan) for node in f.maker.fgraph.apply_nodes) == 1
    assert_matches_reference([x0, x1], [doubled, counted], 1.0, 2.0)


@pytest.mark.kind("until")
@pytest.mark.parametrize("limit", [3.0, 40.0, 1e6], ids=["stops early", "stops at the last row", "runs every row"])
def test_until_loop_over_a_sequence_of_run_time_length(limit):
    """An until loop over another loop's trace: its own trace has the steps it ran, without the padding rows."""
    x0, bound = at.dscalar("x0"), at.dscalar("bound")
    sequence = doubling_until_above(x0, 50.0)
    running, _ = aesara.scan(
        lambda v, total: (total + v, until(total + v > bound)),
        sequences=[sequence],
        outputs_info=[at.constant(0.0, dtype="float64")],
    )
    assert_matches_reference([x0, bound], [running, running.shape[0]], 1.0, limit)


@pytest.mark.kind("until")
@pytest.mark.parametrize(
    "use, fitting, other",
    [
        (lambda o, y: at.inc_subtensor(o[:2], y), 2, 3),
        (lambda o, y: at.set_subtensor(o[::2], y), 2, 3),
        (lambda o, y: at.set_subtensor(y[: o.shape[0]], o), 4, 2),
    ],
    ids=["inc first rows", "set every other row", "set an input's first rows from the trace"],
)
def test_slices_set_from_values_of_another_length_raise_value_error(use, fitting, other):
    """The trace has 3 rows; ``y`` has ``fitting`` rows, then ``other`` rows, which the slice cannot take."""
    x0, limit, y = at.dscalar("x0"), at.dscalar("limit"), at.dvector("y")
    inputs, result = [x0, limit, y], use(doubling_until_above(x0, limit), y)
    assert_matches_reference(inputs, result, 1.0, 3.0, np.arange(float(fitting)))
    assert_raises_like_reference(inputs, result, (1.0, 3.0, np.arange(float(other))), ValueError, "another length")


@pytest.mark.kind("until")
def test_an_array_sized_by_a_negative_run_time_length_raises_value_error():
    x0, limit = at.dscalar("x0"), at.dscalar("limit")
    padding = at.zeros(5 - doubling_until_above(x0, limit).shape[0])
    assert_matches_reference([x0, limit], padding, 1.0, 3.0)
    assert_raises_like_reference([x0, limit], padding, (1.0, 100.0), ValueError, "negative")


@pytest.mark.parametrize("stops_early", [True, False], ids=["until loop", "fixed loop"])
def test_an_entry_of_the_last_row_of_a_matrix_trace(stops_early, caplog):
    """``trace[-1, 1]`` reads one entry of the last row: not a last-row read that `ScanKeepLast` may shrink."""
    v, limit = at.dvector("v"), at.dscalar("limit")

    def step(x, limit):
        return (x * 2, until(x.sum() * 2 > limit)) if stops_early else x * 2

    trace, _ = aesara.scan(step, outputs_info=[v], non_sequences=[limit], n_steps=8)
    assert_matches_reference([v, limit], [trace[-1, 1], trace[-1]], np.array([1.0, 2.0]), 10.0)
    assert "Rewrite failure" not in caplog.text


@pytest.mark.kind("until")
def test_maximum_and_its_position_of_an_inner_until_trace():
    """A step reads ``max`` and ``argmax`` of an until loop it runs (its graph keeps Aesara's `MaxAndArgmax`)."""
    y, limit = at.dvector("y"), at.dscalar("limit")

    def outer(start, total):
        inner = doubling_until_above(start, limit)
        return total + inner.max() + at.argmax(inner)

    totals, _ = aesara.scan(outer, sequences=[y], outputs_info=[at.constant(0.0, dtype="float64")])
    assert_matches_reference([y, limit], totals, np.array([1.0, 3.0, 0.5]), 7.0)


@pytest.mark.kind("until")
def test_a_trace_split_at_a_run_time_position_in_one_program():
    """``split(trace, [k, n - k])`` and sums of its pieces; sizes that do not add up raise ValueError."""
    x0, k = at.dscalar("x0"), at.lscalar("k")
    trace = doubling_until_above(x0, 100.0)
    n = trace.shape[0]
    first, rest = at.split(trace, at.stack([k, n - k]), 2)
    outputs = [first, rest, rest.sum() * 2 + first.sum()]
    for row in (0, 2):
        assert_matches_reference([x0, k], outputs, 1.0, row)
    f = aesara.function([x0, k], outputs, mode=aejax.linker.mode)
    f(1.0, 2)
    assert len(f.vm.jit_fn.segments) == 1
    assert_raises_like_reference([x0, k], rest, (1.0, 9), ValueError, "split sizes")


@pytest.mark.kind("until")
def test_columns_of_a_matrix_trace_split_apart():
    v0 = at.dvector("v0")
    trace, _ = aesara.scan(lambda v: (v * 2, until(v.sum() > 50)), outputs_info=v0, n_steps=20)
    left, right = at.split(trace, [1, 2], 2, axis=1)
    assert_matches_reference([v0], [left, right, right.sum()], np.array([1.0, 2.0, 0.5]))


@pytest.mark.kind("until")
def test_a_size_above_its_bound_from_the_graph_raises_instead_of_cutting_the_value(monkeypatch):
    import aejax.linker.dispatch.tensor_basic as tensor_basic

    x0, limit = at.dscalar("x0"), at.dscalar("limit")
    sized = at.zeros(doubling_until_above(x0, limit).shape[0] + 1)
    monkeypatch.setattr(tensor_basic, "upper_bound", lambda var: 2)  # a wrong bound: the trace has 5 rows
    f = aesara.function([x0, limit], sized, mode=aejax.linker.mode)
    with pytest.raises(RuntimeError, match="exceeds the bound"):
        f(1.0, 20.0)
