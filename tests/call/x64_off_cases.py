"""Graphs called in a fresh process with JAX's default ``jax_enable_x64`` off (`tests/call/test_x64_off_calls.py`).

Run as ``python -m tests.call.x64_off_cases``: each case compiles a graph
with aejax and with the reference backend, calls aejax's function as a
user would, again and again (its first call, then its exact calls), and
compares every result with the reference's: dtype, shape and value. A
spy on the exact call's program records, for each call, this thread's
``jax_enable_x64`` and the dtypes the program received: with x64 off a
64-bit value enters as its ``uint32`` words, and nothing switches the
setting. The last line printed is JSON: each case's spy records, or the
traceback that failed it.
"""

import json
import traceback
import warnings

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.tensor as at
import jax
import numpy as np
from aesara.raise_op import Assert
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.adapters.jax_api import enable_x64
from tests.reference import REFERENCE

WIDE = ("float64", "int64", "uint64", "complex128")


def same(got, expected):
    """``got`` is ``expected``: dtype, shape, and value (a float to 1e-14, relative)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape), (got.dtype, got.shape, expected)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)
    else:
        np.testing.assert_array_equal(got, expected)


def all_same(got, expected):
    for g, e in zip(got if isinstance(got, list) else [got], expected if isinstance(expected, list) else [expected]):
        same(g, e)


def spied(f):
    """What the program of ``f``'s exact call receives from now on: this thread's x64, the arguments' dtypes."""
    f._direct.exact.take_words()  # now, not after the calls that pay for its compilation (`takes_words_in_time`)
    exact = f._direct.exact
    assert exact._wide is not None, "the exact call takes no words"
    program, seen = exact._program, []

    def spy(*values):
        seen.append([jax.config.jax_enable_x64, [str(np.asarray(v).dtype) for v in values]])
        return program(*values)

    exact._program = spy
    return seen


def called(inputs, outputs, *args, calls=3):
    """aejax's function called on ``args`` as the reference's is, first, then ``calls`` times, once with x64 on."""
    expected = aesara.function(inputs, outputs, mode=REFERENCE)(*args)
    ours = aesara.function(inputs, outputs, mode="AEJAX")
    all_same(ours(*args), expected)
    seen = spied(ours)
    for _ in range(calls):
        all_same(ours(*args), expected)
    with enable_x64(True):  # made without x64, called with it: the same program, the same words
        all_same(ours(*args), expected)
    return seen


def float64():
    x = at.dvector("x")
    return called([x], [x * 2, (x + 1e-10) - x, x.sum()], np.array([1.0, 2.0 + 1e-12, -3.5]))


def three_float64():
    x, y, z = at.dvector("x"), at.dmatrix("y"), at.dscalar("z")
    return called([x, y, z], (y @ x) * z + 1e-10, np.linspace(0, 1, 3), np.eye(3) + 1e-9, np.float64(1 + 1e-12))


