"""Scans of client programs that lower to JAX, compared with the reference backend.

aemcmc 0.0.8's CRT sampler (``sample_CRT``, in its negative-binomial Gibbs
kernels) loops over the counts ``y``; each step draws
``bernoulli(h / (n - 1 + h))`` for ``n`` in ``arange(2, y_t + 1)``: a size
made from a sequence row, and a draw from a value of run-time length.

- ``test_create_gibbs`` gives ``y`` as an input: the graph bounds nothing
  about the rows, so aejax bounds them by the sequence's own values, made
  static in a program of their own (`aejax.linker.scan.row_bounds`).
- ``test_nbinom_dispersion_posterior`` loops over posterior draws, each
  running the CRT loop over a constant ``y``: the draw from the arange of
  run-time length is elementwise (`aejax.linker.lengths.ragged_rows.ragged_draw`).

With a success probability of 0 or 1 a Bernoulli draw is the same number on
every backend, which compares the algorithm exactly; real probabilities are
compared by their mean.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import aesara
import aesara.tensor as at
import numpy as np
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.linker import CallbackWarning, HostNodeWarning, ShapeInputWarning
from aejax.linker.program.static_inputs import StaticInputProgram
from tests.reference import compile_both


@contextmanager
def nothing_on_the_host() -> Iterator[None]:
    """Fail on a node or a Scan run on the host; a new program for new bounds is fine."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CallbackWarning)
        warnings.simplefilter("error", HostNodeWarning)
        warnings.simplefilter("ignore", ShapeInputWarning)
        yield


def assert_jit_programs_only(f: aesara.compile.function.types.Function) -> None:
    """Every segment of ``f`` is a jit program (no node runs on the host between them)."""
    assert all(isinstance(segment.program, StaticInputProgram) for segment in f.vm.jit_fn.segments)


def seat_counts(y: at.TensorVariable) -> at.TensorVariable:
    """For each count ``y_t``, the sum of ``n ** 2`` for ``n`` in ``arange(2, y_t + 1)``."""
    totals, _ = aesara.scan(lambda y_t: (at.arange(2, y_t + 1) ** 2).sum(), sequences=[y])
    return totals


def crt_step(srng: RandomStream, success: Callable[..., at.TensorVariable]) -> Callable[..., at.TensorVariable]:
    """aemcmc's CRT step: ``1 + sum(bernoulli(success(n, h)))`` over ``n`` in ``arange(2, y_t + 1)``, 0 below 1."""

    def step(y_t: at.TensorVariable, h: at.TensorVariable) -> at.TensorVariable:
        seats = at.arange(2, y_t + 1)
        return at.switch(y_t < 1, 0, 1 + srng.bernoulli(success(seats, h)).sum())

    return step


def crt(
    srng: RandomStream, y: at.TensorVariable, h: at.TensorVariable, success: Callable[..., at.TensorVariable]
) -> tuple[at.TensorVariable, dict]:
    """The CRT loop over the counts ``y``, and its updates."""
    return aesara.scan(crt_step(srng, success), sequences=[y], non_sequences=[h], strict=True)


def as_in_aemcmc(seats: at.TensorVariable, h: at.TensorVariable) -> at.TensorVariable:
    """aemcmc's probability that customer ``n`` opens a new table."""
    return h / (seats - 1 + h)


def every_third(seats: at.TensorVariable, h: at.TensorVariable) -> at.TensorVariable:
    """A probability of 1 at multiples of 3 (when ``h > 0``), else 0: the same draws on every backend."""
    return at.switch(at.eq(seats % 3, 0) & (h > 0), 1.0, 0.0)


def crt_mean(y: np.ndarray, h: float) -> np.ndarray:
    """The expected CRT count for each ``y_t``."""
    return np.array([0.0 if n < 1 else 1 + sum(h / (k - 1 + h) for k in range(2, n + 1)) for n in y])


COUNTS = [np.array([0, 3, 7, 1]), np.array([40, 2]), np.array([5]), np.array([], "int64"), np.array([-3, 2, 0])]


def test_a_size_from_the_rows_of_an_input_sequence_stays_in_jax():
    """``arange(2, y_t + 1)`` for an input ``y``: bounded by ``y``'s values, in JAX, for any values."""
    y = at.lvector("y")
    reference, f = compile_both([y], seat_counts(y))
    with nothing_on_the_host():
        for counts in [*COUNTS, np.array([1000, 1]), COUNTS[0]]:
            got = f(counts)
            np.testing.assert_array_equal(got, reference(counts))
            assert got.dtype == reference(counts).dtype
    assert_jit_programs_only(f)


