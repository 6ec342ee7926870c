"""Failure codes travel as values: the trace context holds no cell that tracing writes into (#49 item 3)."""

import dataclasses

import jax
import jax.numpy as jnp
import pytest
from aesara.graph.basic import Apply

import aejax.linker.checks as checks
from aejax.linker.checks import CheckTable, ProgramTrace, coded_program, require
from aejax.linker.trace.outcome import Outputs, attempt
from aejax.linker.trace_context import CHECKED, OUTSIDE, current, entered


def _mutable(value):
    """Whether ``value`` is a cell tracing could write into: a list, dict or set, or a dataclass that is not frozen."""
    if isinstance(value, (list, dict, set)):
        return True
    return dataclasses.is_dataclass(value) and not value.__dataclass_params__.frozen


def _fields(context):
    return {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}


def test_the_trace_context_holds_no_mutable_cell_outside_or_inside_a_checked_program():
    seen = []

    def traced(x):
        require(x > 0, ValueError, "x must be positive", "the test")
        seen.append(current())
        return x * 2

    jax.jit(coded_program(traced, CheckTable())).trace(jnp.ones(2))
    assert [name for name, value in _fields(OUTSIDE).items() if _mutable(value)] == []
    assert [name for name, value in _fields(seen[0]).items() if _mutable(value)] == []
    assert seen[0].code is not None  # the check's code, an immutable value


@pytest.mark.parametrize("gone", ["report_inner", "checks_met", "loop_step", "loop_failure_start", "recording_program"])
def test_codes_are_not_moved_by_hand(gone):
    assert not hasattr(checks, gone)


def test_a_nodes_code_is_part_of_its_outputs_not_of_the_scope_around_it():
    node = Apply.__new__(Apply)
    with entered(checks=CHECKED, table=CheckTable(), code=None):

        def compute():
            require(jnp.asarray(True), ValueError, "never fails", "the test")
            return [jnp.ones(1)]

        outcome = attempt(node, compute, lambda error: error)
        assert isinstance(outcome, Outputs) and outcome.code is not None
        assert current().code is None


def test_what_tracing_a_program_found_is_read_from_the_traced_program():
    table = CheckTable()

    def checked(x):
        require(x > 0, ValueError, "x must be positive", "the test")
        return x

    def calls_the_host(x):
        return jax.pure_callback(lambda v: v, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    found = [
        ProgramTrace.of(jax.jit(coded_program(fn, table)).trace(jnp.ones(2)))
        for fn in (checked, calls_the_host, jnp.sin)
    ]
    assert found == [ProgramTrace(True, False), ProgramTrace(False, True), ProgramTrace(False, False)]
    assert isinstance(jax.jit(coded_program(checked, table))(jnp.ones(2)), checks.Coded)
