"""Shared tensors made from a jax.Array stay jax.Arrays between AEJAX calls (`aejax.adapters.resident`).

Each sequence of calls is replayed on a numpy shared variable with Aesara's
reference backend, and the values compared after every call. Functions are
called at least three times, so the general call and the exact call both run.
"""

import copy
import pickle
import textwrap
import threading
import warnings

import aesara
import aesara.tensor as at
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from aesara.raise_op import Assert
from aesara.tensor.sharedvar import TensorSharedVariable

import aejax.linker  # noqa: F401  (registers the modes and the jax.Array shared constructor)
from aejax.adapters.resident import ResidentSharedVariable, ResidentStorage
from tests.python_ops import PythonDouble
from tests.reference import REFERENCE
from tests.two_devices import run_on_two_devices

MODES = ["AEJAX", "AEJAX_DEVICE"]
W0 = np.arange(12.0).reshape(3, 4) / 10


def storage_of(shared):
    return shared.container.resident_storage


def sgd_step(W, mode):
    """One step of least squares on a batch ``(X, Y)``, updating ``W``: the loss and the compiled function."""
    X, Y = at.dmatrix("X"), at.dmatrix("Y")
    loss = ((X @ W - Y) ** 2).mean()
    return aesara.function([X, Y], loss, updates={W: W - 0.1 * aesara.grad(loss, W)}, mode=mode)


def batch(seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(5, 3)), rng.normal(size=(5, 4))


def test_a_jax_array_makes_a_resident_shared_variable_and_numpy_values_do_not():
    W = aesara.shared(jnp.asarray(W0), name="W")
    assert isinstance(W, ResidentSharedVariable)
    assert (W.type.dtype, W.type.shape) == ("float64", (None, None))
    assert aesara.shared(jnp.zeros(3), shape=(3,)).type.shape == (3,)
    plain = aesara.shared(W0)
    assert type(plain) is TensorSharedVariable and type(plain.container.storage) is list


@pytest.mark.parametrize("mode", MODES)
def test_a_training_step_keeps_the_weights_on_the_device_and_gives_the_reference_values(mode):
    W, reference_W = aesara.shared(jnp.asarray(W0), name="W"), aesara.shared(W0.copy(), name="W")
    step, reference = sgd_step(W, mode), sgd_step(reference_W, REFERENCE)
    for seed in range(4):
        loss = step(*batch(seed))
        np.testing.assert_allclose(np.asarray(loss), reference(*batch(seed)), rtol=1e-12)
        assert isinstance(storage_of(W).held(), jax.Array)
        np.testing.assert_allclose(W.get_value(), reference_W.get_value(), rtol=1e-12)
    assert step._direct.exact is not None
    assert not storage_of(W).synchronised


def test_the_old_buffer_is_donated_and_an_array_given_by_the_user_is_not():
    given = jnp.asarray(W0)
    W = aesara.shared(given, name="W")
    step = sgd_step(W, "AEJAX")
    for seed in range(3):
        old = storage_of(W).held()
        step(*batch(seed))
        assert old.is_deleted(), seed
    assert not given.is_deleted()
    np.testing.assert_array_equal(np.asarray(given), W0)


def test_borrow_holds_the_array_itself():
    given = jnp.asarray(W0)
    W = aesara.shared(given, borrow=True)
    assert storage_of(W).held() is given
    assert W.get_value(borrow=True, return_internal_type=True) is given
    assert W.get_value(return_internal_type=True) is not given


def test_get_value_decodes_a_copy_and_leaves_the_value_on_the_device():
    W = aesara.shared(jnp.asarray(W0))
    value = W.get_value()
    assert type(value) is np.ndarray and value.flags.writeable
    value[0, 0] = 100.0
    assert storage_of(W).holds_backend_value()
    np.testing.assert_array_equal(W.get_value(), W0)
    internal = W.get_value(return_internal_type=True)
    assert isinstance(internal, jax.Array)
    np.testing.assert_array_equal(np.asarray(internal), W0)


