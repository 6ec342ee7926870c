"""Many chains on a mesh of two processes of four CPU devices each (JAX's multi-controller runtime, localhost)."""

from tests.processes import run_in_processes

TWO_PROCESSES = """
import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
import aesara, jax, numpy as np
import aejax.linker
from aejax.linker import many_chains
from tests.export.test_chains import parameter_check, walk_function
from tests.scan.test_progress import Bars

me = jax.process_index()
assert len(jax.devices()) == 8 and len(jax.local_devices()) == 4, jax.devices()
bars = Bars()
f = walk_function(aejax.linker.mode.with_progress(every=10, bar=bars, min_seconds=0))
key = jax.random.key(9)
starts = np.arange(16.0)
alone = many_chains(f)(key, 16, starts)  # this process's first device, every chain: the Scan is lowered here too
bars.events.clear()
run = many_chains(f, mesh=jax.devices())
split = run(key, 16, starts)
assert bars.moves() == ([10, 10, 10] if me == 0 else []), bars.events  # one bar, in process 0
assert not split.outputs.is_fully_addressable and len(split.outputs.addressable_shards) == 4
whole = split.gathered()
np.testing.assert_array_equal(whole.outputs, np.asarray(alone.outputs))
np.testing.assert_array_equal(whole.state["rng_0"], jax.random.key_data(alone.state["rng_0"]))
np.testing.assert_array_equal(whole.state["w"], np.asarray(alone.state["w"]))

more = run(None, 16, starts, state=split.state).gathered()  # the chains go on from the returned state
more_alone = many_chains(f)(None, 16, starts, state=alone.state)
np.testing.assert_array_equal(more.outputs, np.asarray(more_alone.outputs))
np.testing.assert_array_equal(more.state["rng_0"], jax.random.key_data(more_alone.state["rng_0"]))

inputs, output, updates, (sigmas, values) = parameter_check()
checked = many_chains(aesara.function(inputs, output, mode=aejax.linker.mode), mesh=jax.devices())
try:
    checked(jax.random.key(0), 8, np.tile(sigmas, 2), np.tile(values, 2))
except Exception as error:
    assert type(error).__name__ == "ParameterValueError", repr(error)
    assert str(error) == "sigma > 0 (failed in chains [1, 3, 5, 7] of 8; the call returned nothing)", str(error)
else:
    raise AssertionError("no process raised")

for wrong in ("key", "input"):
    try:
        if wrong == "key":
            run(jax.random.key(9 + me), 16, starts)
        else:
            run(key, 16, starts + me)
    except ValueError as error:
        assert f"{wrong} " in str(error) and "differs between processes" in str(error), str(error)
        assert "processes [1] another" in str(error), str(error)
    else:
        raise AssertionError(f"a {wrong} that differs between processes ran")
print("process", me, "ok")
"""


def test_two_processes_of_four_devices_run_the_chains_of_one_device():
    """A random walk on 2 x 4 devices draws what one device draws, gathered in each process; it continues from the
    returned state; one process's bar moves; a failed check and a key or input that differs raise in both."""
    outputs = run_in_processes(TWO_PROCESSES, processes=2, devices=4)
    assert [out.strip().splitlines()[-1] for out in outputs] == ["process 0 ok", "process 1 ok"]
