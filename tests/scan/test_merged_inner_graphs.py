"""A Scan nested in another is lowered once, not once per copy Aesara's Scan made of it (`merged_inner_graph`)."""

import weakref

import aesara
import aesara.tensor as at
import numpy as np
from aehmc import hmc, nuts
from aesara.graph.basic import equal_computations
from aesara.scan.op import Scan
from aesara.tensor.random.utils import RandomStream

from aejax.linker.scan import lower
from aejax.linker.scan.lower import merged_inner_graph


def gaussian_logprob(q):
    return -0.5 * ((q - np.array([1.0, -2.0])) ** 2).sum()


def nuts_chain(transitions, logprob=gaussian_logprob):
    """aehmc NUTS transitions (of a 2-D Gaussian unless told otherwise) as one Scan: loops four deep."""
    q0 = at.dvector("q0")
    kernel = nuts.new_kernel(RandomStream(7), logprob)

    def transition(q, energy, grad):
        (q, energy, grad, *_), updates = kernel(q, energy, grad, np.float64(0.25), at.as_tensor(np.ones(2)))
        return (q, energy, grad), updates

    _, energy, grad = hmc.new_state(q0, logprob)
    (positions, _, _), updates = aesara.scan(transition, outputs_info=[q0, energy, grad], n_steps=transitions)
    return q0, positions, updates


def copies(fgraph):
    """Pairs of Scan nodes of ``fgraph`` that compute the same thing (equal Ops, equal input graphs)."""
    scans = [node for node in fgraph.toposort() if isinstance(node.op, Scan)]
    return [
        (a, b)
        for i, a in enumerate(scans)
        for b in scans[i + 1 :]
        if a.op == b.op and equal_computations(a.inputs, b.inputs)
    ]


def nested_graphs(fgraph):
    """The merged inner graph of every Scan in ``fgraph``, and of the Scans in those, depth first."""
    for node in fgraph.toposort():
        if isinstance(node.op, Scan):
            inner = merged_inner_graph(node.op.fgraph)
            yield inner
            yield from nested_graphs(inner)


def test_no_inner_graph_of_a_nuts_chain_computes_a_loop_twice():
    q0, positions, updates = nuts_chain(3)
    fn = aesara.function([q0], positions, updates=updates, mode="AEJAX")
    graphs = list(nested_graphs(fn.maker.fgraph))
    assert len(graphs) >= 4
    for inner in graphs:
        assert copies(inner) == []


def test_a_nested_step_merged_once_is_cloned_not_merged_again(monkeypatch):
    q0, positions, updates = nuts_chain(3)
    fn = aesara.function([q0], positions, updates=updates, mode="AEJAX")
    graphs = nested_graphs(fn.maker.fgraph)
    steps = [node.op.fgraph for inner in graphs for node in inner.apply_nodes if isinstance(node.op, Scan)]
    memoized = [fgraph for fgraph in steps if fgraph in lower._merged_steps]
    assert memoized
    for fgraph in memoized:
        with monkeypatch.context() as patch:
            patch.setattr(lower, "_merged_steps", weakref.WeakSet())
            again = merged_inner_graph(fgraph)  # what the memo spares: merging it anew
        kept = merged_inner_graph(fgraph)
        assert kept is not fgraph
        assert equal_computations(kept.outputs, again.outputs, kept.inputs, again.inputs)
