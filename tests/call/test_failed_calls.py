"""A call that fails a check runs its program once, raises what Aesara's own call path raises, and stores nothing."""

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.compile.function.types import Function
from aesara.raise_op import Assert

from tests.counting import Counted


@pytest.mark.parametrize("mode", ["AEJAX", "AEJAX_DEVICE"])
@pytest.mark.parametrize("argument", [np.full(3, -1.0), [-1.0, -1.0, -1.0]], ids=["exact call", "general path"])
def test_a_call_that_fails_a_check_runs_its_program_once(mode, argument):
    x = at.dvector("x")
    total = aesara.shared(np.zeros(3), name="total")
    checked = Assert("x must be positive")(Counted()(x), at.all(x > 0))
    f = aesara.function([x], checked * 2, updates={total: total + checked}, mode=mode)
    for _ in range(2):
        f(np.ones(3))
    runs = Counted.runs
    with pytest.raises(AssertionError) as failed:
        f(argument)
    assert Counted.runs == runs + 1
    np.testing.assert_array_equal(total.get_value(), [2.0, 2.0, 2.0])
    with pytest.raises(AssertionError) as on_aesaras_path:
        Function.__call__(f, argument)
    assert str(failed.value) == str(on_aesaras_path.value)
    assert str(failed.value).startswith("x must be positive\nApply node that caused the error")
    np.testing.assert_array_equal(total.get_value(), [2.0, 2.0, 2.0])
