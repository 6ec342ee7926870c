"""Many chains of a compiled function (`aejax.linker.many_chains`): keys split per chain, named states, devices."""

import pickle
import warnings

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aeppl import joint_logprob
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.adapters.jax_api import disable_x64
from aejax.linker import ChainRun, loader, many_chains
from aejax.linker.chains import raise_failed_check
from aejax.linker.checks import PASSED, CheckTable
from aejax.linker.export import exported, state_names
from tests.clients.test_many_chains import nuts_graph
from tests.reference import REFERENCE
from tests.two_devices import run_on_devices

CHAINS = 4
STEPS = 30


def walk_function(mode=aejax.linker.mode):
    """A random walk of ``STEPS`` steps scaled by a shared ``w``, from ``x0``: its draws depend on the chain's key."""
    srng = RandomStream(3)
    x0 = at.dscalar("x0")
    w = aesara.shared(np.float64(2.0), name="w")
    walk, updates = aesara.scan(lambda x: x + w * srng.normal(0.0, 1.0), outputs_info=x0, n_steps=STEPS)
    return aesara.function([x0], walk, updates={**updates, w: w + 1}, mode=mode)


def shared_values(f):
    """The function's shared variables' values, pickled (a random generator's state with it)."""
    return [pickle.dumps(var.get_value()) for var in f.maker.fgraph.inputs if hasattr(var, "get_value")]


def test_chain_k_is_the_function_called_with_the_random_state_of_key_k():
    f = walk_function()
    run = many_chains(f)
    key = jax.random.key(7)
    starts = np.arange(CHAINS, dtype=float)
    result = run(key, CHAINS, starts)
    assert isinstance(result, ChainRun) and result.outputs.shape == (CHAINS, STEPS)
    assert len({path.tobytes() for path in np.asarray(result.outputs)}) == CHAINS
    for k, chain_key in enumerate(jax.random.split(key, CHAINS)):
        (state_key,) = jax.random.split(chain_key, 1)  # a chain's random states are split from its key, in order
        run.graph.store({"rng_0": state_key, "w": np.float64(2.0)})
        np.testing.assert_array_equal(f(starts[k]), result.outputs[k])  # the function's own call, one chain


def test_states_come_back_named_per_chain_and_continue_the_chains():
    run = many_chains(walk_function())
    first = run(jax.random.key(0), CHAINS, 0.0)
    assert run.names == ["rng_0", "w"] and run.random_names == ["rng_0"]
    assert set(first.state) == {"rng_0", "w"}
    np.testing.assert_array_equal(first.state["w"], np.full(CHAINS, 3.0))
    assert first.state["rng_0"].shape == (CHAINS,)
    then = run(None, CHAINS, first.outputs[:, -1], state=first.state)
    for k in range(CHAINS):
        state_k = {name: value[k] for name, value in first.state.items()}
        alone, new_state = jax.jit(run.graph.fn)(state_k, first.outputs[k, -1])
        np.testing.assert_array_equal(then.outputs[k], alone)
        np.testing.assert_array_equal(then.state["w"][k], new_state["w"])


def test_a_state_entry_is_shared_or_one_per_chain_by_its_shape():
    run = many_chains(walk_function())
    key = jax.random.key(1)
    shared = run(key, CHAINS, 0.0, state={"w": np.float64(0.0)})
    np.testing.assert_array_equal(shared.outputs, 0.0)
    per_chain = run(key, CHAINS, 0.0, state={"w": np.array([0.0, 1.0, 0.0, 1.0])})
    default = run(key, CHAINS, 0.0)
    paths, default_paths = np.asarray(per_chain.outputs), np.asarray(default.outputs)
    np.testing.assert_array_equal(paths[[0, 2]], 0.0)
    np.testing.assert_allclose(paths[[1, 3]] * 2, default_paths[[1, 3]], rtol=1e-12)


def test_raw_key_data_gives_the_chains_of_the_key_it_is_the_data_of():
    run = many_chains(walk_function())
    typed = run(jax.random.key(5), CHAINS, 0.0).outputs
    np.testing.assert_array_equal(run(jax.random.key_data(jax.random.key(5)), CHAINS, 0.0).outputs, typed)
    np.testing.assert_array_equal(run(np.asarray(jax.random.PRNGKey(5)), CHAINS, 0.0).outputs, typed)


def test_a_jaxified_graph_runs_the_same_chains():
    srng = RandomStream(3)
    x0 = at.dscalar("x0")
    walk, updates = aesara.scan(lambda x: x + srng.normal(0.0, 1.0), outputs_info=x0, n_steps=STEPS)
    graph = aejax.linker.jaxify([x0], walk, updates)
    compiled = aesara.function([x0], walk, updates=updates, mode=aejax.linker.mode)
    key = jax.random.key(2)
    np.testing.assert_array_equal(
        many_chains(graph)(key, CHAINS, 0.0).outputs, many_chains(compiled)(key, CHAINS, 0.0).outputs
    )


