"""`jaxify` cannot export Python objects (`Generic` values): the error names the node and the variable."""

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.compile.builders import OpFromGraph
from aesara.ifelse import ifelse
from aesara.link.c.type import generic

import aejax.linker
from aejax.linker import LoweringError, jaxify
from tests.program.test_host_objects import Appended, Length, ToList

X = at.dvector("x")


def test_a_node_of_python_objects_is_named_with_its_variable():
    with pytest.raises(LoweringError, match=r"output 'ToList.0' of node ToList\(x\).*mode='AEJAX'"):
        jaxify([X], [Length()(ToList()(X)) * 2.0])


def test_a_python_object_input_is_named():
    items = generic("items")
    with pytest.raises(LoweringError, match=r"input 'items' of node .*Python object"):
        jaxify([X, items], [ifelse(X.sum() > 0, items, items)])


def test_a_shared_python_object_is_named_and_the_mode_still_runs_the_graph():
    items = aesara.shared(["start"], name="items")
    updates = {items: Appended()(items, X.sum())}
    with pytest.raises(LoweringError, match=r"'items'.*Python object"):
        jaxify([X], [X * 2.0], updates)
    f = aesara.function([X], X * 2.0, updates=updates, mode=aejax.linker.mode)
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])
    assert items.get_value() == ["start", 2.0]


def test_python_objects_inside_an_inner_graph_are_named_under_jit():
    inner = at.dvector("inner")
    counted = OpFromGraph([inner], [Length()(ToList()(inner))])
    graph = jaxify([X], [counted(X) * 2])
    with pytest.raises(LoweringError, match=r"ToList.*Python object"):
        jax.jit(graph.fn)({}, np.ones(3))
