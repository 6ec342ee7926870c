"""Run-time checks on traced values raise the Op's own exception after the call."""

import warnings

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.raise_op import Assert, CheckAndRaise
from aesara.scan.utils import until

import aejax.linker
from aejax.linker.checks import CheckedProgram, CheckTable
from aejax.linker.errors import raised_by
from tests.counting import Halve


class NegativeScaleError(ValueError):
    """A user's own exception class for a check."""


def _positive(x):
    return CheckAndRaise(NegativeScaleError, "scale must be positive")(x, at.all(x > 0))


def _compile_both(inputs, outputs, **kwargs):
    return [aesara.function(inputs, outputs, mode=mode, **kwargs) for mode in ("FAST_COMPILE", aejax.linker.mode)]


@pytest.mark.parametrize("backend", ["reference", "aejax"])
def test_traced_check_raises_the_ops_exception_with_its_message(backend):
    x = at.dvector("x")
    f = dict(zip(["reference", "aejax"], _compile_both([x], _positive(x) * 2)))[backend]
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])
    with pytest.raises(NegativeScaleError, match="scale must be positive"):
        f(np.array([1.0, -1.0]))


def test_assert_on_traced_value_raises_assertion_error():
    x = at.dvector("x")
    f = aesara.function([x], Assert("x sums to less than 10")(x, x.sum() < 10), mode=aejax.linker.mode)
    np.testing.assert_array_equal(f(np.ones(3)), np.ones(3))
    with pytest.raises(AssertionError, match="less than 10"):
        f(np.full(3, 5.0))


def test_failed_check_updates_no_shared_variable():
    x = at.dvector("x")
    counter = aesara.shared(np.float64(0.0), name="counter")
    srng = at.random.RandomStream(7)
    noise = srng.normal(size=2)
    f = aesara.function([x], _positive(x) + noise, updates={counter: counter + 1}, mode=aejax.linker.mode)
    f(np.ones(2))
    rng = srng.state_updates[0][0]
    before = (counter.get_value(), rng.get_value(borrow=True).bit_generator.state)
    with pytest.raises(NegativeScaleError):
        f(-np.ones(2))
    assert counter.get_value() == before[0]
    assert rng.get_value(borrow=True).bit_generator.state == before[1]
    f(np.ones(2))
    assert counter.get_value() == before[0] + 1


def test_check_inside_a_scan_raises():
    xs = at.dvector("xs")
    ys, _ = aesara.scan(lambda x, acc: acc + _positive(x), sequences=[xs], outputs_info=[at.as_tensor(np.float64(0.0))])
    reference, ours = _compile_both([xs], ys[-1])
    np.testing.assert_allclose(ours(np.arange(1.0, 4.0)), reference(np.arange(1.0, 4.0)))
    with pytest.raises(NegativeScaleError):
        ours(np.array([1.0, -2.0, 3.0]))


class SmallStepError(ValueError):
    """A second exception class, to tell two checks apart."""


def _big_step(x):
    return CheckAndRaise(SmallStepError, "step must be at least 0.5")(x, at.all(abs(x) >= 0.5))


@pytest.mark.parametrize(
    "values, error",
    [
        ([1.0, 2.0, 3.0, 4.0], None),
        ([1.0, 0.1, -3.0, 4.0], SmallStepError),  # the second check fails first (step 1)
        ([1.0, 2.0, -3.0, 0.1], NegativeScaleError),
    ],
)
def test_the_first_failing_check_of_an_until_loop_is_raised_as_the_reference_does(values, error):
    xs = at.dvector("xs")

    def step(x, acc):
        total = acc + _big_step(_positive(x) * 1.0)
        return total, until(total > 100)

    ys, _ = aesara.scan(step, sequences=[xs], outputs_info=[at.as_tensor(np.float64(0.0))])
    reference, ours = _compile_both([xs], ys[-1])
    point = np.array(values)
    if error is None:
        np.testing.assert_allclose(ours(point), reference(point))
        return
    for f in (reference, ours):
        with pytest.raises(error):
            f(point)


