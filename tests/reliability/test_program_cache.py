"""Item 2: program caches are bounded, run-time lengths are bucketed, recompiling warns once."""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.raise_op import Assert
from aesara.scan.utils import until

import aejax.linker
from aejax.linker import RecompileWarning, ShapeInputWarning, StaticInputProgram
from tests.reference import REFERENCE


def _count_to(max_steps=1000):
    k = at.dscalar("k")
    out, _ = aesara.scan(
        lambda x, k: (x + 1, until(x + 1 >= k)),
        outputs_info=at.constant(np.float64(0)),
        non_sequences=k,
        n_steps=max_steps,
    )
    return k, out


def test_static_input_cache_keeps_at_most_cache_size_programs(monkeypatch):
    monkeypatch.setattr(StaticInputProgram, "cache_size", 4)
    x, n = at.dvector("x"), at.lscalar("n")
    f = aesara.function([x, n], x[:n] * 2, mode=aejax.linker.mode)
    reference = aesara.function([x, n], x[:n] * 2, mode=REFERENCE)
    program = f.vm.jit_fn.segments[0].program
    values = np.arange(40.0)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for n_value in range(1, 21):
            np.testing.assert_array_equal(f(values, n_value), reference(values, n_value))
    assert len(program.programs) == 4
    assert program.programs.evicted == 16
    assert [w.category for w in record if w.category is not ShapeInputWarning] == [RecompileWarning]


def test_trace_of_run_time_length_compiles_a_logarithmic_number_of_programs():
    k, out = _count_to()
    checked = Assert("a negative count")(
        out, at.all(out >= 0)
    ).sum()  # an Op the loop's program cannot run on its trace
    f = aesara.function([k], checked, mode=aejax.linker.mode)
    reference = aesara.function([k], checked, mode=REFERENCE)
    assert f(1.0) == reference(1.0)
    after_loop = f.vm.jit_fn.segments[1].program.programs
    first = after_loop.compiled  # the check makes the first call trace it twice (aejax.linker.checks)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecompileWarning)
        for length in range(2, 101):
            assert f(float(length)) == reference(float(length))
    assert after_loop.compiled - first == 7  # lengths bucketed to 2, 4, ..., 128 after the 1 of the first call


@pytest.mark.parametrize("use", [lambda o: at.dot(o, o), lambda o: [o * 2, o[-1]]], ids=["dot", "rows"])
def test_trace_that_needs_its_exact_length_is_still_right(use):
    k, out = _count_to()
    f = aesara.function([k], use(out), mode=aejax.linker.mode)
    reference = aesara.function([k], use(out), mode=REFERENCE)
    for length in (1, 5, 6):
        got, expected = f(float(length)), reference(float(length))
        for g, e in zip(
            got if isinstance(got, list) else [got], expected if isinstance(expected, list) else [expected]
        ):
            np.testing.assert_array_equal(g, e)


def test_one_function_keeps_the_number_of_programs_its_cache_size_says():
    x, n = at.dvector("x"), at.lscalar("n")
    f = aesara.function([x, n], x[:n] * 2, mode=aejax.linker.mode)
    other = aesara.function([x, n], x[:n] * 3, mode=aejax.linker.mode)
    f.cache_size = 3
    values = np.arange(40.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n_value in range(1, 8):
            np.testing.assert_array_equal(f(values, n_value), values[:n_value] * 2)
            other(values, n_value)
    assert f.cache_size == 3 and other.cache_size == StaticInputProgram.cache_size
    assert len(f.vm.jit_fn.segments[0].program.programs) == 3
    assert len(other.vm.jit_fn.segments[0].program.programs) == 7
    with pytest.raises(ValueError, match="cache_size"):
        f.cache_size = 0