def test_store_writes_one_chains_state_and_a_call_writes_none():
    f = walk_function()
    run = many_chains(f)
    before = shared_values(f)
    result = run(jax.random.key(0), CHAINS, 0.0, state={"w": np.arange(4.0)})
    assert shared_values(f) == before
    with disable_x64():  # store decodes in the function's precision, whatever the caller's
        run.store(result.state, chain=2)
    assert run.graph.shared["w"].get_value() == 3.0
    stored = exported(f).state["rng_0"]
    np.testing.assert_array_equal(jax.random.key_data(stored), jax.random.key_data(result.state["rng_0"][2]))


def test_state_names_are_the_shared_variables_own_else_generated_all_different():
    rng = aesara.shared(np.random.default_rng(0))
    named = aesara.shared(np.random.default_rng(0), name="noise")
    variables = [
        rng,
        aesara.shared(np.zeros(2), name="w"),
        aesara.shared(np.zeros(2)),
        named,
        aesara.shared(np.zeros(2), name="w"),
        aesara.shared(np.zeros(2), name="rng_1"),
        aesara.shared(np.random.default_rng(0)),
    ]
    assert state_names(variables) == ["rng_0", "w", "shared_0", "noise", "w_1", "rng_1", "rng_2"]


def nuts_function():
    """Three of aehmc's NUTS transitions in one Scan (`nuts_graph`), compiled with aejax's mode."""
    inputs, outputs, updates = nuts_graph(transitions=3)
    return aesara.function(inputs, outputs, updates=updates, mode=aejax.linker.mode)


def test_nuts_chain_k_is_the_graph_run_alone_with_key_k():
    run = many_chains(nuts_function())
    key, n = jax.random.key(3), 3
    starts = np.arange(2.0 * n).reshape(n, 2) - 2
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "the check", UserWarning)  # every check of the graph is checked
        result = run(key, n, starts)
    positions, accepts = result.outputs
    assert positions.shape == (n, 3, 2) and accepts.shape == (n, 3) and np.isfinite(positions).all()
    assert len({p.tobytes() for p in np.asarray(positions)}) == n
    assert run.random_names == [name for name in run.names if name.startswith("rng_")] and len(run.random_names) > 1
    alone = jax.jit(run.graph.fn)
    for k, chain_key in enumerate(jax.random.split(key, n)):
        (positions_k, accepts_k), state_k = alone(run.chain_state(chain_key), starts[k])
        np.testing.assert_array_equal(positions[k], positions_k)
        np.testing.assert_array_equal(accepts[k], accepts_k)
        for name in run.random_names:
            np.testing.assert_array_equal(
                jax.random.key_data(result.state[name][k]), jax.random.key_data(state_k[name])
            )


def parameter_check():
    """aeppl's log-density of a normal whose scale must be positive (`CheckParameterValue`), and 4 chains' arguments."""
    sigma, value = at.dscalars("sigma", "value")
    x = RandomStream(0).normal(0.0, sigma)
    logp = joint_logprob(realized={x: value})[0]
    return [sigma, value], logp, {}, (np.array([1.0, -2.0, 3.0, -4.0]), np.array([0.5, 0.5, -1.0, 2.0]))


def index_check():
    """Entry ``i`` of a shared vector of 3 (an index out of bounds fails), updating a shared count, and 4 chains' ``i``."""
    i = at.lscalar("i")
    count = aesara.shared(np.float64(0.0), name="count")
    vector = aesara.shared(np.arange(3.0), name="vector")
    return [i], vector[i] * 2 + count, {count: count + 1}, (np.array([0, 3, -1, -4]),)


@pytest.mark.parametrize("graph", [parameter_check, index_check])
def test_a_failed_check_raises_the_reference_exception_naming_the_chains(graph):
    """Chains 1 and 3 fail the graph's check: the call raises what the reference raises for chain 1's arguments."""
    inputs, output, updates, args = graph()
    reference = aesara.function(inputs, output, mode=REFERENCE)
    f = aesara.function(inputs, output, updates=updates, mode=aejax.linker.mode)
    rows = [[a[k] for a in args] for k in range(CHAINS)]
    with pytest.raises(Exception) as expected:
        reference(*rows[1])
    with pytest.raises(type(expected.value)) as alone:  # the check of the function itself, one chain
        f(*rows[1])
    run = many_chains(f)
    before = shared_values(f)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "the check", UserWarning)
        with pytest.raises(type(expected.value)) as raised:
            run(jax.random.key(0), CHAINS, *args)
        valid = run(jax.random.key(0), 2, *(a[[0, 2]] for a in args)).outputs
    assert type(raised.value) is type(expected.value)
    message = str(alone.value).splitlines()[0]  # Aesara's function adds lines naming the node
    if graph is parameter_check:  # aeppl's message, as the reference raises it (an index's is numpy's there)
        assert message == str(expected.value).splitlines()[0] == "sigma > 0"
    assert str(raised.value) == f"{message} (failed in chains [1, 3] of 4; the call returned nothing)"
    assert shared_values(f) == before
    for k, chain in zip((0, 2), valid):
        np.testing.assert_allclose(chain, reference(*rows[k]), rtol=1e-12)


