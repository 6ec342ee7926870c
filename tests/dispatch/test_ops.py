"""Graphs of ordinary Ops under aejax's mode against the reference backend."""

import warnings

import aesara
import aesara.scalar as aes
import aesara.tensor as at
import numpy as np
import pytest
from aesara.ifelse import ifelse
from aesara.tensor.elemwise import CAReduce
from aesara.tensor.math import Mean, ProdWithoutZeros

import aejax.linker
from aejax.linker import ShapeInputWarning
from tests.reference import REFERENCE, assert_matches_reference

rng = np.random.default_rng(42)
X = rng.normal(size=(3, 4))
Y = rng.normal(size=(4, 2))
V = rng.normal(size=4)


def case(name, build, *values):
    return pytest.param(build, values, id=name)


def _x():
    return at.dmatrix("x")


def _v():
    return at.dvector("v")


CASES = [
    case("elemwise", lambda x: [at.exp(x) * 2 - at.tanh(x) / (1 + x**2)], X),
    case("comparisons", lambda x: [at.switch(x > 0, x, -x), at.eq(x, 0), at.maximum(x, 0.5)], X),
    case("int arithmetic", lambda v: [at.cast(v * 10, "int32") // 3, at.cast(v * 10, "int64") % 4], V),
    case("reductions", lambda x: [x.sum(), x.sum(axis=0), x.max(axis=1), x.prod(), x.mean(), at.argmax(x, axis=1)], X),
    case(
        "gradients of products, with zeros",
        lambda x: aesara.grad(at.prod(x), x) + aesara.grad(at.prod(x * (x > 0), axis=1).sum(), x),
        X,
    ),
    case("dot", lambda x: [at.dot(x, at.constant(Y)), x.T @ x], X),
    case("reshape and dimshuffle", lambda x: [x.reshape((4, 3)), x.dimshuffle(1, "x", 0), x.flatten(), x.shape], X),
    case("reshape from runtime shape", lambda x: [x.reshape((x.shape[1], x.shape[0] * 1))], X),
    case("basic subtensor", lambda x: [x[1], x[:, 1:3], x[::-1, -1], x[1:, ::2]], X),
    case("advanced subtensor", lambda x: [x[[0, 2]], x[[0, 2], [1, 3]], x[:, [3, 0]]], X),
    case("boolean mask sum", lambda v: [v[v > 0].sum()], V),
    case(
        "set and inc subtensor",
        lambda x: [at.set_subtensor(x[1:, 2], 5.0), at.inc_subtensor(x[0], 1.0), at.inc_subtensor(x[[0, 0, 2]], 1.0)],
        X,
    ),
    case(
        "fill whose shape side broadcasts", lambda x: [at.zeros(x.shape[1]) + x.sum(), at.ones_like(x[0]) * x.sum()], X
    ),
    case(
        "alloc and zeros",
        lambda x: [at.zeros_like(x) + 1, at.alloc(x[0, 0], 2, x.shape[1]), at.ones((x.shape[0] * 2,))],
        X,
    ),
    case(
        "arange from shapes",
        lambda x: [at.arange(x.shape[0]), at.arange(1, x.shape[1] * 2, 2), at.arange(0.0, 1.0, 0.25)],
        X,
    ),
    case(
        "concatenate and stack", lambda x: [at.concatenate([x, x], axis=0), at.stack([x[0], x[1]]), at.join(1, x, x)], X
    ),
    case("eye", lambda x: [at.eye(x.shape[0], x.shape[1], 1)], X),
    case("ifelse", lambda v: [ifelse(v.sum() > 0, v * 2, v - 1)], V),
    case("cumsum and extra ops", lambda v: [at.cumsum(v), at.extra_ops.repeat(v, 2), at.sort(v), at.argsort(v)], V),
    case("linear algebra", lambda x: [at.nlinalg.matrix_inverse(x @ x.T + at.eye(3)), at.nlinalg.det(x @ x.T)], X),
]


@pytest.mark.parametrize("build, values", CASES)
def test_graph_matches_reference(build, values):
    inputs = [_x() if np.ndim(v) == 2 else _v() for v in values]
    assert_matches_reference(inputs, build(*inputs), *values)


def test_runtime_scalar_index():
    x, i = _x(), at.iscalar("i")
    for value in (0, 2, -1):
        assert_matches_reference([x, i], [x[i], x[:, i], at.set_subtensor(x[i, 0], 1.0)], X, value)


def test_problem_report_dynamic_slice():
    a = at.iscalar("a")
    x = at.arange(3)
    f = aesara.function([a], x[:a], mode=aejax.linker.mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShapeInputWarning)  # silent until a second value costs a compilation
        np.testing.assert_array_equal(f(1), np.arange(3)[:1])
    with pytest.warns(ShapeInputWarning, match=r"'a'.*\(2 after 1\)"):
        np.testing.assert_array_equal(f(2), np.arange(3)[:2])


@pytest.mark.parametrize(
    "make",
    [
        lambda n: at.zeros((n * 2,)),
        lambda n: at.arange(n + 1),
        lambda n: at.ones((at.cast(n, "int64"), 2)),
        lambda n: at.arange(10)[: n - 1],
    ],
    ids=["n * 2", "a + 1", "cast", "slice n - 1"],
)
@pytest.mark.parametrize("dtype", ["int32", "int64", "int8", "uint16"])
def test_runtime_shape_inputs_of_any_integer_dtype(make, dtype):
    n = at.scalar("n", dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        for value in (2, 3):
            assert_matches_reference([n], make(n), value)


def test_compile_cache_is_hit_for_repeated_value_and_grows_for_new_one():
    n = at.iscalar("n")
    v = _v()
    f = aesara.function([n, v], at.ones((n,)) * v.sum(), mode=aejax.linker.mode)
    program = f.vm.jit_fn.segments[0].program
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShapeInputWarning)
        f(3, V)
        f(3, V * 2)
        assert len(program.programs) == 1
    with pytest.warns(ShapeInputWarning) as record:
        np.testing.assert_allclose(f(4, V), np.ones(4) * V.sum())
        f(5, V)
    assert len([w for w in record if issubclass(w.category, ShapeInputWarning)]) == 1
    assert len(program.programs) == 3
    assert program.static_positions == (0,)


def test_shared_tensor_updates_match_reference():
    for mode in ("FAST_COMPILE", aejax.linker.mode):
        s = aesara.shared(np.arange(3.0), name="s")
        f = aesara.function([], s.sum(), updates={s: s * 2 + 1}, mode=mode)
        results = [f() for _ in range(3)]
        if mode == "FAST_COMPILE":
            expected = (results, s.get_value())
        else:
            assert results == expected[0]
            np.testing.assert_array_equal(s.get_value(), expected[1])


def test_outputs_are_writeable_numpy_arrays():
    x = _x()
    f = aesara.function([x], [x * 2, x.sum()], mode=aejax.linker.mode)
    out, total = f(X)
    assert isinstance(out, np.ndarray) and out.flags.writeable
    assert isinstance(total, np.ndarray) and total.dtype == np.float64


def test_float32_graph_keeps_float32():
    x = at.fvector("x")
    assert_matches_reference([x], [x * 2 + at.constant(np.float32(1)), x.sum()], V.astype("float32"), rtol=1e-6)


def test_op_from_graph():
    from aesara.compile.builders import OpFromGraph

    a, b = at.dvector("a"), at.dvector("b")
    combined = OpFromGraph([a, b], [a * b + at.exp(a), (a - b).sum()])
    x, y = at.dvector("x"), at.dvector("y")
    outs = combined(x, y)
    assert_matches_reference([x, y], [outs[0] * 2, outs[1]], V, V[::-1].copy())


def test_an_op_from_graph_that_updates_a_generator_inside_is_refused_by_name():
    """A non-inlined OpFromGraph stores its random generator's update itself; AEJAX would drop it (same draws each call)."""
    from aesara.compile.builders import OpFromGraph

    def normal_draw(inline):
        x = at.dscalar("x")
        y = at.random.RandomStream(239).normal(x, name="y")
        y.owner.inputs[0].name = "rng"
        return OpFromGraph([x], [y], inline=inline)(at.as_tensor(np.float64(0.0)))

    with pytest.raises(aejax.linker.LoweringError, match="updates 'rng' inside its inner graph.*inline=True"):
        aesara.function([], normal_draw(inline=False), mode=aejax.linker.mode)
    f = aesara.function([], normal_draw(inline=True), mode=aejax.linker.mode)
    assert len({float(f()) for _ in range(3)}) == 3


def test_floor_division_by_zero_gives_numpys_values():
    """numpy's ``a // 0`` is 0 for integers and ``a / 0`` (an infinity or nan) for floats; XLA's differs."""
    a, b, x = at.lvector("a"), at.lvector("b"), at.dvector("x")
    zero = at.constant(0.0, dtype="float64")
    outputs = [a // b, a % b, x // zero, x // x]
    assert_matches_reference([a, b, x], outputs, np.array([7, -7, 0]), np.array([0, 2, 0]), np.array([1.0, -1.0, 0.0]))


def test_floats_cast_to_narrow_integers_keep_the_low_bits_as_numpy_does():
    """numpy gives int8 44 for 300.7 and uint8 255 for -1.7 (through a 64-bit integer); XLA would saturate."""
    f = at.dvector("f")
    outputs = [at.cast(f, "int8"), at.cast(f, "uint8"), at.cast(at.cast(f, "float32"), "int16")]
    assert_matches_reference([f], outputs, np.array([-1.7, 300.7, 1e10, 70000.5]))


def test_argmax_when_a_kept_axis_is_empty():
    m, n = at.dmatrix("m"), at.dmatrix("n")
    outputs = [at.argmax(m, axis=1), at.argmin(n, axis=0), at.argmax(m, axis=1, keepdims=True)]
    assert_matches_reference([m, n], outputs, np.zeros((0, 3)), np.zeros((3, 0)))


def _constants_with_floating_point_errors():
    """Graphs whose constants numpy computes with a floating-point warning (divide by zero, invalid, overflow):
    folded by Aesara's rewrites, or while tracing from a concrete shape (``log(len(v) - 2)``, also in a step)."""
    x, v = at.dscalar("x"), at.dvector("v")
    zeros, ones = at.constant(np.array([0.0, 0.0])), at.constant(np.array([0.0, 1.0]))
    no_rows = at.cast(v.shape[0] - 2, "float64")
    outputs = [
        at.log1p(at.constant(-1.0)),
        x + at.log(at.constant(0.0)),
        at.true_divide(ones, zeros) + x,
        at.exp(at.constant(1000.0)) - at.constant(np.inf),
        at.log(no_rows) + x,
        at.true_divide(no_rows, no_rows) + x,
    ]
    steps, _ = aesara.scan(
        lambda k, acc: acc + k * at.log1p(at.constant(-1.0)) + at.true_divide(ones, zeros) + at.log(no_rows),
        sequences=[at.arange(1.0, 4.0)],
        outputs_info=[at.zeros(2) + x],
    )
    return [x, v], [*outputs, steps]


def test_constants_with_floating_point_errors_fold_silently_to_the_references_values():
    """Folded while compiling (Aesara's constant folding) and while tracing: ``-inf``, ``inf``, ``nan`` as the
    reference computes them, without numpy's RuntimeWarning (the C backend folds in C, silently)."""
    inputs, outputs = _constants_with_floating_point_errors()
    args = (2.0, np.ones(2))
    expected = aesara.function(inputs, outputs, mode=REFERENCE)(*args)
    with warnings.catch_warnings(), aesara.config.change_flags(on_opt_error="raise"):
        warnings.simplefilter("error")
        got = aesara.function(inputs, outputs, mode=aejax.linker.mode)(*args)
    for g, e in zip(got, expected):
        assert np.asarray(g).dtype == e.dtype
        np.testing.assert_array_equal(np.asarray(g), e)


def test_reductions_accumulate_in_their_acc_dtype_and_return_their_dtype():
    """A float32 ``mean`` of ``[1e8, 1, -1e8]`` accumulates in float64 (1/3), as Aesara's ``acc_dtype`` says; so do
    ``Mean``, sums and products cast to a narrower dtype, and `ProdWithoutZeros` (0 when all entries are zero)."""
    f, i, z = at.fvector("f"), at.bvector("i"), at.dmatrix("z")
    outputs = [
        at.mean(f),
        Mean()(f),
        at.sum(f, dtype="float32"),
        at.sum(i, dtype="int8"),
        at.sum(f, dtype="int8"),
        ProdWithoutZeros(axis=(1,))(z),
        ProdWithoutZeros()(z),
    ]
    args = (np.array([1e8, 1, -1e8], "float32"), np.array([100, 100, 100], "int8"), np.array([[0.0, 2.0], [0.0, 0.0]]))
    assert_matches_reference([f, i, z], outputs, *args, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "complex128", "int8", "bool"])
def test_every_careduce_matches_reference_with_nan_inputs(dtype):
    """A plain `CAReduce` of each scalar Op (Aesara's ``TestCAReduce.test_perform_nan``), over every axis set; a nan
    (a complex one too) wins max and min as in numpy; ``max``, ``min``, ``all`` and ``any`` of the tensor API."""
    x = at.tensor(dtype, shape=(None, None), name="x")
    scalar_ops = [aes.add, aes.mul, aes.scalar_maximum, aes.scalar_minimum]
    if dtype in ("int8", "bool"):
        scalar_ops += [aes.and_, aes.or_, aes.xor]
    axes = [None, (0,), (1,), ()]
    outputs = [CAReduce(op, axis=axis)(x) for op in scalar_ops for axis in axes]
    tensor_api = (at.all, at.any) if dtype == "complex128" else (at.max, at.min, at.all, at.any)  # no complex min
    outputs += [reduce(x, axis=axis) for reduce in tensor_api for axis in (None, 1)]
    value = rng.normal(size=(3, 4)) * 3
    if dtype in ("float64", "complex128"):
        value[0, 0] = value[2, 1] = np.nan
    assert_matches_reference([x], outputs, value.astype(dtype))


def test_choose_from_a_tuple_of_arrays_lowers_its_make_list():
    a, c1, c2 = at.lvector("a"), at.lvector("c1"), at.lvector("c2")
    got = assert_matches_reference([a, c1, c2], at.basic.choose(a, (c1, c2)), [0, 1, 0], [1, 2, 3], [10, 20, 30])
    np.testing.assert_array_equal(got[0], [1, 20, 3])
