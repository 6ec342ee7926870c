"""The mode's rewrites run without Aesara's shape feature and keep every graph's values."""

import subprocess
import sys

import aesara
import aesara.raise_op
import aesara.tensor as at
import numpy as np
import pytest
from aesara.tensor.shape import Shape, Shape_i
from aesara.tensor.subtensor import Subtensor

import aejax.linker
from tests.reference import assert_matches_reference

X = np.array([0.5, -1.0, 2.0, 3.5])
Y = np.array([4.0, -2.0])
IDX = np.array([3, 1])


def _graphs():
    """Graphs matching the rewrites that read Aesara's `ShapeFeature` when it is there."""
    x, y, i = at.dvector("x"), at.dvector("y"), at.lvector("i")
    return [x, y, i], {
        "set then read at the same indices": at.set_subtensor(x[i], y)[i],
        "increment of zeros over the whole array": at.inc_subtensor(at.zeros_like(x)[:], x * 2),
        "slice up to the length": x[: x.shape[0]] + 1,
        "set from an alloc": at.set_subtensor(x[i], at.alloc(2.0, i.shape[0])),
        "fill": at.fill(x, 3.0) + at.sum(y),
        "zeros like a selection": at.zeros_like(x[i]) + y,
    }


@pytest.mark.parametrize("name", list(_graphs()[1]))
def test_rewrites_that_read_shapes_keep_the_values(name):
    inputs, outputs = _graphs()
    with aesara.config.change_flags(on_opt_error="raise"):
        assert_matches_reference(inputs, outputs[name], X, Y, IDX, on_unused_input="ignore")


def test_no_shape_feature_is_attached():
    """Aesara's `ShapeFeature` infers a shape for every node added while rewriting, Scans' inner graphs included."""
    inputs, outputs = _graphs()
    f = aesara.function(inputs, list(outputs.values()), mode=aejax.linker.mode)
    assert not hasattr(f.maker.fgraph, "shape_feature")


def test_shapes_are_read_per_axis():
    """``x.shape[0]`` is ``Shape_i{0}(x)`` and a static size a constant, as Aesara's shape feature would write them."""
    x = at.tensor("float64", shape=(None, 3), name="x")
    outputs = [x * x.shape[0] + x.shape[1], at.zeros(x.shape) + 1]
    assert_matches_reference([x], outputs, np.ones((4, 3)))
    f = aesara.function([x], outputs, mode=aejax.linker.mode)
    ops = {type(node.op).__name__ for node in f.maker.fgraph.apply_nodes}
    assert "Shape" not in ops and "Shape_i" in ops


def test_a_scan_state_buffer_has_a_constant_size():
    """``aesara.scan`` sizes the buffer ``n_steps + unbroadcast(x0[None]).shape[0]``: a constant, read through the reshuffles."""
    x0 = at.dscalar("x0")
    xs, _ = aesara.scan(lambda x: x * 2, outputs_info=x0, n_steps=5)
    assert_matches_reference([x0], xs, 0.5)
    f = aesara.function([x0], xs, mode=aejax.linker.mode)
    assert not [node for node in f.maker.fgraph.apply_nodes if isinstance(node.op, (Shape, Shape_i))]


def test_the_shape_of_a_checked_value_is_its_inputs_and_checks_nothing():
    """``assert_op(x, c).shape`` is ``x.shape``, as under Aesara's shape feature: the reference returns it whatever ``c``."""
    x, c = at.dmatrix("x"), at.dscalar("c")
    checked = aesara.raise_op.Assert("c must hold")(x, c)
    outputs = [checked.shape, checked.shape[1] * 2]
    for holds in (1.0, 0.0):
        assert_matches_reference([x, c], outputs, np.ones((2, 3)), holds)
    f = aesara.function([x, c], outputs, mode=aejax.linker.mode)
    assert not [node for node in f.maker.fgraph.apply_nodes if isinstance(node.op, aesara.raise_op.CheckAndRaise)]
    g = aesara.function([x, c], checked.sum() + checked.shape[0], mode=aejax.linker.mode)
    with pytest.raises(AssertionError, match="c must hold"):
        g(np.ones((2, 3)), 0.0)  # the value itself is still checked


def test_the_gradient_of_a_checked_sum_checks_nothing_as_under_fast_run():
    """``grad(assert_op(x, c).sum(), x)`` is ``ones_like``: a fill of the checked value, which reads only its shape.

    Aesara's ``fast_run`` rewrites (those aejax's mode starts from) drop the
    check there; its ``fast_compile`` keeps the fill and raises.
    """
    x, c = at.dvector("x"), at.dscalar("c")
    (gradient,) = aesara.grad(aesara.raise_op.Assert("c must hold")(x, c).sum(), [x])
    reference = aesara.function([x, c], gradient, mode=aesara.compile.mode.Mode(linker="py", optimizer="fast_run"))
    ours = aesara.function([x, c], gradient, mode=aejax.linker.mode)
    for holds in (1.0, 0.0):
        np.testing.assert_array_equal(ours(np.ones(3), holds), reference(np.ones(3), holds))


def test_slices_over_whole_axes_are_dropped_and_others_kept():
    x = at.dvector("x")
    outputs = [x[0:] * 2, x[: x.shape[0]] + 1, x[0:3] - 1]
    assert_matches_reference([x], outputs, X)
    f = aesara.function([x], outputs, mode=aejax.linker.mode)
    subtensors = [node for node in f.maker.fgraph.apply_nodes if isinstance(node.op, Subtensor)]
    assert len(subtensors) == 1, subtensors  # x[0:3]


SELF_SHAPED_GRAPHS = """
import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
import aesara, aesara.tensor as at, numpy as np
import aejax.linker
x, i = at.dvector("x"), at.lvector("i")
zero = at.constant(0.0, dtype="float64")
outputs = [
    x ** zero, x ** 0, zero / x, zero // x, at.constant(0) // i, x ** at.constant(np.ones((2, 1))),
    at.grad(at.grad((x ** 2).sum(), x).sum(), x),
]
aesara.function([x, i], outputs, mode=aejax.linker.mode, on_unused_input="ignore")
"""


def test_rewrites_that_shape_a_value_by_the_output_they_replace_compile(tmp_path):
    """``x ** 0`` and the second derivative of ``x ** 2`` compiled forever (a rewrite firing on its own result)."""
    script = tmp_path / "compile.py"
    script.write_text(SELF_SHAPED_GRAPHS)
    subprocess.run([sys.executable, str(script)], check=True, timeout=120, capture_output=True)
    x, i = at.dvector("x"), at.lvector("i")
    zero = at.constant(0.0, dtype="float64")
    outputs = [x**zero, zero / x, at.constant(0) // i, at.grad(at.grad((x**2).sum(), x).sum(), x)]
    assert_matches_reference([x, i], outputs, X, IDX)
