"""Errors that name the Op, node and variable at fault."""

import warnings
from types import SimpleNamespace

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest

import aejax.linker
from aejax.adapters.numpy2 import NUMPY2
from aejax.linker import LoweringError, jaxify
from tests.python_ops import PythonDouble as DoubleOp
from tests.reference import assert_raises_like_reference, compile_both


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
    np.testing.assert_array_equal(f(2), [0, 1])
    with pytest.warns(aejax.linker.ShapeInputWarning):  # aejax's: static input, a second value
        np.testing.assert_array_equal(f(1), [0])


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
def test_specify_shape_mismatch_is_an_assertion_error_naming_the_variable_and_shapes(specified, expected):
    """Aesara's ``SpecifyShape`` raises `AssertionError`, so aejax raises one (not a `ValueError`)."""
    x, n = at.dvector("x"), at.lscalar("n")
    shape = tuple(n if dim == "n" else dim for dim in specified)
    y = at.specify_shape(x, shape) * 2
    reference, ours = compile_both([x, n], y, on_unused_input="ignore")
    with pytest.raises(AssertionError):
        reference(np.ones(2), 3)
    message = rf"^SpecifyShape: 'x' has shape \(2,\), .*specifies shape {expected}"
    with pytest.raises(AssertionError, match=message) as info:
        ours(np.ones(2), 3)
    assert not isinstance(info.value, (LoweringError, ValueError))
    assert "static" not in str(info.value)
    np.testing.assert_array_equal(ours(np.ones(3), 3), [2.0, 2.0, 2.0])


@pytest.mark.parametrize("op", [at.set_subtensor, at.inc_subtensor])
@pytest.mark.parametrize("base", [lambda a: a[:], lambda a: a[0]], ids=["rows", "row"])
def test_an_increment_of_the_wrong_length_is_an_assertion_error(op, base):
    """Aesara checks the increment's broadcast with ``SpecifyShape``, which raises `AssertionError`."""
    a, increment = at.dcol("a"), at.dvector("increment")
    out = op(base(a), increment)
    assert_raises_like_reference([a, increment], out, (np.ones((3, 1)), np.ones(2)), AssertionError, "specifies shape")
    with pytest.raises(AssertionError) as info:
        aesara.function([a, increment], out, mode=aejax.linker.mode)(np.ones((3, 1)), np.ones(2))
    assert not isinstance(info.value, ValueError)


def test_an_output_of_more_dimensions_than_numpy_has_is_a_value_error_as_numpys():
    x = at.dscalar("x")
    ndim = 65 if NUMPY2 else 33  # numpy 2 raised its most dimensions from 32 to 64
    y = x.dimshuffle(("x",) * ndim)
    assert_raises_like_reference([x], y, (0.0,), ValueError, f"has {ndim} dimensions")
    with pytest.raises(ValueError) as info:
        aesara.function([x], y, mode=aejax.linker.mode)(0.0)
    assert not isinstance(info.value, TypeError)


class NamedThingError(RuntimeError):
    """An error made from an object, not a message, as JAX's ``TracerArrayConversionError`` is."""

    def __init__(self, thing):
        super().__init__(f"{thing.name} went wrong")


class RaisingOp(DoubleOp):
    """An Op whose lowering raises its declared ``exc_type``, which passes through the lowering."""

    exc_type = NamedThingError


def test_an_error_made_from_an_object_keeps_its_type_and_message():
    """Aesara re-creates a failed call's error from its message; aejax's keeps its type and message."""

    @aejax.linker.jax_funcify.register(RaisingOp)
    def _raising(op, **kwargs):
        def raising(x):
            raise NamedThingError(SimpleNamespace(name="the thing"))

        return raising

    x = at.dvector("x")
    f = aesara.function([x], RaisingOp()(x), mode=aejax.linker.mode)
    with pytest.raises(NamedThingError, match="the thing went wrong"):
        f(np.ones(2))


class TupleOp(DoubleOp):
    """An Op of one output whose lowering returns a tuple of one traced array."""


def test_a_lowering_returning_a_tuple_for_one_output_is_a_lowering_error_naming_the_node():
    @aejax.linker.jax_funcify.register(TupleOp)
    def _tuple(op, **kwargs):
        def tuple_(x):
            return (x * 2,)

        return tuple_

    x = aesara.shared(np.arange(3.0), name="x")
    f = aesara.function([], TupleOp()(x), mode=aejax.linker.mode)
    with pytest.raises(LoweringError, match="TupleOp.*TracerArrayConversionError"):
        f()


@pytest.mark.parametrize(
    "select", [lambda x, m: x[m], lambda x, m: at.inc_subtensor(x[m, ...], 1.0)], ids=["subtensor", "inc_subtensor"]
)
def test_a_boolean_mask_of_the_wrong_length_is_an_index_error_as_the_references(select):
    """Aesara's ``test_boolean``: where Aesara raises `IndexError`, the node's failure is one too."""
    x = at.dmatrix("x")
    mask = at.constant(np.array([True, False, True]))
    assert_raises_like_reference([x], select(x, mask), (np.ones((2, 4)),), IndexError, "boolean index did not match")