def test_a_check_in_a_nested_loop_fails_the_call_and_passes_otherwise():
    xs = at.dmatrix("xs")

    def row_sum(row):
        inner, _ = aesara.scan(
            lambda x, acc: acc + _positive(x), sequences=[row], outputs_info=[at.as_tensor(np.float64(0.0))]
        )
        return inner[-1]

    sums, _ = aesara.scan(row_sum, sequences=[xs])
    reference, ours = _compile_both([xs], sums)
    good = np.arange(1.0, 7.0).reshape(2, 3)
    np.testing.assert_allclose(ours(good), reference(good))
    bad = good.copy()
    bad[1, 2] = -1.0
    with pytest.raises(NegativeScaleError, match="scale must be positive"):
        ours(bad)


def test_only_graphs_with_checks_are_compiled_with_them():
    x = at.dvector("x")
    plain = aesara.function([x], x * 2, mode=aejax.linker.mode)
    checked = aesara.function([x], _positive(x) * 2, mode=aejax.linker.mode)
    plain(np.ones(2))
    checked(np.ones(2))
    assert not plain.vm.jit_fn.segments[0].program.checked
    assert checked.vm.jit_fn.segments[0].program.checked
    assert not any(isinstance(p, CheckedProgram) for p in plain.vm.jit_fn.segments[0].program.programs.values())
    assert all(isinstance(p, CheckedProgram) for p in checked.vm.jit_fn.segments[0].program.programs.values())


@pytest.mark.parametrize("where", ["graph", "loop"])
def test_a_check_costs_the_first_call_no_second_trace(where):
    """A graph with a check is traced as often as the same graph without it, and a loop whose body holds no check
    makes no checked program."""
    x = at.dvector("x")
    check = _positive if where == "graph" else (lambda v: v)

    def step(h):
        return Halve()(_positive(h) if where == "loop" else h)

    def compiled(checked):
        hs, _ = aesara.scan(step if checked else lambda h: Halve()(h), outputs_info=[x], n_steps=3)
        return aesara.function([x], (check(hs[-1]) if checked else hs[-1]).sum(), mode=aejax.linker.mode)

    traces = []
    for checked in (False, True):
        f = compiled(checked)
        Halve.traced = 0
        np.testing.assert_allclose(f(np.ones(2)), 0.25)
        traces.append(Halve.traced)
        assert f.vm.jit_fn.segments[0].program.checked is checked
    assert traces[0] == traces[1] > 0
    with pytest.raises(NegativeScaleError):
        f(-np.ones(2))


def test_aeppl_parameter_check_raises():
    aeppl = pytest.importorskip("aeppl")
    from aeppl.logprob import ParameterValueError

    mu, sigma = at.dscalars("mu", "sigma")
    y = at.random.normal(mu, sigma, size=3)
    logp, (value,) = aeppl.joint_logprob(y)
    reference, ours = _compile_both([value, mu, sigma], logp)
    point = (np.array([0.1, -0.3, 2.0]), 0.5, 1.5)
    np.testing.assert_allclose(ours(*point), reference(*point))
    for f in (reference, ours):
        with pytest.raises(ParameterValueError, match="sigma > 0"):
            f(point[0], 0.5, -1.0)


