"""Every kind of Scan input and output, against Aesara's reference backend."""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.compile.mode import Mode
from aesara.graph.rewriting.db import RewriteDatabaseQuery
from aesara.ifelse import ifelse

import aejax.linker
from aejax.linker import InvalidValueError, ShapeInputWarning
from tests.reference import assert_matches_reference, compile_both
from tests.scan.stepping import LOOPS, scanning

RNG = np.random.default_rng(7)
VEC = RNG.normal(size=8)
MAT = RNG.normal(size=(6, 3))
SQ = RNG.normal(size=(3, 3)) * 0.4


scan = scanning(False)


def case(kind, name, build, *values):
    """A Scan built by ``build(loop)`` (``loop`` is `aesara.scan` returning outputs), run on ``values``."""
    return pytest.param(build, values, id=f"{kind}: {name}", marks=pytest.mark.kind(kind))


def seq_taps(loop):
    a = at.dvector("a")
    return [a], loop(lambda prev, cur, nxt: prev + 2 * cur - nxt, sequences=dict(input=a, taps=[-1, 0, 1]))


def several_of_each(loop):
    xs, h0, c0, w = at.dmatrix("xs"), at.dvector("h0"), at.dmatrix("c0"), at.dscalar("w")

    def step(x, c_m2, c_m1, h, w):
        c = c_m1 * w + c_m2.mean() + x.sum()
        h_new = at.tanh(h * w + x)
        return c, h_new, h_new.sum() * 2, at.cast(h_new.argmax(), "int64")

    outs = loop(
        step,
        sequences=xs,
        outputs_info=[dict(initial=c0, taps=[-2, -1]), h0, None, None],
        non_sequences=w,
    )
    return [xs, h0, c0, w], outs


def matrix_sit_sot(loop):
    m = at.dmatrix("m")
    return [m], loop(lambda s, m: at.dot(m, s) + 1.0, outputs_info=at.eye(3), non_sequences=m, n_steps=4)


def int_sit_sot(dtype):
    def build(loop):
        k = at.scalar("k", dtype=dtype)
        return [k], loop(lambda c: c * 2 + 1, outputs_info=k, n_steps=5)

    return build


def scalar_nit_sot(loop):
    a = at.dvector("a")
    return [a], loop(lambda x: (x**2, at.cast(x > 0, "int32")), sequences=a)


def go_backwards(loop):
    a, s0 = at.dvector("a"), at.dscalar("s0")
    return [a, s0], loop(lambda x, s: s * 0.5 + x, sequences=a, outputs_info=s0, go_backwards=True)


def nested_scan(loop):
    m = at.dmatrix("m")

    def row(r):
        return loop(lambda x, acc: acc + x, sequences=r, outputs_info=at.constant(np.float64(0.0)))[-1]

    return [m], loop(row, sequences=m)


def ifelse_step(loop):
    a, s0 = at.dvector("a"), at.dscalar("s0")
    return [a, s0], loop(lambda x, s: ifelse(x > 0, s + x, s * 0.5), sequences=a, outputs_info=s0)


def last_value_only(loop):
    s0 = at.dscalar("s0")
    out = loop(lambda s: at.sin(s) + s, outputs_info=s0, n_steps=50)
    return [s0], [out[-1], out[-3:]]


def mit_sot_last_value(loop):
    init = at.dvector("init")
    out = loop(lambda xm1, xm3: 0.5 * xm1 + 0.25 * xm3, outputs_info=[dict(initial=init, taps=[-1, -3])], n_steps=20)
    return [init], out[-1]


def last_values_and_lengths(loop):
    """Each kind's last value and the lengths of its trace and of cuts of it: no trace is kept (`ScanKeepLast`)."""
    init, s0 = at.dvector("init"), at.dscalar("s0")
    m, s, n = loop(
        lambda m3, m1, s: (0.5 * m1 + 0.25 * m3, at.sin(s) + s, s * 2),
        outputs_info=[dict(initial=init, taps=[-3, -1]), s0, None],
        n_steps=12,
    )
    return [init, s0], [m[-1], m.shape[0], s[-1], s.shape[0], s[4:].shape[0], s[20:].shape[0], n[-1], n.shape]


def runtime_length_sequences(loop):
    a = at.dvector("a")
    out = loop(
        lambda x, xp, s: s + x * xp, sequences=dict(input=a, taps=[0, 2]), outputs_info=at.constant(np.float64(0.0))
    )
    return [a], [out, out.sum()]


def zero_steps_sit_sot(loop):
    s0 = at.dvector("s0")
    return [s0], loop(lambda s: s + 1, outputs_info=s0, n_steps=0)


