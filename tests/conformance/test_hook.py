"""The conformance hook on tiny in-repo graphs: it compiles on AEJAX and reports wrong values."""

from __future__ import annotations

from collections.abc import Iterator

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.graph.basic import ancestors
from aesara.scan.op import Scan
from aesara.tensor.sort import topk

import aejax.linker
from conformance import hook
from tests.python_ops import PythonDouble as Doubled


@pytest.fixture
def redirect(request: pytest.FixtureRequest) -> Iterator[hook.Record]:
    """The hook installed (comparing unless the test is marked ``no_compare``) with a fresh record."""
    hook.install(compare=request.node.get_closest_marker("no_compare") is None)
    try:
        yield hook.begin_record()
    finally:
        hook.uninstall()


def _wrongly_lowered():
    """A fresh subclass of `Doubled` whose JAX lowering triples: a wrong value for the comparison to find."""

    class WronglyLowered(Doubled):
        pass

    aejax.linker.jax_funcify.register(WronglyLowered, lambda op, **kwargs: lambda x: x * 3)
    return WronglyLowered


def test_every_function_compiles_on_aejax_whatever_mode_was_asked(redirect):
    x = at.dvector("x")
    for mode in (None, "FAST_RUN", "FAST_COMPILE", aesara.compile.mode.Mode(linker="py")):
        f = aesara.function([x], x * 2, mode=mode)
        assert isinstance(f.maker.linker, aejax.linker.JAXCodecLinker)
        assert isinstance(f, aejax.linker.AejaxFunction)
        np.testing.assert_array_equal(f([1.0, 2.0]), [2.0, 4.0])
    assert (redirect.compiled, redirect.compared_calls, redirect.incidents) == (4, 4, [])


def test_eval_compiles_on_aejax_too(redirect):
    x = at.dvector("x")
    assert (x * 3).eval({x: np.ones(2)}).tolist() == [3.0, 3.0]
    assert redirect.compiled == 1


def test_nothing_is_redirected_once_uninstalled():
    hook.install()
    hook.uninstall()
    x = at.dscalar("x")
    f = aesara.function([x], x + 1)
    assert not isinstance(f.maker.linker, aejax.linker.JAXCodecLinker)
    assert aesara.compile.function.types.orig_function is hook._ORIGINAL


def test_a_wrong_lowering_is_a_wrong_value_naming_the_output(redirect):
    WronglyLowered = _wrongly_lowered()
    x = at.dvector("x")
    doubled = WronglyLowered()(x)
    doubled.name = "doubled"
    f = aesara.function([x], [x + 1, doubled])
    with pytest.raises(hook.WrongValue, match=r"output 1 `doubled`: values differ .* AEJAX 3\.0, reference 2\.0"):
        f([1.0, 5.0])
    assert [i.kind for i in redirect.failing()] == ["wrong value"]


@pytest.mark.no_compare
def test_without_compare_a_wrong_lowering_goes_unseen(redirect):
    WronglyLowered = _wrongly_lowered()
    x = at.dvector("x")
    f = aesara.function([x], WronglyLowered()(x))
    assert f([1.0]).tolist() == [3.0]
    assert redirect.incidents == [] and redirect.compared_calls == 0


def test_a_dtype_or_shape_difference_is_a_wrong_value(redirect):
    class Narrowed(Doubled):
        pass

    @aejax.linker.jax_funcify.register(Narrowed)
    def _narrow(op, **kwargs):
        return lambda x: (x * 2)[:1]

    x = at.dvector("x")
    f = aesara.function([x], Narrowed()(x))
    with pytest.raises(hook.WrongValue, match=r"shape \(1,\) where the reference has \(2,\)"):
        f([1.0, 2.0])


def test_shared_updates_are_applied_once_and_compared(redirect):
    WronglyLowered = _wrongly_lowered()
    total = aesara.shared(np.ones(2), name="total")
    step = aesara.function([], [], updates={total: total * 2})
    step()
    step()
    np.testing.assert_array_equal(total.get_value(), [4.0, 4.0])
    wrong = aesara.function([], [], updates={total: WronglyLowered()(total)})
    with pytest.raises(hook.WrongValue, match="update of shared variable `total`"):
        wrong()


def test_random_draws_are_compared_in_dtype_and_dimensions_only(redirect):
    srng = at.random.RandomStream(3)
    draws = srng.normal(size=(3,))
    f = aesara.function([], [draws, draws * 0 + 1])
    values = f()
    assert values[0].shape == (3,) and values[1].tolist() == [1.0, 1.0, 1.0]
    assert redirect.incidents == []


def test_a_graph_aejax_cannot_lower_is_a_lowering_error_even_if_caught(redirect):
    class Unlowerable(Doubled):
        pass

    @aejax.linker.jax_funcify.register(Unlowerable)
    def _broken(op, **kwargs):
        raise AttributeError("no such JAX function")

    x = at.dvector("x")
    with pytest.raises(NotImplementedError):
        aesara.function([x], Unlowerable()(x))
    assert [i.kind for i in redirect.failing()] == ["lowering error"]


