"""Ops without a JAX lowering, and lowerings registered through Aesara's extension points.

An Op that no dispatcher knows runs its Python ``perform`` through
`jax.pure_callback`; samplers and lowerings registered with Aesara's
``jax_sample_fn`` and ``jax_funcify`` are used by aejax. Values are compared
with Aesara's reference backend.
"""

import gc
import logging
import warnings

import aesara
import aesara.sparse
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.graph.basic import Apply
from aesara.graph.op import Op, _NoPythonOp
from aesara.link.jax.dispatch import jax_funcify as aesara_jax_funcify
from aesara.link.jax.dispatch.random import jax_sample_fn
from aesara.scan.utils import until
from aesara.tensor.random.basic import NormalRV
from aesara.tensor.random.op import RandomVariable
from aesara.tensor.random.utils import RandomStream
from aesara.tensor.subtensor import Subtensor
from scipy import special, stats

import aejax.linker
from aejax.linker import CallbackWarning, HostNodeWarning, LoweringError, jaxify
from tests.python_ops import NoShape
from tests.reference import REFERENCE, assert_matches_reference, compile_both

RNG = np.random.default_rng(5)
V = RNG.normal(size=5)
M = RNG.normal(size=(4, 5))
N = 20_000


class RowStats(Op):
    """Min, mean and max of a vector: a static output shape, ``perform`` only."""

    __props__ = ()

    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [at.TensorType(x.dtype, shape=(3,))()])

    def perform(self, node, inputs, outputs):
        (x,) = inputs
        outputs[0][0] = np.array([x.min(), x.mean(), x.max()], dtype=node.outputs[0].dtype)


class OuterDiff(NoShape):
    """``x[:, None] - x[None, :]``: the output shape comes from ``infer_shape``."""

    def infer_shape(self, fgraph, node, shapes):
        (n,) = shapes[0]
        return [(n, n)]


class Head(Op):
    """``x[:n]``: the output length is the value of ``n``."""

    __props__ = ()

    def make_node(self, x, n):
        x, n = at.as_tensor_variable(x), at.as_tensor_variable(n)
        return Apply(self, [x, n], [x.type()])

    def perform(self, node, inputs, outputs):
        x, n = inputs
        outputs[0][0] = x[:n].copy()

    def infer_shape(self, fgraph, node, shapes):
        return [(node.inputs[1],)]


class Float64Stats(RowStats):
    """Declares float32 outputs but computes them in float64."""

    def perform(self, node, inputs, outputs):
        (x,) = inputs
        outputs[0][0] = np.array([x.min(), x.mean(), x.max()], dtype="float64")


class CheckedLog(Op):
    """``log(x)`` that raises a `ValueError` naming the first non-positive entry, as a parameter check does."""

    __props__ = ()

    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        (x,) = inputs
        if np.any(x <= 0):
            raise ValueError(f"log needs positive values, got {x[x <= 0][0]}")
        outputs[0][0] = np.log(x)

    def infer_shape(self, fgraph, node, shapes):
        return shapes


class CheckedNothing(Op):
    """Checks that ``x`` is positive, as an Op checks its parameters, and returns an array holding no element."""

    __props__ = ()

    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [at.TensorType(x.dtype, shape=(0,))()])

    def perform(self, node, inputs, outputs):
        (x,) = inputs
        if np.any(x <= 0):
            raise ValueError(f"x must be positive, got {x[x <= 0][0]}")
        outputs[0][0] = np.empty(0, x.dtype)


class NoPerform(_NoPythonOp):
    """Neither a JAX lowering nor a Python implementation (Aesara's marker for C-only Ops)."""

    __props__ = ()

    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])


class LogitNormalRV(RandomVariable):
    """``expit`` of a normal draw: a random variable without a JAX sampler."""

    name = "logitnormal"
    ndim_supp = 0
    ndims_params = [0, 0]
    dtype = "floatX"

    @classmethod
    def rng_fn(cls, rng, mu, sigma, size):
        return special.expit(rng.normal(mu, sigma, size))


