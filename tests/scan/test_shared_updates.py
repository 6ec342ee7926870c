"""Shared variables a Scan updates, also when the new value does not read the old one."""

import aesara
import aesara.tensor as at
import numpy as np
import pytest

import aejax.linker
from tests.reference import REFERENCE

U = np.arange(6.0).reshape(3, 2)


def _run(mode, step, n_steps=None, outputs_info=None):
    """The outputs and the shared value after one call of ``scan(step)`` over ``U`` on ``mode``."""
    shared = aesara.shared(np.zeros(2), name="sh")
    u = at.dmatrix("u")
    out, updates = aesara.scan(lambda row, *prev: step(shared, row, *prev), sequences=u, outputs_info=outputs_info)
    f = aesara.function([u], [] if out is None else out, updates=updates, mode=mode)
    return f(U), shared.get_value()


STEPS = {
    "new value only": lambda sh, u: {sh: u + 4},
    "beside an output": lambda sh, u: (u * 3, {sh: u * 2}),
    "reading the old value": lambda sh, u: {sh: sh + u},
    "of an output's value": lambda sh, u: (u.sum(), {sh: u * u.sum()}),
}


@pytest.mark.parametrize("step", STEPS.values(), ids=STEPS)
def test_shared_update_of_a_scan_matches_the_reference(step):
    expected_out, expected_shared = _run(REFERENCE, step)
    got_out, got_shared = _run(aejax.linker.mode, step)
    np.testing.assert_allclose(got_shared, expected_shared)
    for got, expected in zip(got_out, expected_out):
        np.testing.assert_allclose(got, expected)


def test_shared_update_beside_a_recurrence_matches_the_reference():
    def step(sh, u, h):
        return h + u, {sh: u * 2}

    expected_out, expected_shared = _run(REFERENCE, step, outputs_info=[np.zeros(2)])
    got_out, got_shared = _run(aejax.linker.mode, step, outputs_info=[np.zeros(2)])
    np.testing.assert_allclose(got_shared, expected_shared)
    np.testing.assert_allclose(got_out, expected_out)


def test_last_value_of_a_step_that_reads_no_state_matches_the_reference():
    u = at.dmatrix("u")
    out, _ = aesara.scan(lambda row, prev: row * 5, sequences=u, outputs_info=[at.zeros(2)])
    reference = aesara.function([u], out[-1], mode=REFERENCE)
    ours = aesara.function([u], out[-1], mode=aejax.linker.mode)
    np.testing.assert_allclose(ours(U), reference(U))
