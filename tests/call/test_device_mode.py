"""The device-I/O mode "AEJAX_DEVICE": jax.Array arguments as they are, jax.Array outputs, host shared values.

Every function is called at least twice, so that both its general call and
its exact call (`DeviceExactCall`) are exercised; values are compared with
Aesara's reference backend. Placement on several devices is tested in a
subprocess that forces two CPU devices before JAX starts.
"""

import copy
import pickle
import textwrap
import warnings

import aesara
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from aesara.raise_op import Assert
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.linker import AejaxDeviceMode, InputValueError, JaxArgumentError
from aejax.linker.call.device_call import DeviceExactCall
from aejax.linker.call.function import AejaxDeviceFunction
from aejax.linker.call.linker import JAXDeviceLinker
from tests.reference import REFERENCE
from tests.two_devices import run_on_two_devices

DEVICE = "AEJAX_DEVICE"


def as_list(outputs):
    return list(outputs.values()) if isinstance(outputs, dict) else outputs if isinstance(outputs, list) else [outputs]


def assert_device_outputs(got, expected):
    """``got`` holds jax.Arrays equal to the reference's ``expected`` in value, dtype and shape."""
    got, expected = as_list(got), as_list(expected)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert isinstance(g, jax.Array) and not isinstance(g, np.ndarray), type(g)
        e = np.asarray(e)
        assert (g.dtype, g.shape) == (e.dtype, e.shape)
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-12, atol=1e-12)


def compile_pair(inputs, outputs, **kwargs):
    return [aesara.function(inputs, outputs, mode=mode, **kwargs) for mode in (REFERENCE, DEVICE)]


def test_the_mode_is_registered_and_keeps_its_kind_when_derived():
    assert aesara.compile.mode.get_mode(DEVICE) is aejax.linker.device_mode
    for mode in (
        aejax.linker.device_mode,
        aejax.linker.device_mode.including("fast_run"),
        aejax.linker.device_mode.clone(),
    ):
        assert isinstance(mode, AejaxDeviceMode) and isinstance(mode.linker, JAXDeviceLinker)
    x = at.dvector("x")
    assert isinstance(aesara.function([x], x + 1, mode=DEVICE), AejaxDeviceFunction)
    assert type(aesara.function([x], x + 1, mode="AEJAX")) is aejax.linker.AejaxFunction


GRAPHS = {
    "elementwise": (lambda x, s: x * s + 1, (np.arange(4.0), np.float64(2.0))),
    "several small outputs": (lambda x, s: [x * s, x.sum(), (x * s).max(), s + 1], (np.arange(4.0), np.float64(2.0))),
    "dict": (lambda x, s: {"scaled": x * s, "total": x.sum()}, (np.arange(4.0), np.float64(3.0))),
    "integer result": (lambda x, s: at.argmax(x * s), (np.array([1.0, 5.0, 2.0]), np.float64(-1.0))),
}


@pytest.mark.parametrize("name", GRAPHS)
def test_jax_arrays_in_give_jax_arrays_out_equal_to_the_reference(name):
    graph, args = GRAPHS[name]
    x, s = at.dvector("x"), at.dscalar("s")
    outputs = graph(x, s)
    if isinstance(outputs, dict):
        reference = aesara.function([x, s], list(outputs.values()), mode=REFERENCE)
        ours = aesara.function([x, s], outputs, mode=DEVICE)
    else:
        reference, ours = compile_pair([x, s], outputs)
    device_args = [jnp.asarray(a) for a in args]
    for call in range(3):
        shifted = [a + call for a in args]
        assert_device_outputs(ours(*[a + call for a in device_args]), reference(*shifted))
    assert isinstance(ours._direct.exact, DeviceExactCall)


def test_the_exact_call_runs_without_the_general_path(monkeypatch):
    x = at.dvector("x")
    reference, ours = compile_pair([x], [x * 2, x.sum()])
    ours(jnp.zeros(3))
    assert isinstance(ours._direct.exact, DeviceExactCall)
    monkeypatch.setattr(ours._direct, "call", None)  # the general path would fail now
    assert_device_outputs(ours(jnp.arange(3.0)), reference(np.arange(3.0)))