def test_exported_graph_warns_that_it_cannot_raise():
    import jax

    x = at.dvector("x")
    graph = aejax.linker.jaxify([x], _positive(x) * 2)
    with pytest.warns(UserWarning, match="not checked"):
        outputs, _ = jax.jit(graph.fn)(graph.state, np.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(outputs, [2.0, 2.0])


def test_each_program_numbers_its_own_checks():
    """A program's failure codes name the checks of its own table, so a saved program records its checks alone."""
    x = at.dvector("x")
    first = aesara.function([x], _positive(x) * 2, mode=aejax.linker.mode)
    second = aesara.function([x], _big_step(x) * 2, mode=aejax.linker.mode)
    first(np.ones(2))
    second(np.ones(2))
    (program,) = second.vm.jit_fn.segments[0].program.programs.values()
    assert program.checks.entries() == [(SmallStepError, "step must be at least 0.5")]
    with pytest.raises(SmallStepError, match="at least 0.5"):
        second(np.full(2, 0.1))


def _node_named(error: BaseException) -> str:
    """The node Aesara's error annotation (`raise_with_op`) names: the text after "Apply node that caused the error"."""
    return str(error).split("Apply node that caused the error: ")[1].splitlines()[0]


@pytest.mark.parametrize("calls", [1, 2], ids=["first call", "warm call"])
def test_a_failed_check_names_its_node_as_the_reference_does(calls):
    """The error names the checking node with its input values, not the node the program's output comes from."""
    x = at.dvector("x")
    checked = Assert("x must be positive")(x, at.all(x > 0))
    errors = []
    for f in _compile_both([x], (checked * 2).sum() + x.mean()):
        for _ in range(calls - 1):
            f(np.ones(3))
        with pytest.raises(AssertionError, match="x must be positive") as info:
            f(np.array([1.0, -2.0, 3.0]))
        errors.append(info.value)
    reference, ours = map(str, errors)
    assert _node_named(errors[1]) == _node_named(errors[0]) == "Assert{msg=x must be positive}(x, All.0)"
    assert "Inputs values: [array([ 1., -2.,  3.]), " in ours  # the argument; the condition stayed in the program
    assert "(computed inside the JAX program)" in ours and "(computed inside" not in reference


def test_a_failed_check_in_a_loop_step_names_the_loop_as_the_reference_does():
    xs = at.dvector("xs")
    ys, _ = aesara.scan(lambda x, acc: acc + _positive(x), sequences=[xs], outputs_info=[at.as_tensor(np.float64(0.0))])
    errors = []
    for f in _compile_both([xs], ys[-1] * 2):
        with pytest.raises(NegativeScaleError) as info:
            f(np.array([1.0, -2.0, 3.0]))
        errors.append(info.value)
    assert _node_named(errors[1]).startswith("for{cpu,scan_fn}(")
    assert str(errors[0]).split("Apply node that caused the error: ")[-1].startswith("for{cpu,scan_fn}(")


def test_two_checks_with_one_message_are_numbered_apart_and_a_saved_table_keeps_both():
    """Checks are filed under their nodes; a saved program's table is read back number for number, with the nodes
    the store found again or none."""
    x = at.dvector("x")
    reference, f = _compile_both([x], _positive(x) * 2 + _positive(x - 1).sum())
    f(np.full(2, 3.0))
    (program,) = f.vm.jit_fn.segments[0].program.programs.values()
    entries = program.checks.entries()
    assert entries == [(NegativeScaleError, "scale must be positive")] * 2
    nodes = program.checks.nodes()
    assert len(set(nodes)) == 2 and all(node in f.maker.fgraph.apply_nodes for node in nodes)
    unknown, found = CheckTable(), CheckTable()
    unknown.extend((exc_type, message, None) for exc_type, message in entries)
    found.extend((exc_type, message, node) for (exc_type, message), node in zip(entries, nodes))
    assert unknown.entries() == found.entries() == entries
    assert isinstance(unknown.exception(1), NegativeScaleError) and raised_by(unknown.exception(1)) is None
    assert raised_by(found.exception(1)).node is nodes[1]
    named = []
    for function in (reference, f):
        with pytest.raises(NegativeScaleError) as info:
            function(np.full(2, 0.5))  # the second check fails
        named.append(_node_named(info.value))
    for name in named:  # the check of ``x - 1`` (rewritten ``x + -1`` by the reference's rewrites), not of ``x``
        assert name.startswith("CheckAndRaise{") and name.endswith("_inplace}.0, All.0)")