def test_the_first_failing_chain_decides_the_exception_and_the_others_are_named():
    checks = CheckTable()
    positive = checks.number(ValueError, "x must be positive")
    inside = checks.number(IndexError, "i is out of bounds")
    with pytest.raises(IndexError, match=r"^i is out of bounds \(failed in chain 1 of 4; chains \[2, 3\] failed other"):
        raise_failed_check(np.array([PASSED, inside, positive, positive]), checks)
    raise_failed_check(np.full(4, PASSED), checks)


BAD_CALLS = [
    ({"key": jax.random.split(jax.random.key(0), 2)}, ValueError, r"key must be one PRNG key \(shape \(\)\)"),
    ({"key": np.zeros(3, np.uint32)}, ValueError, r"key is raw key data of shape \(3,\)"),
    ({"key": np.zeros(2, np.float32)}, TypeError, "key must be a PRNG key"),
    ({"key": 5}, TypeError, "key must be a PRNG key"),
    ({"key": jax.random.key(0, impl="rbg")}, TypeError, "key is a key of rbg"),
    ({"key": None}, TypeError, r"key is None, but the random states \['rng_0'\]"),
    ({"n_chains": 0}, ValueError, "n_chains must be at least 1, not 0"),
    ({"n_chains": -2}, ValueError, "n_chains must be at least 1"),
    ({"n_chains": 2.0}, TypeError, "n_chains must be an int"),
    ({"n_chains": True}, TypeError, "n_chains must be an int"),
    ({"state": {"weights": 1.0}}, TypeError, r"\['weights'\].*its state is \['rng_0', 'w'\]"),
    ({"state": {"w": np.zeros(3)}}, ValueError, r"state entry 'w' has 3 rows along its chain axis"),
    ({"x0": np.zeros(5)}, ValueError, r"input 'x0' has 5 rows along its chain axis"),
    ({"x0": np.zeros((4, 2))}, ValueError, r"input 'x0' has shape \(4, 2\)"),
]


@pytest.mark.parametrize(("change", "error", "match"), BAD_CALLS, ids=[m for _, _, m in BAD_CALLS])
def test_a_bad_argument_is_named_and_changes_nothing(change, error, match):
    f = walk_function()
    run = many_chains(f)
    before = shared_values(f)
    call = {"key": jax.random.key(0), "n_chains": CHAINS, "x0": 0.0, "state": None, **change}
    with pytest.raises(error, match=match):
        run(call["key"], call["n_chains"], call["x0"], state=call["state"])
    assert shared_values(f) == before


def test_a_slice_of_a_run_draws_its_chains_of_the_whole_run():
    """``chains=slice(a, b)`` runs chains a .. b - 1 of the run, with their own keys: a farm of such calls is the run."""
    f = walk_function()
    run = many_chains(f)
    key, starts = jax.random.key(5), np.arange(8.0)
    whole = run(key, 8, starts)
    parts = [run(key, 8, starts, chains=part) for part in (slice(0, 3), slice(3, 8))]
    np.testing.assert_array_equal(np.concatenate([p.outputs for p in parts]), whole.outputs)
    for name in whole.state:
        glued = np.concatenate([np.asarray(p.gathered().state[name]) for p in parts])
        np.testing.assert_array_equal(glued, whole.gathered().state[name])
    assert parts[1].outputs.shape == (5, STEPS)
    with pytest.raises(ValueError, match=r"chains=slice\(5, 5, None\) selects no chain of n_chains=8"):
        run(key, 8, starts, chains=slice(5, 5))
    with pytest.raises(TypeError, match="chains= takes a slice of step 1"):
        run(key, 8, starts, chains=slice(0, 8, 2))


def test_an_exported_chain_run_in_shares_with_the_loaders_keys_draws_the_run():
    """Workers without Aesara (`aejax.linker.loader`) running shares of an export of ``chains=`` draw the run."""
    f = walk_function()
    key, starts = jax.random.key(5), np.arange(8.0)
    whole = many_chains(f)(key, 8, starts)
    description, program, state = loader.load(aejax.linker.export_graph(f, None, chains="chains").serialize())
    shares = []
    for start, stop in ((0, 3), (3, 8)):
        shared = {name: np.broadcast_to(value, (stop - start, *np.shape(value))) for name, value in state.items()}
        outputs, _ = program.call({**shared, **loader.chain_keys(description, key, 8, start, stop)}, starts[start:stop])
        shares.append(np.asarray(outputs))
    np.testing.assert_array_equal(np.concatenate(shares), whole.outputs)


