"""A Scan's random stream continues across calls: a run in chunks draws what one run draws.

Users run long chains in chunks, so a Scan of 3 steps called twice must draw
what one call of 6 steps draws, whether its draws are taken before the loop
(`aejax.linker.scan.noise`) or in it. Aesara's reference backend behaves so
(checked here on the same graphs); aejax is checked against itself, since the
two backends draw different numbers.
"""

from __future__ import annotations

from typing import Any

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.scan.utils import until
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.linker.scan import noise
from tests.reference import REFERENCE

pytestmark = pytest.mark.kind("random")

CTORS = {"RandomState": np.random.RandomState, "Generator": np.random.default_rng}
DRAWS = {
    "normal": lambda srng: srng.normal(0.0, 1.0, size=(2,)),
    "uniform": lambda srng: srng.uniform(-1.0, 1.0, size=(2,)),
    "integers": lambda srng: srng.integers(0, 1000, size=(2,)),
}
RANDOM_STATE_DRAWS = {**DRAWS, "integers": lambda srng: srng.randint(0, 1000, size=(2,))}
"""`RandomState` draws integers with ``randint`` (Aesara's ``integers`` takes a `Generator` only)."""
MODES = {"aejax": aejax.linker.mode, "reference": REFERENCE}


def chunked(ctor: str, draw: str, loop: str, steps: int | None, mode: str) -> Any:
    """``f(x0, [n]) -> (path, draws)``: a sit-sot walk of ``steps`` steps (an input ``n`` when ``None``).

    With ``loop="until"`` it stops when the walk passes 1e300, which it never
    does: an ``until`` loop that runs all its steps.
    """
    srng = RandomStream(seed=2024, rng_ctor=CTORS[ctor])
    x0, n = at.dvector("x0"), at.iscalar("n")

    def step(x: Any) -> Any:
        noise = (RANDOM_STATE_DRAWS if ctor == "RandomState" else DRAWS)[draw](srng)
        new = x + noise
        return ([new, noise], until(at.all(new > 1e300))) if loop == "until" else [new, noise]

    (path, draws), updates = aesara.scan(step, outputs_info=[x0, None], n_steps=n if steps is None else steps)
    inputs = [x0, n] if steps is None else [x0]
    return aesara.function(inputs, [path, draws], updates=updates, mode=MODES[mode])


def run(f: Any, x0: np.ndarray, steps: int, steps_are_input: bool) -> tuple[np.ndarray, np.ndarray]:
    path, draws = f(x0, steps) if steps_are_input else f(x0)
    return np.asarray(path), np.asarray(draws)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("steps_are_input", [False, True], ids=["constant_steps", "steps_input"])
@pytest.mark.parametrize("loop", ["sit_sot", "until"])
@pytest.mark.parametrize("draw", DRAWS)
@pytest.mark.parametrize("ctor", CTORS)
def test_two_calls_of_3_steps_draw_one_call_of_6(ctor, draw, loop, steps_are_input, mode):
    def build(steps: int) -> Any:
        return chunked(ctor, draw, loop, None if steps_are_input else steps, mode)

    x0 = np.zeros(2)
    f3, f6 = build(3), build(6)
    first_path, first_draws = run(f3, x0, 3, steps_are_input)
    second_path, second_draws = run(f3, first_path[-1], 3, steps_are_input)
    path, draws = run(f6, x0, 6, steps_are_input)
    np.testing.assert_array_equal(np.concatenate([first_draws, second_draws]), draws)
    np.testing.assert_array_equal(np.concatenate([first_path, second_path]), path)
    assert len(np.unique(draws)) > 6


@pytest.mark.parametrize("loop", ["sit_sot", "until"])
@pytest.mark.parametrize("draw", DRAWS)
def test_draws_in_the_loop_are_those_taken_before_it(monkeypatch, draw, loop):
    before = run(chunked("Generator", draw, loop, 5, "aejax"), np.zeros(2), 5, False)
    monkeypatch.setattr(noise, "MAX_UNTIL_NOISE" if loop == "until" else "MAX_NOISE", 0)
    inside = run(chunked("Generator", draw, loop, 5, "aejax"), np.zeros(2), 5, False)
    np.testing.assert_allclose(inside[1], before[1], rtol=1e-15, atol=0)


def test_a_chunked_walk_has_the_moments_of_one():
    srng = RandomStream(seed=31)
    x0 = at.dvector("x0")
    walk, updates = aesara.scan(lambda x: x + srng.normal(0.0, 1.0, size=x.shape), outputs_info=x0, n_steps=10)
    f = aesara.function([x0], walk, updates=updates, mode=aejax.linker.mode)
    chunks = [f(np.zeros(20_000))]
    for _ in range(3):
        chunks.append(f(chunks[-1][-1]))
    paths = np.concatenate(chunks)
    steps = np.diff(np.concatenate([np.zeros((1, 20_000)), paths]), axis=0)
    assert abs(steps.mean()) < 0.005 and abs(steps.var() - 1.0) < 0.01
    assert abs(np.corrcoef(steps[10:].ravel(), steps[:-10].ravel())[0, 1]) < 0.005
    assert abs(paths[-1].var() - 40.0) < 1.5


def test_streams_of_nearby_keys_do_not_overlap():
    srng = RandomStream(seed=0)
    out, updates = aesara.scan(lambda: srng.normal(0.0, 1.0), n_steps=50)
    graph = aejax.linker.jaxify([], out, updates)
    draws = [graph.fn(dict.fromkeys(graph.state, jax.random.key(seed)))[0] for seed in range(4)]
    assert len(np.unique(np.concatenate(draws))) == 200
