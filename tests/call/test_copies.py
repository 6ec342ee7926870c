"""A large shared variable held in numpy and updated by every call is named in a warning, with the fix."""

import warnings

import aesara
import aesara.tensor as at
import jax.numpy as jnp
import numpy as np
import pytest

import aejax.linker
from aejax.linker import SharedCopyWarning
from aejax.linker.call.copies import LARGE_BYTES

LARGE = int(np.sqrt(LARGE_BYTES / 8)) + 1  # the side of the smallest square float64 matrix over the limit


def sgd_step(W):
    """A function that updates ``W`` by a step of a least-squares gradient."""
    x = at.dmatrix("x")
    loss = ((x @ W) ** 2).mean()
    return aesara.function([x], loss, updates={W: W - 0.1 * aesara.grad(loss, W)}, mode=aejax.linker.mode)


def numpy_step(W, x):
    """The same step in numpy: the gradient of the mean of ``(x @ W) ** 2`` is ``2 x.T (x @ W) / size``."""
    xw = x @ W
    return W - 0.1 * 2 * x.T @ xw / xw.size


def test_a_large_numpy_shared_variable_updated_by_each_call_is_named_with_the_fix():
    W0 = np.linspace(0, 1, LARGE * LARGE).reshape(LARGE, LARGE)
    W = aesara.shared(W0, name="W")
    fix = r"aesara\.shared\(jax\.numpy\.asarray\(value\)\)"
    with pytest.warns(SharedCopyWarning, match=rf"'W' \(1\.0 MiB\).*{fix}") as seen:
        step = sgd_step(W)
    assert len(seen) == 1
    assert seen[0].filename == __file__  # the user's line that compiled it
    x = np.linspace(-1, 1, 2 * LARGE).reshape(2, LARGE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # calls do not warn again
        step(x)
        step(x)
    assert isinstance(W.get_value(borrow=True), np.ndarray)
    np.testing.assert_allclose(W.get_value(), numpy_step(numpy_step(W0, x), x), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    "value, updated",
    [
        (jnp.ones((LARGE, LARGE)), True),  # kept on the device: nothing to copy
        (np.ones((LARGE - 2, LARGE - 2)), True),  # under the limit
        (np.ones((LARGE, LARGE)), False),  # read, never updated: copied in, not back
    ],
    ids=["jax-array", "small", "not-updated"],
)
def test_no_warning_when_nothing_large_crosses_both_ways(value, updated):
    W = aesara.shared(value, name="W")
    x = at.dmatrix("x")
    loss = ((x @ W) ** 2).mean()
    updates = {W: W - 0.1 * aesara.grad(loss, W)} if updated else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", SharedCopyWarning)
        aesara.function([x], loss, updates=updates, mode=aejax.linker.mode)(np.ones((2, value.shape[0])))
