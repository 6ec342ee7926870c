"""Item 8: a Scan asked for more steps than memory allows names its input and the memory."""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest

import aejax.linker
from aejax.linker import AllocationError, ShapeInputWarning
from tests.reliability.shared_state import assert_unchanged, shared_of, snapshot


def test_huge_n_steps_names_the_input_and_the_memory():
    n, x0 = at.lscalar("n"), at.dscalar("x0")
    calls = aesara.shared(np.int64(0), name="calls")
    out, _ = aesara.scan(lambda x: x + 1, outputs_info=x0, n_steps=n)
    f = aesara.function([x0, n], out, updates={calls: calls + 1}, mode=aejax.linker.mode)
    before = snapshot(shared_of(f))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShapeInputWarning)
        with pytest.raises(MemoryError, match=r"input 'n'.*7,450\.6 GiB") as error:
            f(0.0, 10**12)
    assert isinstance(error.value, AllocationError)
    assert_unchanged(shared_of(f), before)
    np.testing.assert_array_equal(f(0.0, 3), [1.0, 2.0, 3.0])
