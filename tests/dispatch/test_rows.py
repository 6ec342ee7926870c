"""Rows at run-time positions (`aejax.linker.dispatch.rows`): numpy's values, and no gather or scatter under vmap
for a buffer small enough for selects."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from aejax.linker.dispatch.rows import SELECT_MOST_ROWS, by_select, rotated, row_at, with_row_at

SMALL, LARGE = 5, SELECT_MOST_ROWS + 3
"""Row counts read and written by selects, and by dynamic slices."""


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


def batched_indexing(fn, *args):
    """The gathers and scatters of ``jax.vmap(fn)`` on ``args`` that index per chain (with batching dimensions)."""
    found = []

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            numbers = eqn.params.get("dimension_numbers")
            if eqn.primitive.name.startswith(("gather", "scatter")) and (
                getattr(numbers, "operand_batching_dims", ()) or getattr(numbers, "scatter_indices_batching_dims", ())
            ):
                found.append(eqn.primitive.name)
            for sub in jax.core.jaxprs_in_params(eqn.params):
                walk(sub)

    walk(jax.make_jaxpr(jax.vmap(fn))(*args).jaxpr)
    return found


def chain_positions(chains, rows):
    return jnp.arange(chains) % rows


@pytest.mark.parametrize("rows, batched", [(SMALL, False), (LARGE, True)], ids=["small: selects", "large: slices"])
def test_positions_that_differ_per_chain(rows, batched):
    """Under vmap a small buffer is read, written and rotated elementwise; a large one by gathers and scatters."""
    chains = 4
    buffers = jnp.stack([buffer(rows) + k for k in range(chains)])
    positions, rows_in = chain_positions(chains, rows), jnp.ones((chains, 3))
    for fn, args in [
        (row_at, (buffers, positions)),
        (with_row_at, (buffers, positions, rows_in)),
        (rotated, (buffers, positions)),
    ]:
        assert bool(batched_indexing(fn, *args)) is batched, fn.__name__
    got = jax.vmap(with_row_at)(buffers, positions, rows_in)
    for k in range(chains):
        expected = np.asarray(buffers[k]).copy()
        expected[int(positions[k])] = 1.0
        same_bits(got[k], expected)


def test_keys_and_large_rows_are_not_read_by_selects():
    keys = jax.random.split(jax.random.key(0), 3)
    assert not by_select(keys)
    assert not by_select(jnp.zeros((2, 100_000)))
    same_bits(jax.random.key_data(row_at(keys, 1)), jax.random.key_data(keys[1]))