def int64():
    i, j = at.lvector("i"), at.lscalar("j")
    return called([i, j], [i * 3 + j, (i // 7).sum()], np.array([2**40 + 1, -(2**35), 5]), np.int64(2**33 + 7))


def uint64():
    u = at.vector("u", dtype="uint64")
    return called([u], [u + 1, u // 3], np.array([2**63 + 5, 2**64 - 2, 0], dtype=np.uint64))


def complex128():
    c = at.zvector("c")
    return called([c], [c * (1 + 1e-10j) + 1e-12, at.abs(c)], np.array([1 + 2j, 3.5 - 1e-12j, -1e-300j]))


def booleans():
    b, x = at.vector("b", dtype="bool"), at.dvector("x")
    return called([b, x], [at.and_(b, x > 1.5), at.switch(b, x, -x)], np.array([True, False, True]), np.ones(3) * 2)


def zero_d_and_empty():
    a, n, e, m = at.dscalar("a"), at.lscalar("n"), at.dvector("e"), at.lvector("m")
    outputs = [a + 1e-10, n + 2**40, e * a, m + n]
    seen = called([a, n, e, m], outputs, np.float64(1.0), np.int64(2**33), np.zeros(0), np.zeros(0, np.int64))
    seen += called([a, n, e, m], outputs, np.array(1.0), np.array(-(2**40)), np.zeros(0), np.zeros(0, np.int64))
    return seen


def float32_only():
    v = at.fvector("v")
    return called([v], v.sum(), np.full(10**5, 0.1, np.float32))


def assert_op():
    x = at.dvector("x")
    seen = called([x], Assert("x must be positive")(x, at.all(x > 0)) * 2, np.ones(3) + 1e-10)
    ours = aesara.function([x], Assert("x must be positive")(x, at.all(x > 0)) * 2, mode="AEJAX")
    ours(np.ones(3))
    ours(np.ones(3))
    try:
        ours(-np.ones(3))
    except AssertionError as error:
        assert "x must be positive" in str(error)
    else:
        raise AssertionError("a failing Assert did not raise")
    return seen


def shared_updates():
    """Shared float64 and int64 variables updated call after call keep their 64 bits."""
    results = {}
    for mode in (REFERENCE, "AEJAX"):
        total, count = aesara.shared(np.ones(3), name="total"), aesara.shared(np.int64(2**40), name="count")
        x = at.dvector("x")
        f = aesara.function([x], [total.sum(), count * 2], updates={total: total + x, count: count + 1}, mode=mode)
        f(np.full(3, 1e-10))
        seen = spied(f) if mode == "AEJAX" else None
        returned = [f(np.full(3, 1e-10)) for _ in range(3)]
        results[mode] = (returned, total.get_value(), count.get_value(), seen)
    (expected, total, count, _), (got, our_total, our_count, seen) = results.values()
    for g, e in zip(got, expected):
        all_same(g, e)
    same(our_total, total)
    same(our_count, count)
    return seen


def random_stream():
    """Draws in float64, a new one each call, and the float64 arithmetic on them as the reference computes it."""
    srng = RandomStream(seed=2024)
    x = at.dvector("x")
    draw = srng.normal(0, 1, size=(3,))
    ours = aesara.function([x], [draw, draw * 2 + x], mode="AEJAX")
    arithmetic = aesara.function([x, (d := at.dvector("d"))], d * 2 + x, mode=REFERENCE)
    value = np.full(3, 1e-10)
    ours(value)
    seen = spied(ours)
    draws = []
    for _ in range(3):
        drawn, computed = ours(value)
        same(computed, arithmetic(value, drawn))
        assert not np.array_equal(drawn, drawn.astype(np.float32)), "draws rounded to float32"
        draws.append(drawn)
    assert len({d.tobytes() for d in draws}) == 3, "the generator did not advance"
    return seen


def python_arguments():
    """Python numbers and lists take the general path, in float64."""
    x, a, n = at.dvector("x"), at.dscalar("a"), at.lscalar("n")
    outputs = [x * a + 1e-10, x + n]
    expected = aesara.function([x, a, n], outputs, mode=REFERENCE)([1.0, 2.0], 1.5, 2**40)
    ours = aesara.function([x, a, n], outputs, mode="AEJAX")
    for _ in range(3):
        all_same(ours([1.0, 2.0], 1.5, 2**40), expected)
    return None


def scan():
    x = at.dvector("x")
    steps, _ = aesara.scan(lambda h: h * (1 + 1e-10) + 1e-12, outputs_info=x, n_steps=5)
    return called([x], steps[-1], np.array([1.0, -2.0, 3.0]))


def progress_bar():
    """A Scan with a progress bar takes words too: its ``debug_callback`` JAX does not export, so its program is
    compiled ahead of time to take them."""
    x = at.dvector("x")
    steps, _ = aesara.scan(lambda h: h * (1 + 1e-10) + 1e-12, outputs_info=x, n_steps=5)
    inputs, args = [x], (np.array([1.0, -2.0, 3.0]),)
    expected = aesara.function(inputs, steps[-1], mode=REFERENCE)(*args)
    ours = aesara.function(inputs, steps[-1], mode=aejax.linker.mode.with_progress(every=1, min_seconds=0))
    all_same(ours(*args), expected)
    seen = spied(ours)
    for _ in range(3):
        all_same(ours(*args), expected)
    return seen


def arguments_changed_in_place():
    """An argument passed again computes from what it holds then: its values changed in place, a matrix's column
    changed through the matrix, an array whose strides were reassigned, a shared value changed in place through
    ``borrow=True``: the words of each are taken on each call."""
    x = at.dvector("x")
    total = aesara.shared(np.arange(3.0), name="total")
    ours = aesara.function([x], x * 2 + total * 1e-10, mode="AEJAX")
    expected = aesara.function([x, (t := at.dvector("t"))], x * 2 + t * 1e-10, mode=REFERENCE)
    own, matrix, wider = np.arange(3.0), np.arange(9.0).reshape(3, 3), np.arange(12.0)
    column, prefix = matrix[:, 1], wider[:3]
    ours(own)
    seen = spied(ours)
    for argument, change in [
        (own, lambda: own.__setitem__(0, 1 + 1e-12)),
        (column, lambda: matrix.__setitem__((0, 1), -7.5)),
        (prefix, lambda: setattr(prefix, "strides", (16,))),
        (own, lambda: total.get_value(borrow=True).__setitem__(2, 1e6)),
    ]:
        same(ours(argument), expected(argument, total.get_value()))
        change()
        same(ours(argument), expected(argument, total.get_value()))
    return seen


def takes_words_in_time():
    """The exact call enters ``enable_x64`` until the switches have cost what making the program took, then takes
    words: counted, not timed."""
    x = at.dvector("x")
    ours = aesara.function([x], x * 2, mode="AEJAX")
    value = np.arange(3.0)
    ours(value)
    exact = ours._direct.exact
    until = exact._until_words
    assert until == max(1, int(np.ceil(ours._direct.made_in / 2e-6))), (until, ours._direct.made_in)
    for _ in range(until - 1):
        same(ours(value), value * 2)
    assert ours._direct.exact is exact and exact._wide is None
    same(ours(value), value * 2)
    assert ours._direct.exact is not exact and ours._direct.exact._wide == (0,)
    seen = spied(ours)
    for _ in range(3):
        same(ours(value), value * 2)
    return seen


CASES = [
    float64,
    three_float64,
    int64,
    uint64,
    complex128,
    booleans,
    zero_d_and_empty,
    float32_only,
    assert_op,
    shared_updates,
    random_stream,
    python_arguments,
    scan,
    progress_bar,
    arguments_changed_in_place,
    takes_words_in_time,
]


def main():
    warnings.simplefilter("ignore")
    report = {"x64": jax.config.jax_enable_x64}
    for case in CASES:
        try:
            report[case.__name__] = case()
        except Exception:  # noqa: BLE001 - every case reports, the parent test names the one that failed
            report[case.__name__] = traceback.format_exc()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