@pytest.mark.parametrize(
    "args",
    [
        (np.arange(3.0), 2.0),
        (np.arange(3.0), jnp.float64(2.0)),
        (jnp.arange(3.0), np.float64(2.0)),
        ([1.0, 2.0, 3.0], 2),
        (np.arange(3, dtype="int32"), 2.0),
    ],
    ids=["numpy", "numpy and jax", "jax and numpy", "list and int", "int32 numpy upcast"],
)
def test_numpy_and_python_arguments_are_converted_as_aesara_converts_them(args):
    x, s = at.dvector("x"), at.dscalar("s")
    reference, ours = compile_pair([x, s], x * s)
    for _ in range(2):
        assert_device_outputs(ours(*args), reference(*[np.asarray(a) for a in args]))


@pytest.mark.parametrize(
    "bad, field",
    [
        (jnp.arange(3, dtype=jnp.float32), "dtype"),
        (jnp.zeros((3, 1)), "ndim"),
        (jnp.arange(3), "dtype"),
    ],
    ids=["float32", "matrix", "int64"],
)
def test_a_wrong_jax_array_raises_naming_the_input_and_is_not_converted(bad, field):
    x = at.dvector("weights")
    total = aesara.shared(np.float64(0.0), name="total")
    f = aesara.function([x], x * 2, updates={total: total + x.sum()}, mode=DEVICE)
    f(jnp.ones(3))  # the exact call exists: the wrong argument leaves it for the general path
    with pytest.raises(JaxArgumentError, match=rf"input 'weights': .*field '{field}'.*astype\('float64'\)") as raised:
        f(bad)
    assert isinstance(raised.value, InputValueError) and isinstance(raised.value, TypeError)
    assert total.get_value() == 3.0


def test_a_jax_array_must_fit_the_dimensions_the_type_fixes():
    x = at.TensorType("float64", shape=(3,))("fixed")
    f = aesara.function([x], x + 1, mode=DEVICE)
    assert_device_outputs(f(jnp.zeros(3)), [np.ones(3)])
    with pytest.raises(JaxArgumentError, match=r"input 'fixed': .*field 'shape\[0\]' must be 3"):
        f(jnp.zeros(4))


def test_a_new_shape_compiles_a_new_program_and_gives_the_reference_values():
    x = at.dvector("x")
    reference, ours = compile_pair([x], (x**2).sum())
    for size in (3, 5, 3, 5):
        assert_device_outputs(ours(jnp.arange(float(size))), reference(np.arange(float(size))))


def test_keywords_take_aesaras_path_and_still_return_jax_arrays():
    x, s = at.dvector("x"), at.dscalar("s")
    ours = aesara.function([x, aesara.In(s, value=2.0)], x * s, mode=DEVICE)
    assert_device_outputs(ours(jnp.arange(3.0)), [np.arange(3.0) * 2])
    assert_device_outputs(ours(x=jnp.arange(3.0), s=3.0), [np.arange(3.0) * 3])


def test_shared_tensors_hold_their_host_value_after_each_call():
    values = []
    for mode in (REFERENCE, DEVICE):
        W = aesara.shared(np.eye(2), name="W")
        x = at.dvector("x")
        f = aesara.function([x], W.dot(x), updates={W: W + at.outer(x, x)}, mode=mode)
        seen = []
        for step in range(3):
            out = f(np.arange(2.0) + step if mode == REFERENCE else jnp.arange(2.0) + step)
            held = W.get_value(borrow=True)
            assert type(held) is np.ndarray and held.flags.writeable
            seen += [np.asarray(out), held.copy()]
        W.set_value(np.zeros((3, 3)))
        seen.append(np.asarray(f(np.ones(3))))
        values.append(seen)
    for expected, got in zip(*values):
        np.testing.assert_allclose(got, expected)