logitnormal = LogitNormalRV()


def callback_warnings(record):
    return [w for w in record if issubclass(w.category, CallbackWarning)]


@pytest.fixture
def registrations():
    """Register functions on Aesara's dispatchers for one test, then restore them.

    ``register(dispatcher, cls, function)`` registers; at teardown a class's
    previous registration is put back, or its entry removed if it had none.
    """
    added = []

    def register(dispatcher, cls, function):
        added.append((dispatcher, cls, dispatcher.registry.get(cls)))
        dispatcher.register(cls)(function)
        return function

    yield register
    for dispatcher, cls, previous in reversed(added):
        if previous is not None:
            dispatcher.register(cls)(previous)
            continue
        # singledispatch exposes only a read-only view of its registry dict.
        (registry,) = gc.get_referents(dispatcher.registry)
        del registry[cls]
        dispatcher._clear_cache()


# Ops that run their perform through a callback


@pytest.mark.parametrize("op", [RowStats(), OuterDiff()], ids=["static shape", "infer_shape"])
def test_op_with_perform_only_matches_reference(op):
    x = at.dvector("x")
    with pytest.warns(CallbackWarning, match=type(op).__name__):
        assert_matches_reference([x], [op(x) * 2 + 1], V)


def test_shape_from_infer_shape_follows_the_input():
    x = at.dvector("x")
    reference, ours = compile_both([x], OuterDiff()(x))
    with pytest.warns(CallbackWarning):
        assert ours(V).shape == (5, 5)
    assert ours(V[:3]).shape == (3, 3)
    np.testing.assert_allclose(ours(V[:3]), reference(V[:3]))


def test_inputs_known_while_tracing_decide_the_shape():
    x = at.dvector("x")
    with pytest.warns(CallbackWarning, match="Head"):
        assert_matches_reference([x], Head()(x * 2, x.shape[0] - 2), V)


def test_outputs_have_the_declared_dtypes():
    x = at.fvector("x")
    out = Float64Stats()(x)
    assert out.type.dtype == "float32"
    f = aesara.function([x], [out, OuterDiff()(x)], mode=aejax.linker.mode)
    with pytest.warns(CallbackWarning):
        stats_, diff = f(V.astype("float32"))
    assert stats_.dtype == diff.dtype == np.float32
    v = V.astype("float32")
    np.testing.assert_allclose(stats_, [v.min(), v.mean(), v.max()], rtol=1e-6)


def test_ops_in_a_scan_body_match_reference():
    xs = at.dmatrix("xs")

    def step(row, acc):
        return RowStats()(row), acc + OuterDiff()(row).sum(axis=0)

    (stats_, acc), _ = aesara.scan(step, sequences=xs, outputs_info=[None, at.zeros(5)])
    with pytest.warns(CallbackWarning):
        assert_matches_reference([xs], [stats_, acc], M)


def test_op_in_an_until_loop_matches_reference():
    v = at.dvector("v")

    def step(acc):
        new = acc * 0.5 + RowStats()(acc).sum()
        return new, until(new.sum() > 100.0)

    trace, _ = aesara.scan(step, outputs_info=v, n_steps=50)
    with pytest.warns(CallbackWarning):
        assert_matches_reference([v], trace[-1], np.array([1.0, 2.0, 3.0]))


def test_op_under_vmap():
    x = at.dvector("x")
    with pytest.warns(CallbackWarning):
        graph = jaxify([x], [OuterDiff()(x).sum(axis=1), RowStats()(x)])
        sums, row_stats = jax.jit(jax.vmap(lambda row: graph.fn(graph.state, row)[0]))(M)
    reference = aesara.function([x], [OuterDiff()(x).sum(axis=1), RowStats()(x)], mode=REFERENCE)
    for i, row in enumerate(M):
        expected_sums, expected_stats = reference(row)
        np.testing.assert_allclose(sums[i], expected_sums)
        np.testing.assert_allclose(row_stats[i], expected_stats)


