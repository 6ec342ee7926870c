"""A value of a step that a nested Scan reads is computed once per step, not again by the nested Scan.

``aesara.scan`` gives a nested Scan only the roots of what its step reads of
the enclosing step, so its inner graph recomputes those values; aejax moves
that work out and merges it with the step's own (`merged_inner_graph`).
"""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
from aesara.graph.basic import Apply
from aesara.graph.op import Op

import aejax.linker
from aejax.linker import CallbackWarning
from tests.reference import REFERENCE
from tests.scan.test_merged_inner_graphs import gaussian_logprob, nuts_chain


class Evaluations(Op):
    """The identity, run on the host, keeping every value it is evaluated on."""

    def __init__(self):
        self.seen = []

    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        self.seen.append(inputs[0].copy())
        outputs[0][0] = inputs[0].copy()

    def infer_shape(self, fgraph, node, shapes):
        return shapes

    def grad(self, inputs, output_grads):
        return output_grads


def run(build, mode, *args, **kwargs):
    """The values of the graph ``build(counter)`` builds, under ``mode``, and the counter's evaluations."""
    counter = Evaluations()
    inputs, outputs, updates = build(counter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CallbackWarning)
        values = aesara.function(inputs, outputs, updates=updates, mode=mode, **kwargs)(*args)
    return values, counter.seen


def two_deep(counter):
    """Five steps; each computes ``y`` once and runs a nested loop of three steps reading it."""
    x0 = at.dvector("x0")

    def step(x):
        y = at.sin(counter(x))
        acc, _ = aesara.scan(lambda i, a: a + y * i, sequences=at.arange(3), outputs_info=at.zeros_like(x))
        return 0.5 * y + 0.1 * acc[-1]

    xs, _ = aesara.scan(step, outputs_info=x0, n_steps=5)
    return [x0], xs, None


def three_deep(counter):
    """`two_deep`'s loop of four steps in a loop over ``cs``, its ``y`` also reading the outer step's ``exp(c)``.

    The middle step's ``exp(c)`` moves out into the outer step, so the
    innermost loop's copy of ``y`` must reach the middle step before it does.
    """
    x0, cs = at.dvector("x0"), at.dvector("cs")

    def outer(c, x):
        def middle(x):
            y = at.sin(counter(x * at.exp(c)))
            acc, _ = aesara.scan(lambda i, a: a + y * i, sequences=at.arange(3), outputs_info=at.zeros_like(x))
            return 0.5 * y + 0.1 * acc[-1]

        xs, _ = aesara.scan(middle, outputs_info=x, n_steps=4)
        return xs[-1]

    xs, _ = aesara.scan(outer, sequences=cs, outputs_info=x0)
    return [x0, cs], xs, None


X0 = np.array([0.3, -1.2])
CS = np.array([0.1, -0.2, 0.3])


def test_a_value_a_nested_scan_reads_is_computed_once_per_step():
    expected, _ = run(two_deep, REFERENCE, X0)
    got, seen = run(two_deep, aejax.linker.mode, X0)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert len(seen) == 5


def test_a_value_read_three_loops_deep_is_computed_once_per_step():
    """Moving work out of the outer loop's step first left the innermost loop's copy of ``y`` unmerged: 24."""
    expected, _ = run(three_deep, REFERENCE, X0, CS)
    got, seen = run(three_deep, aejax.linker.mode, X0, CS)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert len(seen) == 3 * 4


def counted_nuts_chain(counter, transitions=5):
    """aehmc NUTS transitions of a 2-D Gaussian, the potential's position passing through ``counter``."""
    q0, positions, updates = nuts_chain(transitions, lambda q: gaussian_logprob(counter(q)))
    return [q0], positions, updates


def test_nuts_evaluates_the_potential_once_per_leapfrog_step():
    """aehmc's U-turn check, a loop in the integration step, evaluated each step's potential again."""
    _, seen = run(counted_nuts_chain, aejax.linker.mode, np.zeros(2))
    assert len(seen) > 5
    assert len({position.tobytes() for position in seen}) == len(seen)