def test_an_error_of_aejax_alone_is_recorded(redirect):
    class Raising(Doubled):
        pass

    @aejax.linker.jax_funcify.register(Raising)
    def _raise(op, **kwargs):
        def raising(x):
            raise aejax.linker.InvalidValueError("AEJAX only")  # passes through the lowering as it is

        return raising

    x = at.dvector("x")
    f = aesara.function([x], Raising()(x))
    with pytest.raises(ValueError):
        f([1.0])
    assert [i.kind for i in redirect.failing()] == ["AEJAX raised"]
    assert "InvalidValueError: AEJAX only" in redirect.failing()[0].message


def test_nested_compilations_keep_their_mode(redirect):
    x = at.dvector("x")
    ys, _ = aesara.scan(lambda v: v * 2, sequences=[x])
    f = aesara.function([x], ys.sum(), mode="FAST_COMPILE")
    assert f([1.0, 2.0]) == 6.0
    assert redirect.compiled == 1 and redirect.incidents == []


def test_the_reference_rewrites_its_own_copy_of_the_graph(redirect):
    """orig_function rewrites graphs of atomic inputs in place: FAST_RUN's in-place rewrites must not reach AEJAX's."""
    x = at.dvector("x")
    cost = (at.exp(x) * x).sum()
    f = aesara.function([x], [cost, aesara.grad(cost, x)], mode="FAST_RUN")
    value, gradient = f(np.array([0.0, 1.0]))
    np.testing.assert_allclose(gradient, [1.0, 2 * np.e])
    assert redirect.incidents == [] and redirect.compared_calls == 1


def test_uninitialized_memory_is_not_compared(redirect):
    f = aesara.function([], at.empty((2, 3)))
    assert f().shape == (2, 3)
    assert redirect.incidents == []


def test_inputs_with_a_default_and_an_update_start_each_call_alike(redirect):
    x, y = at.dscalars("x", "y")
    new_x = y + at.basic.default(x, at.as_tensor_variable(np.float64(3.0)))
    f = aesara.function([y, aesara.In(x, update=new_x, value=10.0)], new_x)
    assert f(1.0) == 11.0
    f["x"] = 2.0
    assert f(1.0) == 3.0
    assert redirect.incidents == [] and redirect.compared_calls == 2


def test_a_default_shared_with_another_function_is_compared_from_its_current_value(redirect):
    """``In(s, value=f.container[s])``: ``g`` updates ``f``'s container; each reference starts from its value."""
    x, s = at.dscalars("x", "s")
    f = aesara.function([x, aesara.In(s, value=0.0, update=s + x)], s + x)
    g = aesara.function([x, aesara.In(s, value=f.container[s], update=s - 2 * x)], s * 10)
    assert [float(f(1.0)), float(g(1.0)), float(f(1.0)), float(g(3.0))] == [1.0, 10.0, 0.0, 0.0]
    assert float(f[s]) == -6.0
    assert redirect.incidents == [] and redirect.compared_calls == 4


def test_the_reference_has_its_own_scan_op():
    """Compiling a Scan's inner function rewrites the Op's inner graph in place: AEJAX's Op must not be the one."""
    x = at.dvector("x")
    ys, _ = aesara.scan(lambda v, acc: acc + v, sequences=[x], outputs_info=[at.as_tensor_variable(np.float64(0.0))])
    _, (twin,) = hook.clone_specs([aesara.In(x)], [ys])

    def scan_op(variable):
        return next(v.owner.op for v in ancestors([variable]) if v.owner is not None and isinstance(v.owner.op, Scan))

    assert scan_op(twin) is not scan_op(ys)
    assert scan_op(twin).fgraph is not scan_op(ys).fgraph


def test_an_unsorted_topk_is_compared_in_any_order(redirect):
    x = at.dvector("x")
    f = aesara.function([x], topk(x, 2, sorted=False))
    assert sorted(f(np.array([3.0, 1.0, 4.0, 1.5]))) == [3.0, 4.0]
    assert redirect.incidents == []


def test_the_reference_gets_arguments_as_aligned_and_writeable_as_the_test_passed_them(redirect):
    x = at.dvector("x")
    f = aesara.function([x], x * 2, mode="FAST_COMPILE")
    unaligned = np.zeros(4, dtype="b1,f8")["f1"]
    assert not unaligned.flags.aligned
    with pytest.raises(TypeError):
        f(unaligned)
    assert redirect.incidents == []
    read_only = np.ones(3)
    read_only.flags.writeable = False
    nested = hook.faithful_copy(({"a": [read_only, unaligned]},))[0]["a"]
    assert not nested[0].flags.writeable and not nested[1].flags.aligned
    np.testing.assert_array_equal(nested[0], read_only)
    assert nested[0] is not read_only