def test_a_borrowed_host_value_changed_in_place_is_what_the_next_call_reads():
    W, reference_W = aesara.shared(jnp.asarray(W0)), aesara.shared(W0.copy())
    step, reference = sgd_step(W, "AEJAX"), sgd_step(reference_W, REFERENCE)
    for seed in range(3):
        for shared in (W, reference_W):
            shared.get_value(borrow=True)[0] += 1.0
        np.testing.assert_allclose(step(*batch(seed)), reference(*batch(seed)), rtol=1e-12)
        np.testing.assert_allclose(W.get_value(), reference_W.get_value(), rtol=1e-12)


@pytest.mark.parametrize("new_value", [W0 * 2, jnp.asarray(W0 * 2), (W0 * 2).tolist()])
def test_set_value_takes_numpy_jax_and_python_values(new_value):
    W, reference_W = aesara.shared(jnp.asarray(W0)), aesara.shared(W0.copy())
    step, reference = sgd_step(W, "AEJAX"), sgd_step(reference_W, REFERENCE)
    step(*batch(0)), reference(*batch(0))
    W.set_value(new_value)
    reference_W.set_value(np.asarray(new_value))
    for seed in range(1, 4):
        np.testing.assert_allclose(step(*batch(seed)), reference(*batch(seed)), rtol=1e-12)
    np.testing.assert_allclose(W.get_value(), reference_W.get_value(), rtol=1e-12)


def test_set_value_rejects_a_jax_array_of_another_dtype_naming_the_field():
    W = aesara.shared(jnp.asarray(W0))
    with pytest.raises(Exception, match="dtype"):
        W.set_value(jnp.zeros((3, 4), dtype="int32"))
    np.testing.assert_array_equal(W.get_value(), W0)


@pytest.mark.parametrize("other", ["FAST_COMPILE", "FAST_RUN"])
def test_functions_of_other_backends_and_aejax_see_each_others_updates(other):
    """AEJAX, then another backend, then AEJAX again, on one variable; the same calls on a numpy one in the reference."""
    W, reference_W = aesara.shared(jnp.arange(4.0), name="W"), aesara.shared(np.arange(4.0), name="W")

    def functions(shared, first, second):
        return (
            aesara.function([], shared.sum(), updates={shared: shared * 2 + 1}, mode=first),
            aesara.function([], (shared**2).sum(), updates={shared: shared - 3}, mode=second),
        )

    ours, theirs = functions(W, "AEJAX", other)
    reference_ours, reference_theirs = functions(reference_W, REFERENCE, REFERENCE)
    assert storage_of(W).synchronised  # the other backend took the storage: it holds host values
    for fn, reference in [(ours, reference_ours), (theirs, reference_theirs)] * 2 + [(ours, reference_ours)] * 2:
        np.testing.assert_allclose(fn(), reference(), rtol=1e-12)
        np.testing.assert_allclose(W.get_value(), reference_W.get_value(), rtol=1e-12)
        assert type(storage_of(W).held()) is np.ndarray


def test_an_aejax_function_compiled_after_another_backends_sees_its_updates():
    W = aesara.shared(jnp.arange(3.0))
    theirs = aesara.function([], [], updates={W: W + 10}, mode="FAST_COMPILE")
    ours = aesara.function([], W * 1, updates={W: W + 1}, mode="AEJAX")
    for expected in ([0, 1, 2], [11, 12, 13], [22, 23, 24]):
        np.testing.assert_array_equal(ours(), expected)
        theirs()


def test_a_failed_call_leaves_the_value_unchanged():
    W = aesara.shared(jnp.ones(3))
    x = at.dvector("x")
    grow = aesara.function([x], W.sum(), updates={W: Assert("W < 10")(W + x, (W + x < 10).all())}, mode="AEJAX")
    for _ in range(3):
        grow(np.ones(3))
    before = W.get_value()
    with pytest.raises(AssertionError, match="W < 10"):
        grow(np.full(3, 20.0))
    np.testing.assert_array_equal(W.get_value(), before)
    np.testing.assert_array_equal(grow(np.ones(3)), before.sum())


class PositiveOnly(PythonDouble):
    """``x * 2`` in Python, raising ``ValueError`` for a negative element (on the host, inside the program)."""

    def perform(self, node, inputs, outputs):
        if (inputs[0] < 0).any():
            raise ValueError("negative input")
        super().perform(node, inputs, outputs)

    def infer_shape(self, fgraph, node, shapes):
        return shapes  # so the node runs inside the program, through a callback, not as a host node