def test_small_outputs_and_small_updates_come_back_as_jax_arrays_and_host_values():
    count, total = aesara.shared(np.int64(0), name="count"), aesara.shared(np.zeros(2), name="total")
    x = at.dvector("x")
    f = aesara.function([x], [x.sum(), x.max(), x * 2], updates={count: count + 1, total: total + x[:2]}, mode=DEVICE)
    for step in range(3):
        outputs = f(jnp.arange(3.0) + step)
        assert all(isinstance(o, jax.Array) for o in outputs)
        np.testing.assert_allclose(np.asarray(outputs[1]), 2.0 + step)
    assert isinstance(f._direct.exact, DeviceExactCall)
    assert count.get_value() == 3 and type(count.get_value(borrow=True)) is np.ndarray
    np.testing.assert_allclose(total.get_value(), [3.0, 6.0])


def test_a_shared_variable_passes_between_device_aejax_and_reference_functions():
    W = aesara.shared(np.ones(3), name="W")
    x = at.dvector("x")
    functions = {
        mode: aesara.function([x], W.sum(), updates={W: W * 2 + x}, mode=mode) for mode in (DEVICE, "AEJAX", REFERENCE)
    }
    expected = np.ones(3)
    for mode in [DEVICE, REFERENCE, DEVICE, "AEJAX", DEVICE, REFERENCE]:
        out = functions[mode](np.arange(3.0))
        np.testing.assert_allclose(np.asarray(out), expected.sum())
        expected = expected * 2 + np.arange(3.0)
        np.testing.assert_allclose(W.get_value(), expected)


def test_gradients_run_in_the_mode():
    x, w = at.dvector("x"), at.dvector("w")
    loss = (at.tanh(x * w) ** 2).sum()
    reference, ours = compile_pair([x, w], aesara.grad(loss, [x, w]))
    args = (np.linspace(-1, 1, 5), np.linspace(0.5, 2, 5))
    for _ in range(2):
        assert_device_outputs(ours(*map(jnp.asarray, args)), reference(*args))


