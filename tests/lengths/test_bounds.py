"""Static bounds of integer values read from the graph (`aejax.linker.lengths.bounds`).

The shape of problem they serve: a loop nested in the step of a loop over
``arange(10)`` runs over ``arange(1, 1 + 2 ** d)`` for the row ``d`` (aehmc's
NUTS: the trajectory of tree depth ``d``). ``d`` is traced in the step, but
its outer sequence bounds it, so the nested loop's trace has at most 512 rows.
"""

import aesara
import aesara.tensor as at
import numpy as np
from aesara.graph.basic import io_toposort
from aesara.scan.op import Scan
from aesara.scan.utils import until

from aejax.linker.graph.value_bounds import within_bounds
from aejax.linker.lengths.bounds import length_bound, tracing, upper_bound, value_interval, values_within


class TracedRow:
    """Stands for a JAX tracer: a value computed while tracing whose number is not known."""


def test_elements_of_constants_aranges_and_their_reads():
    table = at.as_tensor(np.array([2, 3, 5, 9, 17]))
    assert value_interval(table) == (2, 17)
    assert upper_bound(table[3]) == 17  # a read lies within what it reads from
    assert value_interval(table[1:][::2]) == (2, 17)
    assert value_interval(at.arange(0, 10)) == (0, 9)
    assert value_interval(at.arange(10, 0, -3)) == (1, 10)
    assert value_interval(table.dimshuffle("x", 0)) == (2, 17)


def test_no_interval_for_floats_empty_arrays_and_unknown_inputs():
    assert value_interval(at.as_tensor(np.array([1.0, 2.0]))) is None
    assert value_interval(at.as_tensor(np.zeros(0, dtype="int64"))) is None
    assert upper_bound(at.lscalar("n") + 1) is None


def test_a_traced_row_within_its_interval_bounds_a_range_of_two_to_its_power():
    d = at.lscalar("d")
    stop = 1 + 2**d
    trajectory = at.arange(1, stop)
    row = TracedRow()
    with tracing({d: row}):
        assert upper_bound(stop) is None and length_bound(trajectory) is None
        with values_within([(row, (0, 9))]):
            assert upper_bound(stop) == 513
            assert length_bound(trajectory) == 512
            assert upper_bound(trajectory.shape[0]) == 512
            assert upper_bound(trajectory[-1]) == 512


def test_an_interval_goes_with_its_value_not_with_the_variable():
    """Nested Scans' inner graphs share their nominal inputs: the row of a loop and the row of
    the loop nested in its step are the same variable, holding different values."""
    d = at.lscalar("d")
    outer_row, inner_row = TracedRow(), TracedRow()
    with values_within([(outer_row, (3, 7))]), values_within([(inner_row, (1, 6))]):
        with tracing({d: outer_row}):
            assert upper_bound(d) == 7
        with tracing({d: inner_row}):
            assert upper_bound(d) == 6
        with tracing({d: TracedRow()}):
            assert upper_bound(d) is None


def test_nested_scans_share_their_nominal_inputs():
    """Why `values_within` keys by value: the premise of the test above, in Aesara's Scans."""
    x = at.dscalar("x")

    def mid_step(d, x):
        ys, _ = aesara.scan(lambda i, x: (x * i, until(i > 3)), sequences=at.arange(1, d), non_sequences=x)
        return ys.sum()

    out, _ = aesara.scan(mid_step, sequences=at.arange(3, 8), non_sequences=x)
    outer = next(node for node in io_toposort([x], [out]) if isinstance(node.op, Scan))
    inner = next(node for node in outer.op.fgraph.toposort() if isinstance(node.op, Scan))
    assert outer.op.fgraph.inputs[0] == inner.op.fgraph.inputs[0]


def test_powers_only_of_non_negative_integers_and_within_reach():
    base, exponent = at.lscalar("base"), at.lscalar("exponent")
    power = base**exponent
    b, e = TracedRow(), TracedRow()
    with tracing({base: b, exponent: e}):
        with values_within([(b, (0, 3)), (e, (0, 4))]):
            assert value_interval(power) == (0, 81)
        with values_within([(b, (-2, 3)), (e, (0, 4))]):
            assert value_interval(power) is None  # (-2) ** 3 < 0 < (-2) ** 4: not at the corners
        with values_within([(b, (2, 2)), (e, (0, 2**62))]):
            assert value_interval(power) is None  # would overflow any dtype: not worked out


def test_values_within_their_bounds_once_the_bounds_are_known():
    """`ValuesWithin` (a sequence the graph does not bound, with bounds computed from its values): its bounds
    count once they are concrete while tracing, as static inputs are; what the graph bounds its value to wins."""
    y, low, high = at.lvector("y"), at.lscalar("low"), at.lscalar("high")
    held = within_bounds(y + 1, low, high)
    with tracing({y: TracedRow(), low: TracedRow(), high: TracedRow()}):
        assert value_interval(held) is None
    with tracing({y: TracedRow(), low: np.int64(-4), high: np.int64(64)}):
        assert value_interval(held) == (-4, 64)
        assert upper_bound(held[0] * 2) == 128
        assert value_interval(within_bounds(at.arange(3, 9), low, high)) == (3, 8)
        assert length_bound(within_bounds(at.arange(0, 7), low, high)) == 7
