"""`ScanSequenceBounds`: an integer sequence from whose rows a step makes a size carries the bounds of its values."""

import aesara
import aesara.tensor as at
import numpy as np
import pytest

import aejax.linker
from aejax.linker.graph.value_bounds import ValuesWithin
from aejax.linker.rewrites.scan import LARGEST_ROUNDED, bounded_values, rounded_up


def _bounded_sequences(outputs, inputs):
    f = aesara.function(inputs, outputs, mode=aejax.linker.mode)
    return [node for node in f.maker.fgraph.apply_nodes if isinstance(node.op, ValuesWithin)]


VALUES = [-5, 0, 1, 2, 3, 63, 64, 65, 1000, 2**50 + 1, 2**53 + 1, LARGEST_ROUNDED, LARGEST_ROUNDED + 1]


@pytest.mark.parametrize("value", VALUES)
def test_rounded_up_is_the_next_power_of_two(value):
    got = int(aesara.function([], rounded_up(at.as_tensor(np.int64(value))), mode="FAST_COMPILE")())
    if value <= 0:
        assert got == 0
    elif value > LARGEST_ROUNDED:
        assert got == value
    else:
        assert got >= value and got & (got - 1) == 0 and got < 2 * value


@pytest.mark.parametrize(
    "values", [np.array([3, -9, 40]), np.array([], "int64"), np.array([5, 5], "uint8")], ids=["mixed", "empty", "uint8"]
)
def test_bounds_hold_every_value_and_zero(values):
    seq = at.vector(dtype=str(values.dtype))
    node = bounded_values(seq, "seq").owner
    assert isinstance(node.op, ValuesWithin)
    low, high = aesara.function([seq], node.inputs[1:], mode="FAST_COMPILE")(values)
    assert low <= min([0, *values]) and max([0, *values]) <= high
    np.testing.assert_array_equal(aesara.function([seq], node.outputs[0], mode="FAST_COMPILE")(values), values)


def test_a_sequence_whose_rows_size_an_arange_is_bounded():
    y = at.lvector("y")
    totals, _ = aesara.scan(lambda y_t: at.arange(2, y_t + 1).sum(), sequences=[y])
    assert len(_bounded_sequences(totals, [y])) == 1


def test_a_sequence_whose_rows_size_a_nested_loop_is_bounded():
    """Both of the step's uses of ``y_t``: the nested loop's number of steps (``y``), its buffer's size (``y + 1``)."""
    y = at.lvector("y")

    def step(y_t):
        trace, _ = aesara.scan(lambda x: x * 2, outputs_info=at.as_tensor(np.float64(1.0)), n_steps=y_t)
        return trace.sum()

    totals, _ = aesara.scan(step, sequences=[y])
    assert len(_bounded_sequences(totals, [y])) == 2


@pytest.mark.parametrize(
    "case",
    ["rows used elementwise", "rows sizing by their shape", "constant sequence", "float sequence", "uint64"],
)
def test_other_sequences_are_left_alone(case):
    if case == "rows used elementwise":
        y = at.lvector("y")
        outputs, _ = aesara.scan(lambda y_t: y_t * 2 + 1, sequences=[y])
        inputs = [y]
    elif case == "rows sizing by their shape":
        m = at.lmatrix("m")
        outputs, _ = aesara.scan(lambda m_t: at.zeros(m_t.shape[0] + 1) + m_t.sum(), sequences=[m])
        inputs = [m]
    elif case == "constant sequence":
        outputs, _ = aesara.scan(lambda y_t: at.arange(y_t).sum(), sequences=[at.as_tensor(np.array([3, 4]))])
        inputs = []
    elif case == "float sequence":
        x = at.dvector("x")
        outputs, _ = aesara.scan(lambda x_t: at.arange(x_t).sum(), sequences=[x])
        inputs = [x]
    else:
        u = at.vector(dtype="uint64")
        outputs, _ = aesara.scan(lambda u_t: at.arange(u_t).sum(), sequences=[u])
        inputs = [u]
    assert _bounded_sequences(outputs, inputs) == []