def test_a_host_call_that_fails_loses_no_donated_buffer():
    """A node run through a host callback makes the program one given no buffers: its failure keeps the value."""
    W = aesara.shared(jnp.ones(3))
    x = at.dvector("x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", aejax.linker.CallbackWarning)
        step = aesara.function([x], W.sum(), updates={W: PositiveOnly()(W + x)}, mode="AEJAX")
        for _ in range(3):
            step(np.zeros(3))
        held = storage_of(W).held()
        with pytest.raises(ValueError, match="negative input"):
            step(np.full(3, -100.0))
    assert not held.is_deleted()
    np.testing.assert_array_equal(W.get_value(), np.full(3, 8.0))


def test_an_update_that_changes_the_shape_runs_without_a_donation_warning():
    def growing(W, mode):
        return aesara.function([], W.shape[0], updates={W: at.concatenate([W, W + 1])}, mode=mode)

    W, reference_W = aesara.shared(jnp.zeros(2)), aesara.shared(np.zeros(2))
    grow, reference = growing(W, "AEJAX"), growing(reference_W, REFERENCE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sizes = [int(grow()) for _ in range(4)]
    assert sizes == [int(reference()) for _ in range(4)]
    np.testing.assert_array_equal(W.get_value(), reference_W.get_value())


def test_a_scan_reads_and_its_gradient_updates_resident_weights():
    def training(W, mode):
        h0 = at.dvector("h0")
        hs, _ = aesara.scan(lambda h: at.tanh(W @ h), outputs_info=h0, n_steps=5)
        loss = (hs[-1] ** 2).sum()
        return aesara.function([h0], loss, updates={W: W - 0.1 * aesara.grad(loss, W)}, mode=mode)

    start = np.eye(3) * 0.5 + 0.1
    W, reference_W = aesara.shared(jnp.asarray(start)), aesara.shared(start.copy())
    ours, reference = training(W, "AEJAX"), training(reference_W, REFERENCE)
    for _ in range(4):
        np.testing.assert_allclose(ours(np.ones(3)), reference(np.ones(3)), rtol=1e-12)
        assert isinstance(storage_of(W).held(), jax.Array)
    np.testing.assert_allclose(W.get_value(), reference_W.get_value(), rtol=1e-12)


def test_pickles_and_copies_hold_the_host_value():
    W = aesara.shared(jnp.asarray(W0), name="W")
    step = sgd_step(W, "AEJAX")
    step(*batch(0)), step(*batch(1))
    value = W.get_value()
    for twin in (pickle.loads(pickle.dumps(W)), copy.deepcopy(W)):
        assert isinstance(twin, ResidentSharedVariable)
        np.testing.assert_array_equal(twin.get_value(), value)
    restored = pickle.loads(pickle.dumps(step))
    assert isinstance(restored.maker.inputs[-1].variable, ResidentSharedVariable)
    np.testing.assert_allclose(restored(*batch(2)), step(*batch(2)), rtol=1e-12)
    assert storage_of(W).holds_backend_value()


def test_threads_updating_and_reading_one_variable():
    """Four threads call their own function (one at a time, as Aesara's shared variables need); four read meanwhile."""
    counter = aesara.shared(jnp.zeros(()))
    steps = [aesara.function([], counter * 1, updates={counter: counter + 1}, mode="AEJAX") for _ in range(4)]
    lock, seen, failures = threading.Lock(), [], []

    def call(step):
        for _ in range(100):
            with lock:
                step()

    def read():
        try:
            for _ in range(100):
                seen.append(float(counter.get_value()))
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=call, args=(s,)) for s in steps] + [
        threading.Thread(target=read) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert float(counter.get_value()) == 400.0
    assert all(value == int(value) and 0 <= value <= 400 for value in seen)


def test_a_resident_storage_decodes_once_on_a_python_read():
    storage = ResidentStorage(None, at.dvector().type)
    value = jnp.arange(3.0)
    storage.hold(value)
    assert storage.holds_backend_value() and storage.held() is value
    host = storage[0]
    assert type(host) is np.ndarray and storage[0] is host and not storage.holds_backend_value()
    assert list(storage) == [host]
    plain = storage.host_storage()
    assert type(plain) is list and plain[0] is host
    storage.hold(jnp.ones(3))
    assert type(plain[0]) is np.ndarray and storage[0] is plain[0]


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
    for mode in ("AEJAX", "AEJAX_DEVICE"):
        W = aesara.shared(jax.device_put(jnp.zeros(8), devices[1]), name="W")
        step = aesara.function([x], (W * x).sum(), updates={W: W + x}, mode=mode)
        for _ in range(3):
            step(jax.device_put(jnp.arange(8.0), devices[1]) if mode == "AEJAX_DEVICE" else np.arange(8.0))
            held = W.get_value(borrow=True, return_internal_type=True)
            assert held.devices() == {devices[1]}, (mode, held.devices())
        np.testing.assert_array_equal(W.get_value(), np.arange(8.0) * 3)

    sharding = NamedSharding(Mesh(np.array(devices), ("i",)), PartitionSpec("i"))
    S = aesara.shared(jax.device_put(jnp.zeros(8), sharding), name="S")
    step = aesara.function([x], S.sum(), updates={S: S * 2 + x}, mode="AEJAX_DEVICE")
    for _ in range(3):
        step(jax.device_put(jnp.ones(8), sharding))
        held = S.get_value(borrow=True, return_internal_type=True)
        assert held.sharding.is_equivalent_to(sharding, 1), held.sharding
    np.testing.assert_array_equal(S.get_value(), np.full(8, 7.0))
    print("placement ok")
    """
)


def test_placement_of_resident_values_on_two_devices_in_a_fresh_process():
    assert "placement ok" in run_on_two_devices(PLACEMENT)


def test_a_call_with_keywords_takes_aesaras_path_and_keeps_the_values():
    """Keywords go through Aesara's Function.__call__, which stores the update itself after the program ran."""
    W, reference_W = aesara.shared(jnp.asarray(W0)), aesara.shared(W0.copy())
    step, reference = sgd_step(W, "AEJAX"), sgd_step(reference_W, REFERENCE)
    for seed in range(3):
        X, Y = batch(seed)
        np.testing.assert_allclose(step(X=X, Y=Y), reference(X=X, Y=Y), rtol=1e-12)
        np.testing.assert_allclose(step(X, Y), reference(X, Y), rtol=1e-12)
        np.testing.assert_allclose(W.get_value(), reference_W.get_value(), rtol=1e-12)


def test_a_deep_copy_of_a_function_updates_the_copy_of_its_variable():
    W = aesara.shared(jnp.asarray(W0), name="W")
    step = sgd_step(W, "AEJAX")
    step(*batch(0))
    twin = copy.deepcopy(step)
    (twin_W,) = [i.variable for i in twin.maker.inputs if isinstance(i.variable, ResidentSharedVariable)]
    before = W.get_value()
    twin(*batch(1))
    np.testing.assert_array_equal(W.get_value(), before)
    assert not np.array_equal(twin_W.get_value(), before)


def test_a_reader_waits_while_a_call_reuses_the_buffer_it_found():
    """A donated array is deleted when the call starts; a reader in another thread gets the update the call holds."""
    storage = ResidentStorage(None, at.dvector().type)
    old = jnp.arange(3.0)
    storage.hold(old)
    old.delete()  # as a call that donated it would
    seen = []
    reader = threading.Thread(target=lambda: seen.append(storage.host_copy()))
    reader.start()
    reader.join(0.2)
    assert reader.is_alive() and not seen  # waiting, not reading the deleted array
    storage.hold(jnp.ones(3))
    reader.join(5)
    assert not reader.is_alive()
    np.testing.assert_array_equal(seen[0], np.ones(3))


@pytest.mark.parametrize("read", [ResidentStorage.host_copy, lambda storage: storage[0]], ids=["host_copy", "item"])
def test_a_reader_whose_buffer_is_donated_while_it_reads_gets_the_update(read):
    """The call may delete the array after the reader checked it: the copy fails, and the reader waits instead."""
    storage = ResidentStorage(None, at.dvector().type)
    old = jnp.arange(3.0)
    storage.hold(old)
    decode = storage.decode

    def donated_during_the_copy(value):
        if value is old:
            old.delete()  # as a call in another thread would, at this moment
            threading.Timer(0.1, storage.hold, args=(jnp.ones(3),)).start()
        return decode(value)

    storage.decode = donated_during_the_copy
    np.testing.assert_array_equal(read(storage), np.ones(3))