def test_bounds_change_only_when_the_largest_value_doubles():
    """The bounds are rounded to powers of two: largest counts 40, 63 and 33 share a program, 64 takes another.

    (The loop's sequence is ``y + 1``: Aesara computes the step's ``y_t + 1`` before the loop.)
    """
    y = at.lvector("y")
    f = aesara.function([y], seat_counts(y), mode=aejax.linker.mode)
    with nothing_on_the_host():
        f(np.array([40, 2]))
        scan_program = f.vm.jit_fn.segments[-1].program
        compiled = scan_program.programs.compiled
        for largest in (63, 33):
            f(np.array([largest, 2]))
        assert scan_program.programs.compiled == compiled
        f(np.array([64, 2]))
        assert scan_program.programs.compiled == compiled + 1


def test_crt_of_input_counts_with_certain_draws_matches_the_reference():
    """test_create_gibbs's CRT loop (``y`` an input), with probabilities 0 and 1: exactly the reference's counts."""
    y, h = at.lvector("y"), at.dscalar("h")
    counts, updates = crt(RandomStream(4), y, h, every_third)
    reference, f = compile_both([y, h], counts, updates=updates)
    with nothing_on_the_host():
        for values in [np.array([0, 3, 7, 1, 30]), np.array([100, 4])]:
            np.testing.assert_array_equal(f(values, 2.0), reference(values, 2.0))
            np.testing.assert_array_equal(f(values, -1.0), reference(values, -1.0))
    assert_jit_programs_only(f)


def test_crt_of_input_counts_has_the_expected_mean_in_jax():
    """test_create_gibbs's CRT loop as aemcmc draws it: in JAX, the expected mean, new draws at each call."""
    y, h = at.lvector("y"), at.dscalar("h")
    counts, updates = crt(RandomStream(3), y, h, as_in_aemcmc)
    f = aesara.function([y, h], counts, updates=updates, mode=aejax.linker.mode)
    values = np.array([40, 90, 0, 1])
    with nothing_on_the_host():
        draws = np.array([f(values, 2.0) for _ in range(400)])
    standard_error = draws.std(axis=0) / np.sqrt(len(draws)) + 1e-12
    assert np.all(np.abs(draws.mean(axis=0) - crt_mean(values, 2.0)) < 5 * standard_error + 1e-9)
    assert len({tuple(d) for d in draws[:20]}) > 1
    assert_jit_programs_only(f)


def dispersion_chain(srng: RandomStream, y: np.ndarray, success: Callable[..., at.TensorVariable], n_steps: int):
    """test_nbinom_dispersion_posterior's loop, reduced: each step runs the CRT loop over the constant ``y`` at
    the last ``h`` and moves ``h`` by the counts' mean."""

    def step(h: at.TensorVariable):
        counts, updates = crt(srng, at.as_tensor(y), h, success)
        return h + counts.mean() / 10 - 1, updates

    return aesara.scan(step, outputs_info=[at.as_tensor(np.float64(5.0))], n_steps=n_steps)


def test_draws_from_a_range_of_run_time_length_in_a_nested_loop_match_the_reference():
    """The CRT loop inside another loop's step: one jit program, the reference's values (probabilities 0 and 1)."""
    y = np.array([12, 0, 31, 7, 2])
    chain, updates = dispersion_chain(RandomStream(7), y, every_third, n_steps=6)
    reference, f = compile_both([], chain, updates=updates)
    with nothing_on_the_host():
        got = f()
    np.testing.assert_allclose(got, reference(), rtol=1e-12)
    assert len(f.vm.jit_fn.segments) == 1


def test_draws_from_a_range_of_run_time_length_in_a_nested_loop_have_the_expected_mean():
    """aemcmc's probabilities inside another loop's step: in JAX, each step's counts of the expected mean."""
    y = np.array([40, 90, 3])
    srng = RandomStream(11)

    def step(i: at.TensorVariable):
        counts, updates = crt(srng, at.as_tensor(y), at.as_tensor(np.float64(2.0)), as_in_aemcmc)
        return counts, updates

    draws, updates = aesara.scan(step, sequences=[at.arange(300)])
    f = aesara.function([], draws, updates=updates, mode=aejax.linker.mode)
    with nothing_on_the_host():
        got = f()
    assert got.shape == (300, 3)
    standard_error = got.std(axis=0) / np.sqrt(len(got))
    assert np.all(np.abs(got.mean(axis=0) - crt_mean(y, 2.0)) < 5 * standard_error)
    assert len({tuple(row) for row in got}) > 1
