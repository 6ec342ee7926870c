"""A Scan's random draws taken before the loop, all steps in one vectorized call.

On the CPU a random draw inside ``lax.scan`` costs microseconds per step (the
key is split and hashed step by step). When the randomness of a step's draw
does not depend on the step, `ScanNoise` draws the rows of all ``n`` steps
before the loop, in one call vectorized over the steps' keys, and the loop
reads them as a sequence: step ``t`` uses row ``t``.

Which random variables are hoisted: an inner `RandomVariable` node whose
random state is one of the Scan's shared states (an ``rng`` with an update),
read by that node alone, and whose new state is that state's update and goes
nowhere else (each step the node alone splits the state; `RandomStream` builds
such graphs); and which is either

- drawn by a `Standardized` sampler (normal, cauchy, gumbel, laplace,
  logistic, half-normal, half-cauchy, lognormal, uniform, exponential,
  rayleigh): the standard draws are taken before the loop, and each step
  finishes its row with the step's parameters, whatever they depend on; or
- drawn by one of our `SAMPLERS`, elementwise (scalar support and scalar
  parameters), with parameters computed from the Scan's non-sequences and
  constants alone: the draws themselves are taken before the loop, with the
  parameters computed there.

Such a random variable draws on a counted stream (`counted`), in the loop as
before it: step ``t`` of a loop entered with the key ``k`` samples with
``advanced(k, t)``, which the draw before the loop computes for every step at
once, and the loop leaves ``advanced(k, n)`` after ``n`` steps. So the draws
are the same whether they are taken before the loop or in it, and a loop run
in two calls of 3 steps draws what one call of 6 steps draws.

Why this is exact: each step samples with its own key, so its draw is
independent of the earlier steps, on which its parameters may depend: row
``t`` is a standard draw, finished as the sampler itself finishes it, or a
draw with the parameters of every step, which are the same at every step.

Draws stay in the loop when the number of steps is known only at run time,
when the noise would have more than `MAX_NOISE` elements (the loop itself needs
one step's), and in ``until`` loops, which may stop early and leave the rest
of the rows unused, when it would have more than `MAX_UNTIL_NOISE`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import numpy as np
from aesara.graph.basic import Apply, Constant, Variable, ancestors, graph_inputs
from aesara.graph.fg import FunctionGraph
from aesara.tensor.random.op import RandomVariable
from jax import lax

from aejax.linker.checks import shapes_only
from aejax.linker.dispatch.random import (
    SAMPLERS,
    Standardized,
    advanced,
    batch_shape,
    counted,
    drawn_dtype,
    float_params,
)
from aejax.linker.graph.scan_layout import ScanLayout
from aejax.linker.trace.lowering import LoweredGraph

MAX_NOISE = 2**24
"""Most elements of noise a loop of a fixed number of steps draws before the loop."""

MAX_UNTIL_NOISE = 2**20
"""Most elements of noise an ``until`` loop draws before the loop, for its largest number of steps."""


class PreDrawn(NamedTuple):
    """A hoisted random variable's state input in a step: the state, and the step's row of noise."""

    key: Any
    noise: Any


@dataclass(frozen=True)
class Hoisted:
    """An inner random variable whose draws are taken before the loop."""

    node: Apply
    state: int
    """Which of the Scan's shared states is its random state."""
    standardized: Standardized | None
    """Its sampler, when standard draws are taken; ``None`` when the draws themselves are."""

    @property
    def dtype(self) -> np.dtype:
        """The dtype of its draws in the program being traced (`drawn_dtype`)."""
        return drawn_dtype(self.node)

    @property
    def params(self) -> list[Variable]:
        """The node's distribution parameters (its inputs are the state, size, dtype, then these)."""
        return self.node.inputs[3:]

    def draw(self, key: Any, n_steps: int, shape: tuple[int, ...], params: Sequence[Any]) -> Any:
        """The noise of ``n_steps`` steps of ``shape`` each, row ``t`` drawn with ``advanced(key, t)``.

        ``params`` are the draw's parameters when the draws themselves are taken (else none).
        """
        sampler = SAMPLERS[type(self.node.op)] if self.standardized is None else self.standardized.standard
        floats = float_params(self.dtype, params)
        keys = advanced(key, lax.iota(np.uint32, n_steps))
        return jax.vmap(lambda step_key: sampler(step_key, shape, self.dtype, *floats))(keys)

    def finish(self, noise: Any, params: Sequence[Any]) -> Any:
        """A step's sample from its row of noise and its parameters."""
        if self.standardized is None:
            return noise
        return self.standardized.finish(noise, *float_params(self.dtype, params))

    def lowering(self) -> Callable[..., Any]:
        """The node's lowering in a step, on its counted stream (`counted`).

        Given its row of noise (`PreDrawn`), it finishes that row and leaves
        the key for `ScanNoise.after_loop` to advance; else it draws with the
        key and advances it.
        """
        in_loop = counted(SAMPLERS[type(self.node.op)])

        def random_variable(rng: Any, size: Any, dtype: Any, *params: Any) -> tuple[Any, Any]:
            if isinstance(rng, PreDrawn):
                return rng.key, self.finish(rng.noise, params)
            return in_loop(rng, batch_shape(self.node.op, size, params), self.dtype, *params)

        return random_variable