def test_one_warning_naming_the_op():
    x = at.dvector("x")
    a = at.lscalar("a")
    f = aesara.function([x, a], RowStats()(x[:a]) * 2, mode=aejax.linker.mode)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for n in (5, 5, 3, 4):  # new values of `a` retrace the graph
            f(V, n)
    (warning,) = callback_warnings(record)
    assert "RowStats" in str(warning.message) and "jax_funcify.register" in str(warning.message)


def test_data_dependent_shape_starts_a_program_where_the_count_is_static():
    x = at.dvector("x")
    reference, f = compile_both([x], Head()(x, (x > 0).sum()))
    with pytest.warns(CallbackWarning, match="Head"):
        np.testing.assert_array_equal(f(V), reference(V))
    with pytest.warns(aejax.linker.ShapeInputWarning):  # another count: another program
        np.testing.assert_array_equal(f(np.abs(V)), reference(np.abs(V)))


def test_data_dependent_shape_in_jaxify_raises_naming_the_op():
    x = at.dvector("x")
    graph = jaxify([x], [Head()(x, (x > 0).sum())], {})
    with pytest.raises(LoweringError, match="Head") as info:
        jax.jit(graph.fn)({}, V)
    assert "depends on values" in str(info.value)


def test_shape_deciding_integer_input_becomes_static():
    x = at.dvector("x")
    n = at.lscalar("n")
    reference, f = compile_both([x, n], Head()(x + 1, n))
    with pytest.warns(CallbackWarning):
        np.testing.assert_array_equal(f(V, 2), reference(V, 2))
    with pytest.warns(aejax.linker.ShapeInputWarning, match="'n'"):
        np.testing.assert_array_equal(f(V, 3), reference(V, 3))


@pytest.mark.parametrize("in_loop", [False, True], ids=["graph", "scan step"])
def test_exception_raised_by_perform_reaches_the_caller_as_it_was(in_loop):
    """The reference raises the Op's own `ValueError`; so does aejax, not JAX's runtime error, and nothing is stored."""
    x = at.dvector("x")
    logs = aesara.scan(lambda x_t: CheckedLog()(x_t), sequences=x)[0] if in_loop else CheckedLog()(x)
    srng = RandomStream(seed=3)
    noise = srng.normal(size=3)
    outputs = [logs, noise]
    reference, ours = compile_both([x], outputs, updates=srng.updates())
    with pytest.warns(CallbackWarning):
        np.testing.assert_allclose(ours(np.array([1.0, 2.0]))[0], reference(np.array([1.0, 2.0]))[0])
    state = srng.state_updates[0][0].get_value(borrow=False).bit_generator.state
    for f in (reference, ours, ours):  # the second call of ours takes the path of a warm function
        with pytest.raises(ValueError, match="log needs positive values, got -2.0"):
            f(np.array([1.0, -2.0, -3.0]))
    assert srng.state_updates[0][0].get_value(borrow=False).bit_generator.state == state
    np.testing.assert_allclose(ours(np.array([3.0]))[0], np.log([3.0]))


def test_a_failing_perform_is_not_also_logged_by_jax_as_an_error(caplog):
    """JAX logs a failed callback with its traceback; the caller gets the Op's error, as from the reference, and no
    log of it. A callback of the user's own that fails is logged by JAX as before."""
    x = at.dvector("x")
    ours = aesara.function([x], CheckedLog()(x), mode=aejax.linker.mode)
    with pytest.warns(CallbackWarning):
        ours(np.ones(2))
    with caplog.at_level(logging.ERROR, logger="jax"), pytest.raises(ValueError, match="log needs positive values"):
        ours(-np.ones(2))
    assert not caplog.records

    def refuses(v):
        raise ValueError("refused")

    with caplog.at_level(logging.ERROR, logger="jax"), pytest.raises(Exception, match="refused"):
        jax.pure_callback(refuses, jax.ShapeDtypeStruct((), np.float32), np.float32(1)).block_until_ready()
    assert [record.getMessage() for record in caplog.records] == ["jax.pure_callback failed"]


