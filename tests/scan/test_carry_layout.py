"""The buffer-layout functions of `aejax.linker.scan.carry` agree with the numpy equivalents their docstrings give."""

import inspect
import itertools
import textwrap

import jax.numpy as jnp
import numpy as np
import pytest

from aejax.linker.lengths.ragged import Ragged
from aejax.linker.scan.carry import (
    SotWindow,
    history_rows,
    last_states,
    ordered_history,
    read_rows,
    shift_in,
    window_rows,
    window_written,
    write_rows,
)

ROW = (2,)
"""The shape of one state."""


def rows(n, start=1):
    """``n`` distinct non-zero rows of shape `ROW`."""
    return np.arange(start, start + n * ROW[0], dtype="float64").reshape(n, *ROW)


def written(size, filled):
    """A circular buffer of ``size`` rows after ``filled`` writes (``rows(filled)``); rows never written are zero."""
    buffer = np.zeros((size, *ROW))
    for i, row in enumerate(rows(filled)):
        buffer[i % size] = row
    return buffer


def docstring_code(fn):
    """The code block that follows ``::`` in ``fn``'s docstring."""
    _, block = inspect.getdoc(fn).split("::\n\n", 1)
    lines = itertools.takewhile(lambda line: line.startswith("    ") or not line, block.splitlines())
    return textwrap.dedent("\n".join(lines))


def as_numpy(value):
    """A result as numpy: a `Ragged` value cut to its length."""
    if isinstance(value, Ragged):
        return np.asarray(value.buffer)[: int(value.length)]
    return np.asarray(value)


@pytest.mark.parametrize(
    "size, offset, steps, max_steps, stops_early",
    [
        (5, 1, 3, 3, False),
        (3, 1, 6, 6, False),
        (3, 1, 2, 6, False),
        (6, 1, 3, 5, True),
        (4, 2, 5, 9, True),
        (8, 1, 3, 5, True),
        (1, 1, 4, 6, True),
    ],
    ids=["long enough", "wrapped", "just full", "until stopped early", "until wrapped", "until longer", "one row"],
)
def test_ordered_history(size, offset, steps, max_steps, stops_early):
    buffer = written(size, offset + steps)
    names = dict(np=np, buffer=buffer, size=size, filled=offset + steps, offset=offset, steps=steps)
    names.update(max_steps=max_steps, stops_early=stops_early)
    exec(docstring_code(ordered_history), names)
    got = ordered_history(jnp.asarray(buffer), steps, offset, max_steps, stops_early)
    np.testing.assert_array_equal(as_numpy(got), names["laid_out"])


@pytest.mark.parametrize("size, n_initial, n_trace", [(3, 2, 4), (8, 2, 4), (4, None, 6), (6, None, 6)])
def test_history_rows(size, n_initial, n_trace):
    initial = None if n_initial is None else rows(n_initial, start=-100)
    trace = rows(n_trace)
    h = trace if initial is None else np.concatenate([initial, trace])
    expected = h[len(h) - size :] if size <= len(h) else np.concatenate([h, np.zeros((size - len(h), *h.shape[1:]))])
    got = history_rows(size, None if initial is None else jnp.asarray(initial), jnp.asarray(trace))
    np.testing.assert_array_equal(np.asarray(got), expected)


@pytest.mark.parametrize("filled, size, length", [(7, 5, 3), (2, 5, 4), (5, 5, 5), (9, 4, 4), (3, 6, 2)])
def test_last_states(filled, size, length):
    h = rows(filled)
    history = written(size, filled) if filled <= size else h[filled - size :]
    expected = h[max(filled - length, 0) :][:length]
    expected = np.concatenate([expected, np.zeros((length - len(expected), *ROW))])
    got = last_states(jnp.asarray(history), filled, length)
    np.testing.assert_array_equal(as_numpy(got), expected)


def test_read_rows():
    buffer, position, taps = rows(5), 7, (-2, 0, 1)
    expected = list(buffer[(position + np.array(taps)) % len(buffer)])
    np.testing.assert_array_equal(read_rows(jnp.asarray(buffer), position, taps), expected)


def test_write_rows():
    buffer, position, taps, new = rows(5), 7, (-2, 0, 1), rows(3, start=-50)
    expected = buffer.copy()
    expected[(position + np.array(taps)) % len(buffer)] = new
    got = write_rows(jnp.asarray(buffer), position, taps, list(jnp.asarray(new)))
    np.testing.assert_array_equal(np.asarray(got), expected)


@pytest.mark.parametrize("width", [1, 3])
def test_shift_in(width):
    window, row = rows(width), rows(1, start=-50)[0]
    expected = np.concatenate([window, row[None]])[1:]
    np.testing.assert_array_equal(np.asarray(shift_in(jnp.asarray(window), jnp.asarray(row))), expected)


def test_window_rows():
    window, mintap, taps = rows(4), -1, (-1, 1)
    expected = list(window[np.array(taps) - mintap])
    np.testing.assert_array_equal(window_rows(jnp.asarray(window), mintap, taps), expected)


def test_window_written():
    window, mintap, taps, new = rows(4), -1, (-1, 1), rows(2, start=-50)
    expected = window.copy()
    expected[np.array(taps) - mintap] = new
    got = window_written(jnp.asarray(window), mintap, taps, list(jnp.asarray(new)))
    np.testing.assert_array_equal(np.asarray(got), expected)


def test_sot_window_of_a_mit_sot():
    window_of, buffer, taps = SotWindow(3, (-3, -1)), rows(5), (-3, -1)
    window = window_of.start(jnp.asarray(buffer))
    np.testing.assert_array_equal(np.asarray(window), buffer[:3])
    np.testing.assert_array_equal(window_of.rows(window), list(buffer[:3][3 + np.array(taps)]))
    np.testing.assert_array_equal(np.asarray(window_of.as_rows(window)), buffer[:3])


def test_sot_window_of_a_sit_sot_is_its_value():
    window_of, buffer = SotWindow(1, (-1,)), rows(4)
    window = window_of.start(jnp.asarray(buffer))
    np.testing.assert_array_equal(np.asarray(window), buffer[0])
    np.testing.assert_array_equal(window_of.rows(window), [buffer[0]])
    np.testing.assert_array_equal(np.asarray(window_of.as_rows(window)), buffer[0][None])