def hoistable(fgraph: FunctionGraph, layout: ScanLayout) -> list[Hoisted]:
    """The random variables of a Scan's inner graph whose draws can be taken before the loop."""
    *_, states, non_seqs = layout.inner_inputs(fgraph.inputs)
    updates = layout.inner_outputs(range(len(fgraph.outputs)))[3]
    found = []
    for node in fgraph.toposort():
        if not isinstance(node.op, RandomVariable):
            continue
        state = _state_split_alone(fgraph, node, states, updates)
        hoisted = None if state is None else _hoisted(node, state, set(non_seqs))
        if hoisted is not None:
            found.append(hoisted)
    return found


def _state_split_alone(fgraph: FunctionGraph, node: Apply, states: list[Variable], updates: list[int]) -> int | None:
    """The shared state that ``node`` alone reads and updates, if any."""
    rng, new_rng = node.inputs[0], node.outputs[0]
    state = next((i for i, var in enumerate(states) if var is rng), None)
    if state is None:
        return None
    read_alone = {client for client, _ in fgraph.clients[rng]} == {node}
    only_update = set(fgraph.clients[new_rng]) == {("output", updates[state])}
    return state if read_alone and only_update else None


def _hoisted(node: Apply, state: int, non_seqs: set[Variable]) -> Hoisted | None:
    """``node`` as hoisted, if its sampler allows (see the module docstring)."""
    sampler = SAMPLERS.get(type(node.op))
    if isinstance(sampler, Standardized):
        return Hoisted(node, state, sampler)
    op = node.op
    elementwise = op.ndim_supp == 0 and not any(op.ndims_params)
    hoisted = Hoisted(node, state, None)
    return hoisted if sampler is not None and elementwise and _loop_invariant(hoisted.params, non_seqs) else None


def _loop_invariant(variables: Sequence[Variable], non_seqs: set[Variable]) -> bool:
    """Whether ``variables`` are computed from non-sequences and constants alone."""
    return all(isinstance(root, Constant) or root in non_seqs for root in graph_inputs(variables))


def _part(graph: LoweredGraph, outputs: Sequence[Variable]) -> LoweredGraph:
    """The part of ``graph`` that computes ``outputs``, from the same inputs."""
    needed = {var.owner for var in ancestors(outputs) if var.owner is not None}
    return LoweredGraph(graph.inputs, outputs, [step for step in graph.steps if step[0] in needed])


class ScanNoise:
    """The random variables of a Scan's step whose draws are taken before the loop.

    ``inner`` is the step's graph in which each hoisted random variable takes
    a `PreDrawn` as its state (a plain state draws in the loop, as before).
    """

    def __init__(self, fgraph: FunctionGraph, layout: ScanLayout, inner: LoweredGraph) -> None:
        self.hoisted = hoistable(fgraph, layout)
        self.n_seqs = layout.n_seqs
        by_node = {h.node: h for h in self.hoisted}
        self.inner = LoweredGraph(
            inner.inputs,
            inner.outputs,
            [(node, by_node[node].lowering() if node in by_node else fn) for node, fn in inner.steps],
        )
        self._samples = _part(inner, [h.node.outputs[1] for h in self.hoisted])
        self._params = _part(inner, [p for h in self.hoisted if h.standardized is None for p in h.params])

    def draw(self, n_steps: int, shared: Sequence[Any], first_step: Sequence[Any], until: bool) -> list[Any]:
        """The noise sequences of the hoisted random variables, drawn from their states in ``shared``.

        ``first_step`` are the inner graph's inputs in the first step (the
        sequences' rows, abstract for the shapes as in the loop, first). With
        none hoisted, or too much noise, ``[]``: the steps draw themselves.
        """
        n = self.n_seqs
        sampled = shapes_only(lambda *rows: self._samples(*rows, *first_step[n:]), *first_step[:n])
        shapes = [s.shape for s in sampled]
        if n_steps * sum(map(np.prod, shapes)) > (MAX_UNTIL_NOISE if until else MAX_NOISE):
            return []
        params = iter(self._params(*first_step))
        noise = []
        for h, shape in zip(self.hoisted, shapes):
            taken = [next(params) for _ in h.params] if h.standardized is None else []
            noise.append(h.draw(shared[h.state], n_steps, shape, taken))
        return noise

    def after_loop(self, shared: Sequence[Any], noise: Sequence[Any], steps: Any) -> list[Any]:
        """The shared states after a loop that ran ``steps`` steps on ``noise``: the hoisted ones `advanced` by that.

        The steps leave a hoisted state as they found it (advancing a key in
        every step of a random walk made it 1.6 times as slow); without noise
        (`draw` gave ``[]``) they advanced it themselves.
        """
        states = list(shared)
        for h in self.hoisted if noise else []:
            states[h.state] = advanced(states[h.state], steps)
        return states

    def step_states(self, shared: Sequence[Any], noise_rows: Sequence[Any]) -> list[Any]:
        """The shared states as a step's inner graph takes them: hoisted ones with their row of noise."""
        states = list(shared)
        for h, row in zip(self.hoisted, noise_rows):
            states[h.state] = PreDrawn(states[h.state], row)
        return states
