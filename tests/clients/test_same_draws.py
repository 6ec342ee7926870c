"""`same_draws` replaces every draw of a graph, in nested `Scan`\\ s too, and both backends then agree."""

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.graph.basic import graph_inputs, io_toposort
from aesara.scan.op import Scan
from aesara.tensor.random.type import RandomType
from aesara.tensor.random.utils import RandomStream

from tests.clients.helpers import CANDIDATE, REFERENCE, assert_same_outputs
from tests.clients.same_draws import random_nodes, same_draws


def random_graph(seed: int = 3) -> tuple[list, list, dict]:
    """Draws outside any loop, in a Scan's step and in a Scan nested in it: ``(inputs, outputs, updates)``.

    The outer draw uses the generator's ``default_update``; the loops' generators
    are updated by the Scans' own updates.
    """
    srng = RandomStream(seed)
    x = at.dvector("x")
    shift = srng.normal(1.0, 2.0, size=(3,))

    def inner_step(acc, scale):
        return acc + scale * srng.uniform(-1.0, 1.0, size=acc.shape)

    def outer_step(acc):
        flip = srng.bernoulli(0.3, size=acc.shape)
        walked, updates = aesara.scan(inner_step, outputs_info=[acc], non_sequences=[at.constant(0.5)], n_steps=2)
        return acc + flip + walked[-1], updates

    walk, updates = aesara.scan(outer_step, outputs_info=[x + shift], n_steps=4)
    return [x], [shift, walk], updates


def generators(outputs: list, updates: dict) -> list:
    """The random generators a graph and its updates still read."""
    return [v for v in graph_inputs(list(outputs) + list(updates.values())) if isinstance(v.type, RandomType)]


def test_every_draw_is_replaced_inside_nested_scans_too():
    _, outputs, updates = random_graph()
    found = {node.op.name for node in random_nodes(list(outputs) + list(updates.values()))}
    assert found == {"normal", "bernoulli", "uniform"}  # one per level: outside, step, nested step
    new_outputs, new_updates = same_draws(outputs, updates)
    everything = list(new_outputs) + list(new_updates.values())
    assert random_nodes(everything) == []
    assert generators(new_outputs, new_updates) == []
    # One position per generator, the loops' two and the outer draw's default update.
    assert len(new_updates) == 3
    assert random_nodes(list(outputs) + list(updates.values())), "the input graph is left as it was"


def scan_ops(outputs: list) -> set:
    """The identities of the `Scan` ops of a graph, those nested in other Scans included (equal Scans differ)."""
    found = set()
    for node in io_toposort(list(graph_inputs(outputs)), list(outputs)):
        if isinstance(node.op, Scan):
            found |= {id(node.op)} | scan_ops(node.op.inner_outputs)
    return found


def test_copies_share_no_scan_with_the_input_or_each_other():
    """Compiling one copy rewrites its Scans' inner graphs in place; that cannot reach another copy."""
    _, outputs, updates = random_graph()
    first, second = (same_draws(outputs, updates) for _ in range(2))
    graphs = [list(outputs) + list(updates.values())] + [list(o) + list(u.values()) for o, u in (first, second)]
    ops = [scan_ops(graph) for graph in graphs]
    assert all(len(found) >= 2 for found in ops)  # the outer Scan and (copies of) the nested one
    assert not (ops[0] & ops[1]) and not (ops[0] & ops[2]) and not (ops[1] & ops[2])


def test_both_backends_read_the_same_numbers_and_each_call_advances():
    results = {}
    for mode in (REFERENCE, CANDIDATE):
        inputs, outputs, updates = random_graph()
        new_outputs, new_updates = same_draws(outputs, updates)
        f = aesara.function(inputs, new_outputs, updates=new_updates, mode=mode)
        results[mode] = [f(np.zeros(3)) for _ in range(2)]
    for expected, got in zip(results[REFERENCE], results[CANDIDATE]):
        assert_same_outputs(expected, got)
    first, second = results[CANDIDATE]
    assert not np.allclose(first[0], second[0]) and not np.allclose(first[1], second[1])


def test_a_graph_built_twice_alike_gets_the_same_numbers():
    draws = []
    for _ in range(2):
        inputs, outputs, updates = random_graph(seed=11)
        new_outputs, new_updates = same_draws(outputs, updates)
        draws.append(aesara.function(inputs, new_outputs, updates=new_updates, mode=REFERENCE)(np.zeros(3)))
    assert_same_outputs(draws[0], draws[1], rtol=0, atol=0)


def test_a_distribution_without_a_table_draw_is_refused():
    x = RandomStream(0).gamma(2.0, 1.0)
    with pytest.raises(NotImplementedError, match="gamma"):
        same_draws([x])