@pytest.mark.parametrize("in_loop", [False, True], ids=["graph", "scan step"])
def test_a_check_in_perform_raises_though_its_outputs_hold_no_element(in_loop):
    """XLA drops a pure callback whose results are empty: the Op's ``perform`` must run all the same, and raise for
    the values it refuses, as the reference does."""
    x = at.dvector("x")
    if in_loop:
        out = aesara.scan(lambda x_t: at.concatenate([CheckedNothing()(x_t[None]), x_t[None] * 2]), sequences=x)[0]
    else:
        out = at.concatenate([CheckedNothing()(x), x * 2])
    reference, ours = compile_both([x], out)
    with pytest.warns(CallbackWarning):
        np.testing.assert_array_equal(ours(np.array([1.0, 2.0])), reference(np.array([1.0, 2.0])))
    named = []
    for f in (reference, ours, ours):  # the second call of ours takes the path of a warm function
        with pytest.raises(ValueError, match="x must be positive, got -2.0") as info:
            f(np.array([1.0, -2.0, 3.0]))
        named.append(str(info.value).split("Apply node that caused the error: ")[-1].splitlines()[:6])
    if in_loop:  # the Scan, whose inputs stayed in the program; the reference names it last, after its step's node
        assert named[1][0] == named[2][0] and named[1][0].startswith("for{cpu,scan_fn}(")
        assert named[0][0].startswith("for{cpu,scan_fn}(")
    else:  # the node, with the values its perform was given, as the reference names it
        assert named[1] == named[2] == named[0]
        assert named[0][0] == "CheckedNothing(x)" and named[0][5] == "Inputs values: [array([ 1., -2.,  3.])]"


class CheckedNoShape(NoShape):
    """`NoShape` (it runs on the host between two programs) refusing a negative entry, as an Op checks its inputs."""

    def perform(self, node, inputs, outputs):
        if np.any(inputs[0] < 0):
            raise ValueError("x must not be negative")
        super().perform(node, inputs, outputs)


def test_a_node_between_programs_that_raises_is_named_as_the_reference_names_it():
    x = at.dvector("x")
    reference, ours = compile_both([x], CheckedNoShape()(x * 2).sum() + 1)
    with pytest.warns(HostNodeWarning):
        np.testing.assert_allclose(ours(np.ones(2)), reference(np.ones(2)))
    named = []
    for f in (reference, ours, ours):
        with pytest.raises(ValueError, match="x must not be negative") as info:
            f(np.array([1.0, -2.0]))
        named.append(str(info.value).split("Apply node that caused the error: ")[1].splitlines())
    assert named[0][0] == named[1][0] == named[2][0] and named[0][0].startswith("CheckedNoShape(")
    assert named[1][5] == named[2][5] == named[0][5] == "Inputs values: [array([ 2., -4.])]"


def _neighbours() -> object:
    """Aesara's deprecated ``aesara.tensor.nnet.neighbours`` (`Images2Neibs` has no JAX lowering)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from aesara.tensor.nnet import neighbours

    return neighbours


def test_images2neibs_refuses_a_step_of_zero_as_the_reference_does():
    """Aesara's own case (tests/tensor/nnet/test_neighbours.py::TestImages2Neibs::test_can_not_infer_nb_dim): a
    neighbourhood of width 0, which ``Images2Neibs.perform`` refuses, where the node's output holds no element."""
    neibs2images = _neighbours().neibs2images
    patches, size = at.matrix("patches"), at.ivector("size")
    reference, ours = compile_both([patches, size], neibs2images(patches, (16, 16), size, mode="ignore_borders"))
    values = np.ones((3 * 20 * 20, 256), aesara.config.floatX)
    with pytest.warns(CallbackWarning):
        np.testing.assert_array_equal(ours(values, [1, 3, 320, 320]), reference(values, [1, 3, 320, 320]))
    for f in (reference, ours):
        with pytest.raises(ValueError, match="neib_step wrong step"):
            f(values, [3, 320, 320, 1])


