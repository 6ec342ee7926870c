"""Rows at run-time positions (`aejax.linker.dispatch.rows`): numpy's values, and no gather or scatter under vmap
for a buffer small enough for selects."""

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

from aejax.linker.dispatch.rows import SELECT_MOST_ROWS, by_select, rotated, row_at, with_row_at
from tests.stablehlo import batched_indexing

SMALL, MEDIUM, LARGE = 5, 9, SELECT_MOST_ROWS + 3
"""Row counts of 3-value buffers: read and written by selects at per-chain positions everywhere (at most
`CPU_SELECT_MOST_ELEMENTS`), on an accelerator only, and nowhere."""


def buffer(rows, dtype="float64"):
    """``rows`` distinct rows of 3 values, with a negative zero, a NaN and an infinity among the floats."""
    values = np.arange(rows * 3).reshape(rows, 3).astype(dtype)
    if np.dtype(dtype).kind == "f":
        values[0, 0], values[-1, 1], values[rows // 2, 2] = -0.0, np.nan, -np.inf
    return values


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("rows", [1, SMALL, LARGE])
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_row_at_is_numpy_indexing(rows, dtype):
    values = buffer(rows, dtype)
    read = jax.jit(row_at)
    for position in range(rows):
        same_bits(read(values, position), values[position])


@pytest.mark.parametrize("rows", [1, SMALL, LARGE])
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_with_row_at_is_numpy_assignment(rows, dtype):
    values, row = buffer(rows, dtype), np.array([-0.0, 7, 8]).astype(dtype)
    write = jax.jit(with_row_at)
    for position in range(rows):
        expected = values.copy()
        expected[position] = row
        same_bits(write(values, position, row), expected)


@pytest.mark.parametrize("rows", [1, SMALL, LARGE])
def test_rotated_is_numpy_roll(rows):
    values = buffer(rows)
    for shift in range(rows):
        same_bits(jax.jit(rotated)(values, shift), np.roll(values, -shift, axis=0))


def vmapped_batched_indexing(fn, platform, *args):
    """`batched_indexing` of ``jax.vmap(fn)`` on ``args``, lowered for ``platform``."""
    return batched_indexing(jax.export.export(jax.jit(jax.vmap(fn)), platforms=[platform])(*args).mlir_module())


CHAINS = 4


def per_chain_arguments(rows):
    """Each function with a buffer, a position and a row per chain."""
    buffers = jnp.stack([buffer(rows) + k for k in range(CHAINS)])
    positions, rows_in = jnp.arange(CHAINS) % rows, jnp.ones((CHAINS, 3))
    return [
        (row_at, (buffers, positions)),
        (with_row_at, (buffers, positions, rows_in)),
        (rotated, (buffers, positions)),
    ]


@pytest.mark.parametrize(
    "rows, on_cpu, on_tpu",
    [(SMALL, False, False), (MEDIUM, True, False), (LARGE, True, True)],
    ids=["a few elements: selects", "a few rows: selects on an accelerator", "many rows: slices"],
)
def test_positions_that_differ_per_chain(rows, on_cpu, on_tpu):
    """Under vmap a buffer of a few rows is read, written and rotated elementwise on an accelerator; on the
    CPU only one of a few elements is (a batched gather or scatter is the faster there); a long one never is.
    The values are those of each chain's own call."""
    for fn, args in per_chain_arguments(rows):
        assert bool(vmapped_batched_indexing(fn, "cpu", *args)) is on_cpu, fn.__name__
        assert bool(vmapped_batched_indexing(fn, "tpu", *args)) is on_tpu, fn.__name__
        got = jax.vmap(fn)(*args)
        for k in range(CHAINS):
            same_bits(got[k], fn(*(a[k] for a in args)))


def test_a_position_shared_by_the_chains_slices_each_chain_s_buffer():
    buffers, _ = per_chain_arguments(MEDIUM)[0][1]
    for platform in ("cpu", "tpu"):
        assert not vmapped_batched_indexing(lambda b: row_at(b, 2), platform, buffers)
    same_bits(jax.vmap(lambda b: row_at(b, 2))(buffers), buffers[:, 2])


@pytest.mark.parametrize("rows", [SMALL, LARGE])
def test_derivatives_in_both_modes_and_under_vmap(rows):
    """The derivatives are those of numpy's indexing: one row's weights, scattered back by position."""
    values, weights, position = np.arange(rows * 3.0).reshape(rows, 3) % 7, np.arange(3.0) + 1, 2

    def read(b, p):
        return jnp.sum(row_at(b, p) * weights)

    def written(b, p, r):
        return jnp.sum(with_row_at(b, p, r) * jnp.arange(rows)[:, None]) + jnp.sum(rotated(b, p)[0])

    expected = np.zeros_like(values)
    expected[position] = weights
    np.testing.assert_array_equal(jax.grad(read)(values, position), expected)
    _, tangent = jax.jvp(lambda b: read(b, position), (values,), (np.ones_like(values),))
    assert tangent == weights.sum()
    grads = jax.vmap(jax.grad(written, argnums=(0, 2)), in_axes=(None, 0, None))(values, jnp.arange(rows), weights)
    for p in range(rows):
        want_buffer = np.repeat(np.arange(rows, dtype=float)[:, None], 3, axis=1)
        want_buffer[p] = 0
        want_buffer[p] += 1  # rotated(b, p)[0] is b[p]
        np.testing.assert_array_equal(grads[0][p], want_buffer)
        np.testing.assert_array_equal(grads[1][p], np.full(3, float(p)))


def test_keys_and_large_rows_are_not_read_by_selects():
    keys = jax.random.split(jax.random.key(0), 3)
    assert not by_select(keys)
    assert not by_select(jnp.zeros((2, 100_000)))
    same_bits(jax.random.key_data(row_at(keys, 1)), jax.random.key_data(keys[1]))
