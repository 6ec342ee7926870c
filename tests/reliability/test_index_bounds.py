"""Item 7: out-of-bounds indices raise IndexError, as in Aesara, and update nothing."""

import aesara
import aesara.tensor as at
import numpy as np
import pytest

import aejax.linker
from tests.reference import REFERENCE
from tests.reliability.shared_state import assert_unchanged, shared_of, snapshot

V, K, IDX = at.dvector("v"), at.lscalar("i"), at.lvector("idx")

CASES = {
    "constant index": ([V], V[5], ()),
    "traced index": ([V, K], V[K], (5,)),
    "negative traced index": ([V, K], V[K], (-4,)),
    "index vector": ([V, IDX], V[IDX], ([0, 7],)),
    "set_subtensor": ([V, K], at.set_subtensor(V[K], 1.0), (3,)),
    "inc_subtensor at a vector": ([V, IDX], at.inc_subtensor(V[IDX], 1.0), ([1, -9],)),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
@pytest.mark.parametrize("mode", [REFERENCE, aejax.linker.mode], ids=["reference", "aejax"])
def test_out_of_bounds_index_raises_index_error_and_updates_nothing(case, mode):
    inputs, out, args = CASES[case]
    calls = aesara.shared(np.int64(0), name="calls")
    f = aesara.function(inputs, out, updates={calls: calls + 1}, mode=mode)
    before = snapshot(shared_of(f))
    with pytest.raises(IndexError):
        f(np.arange(3.0), *args)
    assert_unchanged(shared_of(f), before)


def test_in_bounds_indices_match_reference():
    f = aesara.function([V, K, IDX], [V[K], at.inc_subtensor(V[IDX], 1.0)], mode=aejax.linker.mode)
    reference = aesara.function([V, K, IDX], [V[K], at.inc_subtensor(V[IDX], 1.0)], mode=REFERENCE)
    for got, expected in zip(f(np.arange(3.0), -3, [2, -1]), reference(np.arange(3.0), -3, [2, -1])):
        np.testing.assert_array_equal(got, expected)
