"""Item 5: an exported graph checks its arguments and state; `store` writes all or nothing."""

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.tensor.random.utils import RandomStream

from aejax.linker import jaxify
from tests.reliability.shared_state import assert_unchanged, snapshot


@pytest.fixture
def graph():
    srng = RandomStream(seed=5)
    x0 = at.dscalar("x0")
    scale = aesara.shared(np.float64(2.0), name="scale")
    walk, updates = aesara.scan(lambda x: x + scale * srng.normal(0, 1), outputs_info=x0, n_steps=3)
    updates[scale] = scale + 1
    return jaxify([x0], walk, updates)


def _rng_name(graph):
    return next(name for name in graph.state if name != "scale")


@pytest.mark.parametrize("args", [(), (0.0, 1.0)], ids=["missing", "extra"])
def test_wrong_number_of_inputs_names_the_expected_ones(graph, args):
    with pytest.raises(TypeError, match=r"fn\(state, x0\) takes 1 input"):
        graph.fn(graph.state, *args)


@pytest.mark.parametrize(
    "change",
    [
        lambda state, rng: {k: v for k, v in state.items() if k != rng},
        lambda state, rng: {**state, "other": state[rng]},
        lambda state, rng: {**state, rng: jax.random.key_data(state[rng])},
        lambda state, rng: {**state, rng: jax.random.key(0, impl="rbg")},
    ],
    ids=["missing entry", "unknown entry", "raw key data", "other key impl"],
)
def test_bad_state_is_a_type_error_naming_the_entry(graph, change):
    rng = _rng_name(graph)
    with pytest.raises(TypeError, match=rng if "other" not in str(change) else "other|rbg"):
        graph.fn(change(graph.state, rng), 0.0)


def test_store_checks_every_entry_before_writing_any(graph):
    _, new_state = graph.fn(graph.state, 0.0)
    shared = list(graph.shared.values())
    before = snapshot(shared)
    rng = _rng_name(graph)
    bad = {"scale": new_state["scale"], rng: jax.random.key_data(new_state[rng])}
    with pytest.raises(TypeError, match=f"state entry {rng!r}.*nothing was stored"):
        graph.store(bad)
    assert_unchanged(shared, before)
    graph.store(new_state)
    assert graph.shared["scale"].get_value() == 3.0