def test_an_op_whose_infer_shape_needs_a_vectors_length_runs_on_the_host():
    """``Images2Neibs.infer_shape`` unpacks its step, a vector of unknown length here: as for Aesara's own shape
    inference, the shapes are unknown, so the node runs on the host, and gives the reference's values and errors."""
    image, step = at.matrix("image"), at.lvector("step")
    out = _neighbours().images2neibs(image[None, None], [2, 2], step, mode="ignore_borders")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Aesara's own "Failed to infer_shape" while rewriting
        reference, ours = compile_both([image, step], out)
    values = np.arange(20.0).reshape(4, 5)
    for steps in ([2, 2], [1, 3], [2, 2]):
        np.testing.assert_array_equal(ours(values, steps), reference(values, steps))
    for f in (reference, ours):
        with pytest.raises(ValueError, match="neib_step wrong step"):
            f(values, [0, 2])


def test_op_without_perform_still_raises_at_compile_time():
    x = at.dvector("x")
    with pytest.raises(LoweringError, match="NoPerform") as info:
        aesara.function([x], NoPerform()(x), mode=aejax.linker.mode)
    assert "no Python perform" in str(info.value) and "jax_funcify.register" in str(info.value)


def test_op_with_outputs_that_cannot_cross_a_callback_raises_at_compile_time():
    x = at.dmatrix("x")
    total = aesara.sparse.sp_sum(aesara.sparse.csc_from_dense(x))
    with pytest.raises(LoweringError, match="SparseFromDense") as info:
        aesara.function([x], total, mode=aejax.linker.mode)
    assert "cannot come back from a host callback" in str(info.value)


# Random variables without a sampler


def draws(make_rv, seed=3, ctor=np.random.default_rng, mode=aejax.linker.mode):
    srng = RandomStream(seed=seed, rng_ctor=ctor)
    return aesara.function([], make_rv(srng), updates=srng.updates(), mode=mode)


def logitnormal_draw(srng):
    return srng.gen(logitnormal, 0.5, 1.2, size=N)


@pytest.mark.parametrize("ctor", [np.random.default_rng, np.random.RandomState])
def test_rv_without_sampler_matches_reference_in_distribution(ctor):
    expected = draws(logitnormal_draw, ctor=ctor, mode=REFERENCE)()
    with pytest.warns(CallbackWarning, match=r"jax_sample_fn\.register\(LogitNormalRV\)"):
        got = draws(logitnormal_draw, ctor=ctor)()
    assert got.shape == expected.shape == (N,) and got.dtype == expected.dtype
    standard_error = expected.std() / np.sqrt(N)
    assert abs(got.mean() - expected.mean()) < 6 * standard_error
    assert got.std() == pytest.approx(expected.std(), rel=0.05)
    assert stats.ks_2samp(got, expected).pvalue > 1e-4


def test_rv_without_sampler_is_reproducible_and_advances():
    with pytest.warns(CallbackWarning):
        f, g = draws(logitnormal_draw, seed=8), draws(logitnormal_draw, seed=8)
        first = f()
        np.testing.assert_array_equal(g(), first)
        assert not np.array_equal(f(), first)
        assert not np.array_equal(draws(logitnormal_draw, seed=9)(), first)


def test_rv_without_sampler_advances_a_shared_generator():
    rng = aesara.shared(np.random.default_rng(0))
    x = logitnormal(0.0, 1.0, size=4, rng=rng)
    next_rng = x.owner.outputs[0]
    f = aesara.function([], x, updates={rng: next_rng}, mode=aejax.linker.mode)
    before = rng.get_value(borrow=False)
    with pytest.warns(CallbackWarning):
        first, second = f(), f()
    assert not np.array_equal(first, second)
    assert rng.get_value().bit_generator.state != before.bit_generator.state
    assert np.all((first > 0) & (first < 1))


