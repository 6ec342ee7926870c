"""aehmc's NUTS exported with `jaxify` and vmapped over chains: no gather or scatter at a per-chain position,
and each chain of the batch is the chain run alone with its key."""

import aesara
import aesara.tensor as at
import jax
import jax.export
import numpy as np
from aehmc import hmc, nuts
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from tests.stablehlo import batched_indexing

PRECISION = np.linalg.inv(np.array([[1.0, 0.5], [0.5, 1.0]]))
CHAINS = 3


def logprob(q):
    d = q - np.array([1.0, -2.0])
    return -0.5 * at.dot(d, at.dot(PRECISION, d))


def nuts_chain(transitions, seed=11):
    """``transitions`` NUTS transitions from ``q0`` as one Scan, exported: the positions and acceptance probabilities."""
    return aejax.linker.jaxify(*nuts_graph(transitions, seed))


def nuts_graph(transitions, seed=11):
    """``([q0], [positions, acceptance probabilities], updates)`` of ``transitions`` NUTS transitions in one Scan."""
    q0 = at.dvector("q0")
    kernel = nuts.new_kernel(RandomStream(seed), logprob)

    def transition(q, energy, grad):
        (q, energy, grad, p_accept, *_), updates = kernel(q, energy, grad, np.float64(0.25), at.ones(2))
        return (q, energy, grad, p_accept), updates

    _, energy, grad = hmc.new_state(q0, logprob)
    (positions, _, _, accepts), updates = aesara.scan(
        transition, outputs_info=[q0, energy, grad, None], n_steps=transitions
    )
    return [q0], [positions, accepts], updates


def one_chain(graph):
    """The chain as a function of its keys' data (one per random state, in the order of the state's names) and
    ``q0``, returning its outputs and the new keys' data, and those keys' data."""
    names = sorted(graph.state)
    impls = [jax.random.key_impl(graph.state[name]) for name in names]

    def chain(key_data, q0):
        keys = [jax.random.wrap_key_data(data, impl=impl) for data, impl in zip(key_data, impls)]
        outputs, state = graph.fn(dict(zip(names, keys)), q0)
        return outputs, [jax.random.key_data(state[name]) for name in names]

    return chain, [graph.state[name] for name in names]


def test_nuts_chains_under_vmap_index_no_buffer_per_chain_on_an_accelerator_and_match_single_chains():
    """Exported for a TPU the vmapped chain has no gather or scatter at a per-chain position (on the CPU, where
    a batched scatter into a buffer of more than a few elements is the faster, it keeps some); chain k of the
    batch is the chain run alone with key k."""
    chain, keys = one_chain(nuts_chain(transitions=4))
    key_data = [jax.random.key_data(jax.random.split(key, CHAINS)) for key in keys]
    starts = np.arange(2.0 * CHAINS).reshape(CHAINS, 2) - 2
    batched = jax.jit(jax.vmap(chain))
    for platform, most in [("tpu", 0), ("cpu", None)]:
        exported = jax.export.export(batched, platforms=[platform])(key_data, starts)
        found = batched_indexing(exported.mlir_module())
        assert found == most if most is not None else found > 0, platform
    (positions, accepts), new_keys = batched(key_data, starts)
    assert positions.shape == (CHAINS, 4, 2) and np.isfinite(positions).all()
    assert len({np.asarray(p).tobytes() for p in positions}) == CHAINS
    alone = jax.jit(chain)
    for k in range(CHAINS):
        (positions_k, accepts_k), new_keys_k = alone([data[k] for data in key_data], starts[k])
        np.testing.assert_array_equal(positions[k], positions_k)
        np.testing.assert_array_equal(accepts[k], accepts_k)
        for got, want in zip(new_keys, new_keys_k):
            np.testing.assert_array_equal(got[k], want)
