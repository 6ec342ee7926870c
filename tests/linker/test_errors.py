"""Errors that name the Op, node and variable at fault."""

import warnings

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.graph.basic import Apply
from aesara.graph.op import Op

import aejax.linker
from aejax.linker import LoweringError, jaxify
from tests.reference import compile_both


class DoubleOp(Op):
    """An Op with a Python implementation only."""

    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] * 2


def test_registering_a_lowering_makes_it_work():
    class TripleOp(DoubleOp):
        pass

    @aejax.linker.jax_funcify.register(TripleOp)
    def _triple(op, **kwargs):
        return lambda x: x * 3

    x = at.dvector("x")
    f = aesara.function([x], TripleOp()(x), mode=aejax.linker.mode)
    np.testing.assert_array_equal(f(np.ones(2)), [3.0, 3.0])


def test_data_dependent_shape_names_the_node_and_variable():
    x = at.dvector("x")
    n = at.cast(x.sum(), "int64")
    graph = jaxify([x], [at.ones((n,))], {})  # a compiled function splits its program there instead
    with pytest.raises(LoweringError) as info:
        jax.jit(graph.fn)({}, np.ones(3))
    message = str(info.value)
    assert "JAX could not trace node" in message
    assert "Traced inputs of the node" in message
    assert "_error_repr" not in message


def test_concrete_assertion_failure_raises():
    x = at.dvector("x")
    from aesara.raise_op import Assert

    checked = Assert("x must have 3 entries")(x, at.eq(x.shape[0], 3))
    f = aesara.function([x], checked * 2, mode=aejax.linker.mode)
    np.testing.assert_array_equal(f(np.ones(3)), 2 * np.ones(3))
    with pytest.raises(AssertionError, match="3 entries"):
        f(np.ones(2))


def test_aesara_jax_mode_is_untouched_until_opt_in(monkeypatch):
    from aesara.compile import mode as aesara_mode

    assert aesara_mode.predefined_modes["JAX"] is not aejax.linker.mode
    assert aesara_mode.predefined_modes["AEJAX"] is aejax.linker.mode
    monkeypatch.setitem(aesara_mode.predefined_modes, "JAX", aesara_mode.predefined_modes["JAX"])
    aejax.linker.use_for_aesara_jax_mode()
    assert aesara_mode.predefined_modes["JAX"] is aejax.linker.mode
    a = at.iscalar("a")
    f = aesara.function([a], at.arange(3)[:a], mode="JAX")
    with pytest.warns(aejax.linker.ShapeInputWarning):
        np.testing.assert_array_equal(f(2), [0, 1])


def test_lowering_that_fails_to_build_is_a_lowering_error_naming_the_op():
    class HalveOp(DoubleOp):
        pass

    @aejax.linker.jax_funcify.register(HalveOp)
    def _broken(op, **kwargs):
        raise AttributeError("module 'jax.scipy.special' has no attribute 'halve'")

    x = at.dvector("x")
    with pytest.raises(LoweringError, match="HalveOp.*AttributeError"):
        aesara.function([x], HalveOp()(x), mode=aejax.linker.mode)


def test_failure_unrelated_to_shapes_makes_no_input_static():
    class HalveOp(DoubleOp):
        pass

    @aejax.linker.jax_funcify.register(HalveOp)
    def _branches_on_value(op, **kwargs):
        return lambda x: x / 2 if bool(x.sum() > 0) else x

    n = at.iscalar("n")
    x = at.dvector("x")
    f = aesara.function([x, n], HalveOp()(x * n), mode=aejax.linker.mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error", aejax.linker.ShapeInputWarning)
        with pytest.raises(LoweringError) as info:
            f(np.ones(2), 3)
    assert "HalveOp" in str(info.value)
    assert f.vm.jit_fn.segments[0].program.static_positions == ()


@pytest.mark.parametrize(
    "build, shapes",
    [
        (lambda a, b: at.batched_dot(a, b), [(9, 2, 3), (10, 3, 2)]),
        (lambda a, b: a + b, [(3,), (4,)]),
        (lambda a, b: at.dot(a, b), [(3, 2), (4,)]),
    ],
    ids=["batched_dot", "add", "dot"],
)
def test_inputs_that_do_not_fit_raise_the_references_exception_class(build, shapes):
    a, b = (at.tensor("float64", shape=(None,) * len(s), name=n) for s, n in zip(shapes, "ab"))
    args = [np.ones(s) for s in shapes]
    reference = aesara.function([a, b], build(a, b), mode="FAST_COMPILE")
    ours = aesara.function([a, b], build(a, b), mode=aejax.linker.mode)
    with pytest.raises(Exception) as expected:
        reference(*args)
    with pytest.raises(type(expected.value)) as got:
        ours(*args)
    assert isinstance(got.value, LoweringError)
    assert "do not fit" in str(got.value)


@pytest.mark.parametrize(
    "specified, expected",
    [((3,), r"\(3,\)"), (("n",), r"\(n,\)")],
    ids=["constant", "traced"],
)
def test_specify_shape_mismatch_is_an_invalid_value_naming_the_variable_and_shapes(specified, expected):
    x, n = at.dvector("x"), at.lscalar("n")
    shape = tuple(n if dim == "n" else dim for dim in specified)
    y = at.specify_shape(x, shape) * 2
    reference, ours = compile_both([x, n], y, on_unused_input="ignore")
    with pytest.raises(AssertionError):
        reference(np.ones(2), 3)
    message = rf"'x' has shape \(2,\), .*specifies shape {expected}"
    with pytest.raises(aejax.linker.InvalidValueError, match=message) as info:
        ours(np.ones(2), 3)
    assert not isinstance(info.value, LoweringError)
    assert "static" not in str(info.value)
    np.testing.assert_array_equal(ours(np.ones(3), 3), [2.0, 2.0, 2.0])
