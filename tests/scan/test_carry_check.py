"""A step whose state outputs do not fit their states is reported in Aesara's terms.

Aesara's types do not fix a vector's length, so a step may return a longer
vector than its state; the error names the Scan output and its initial value
instead of a JAX carry component. Aesara refuses a step that changes a
state's dtype when the Scan is built (``Scan.validate_inner_graph``), so only
shapes can differ by the time aejax sees the graph.
"""

import aesara
import aesara.tensor as at
import numpy as np
import pytest

import aejax.linker
from aejax.linker import InvalidValueError
from tests.reference import assert_matches_reference
from tests.scan.stepping import LOOPS, stepping


def compiled(inputs, outputs, **kwargs):
    return aesara.function(inputs, outputs, mode=aejax.linker.mode, **kwargs)


@pytest.mark.parametrize("stops", LOOPS)
def test_sit_sot_that_grows_names_its_initial_value(stops):
    s0 = at.dvector("s0")
    out, _ = aesara.scan(stepping(lambda s: at.concatenate([s, s[:1]]), stops), outputs_info=s0, n_steps=3)
    with pytest.raises(InvalidValueError, match=r"sit-sot 0 .*\(initial 's0'\).*returns float64\[3\].*float64\[2\]"):
        compiled([s0], out)(np.zeros(2))


@pytest.mark.parametrize("stops", LOOPS)
def test_mit_sot_that_shrinks_names_its_initial_value(stops):
    c0 = at.dmatrix("c0")
    out, _ = aesara.scan(
        stepping(lambda c_m2, c_m1: (c_m2 + c_m1)[1:], stops),
        outputs_info=dict(initial=c0, taps=[-2, -1]),
        n_steps=3,
    )
    with pytest.raises(InvalidValueError, match=r"mit-sot 0 .*\(initial 'c0'\).*returns float64\[2\].*float64\[3\]"):
        compiled([c0], out)(np.zeros((2, 3)))


@pytest.mark.parametrize("stops", LOOPS)
def test_shared_update_of_another_shape_names_the_shared_variable(stops):
    w = aesara.shared(np.zeros(2), name="w")
    _, updates = aesara.scan(stepping(lambda: {w: at.concatenate([w, w])}, stops), n_steps=3)
    with pytest.raises(InvalidValueError, match=r"sit-sot 0 .*\(initial 'w'\).*returns float64\[4\].*float64\[2\]"):
        compiled([], [], updates=updates)()
    np.testing.assert_array_equal(w.get_value(), np.zeros(2))


@pytest.mark.parametrize("stops", LOOPS)
def test_step_of_the_state_shape_runs_as_in_aesara(stops):
    s0, c0 = at.dvector("s0"), at.dmatrix("c0")

    def step(c_m2, c_m1, s):
        return c_m2 * 0.5 + c_m1, at.tanh(s + c_m1.sum())

    (c, s), _ = aesara.scan(
        stepping(step, stops),
        outputs_info=[dict(initial=c0, taps=[-2, -1]), s0],
        n_steps=4,
    )
    assert_matches_reference([s0, c0], [c, s], np.linspace(0, 1, 2), np.ones((2, 3)))