def test_scans_run_in_the_mode_with_a_jax_step_count():
    x0, k = at.dvector("x0"), at.iscalar("k")
    trace, _ = aesara.scan(lambda h: at.sin(h) * 0.5 + 1, outputs_info=x0, n_steps=k)
    reference, ours = compile_pair([x0, k], [trace, trace[-1].sum()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", aejax.linker.ShapeInputWarning)
        for steps in (4, 4, 6):
            expected = reference(np.arange(3.0), np.int32(steps))
            assert_device_outputs(ours(jnp.arange(3.0), jnp.asarray(steps, dtype=jnp.int32)), expected)


def test_random_draws_are_jax_arrays_that_advance_as_in_the_aejax_mode():
    draws = {}
    for mode in ("AEJAX", DEVICE):
        srng = RandomStream(11)
        x = at.dvector("x")
        f = aesara.function([x], x + srng.normal(size=4), updates=srng.updates(), mode=mode)
        draws[mode] = [f(jnp.zeros(4) if mode == DEVICE else np.zeros(4)) for _ in range(3)]
    assert all(isinstance(d, jax.Array) for d in draws[DEVICE])
    assert not np.array_equal(draws[DEVICE][0], draws[DEVICE][1])
    for host, device in zip(draws["AEJAX"], draws[DEVICE]):
        np.testing.assert_array_equal(host, np.asarray(device))


def test_a_failed_call_updates_no_shared_variable():
    x = at.dvector("x")
    total = aesara.shared(np.float64(0.0), name="total")
    checked = Assert("x must be positive")(x, at.all(x > 0))
    reference, ours = compile_pair([x], checked.sum(), updates={total: total + x.sum()})
    assert float(ours(jnp.ones(3))) == 3.0 and float(ours(jnp.ones(3))) == 3.0
    assert total.get_value() == 6.0 + 0.0 * reference(np.ones(3))  # the reference updates the same variable
    total.set_value(np.float64(6.0))
    for bad in (jnp.array([1.0, -1.0, 1.0]), np.array([1.0, -1.0, 1.0])):
        with pytest.raises(AssertionError, match="x must be positive"):
            ours(bad)
        assert total.get_value() == 6.0


def test_trusted_inputs_skip_the_checks():
    x = at.dvector("x")
    f = aesara.function([x], x + 1, mode=DEVICE)
    f.trust_input = True
    assert_device_outputs(f(jnp.zeros(2)), [np.ones(2)])


def test_function_copies_and_pickles_as_a_device_function():
    x = at.dvector("x")
    f = aesara.function([x], x * 2, mode=DEVICE)
    for g in (copy.copy(f), pickle.loads(pickle.dumps(f))):
        assert isinstance(g, AejaxDeviceFunction)
        assert_device_outputs(g(jnp.arange(3.0)), [np.arange(3.0) * 2])


PLACEMENT = textwrap.dedent(
    """
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    import aesara, aesara.tensor as at, jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    jax.config.update("jax_enable_x64", True)
    import aejax.linker

    devices = jax.devices()
    assert len(devices) == 2, devices
    x = at.dvector("x")
    double = aesara.function([x], x * 2 + 1, mode="AEJAX_DEVICE")
    total = aesara.function([x], [x.sum(), x * 3], mode="AEJAX_DEVICE")

    sharding = NamedSharding(Mesh(np.array(devices), ("i",)), PartitionSpec("i"))
    sharded = jax.device_put(jnp.arange(8.0), sharding)
    for _ in range(3):  # general call, then exact calls
        out = double(sharded)
        assert isinstance(out, jax.Array) and out.sharding.is_equivalent_to(sharding, 1), out.sharding
        np.testing.assert_array_equal(np.asarray(out), np.arange(8.0) * 2 + 1)
        summed, tripled = total(sharded)
        plain = jax.jit(lambda v: (v.sum(), v * 3))(sharded)
        assert summed.sharding.is_equivalent_to(plain[0].sharding, 0), summed.sharding
        assert tripled.sharding.is_equivalent_to(plain[1].sharding, 1), tripled.sharding
        assert float(summed) == 28.0

    on_second = jax.device_put(jnp.arange(8.0), devices[1])
    for _ in range(3):
        assert double(on_second).devices() == {devices[1]}
        assert double(sharded).devices() == set(devices)
    assert double(np.arange(8.0)).devices() == {devices[0]}

    W = aesara.shared(np.zeros(8), name="W")
    step = aesara.function([x], (W * x).sum(), updates={W: W + x}, mode="AEJAX_DEVICE")
    for _ in range(3):
        assert step(sharded).devices() == set(devices)
    assert type(W.get_value(borrow=True)) is np.ndarray
    np.testing.assert_array_equal(W.get_value(), np.arange(8.0) * 3)

    y = at.dvector("y")
    both = aesara.function([x, y], x + y, mode="AEJAX_DEVICE")
    on_first = jax.device_put(jnp.arange(8.0), devices[0])
    try:
        both(on_first, on_second)
    except ValueError as error:
        assert "devices" in str(error), error
    else:
        raise AssertionError("arrays committed to two devices were computed together")
    print("placement ok")
    """
)


def test_placement_on_two_devices_in_a_fresh_process():
    assert "placement ok" in run_on_two_devices(PLACEMENT)


def test_values_of_run_time_length_and_host_nodes_come_back_as_jax_arrays():
    x = at.dvector("x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", aejax.linker.HostNodeWarning)
        reference, ours = compile_pair([x], [x[at.nonzero(x > 0)], at.extra_ops.Unique()(x) * 2])
        for values in ([1.0, -2.0, 3.0, 1.0], [-1.0, 4.0, 4.0]):
            assert_device_outputs(ours(jnp.asarray(values)), reference(np.asarray(values)))


def test_aesara_scalars_enter_and_leave_as_0d_jax_arrays():
    s = aesara.scalar.float64("s")
    reference, ours = compile_pair([s], s * 2)
    for value in (jnp.float64(2.0), 3.0, jnp.float64(4.0)):
        assert_device_outputs(ours(value), reference(float(value)))
    with pytest.raises(JaxArgumentError, match=r"input 's': .*field 'dtype'.* rank 0"):
        ours(jnp.float32(2.0))
