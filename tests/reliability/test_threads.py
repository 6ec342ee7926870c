"""Item 4: what is process-wide is safe under threads (switching every microsecond).

One compiled Aesara function is not safe to call from several threads at once
(Aesara's storage cells are shared), so each thread calls its own function;
first calls of one program, where static inputs and split points are
discovered, are made concurrently on the program itself.
"""

import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.scan.utils import until
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.linker import ShapeInputWarning


@pytest.fixture(autouse=True)
def fast_switching():
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _in_threads(work, count=8):
    barrier = threading.Barrier(count)

    def run(index):
        barrier.wait()
        return work(index)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        with ThreadPoolExecutor(count) as pool:
            return list(pool.map(run, range(count)))


def _seeded_draws(count=8):
    """One compiled function per thread, each with its own seeded generator.

    Aesara's own compilation is not thread-safe (its graph rewriting keeps
    module-level state), so the functions are compiled before the threads start.
    """
    return [
        aesara.function([], RandomStream(seed=index).normal(size=3), mode=aejax.linker.mode) for index in range(count)
    ]


def test_threads_with_their_own_functions_and_generators():
    expected = [np.stack([f() for _ in range(30)]) for f in _seeded_draws()]
    functions = _seeded_draws()
    for got, want in zip(_in_threads(lambda i: [functions[i]() for _ in range(30)]), expected):
        np.testing.assert_array_equal(np.stack(got), want)


def test_concurrent_first_calls_discover_static_inputs_once():
    x, n = at.dvector("x"), at.lscalar("n")
    f = aesara.function([x, n], at.zeros(n * 2) + x.sum(), mode=aejax.linker.mode)
    program = f.vm.jit_fn
    values = np.arange(3.0)
    results = _in_threads(lambda i: program(values, np.int64(1 + i % 3))[0])
    for i, result in enumerate(results):
        np.testing.assert_array_equal(result, np.full(2 * (1 + i % 3), 3.0))
    assert program.segments[0].program.static_positions == (1,)


def test_concurrent_first_calls_split_after_an_until_loop_once():
    k = at.dscalar("k")
    out, _ = aesara.scan(
        lambda x, k: (x + 1, until(x + 1 >= k)), outputs_info=at.constant(np.float64(0)), non_sequences=k, n_steps=50
    )
    program = aesara.function([k], at.dot(out, out), mode=aejax.linker.mode).vm.jit_fn
    results = _in_threads(lambda i: program(np.float64(i + 1))[0])
    assert results == [sum(j * j for j in range(1, i + 2)) for i in range(8)]
    assert len(program.segments) == 2