CASES = [
    case(
        "sequences",
        "problem report 2*a_t",
        lambda loop: ([a := at.dvector("a")], loop(lambda a_t: 2 * a_t, sequences=a)),
        VEC,
    ),
    case("sequences", "taps -1 0 1", seq_taps, VEC),
    case("sequences", "runtime length with taps", runtime_length_sequences, VEC),
    case("sequences", "go_backwards", go_backwards, VEC, 1.0),
    case(
        "sit-sot",
        "two outputs n_steps 10",
        lambda loop: (
            [x := at.dscalar("x"), y := at.dscalar("y")],
            loop(lambda x, y: (x + y, x * y * 0.1), outputs_info=[x, y], n_steps=10),
        ),
        1.0,
        0.5,
    ),
    case("sit-sot", "matrix", matrix_sit_sot, SQ),
    case("sit-sot", "int32", int_sit_sot("int32"), 3),
    case("sit-sot", "int64", int_sit_sot("int64"), 3),
    case("sit-sot", "last value only (scan_save_mem)", last_value_only, 0.3),
    case("sit-sot", "zero steps, full trace", zero_steps_sit_sot, VEC[:2]),
    case(
        "mit-sot",
        "problem report taps -2 n_steps 6",
        lambda loop: (
            [i := at.dvector("i")],
            loop(lambda xm2: xm2 + 1, outputs_info=[dict(initial=i, taps=[-2])], n_steps=6),
        ),
        VEC[:2],
    ),
    case(
        "mit-sot",
        "taps -1 -3",
        lambda loop: (
            [i := at.dvector("i")],
            loop(lambda a, b: a + b, outputs_info=[dict(initial=i, taps=[-1, -3])], n_steps=7),
        ),
        VEC[:3],
    ),
    case("mit-sot", "last value only", mit_sot_last_value, VEC[:3]),
    case("mixed", "last values and lengths", last_values_and_lengths, VEC[:3], 0.3),
    case("nit-sot", "scalar float and int outputs", scalar_nit_sot, VEC),
    case("mixed", "several of each", several_of_each, MAT, VEC[:3], MAT[:2], 0.7),
    case("nested", "scan in scan", nested_scan, MAT),
    case("ifelse", "ifelse in step", ifelse_step, VEC, 1.0),
]


@pytest.mark.parametrize("stops", LOOPS)
@pytest.mark.parametrize("build, values", CASES)
def test_scan_matches_reference(build, values, stops):
    inputs, outputs = build(scanning(stops))
    assert_matches_reference(inputs, outputs, *values)


NO_REWRITES = Mode(linker=aejax.linker.JAXCodecLinker(), optimizer=RewriteDatabaseQuery(include=[None]))


@pytest.mark.parametrize("mode", [aejax.linker.mode, NO_REWRITES], ids=["default rewrites", "no rewrites"])
def test_problem_report_programs_with_and_without_rewrites(mode):
    a = at.dvector("a")
    doubled = scan(lambda a_t: 2 * a_t, sequences=a)
    np.testing.assert_allclose(aesara.function([a], doubled, mode=mode)(VEC), 2 * VEC)

    x, y = at.dscalar("x"), at.dscalar("y")
    xs, ys = scan(lambda x, y: (x + y, x * y * 0.1), outputs_info=[x, y], n_steps=10)
    reference = aesara.function([x, y], [xs, ys], mode="FAST_COMPILE")(1.0, 0.5)
    for got, want in zip(aesara.function([x, y], [xs, ys], mode=mode)(1.0, 0.5), reference):
        np.testing.assert_allclose(got, want)

    i = at.dvector("i")
    taps = scan(lambda xm2: xm2 + 1, outputs_info=[dict(initial=i, taps=[-2])], n_steps=6)
    np.testing.assert_allclose(
        aesara.function([i], taps, mode=mode)(VEC[:2]),
        aesara.function([i], taps, mode="FAST_COMPILE")(VEC[:2]),
    )


def test_runtime_n_steps_is_static_per_value():
    n, s0 = at.iscalar("n"), at.dscalar("s0")
    out = scan(lambda s: s * 1.5 + 1, outputs_info=s0, n_steps=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        for steps in (3, 5, 3):
            assert_matches_reference([n, s0], [out, out[-1]], steps, 0.5)


def test_shared_tensor_updated_inside_the_loop():
    for mode in ("FAST_COMPILE", aejax.linker.mode):
        total = aesara.shared(np.float64(1.0), name="total")
        out, updates = aesara.scan(lambda x: {total: total + x}, sequences=at.constant(VEC))  # noqa: B023
        f = aesara.function([], [], updates=updates, mode=mode)
        f()
        f()
        if mode == "FAST_COMPILE":
            expected = total.get_value()
        else:
            np.testing.assert_allclose(total.get_value(), expected)


def test_sequence_shorter_than_n_steps_is_a_clear_error():
    a, s0 = at.dvector("a"), at.dscalar("s0")
    out = scan(lambda x, s: s * x + 1, sequences=a, outputs_info=s0, n_steps=5)
    reference, ours = compile_both([a, s0], out)
    with pytest.raises(ValueError):
        reference(VEC[:3], 1.0)
    with pytest.raises(InvalidValueError, match="sequence 'a' of Scan .* has 3 entries but the Scan runs for 5 steps"):
        ours(VEC[:3], 1.0)


def test_wrong_dtype_initial_state_is_rejected_and_changes_nothing():
    rng = aesara.shared(np.random.default_rng(0))
    s0 = at.dvector("s0")
    draw = at.random.normal(0, 1, size=2, rng=rng)
    out = scan(lambda s: s + 1, outputs_info=s0, n_steps=3)
    f = aesara.function([s0], [out, draw], updates={rng: draw.owner.outputs[0]}, mode=aejax.linker.mode)
    before = rng.get_value().bit_generator.state
    with pytest.raises(TypeError):
        f(np.array(["a", "b"]))
    assert rng.get_value().bit_generator.state == before


def test_a_negative_run_time_number_of_steps_raises_index_error():
    """As Aesara's Scan raises it (an `IndexError`; aejax's error is also a `ValueError`)."""
    n, s0 = at.lscalar("n"), at.dscalar("s0")
    states, _ = aesara.scan(lambda s: s * 1.5 + 1, outputs_info=s0, n_steps=n)
    for call in compile_both([n, s0], states):
        with pytest.raises(IndexError, match="negative number of step"):
            call(-1, 1.0)