def test_rv_without_sampler_shape_from_parameters():
    mu = at.dvector("mu")
    srng = RandomStream(seed=4)
    reference, ours = compile_both([mu], srng.gen(logitnormal, mu, 1e-9), updates=srng.updates())
    with pytest.warns(CallbackWarning):
        got = ours(V)
    assert got.shape == reference(V).shape == (5,)
    np.testing.assert_allclose(got, special.expit(V), rtol=1e-6)


def test_rv_without_sampler_in_a_scan():
    srng = RandomStream(seed=6)
    start = at.constant(0.0, dtype="float64")
    walk, updates = aesara.scan(lambda x: x + srng.gen(logitnormal, 0.0, 1.0), outputs_info=start, n_steps=40)
    f = aesara.function([], walk, updates=updates, mode=aejax.linker.mode)
    with pytest.warns(CallbackWarning):
        first = f()
    steps = np.diff(first, prepend=0.0)
    assert first.shape == (40,) and np.all((steps > 0) & (steps < 1))
    assert len(np.unique(steps)) == 40
    assert not np.array_equal(f(), first)


def test_rv_without_sampler_under_vmap_draws_per_key():
    srng = RandomStream(seed=12)
    graph = jaxify([], srng.gen(logitnormal, 0.0, 1.0, size=3), updates=srng.updates())
    (name,) = graph.state
    keys = jax.random.split(graph.state[name], 4)
    with pytest.warns(CallbackWarning):
        batched, new_keys = jax.vmap(lambda key: graph.fn({name: key}))(keys)
    assert batched.shape == (4, 3) and len(np.unique(batched)) == 12
    for key, draw, new_key in zip(keys, batched, new_keys[name]):
        single, state = graph.fn({name: key})
        np.testing.assert_array_equal(draw, single)
        assert jax.random.key_data(state[name]).tolist() == jax.random.key_data(new_key).tolist()
        assert jax.random.key_data(new_key).tolist() != jax.random.key_data(key).tolist()


def test_polyagamma_mean():
    dists = pytest.importorskip("aemcmc.dists")
    b, c = 1.5, 2.0

    def draw(srng):
        return srng.gen(dists.polyagamma, b, c, size=N)

    with pytest.warns(CallbackWarning, match="PolyaGammaRV"):
        got = draws(draw)()
    expected = draws(draw, mode=REFERENCE)()
    mean = b / (2 * c) * np.tanh(c / 2)
    standard_error = got.std() / np.sqrt(N)
    assert got.dtype == expected.dtype
    assert abs(got.mean() - mean) < 6 * standard_error
    assert abs(expected.mean() - mean) < 6 * standard_error
    assert stats.ks_2samp(got, expected).pvalue > 1e-4


# Aesara's extension points


def aesara_style_logitnormal(op):
    def sample_fn(rng, size, dtype, mu, sigma):
        key, draw_key = jax.random.split(rng["jax_state"])
        rng["jax_state"] = key
        return rng, jax.scipy.special.expit(mu + sigma * jax.random.normal(draw_key, size, dtype))

    return sample_fn


class Spy:
    """Count calls of a function registered with Aesara."""

    def __init__(self, function):
        self.function = function
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.function(*args, **kwargs)


def test_jax_sample_fn_registration_is_used(registrations):
    class JAXLogitNormalRV(LogitNormalRV):
        pass

    spy = registrations(jax_sample_fn, JAXLogitNormalRV, Spy(aesara_style_logitnormal))
    rv = JAXLogitNormalRV()
    expected = draws(lambda s: s.gen(rv, 0.5, 1.2, size=N), mode=REFERENCE)()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        f = draws(lambda s: s.gen(rv, 0.5, 1.2, size=N))
        got = f()
    assert spy.calls == 1 and not callback_warnings(record)
    assert stats.ks_2samp(got, expected).pvalue > 1e-4
    assert not np.array_equal(f(), got)