def test_what_many_chains_takes():
    with pytest.raises(TypeError, match="compiled with aesara.function"):
        many_chains(lambda x: x)
    with pytest.raises(TypeError, match="not compiled with aejax's mode"):
        many_chains(aesara.function([], at.constant(1.0), mode="FAST_COMPILE"))
    with pytest.raises(TypeError, match="mesh= takes a jax.sharding.Mesh"):
        many_chains(walk_function(), mesh="cpu")


EIGHT_DEVICES = """
import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
import aesara, aesara.tensor as at, jax, numpy as np
from aesara.scan.utils import until
import aejax.linker
from tests.export.test_chains import walk_function
from tests.stablehlo import collectives_in_loops
from tests.scan.test_progress import Bars

assert len(jax.devices()) == 8
bars = Bars()
f = walk_function(aejax.linker.mode.with_progress(every=10, bar=bars))
key = jax.random.key(9)
starts = np.arange(16.0)
one = aejax.linker.many_chains(f)(key, 16, starts)
assert bars.moves() == [10, 10, 10], bars.events
split = aejax.linker.many_chains(f, mesh=jax.devices())(key, 16, starts)
assert bars.moves() == [10] * 6, bars.events  # one bar for the 16 chains on 8 devices
assert len(split.outputs.sharding.device_set) == 8 and len(split.state["rng_0"].sharding.device_set) == 8
assert split.outputs.addressable_shards[0].data.shape == (2, 30)
np.testing.assert_array_equal(split.outputs, one.outputs)
for name in one.state:
    a, b = one.state[name], split.state[name]
    if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
        a, b = jax.random.key_data(a), jax.random.key_data(b)
    np.testing.assert_array_equal(a, b)
mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("a", "b"))
np.testing.assert_array_equal(aejax.linker.many_chains(f, mesh=mesh)(key, 16, starts).outputs, one.outputs)

x0 = at.dscalar("x0")  # a loop whose every chain stops at its own step: a batched predicate
(doubled, steps), _ = aesara.scan(
    lambda x, k: ((2 * x, k + 1), until(x > 1000)), outputs_info=[x0, at.constant(0, dtype="int64")], n_steps=100
)
g = aesara.function([x0], [doubled[-1], steps[-1]], mode=aejax.linker.mode)
run = aejax.linker.many_chains(g, mesh=jax.devices())
split, alone = run(None, 16, starts + 1), aejax.linker.many_chains(g)(None, 16, starts + 1)
for a, b in zip(split.outputs, alone.outputs):
    np.testing.assert_array_equal(a, b)
assert len(set(np.asarray(split.outputs[1]).tolist())) > 3
assert not any(collectives_in_loops(run.lower(None, 16, starts).compile().as_text()).values())

exported = aejax.linker.export_graph(g, None, chains="chains")  # as docs/many_chains.md runs it on a mesh
jax.config.update("jax_enable_x64", exported.x64)  # as a runner of exports does (docs/export.md)
chains = jax.sharding.NamedSharding(run.mesh, jax.sharding.PartitionSpec("chains"))
sharded = jax.jit(jax.vmap(run.graph.fn, in_axes=(None, 0)), in_shardings=(None, chains), out_shardings=chains)
assert collectives_in_loops(sharded.lower({}, starts).compile().as_text())["all-reduce"] > 0  # what the mesh avoids
mesh = jax.sharding.Mesh(np.array(jax.devices()), ("chains",))
blocks = jax.shard_map(exported.call, mesh=mesh, in_specs=jax.sharding.PartitionSpec("chains"),
                       out_specs=jax.sharding.PartitionSpec("chains"))
per_device = jax.jit(blocks)
outputs, _ = per_device({}, starts + 1)
for a, b in zip(outputs, alone.outputs):
    np.testing.assert_array_equal(a, b)
assert not any(collectives_in_loops(per_device.lower({}, starts + 1).compile().as_text()).values())
try:
    aejax.linker.many_chains(f, mesh=jax.devices())(key, 12, 0.0)
except ValueError as error:
    assert "n_chains=12 cannot be split across the mesh's 8 devices" in str(error), error
else:
    raise AssertionError("12 chains on 8 devices")
print("eight devices ok")
"""


def test_eight_devices_split_the_chains_and_draw_what_one_device_draws():
    assert "eight devices ok" in run_on_devices(EIGHT_DEVICES, 8)
