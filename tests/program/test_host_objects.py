"""Python objects (`Generic` values) stay on the host: the nodes that take or make them run there, between programs."""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.compile.builders import OpFromGraph
from aesara.graph.basic import Apply
from aesara.graph.op import Op, _NoPythonOp
from aesara.ifelse import ifelse
from aesara.link.c.type import generic
from aesara.tensor.random.type import RandomGeneratorType

import aejax.linker
from aejax.linker import HostNodeWarning, LoweringError
from aejax.linker.program.host_node import HostNode
from aejax.linker.program.static_inputs import StaticInputProgram
from tests.reference import REFERENCE, compile_both
from tests.reliability.shared_state import assert_unchanged, shared_of, snapshot

X, C, N = at.dvector("x"), at.dscalar("c"), at.iscalar("n")


class ToList(Op):
    """A vector as a Python list of floats; raises `ValueError` for a negative element."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [at.as_tensor_variable(x)], [generic()])

    def perform(self, node, inputs, outputs):
        if (inputs[0] < 0).any():
            raise ValueError("ToList takes no negative values")
        outputs[0][0] = [float(v) for v in inputs[0]]


class Length(Op):
    """The length of a Python object, as an int64 scalar."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [at.lscalar()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = np.int64(len(inputs[0]))


class Appended(Op):
    """A new list: the old one with a float appended."""

    __props__ = ()

    def make_node(self, items, value):
        return Apply(self, [items, at.as_tensor_variable(value)], [generic()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = [*inputs[0], float(inputs[1])]


BOXES = {}


class Boxed(Op):
    """The object registered under an integer: the output is that very object."""

    __props__ = ()

    def make_node(self, key):
        return Apply(self, [at.as_tensor_variable(key)], [generic()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = BOXES.setdefault(int(inputs[0]), [int(inputs[0])])


class NoImplementation(_NoPythonOp):
    """A node of Python objects with neither a perform nor a thunk of its own."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [generic()])


class Draw(Op):
    """A Python object and a random generator in: the generator cannot reach the host between programs."""

    __props__ = ()

    def make_node(self, items, rng):
        return Apply(self, [items, rng], [at.dscalar()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = np.float64(inputs[1].choice(inputs[0]))


def _kinds(f):
    return [type(segment.program) for segment in f.vm.jit_fn.segments]


def test_an_ifelse_of_python_objects_matches_the_reference_without_any_jit_program():
    x, y, c = generic(), generic(), at.iscalar("c")
    reference, ours = compile_both([c, x, y], ifelse(c, x, y))
    vx, vy = ["testX"], ["testY"]
    for condition in (1, 0, 1):
        assert ours(condition, vx, vy) == reference(condition, vx, vy)
    assert set(_kinds(ours)) == {HostNode}


def test_a_condition_computed_in_a_program_picks_between_python_objects():
    x, y = generic(), generic()
    reference, ours = compile_both([N, x, y], ifelse(at.gt(N * 2, 3), x, y))
    for n in (1, 2, 5, -4):
        assert ours(n, "left", "right") == reference(n, "left", "right")
    assert _kinds(ours) == [StaticInputProgram, HostNode]


def test_the_numeric_parts_before_and_after_python_objects_stay_in_jit_programs():
    outputs = Length()(ToList()(at.exp(X))) * 3 + X.sum()
    reference, ours = compile_both([X], outputs)
    for value in (np.arange(3.0), np.ones(5), np.array([0.5])):
        np.testing.assert_array_equal(ours(value), reference(value))
    assert _kinds(ours) == [StaticInputProgram, HostNode, HostNode, StaticInputProgram]


def test_python_object_and_array_outputs_match_the_reference():
    fallback = generic()
    items = ifelse(C > 0, ToList()(X), fallback)
    reference, ours = compile_both([X, C, fallback], [items, Length()(items) * C])
    for c in (1.5, -1.0):
        got, expected = ours(np.arange(3.0), c, ["a"]), reference(np.arange(3.0), c, ["a"])
        assert got[0] == expected[0]
        np.testing.assert_array_equal(got[1], expected[1])


def test_an_output_is_the_object_the_graph_computed():
    key = at.lscalar("key")
    reference, ours = compile_both([key], Boxed()(key))
    assert ours(7) is BOXES[7]
    assert reference(7) is BOXES[7]


def test_nodes_of_python_objects_do_not_warn():
    f = aesara.function([X], Length()(ToList()(X)) + 1, mode=aejax.linker.mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HostNodeWarning)
        assert f(np.arange(4.0)) == 5


def test_a_shared_python_object_is_updated_as_under_the_reference():
    values = {}
    for mode in (REFERENCE, aejax.linker.mode):
        items = aesara.shared(["start"], name="items")
        f = aesara.function([C], Length()(items), updates={items: Appended()(items, C * 2)}, mode=mode)
        values[mode] = [int(f(c)) for c in (1.0, 2.0, 3.0)], items.get_value()
    assert values[aejax.linker.mode] == values[REFERENCE]
    assert values[REFERENCE][1] == ["start", 2.0, 4.0, 6.0]


def test_a_failing_node_of_python_objects_raises_as_the_reference_and_updates_nothing():
    counter = aesara.shared(np.float64(0.0), name="counter")
    items = aesara.shared(["start"], name="items")
    outputs = Length()(ToList()(X)) + counter
    updates = {counter: counter + 1, items: Appended()(items, X.sum())}
    reference = aesara.function([X], outputs, mode=REFERENCE)
    ours = aesara.function([X], outputs, updates=updates, mode=aejax.linker.mode)
    assert reference(np.arange(2.0)) == ours(np.arange(2.0))
    before = snapshot(shared_of(ours))
    with pytest.raises(ValueError, match="no negative"):
        reference(np.array([1.0, -1.0]))
    for _ in range(2):
        with pytest.raises(ValueError, match="no negative"):
            ours(np.array([1.0, -1.0]))
    assert_unchanged(shared_of(ours), before)
    assert items.get_value() == ["start", 1.0]


def test_a_node_of_python_objects_without_a_python_implementation_names_the_node_and_variable():
    x = generic("items")
    with pytest.raises(LoweringError, match=r"NoImplementation.*'items'.*Python object"):
        aesara.function([x], NoImplementation()(x), mode=aejax.linker.mode)


def test_a_node_of_python_objects_whose_other_values_cannot_reach_the_host_names_them():
    x, rng = generic("items"), RandomGeneratorType()("rng")
    with pytest.raises(LoweringError, match=r"input 'items' of node Draw.*rng of type RandomGeneratorType"):
        aesara.function([x, rng], Draw()(x, rng), mode=aejax.linker.mode)


def test_a_node_whose_inner_graph_holds_python_objects_runs_on_the_host():
    inner = at.dvector("inner")
    counted = OpFromGraph([inner], [Length()(ToList()(inner * 2))])
    reference, ours = compile_both([X], counted(X) + X.sum())
    with pytest.warns(HostNodeWarning, match="inner graph"):
        np.testing.assert_array_equal(ours(np.arange(3.0)), reference(np.arange(3.0)))
    np.testing.assert_array_equal(ours(np.ones(6)), reference(np.ones(6)))


@pytest.mark.parametrize("index", [slice(1, 3), slice(None, None, -1), slice(0, 0), slice(-2, None, 2)], ids=repr)
def test_a_slice_input_indexes_as_the_reference(index):
    """A ``slicetype()`` input (Aesara's ``test_adv_sub_slice``): the slice stays on the host, the result is the same."""
    from aesara.tensor.type_other import slicetype

    matrix = aesara.shared(np.arange(12.0).reshape(4, 3), name="matrix")
    slc = slicetype("slc")
    reference, f = compile_both([slc], matrix[slc] * 2)
    np.testing.assert_array_equal(f(index), reference(index))


def test_a_value_that_is_not_a_slice_is_refused_as_the_reference_refuses_it():
    from aesara.tensor.type_other import slicetype

    slc = slicetype("slc")
    reference, f = compile_both([slc], aesara.shared(np.ones(3))[slc])
    with pytest.raises(TypeError):
        reference(3)
    with pytest.raises(TypeError):
        f(3)