def test_jax_sample_fn_on_a_subclass_of_our_sampler_wins(registrations):
    class ShiftedNormalRV(NormalRV):
        pass

    def shifted(op):
        def sample_fn(rng, size, dtype, loc, scale):
            key, draw_key = jax.random.split(rng["jax_state"])
            rng["jax_state"] = key
            return rng, 100.0 + loc + scale * jax.random.normal(draw_key, size, dtype)

        return sample_fn

    spy = registrations(jax_sample_fn, ShiftedNormalRV, Spy(shifted))
    got = draws(lambda s: s.gen(ShiftedNormalRV(), 1.0, 2.0, size=N))()
    assert spy.calls == 1
    assert got.mean() == pytest.approx(101.0, abs=0.1)


def test_our_sampler_wins_on_the_class_it_names(registrations):
    spy = registrations(jax_sample_fn, NormalRV, Spy(jax_sample_fn.dispatch(NormalRV)))
    expected = draws(lambda s: s.normal(1.0, 2.0, size=N), mode=REFERENCE)()
    got = draws(lambda s: s.normal(1.0, 2.0, size=N))()
    assert spy.calls == 0
    assert stats.ks_2samp(got, expected).pvalue > 1e-4


def test_jax_sample_fn_returning_a_python_number(registrations):
    """Aesara's ``test_random_custom_implementation``: ``sample_fn`` returns ``(rng, 0)``, a draw of the variable's
    dtype, as the reference makes one of ``rng_fn``'s 0."""

    class ZeroRV(RandomVariable):
        name = "zero"
        ndim_supp = 0
        ndims_params = []
        dtype = "floatX"

        def rng_fn(self, rng, size):
            return 0

    def zero(op):
        def sample_fn(rng, size, dtype, *parameters):
            return rng, 0

        return sample_fn

    registrations(jax_sample_fn, ZeroRV, zero)
    assert_matches_reference([], ZeroRV()(rng=aesara.shared(np.random.RandomState(123))))


def test_jax_funcify_registration_on_a_new_op_is_used(registrations):
    def lower(op, node=None, **kwargs):
        return lambda x: x[:, None] - x[None, :]

    spy = registrations(aesara_jax_funcify, OuterDiff, Spy(lower))
    x = at.dvector("x")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert_matches_reference([x], OuterDiff()(x), V)
    assert spy.calls == 1 and not callback_warnings(record)


def test_jax_funcify_registration_on_a_subclass_of_our_op_wins(registrations):
    class LoggedSubtensor(Subtensor):
        pass

    spy = registrations(aesara_jax_funcify, LoggedSubtensor, Spy(aesara_jax_funcify.dispatch(Subtensor)))
    x = at.dmatrix("x")
    plain = x[1:, ::2]
    logged = LoggedSubtensor(plain.owner.op.idx_list)(x, *plain.owner.inputs[1:])
    assert_matches_reference([x], logged * 2, M)
    assert spy.calls == 1


def test_jax_funcify_registration_on_a_subclass_of_our_rv_wins(registrations):
    class FlippedNormalRV(NormalRV):
        pass

    def lower(op, node=None, **kwargs):
        shape = node.outputs[1].type.shape

        def flipped(rng, size, dtype, loc, scale):
            key, draw_key = jax.random.split(rng["jax_state"])
            return {"jax_state": key}, -(loc + scale * jax.random.normal(draw_key, shape))

        return flipped

    spy = registrations(aesara_jax_funcify, FlippedNormalRV, Spy(lower))
    f = draws(lambda s: s.gen(FlippedNormalRV(), 3.0, 0.5, size=N))
    got = f()
    assert spy.calls == 1
    assert got.mean() == pytest.approx(-3.0, abs=0.05)
    assert not np.array_equal(f(), got)
