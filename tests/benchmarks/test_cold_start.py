"""The cold-start benchmark: JAX's compile spans counted once each, and a child that reports every stage."""

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import cold_start  # noqa: E402

TRACE, MLIR, XLA = cold_start.JAX_PHASES


def timers_with(*spans):
    timers = cold_start.JaxTimers()
    with timers.listen():
        for event, start, end in spans:
            timers(event, start, end, fun_name="f")
    return timers


def test_nested_spans_count_once_in_the_innermost_stage():
    # A jit traced inside another's trace, which compiles an eager op while tracing.
    timers = timers_with((TRACE, 2.0, 3.0), (XLA, 2.5, 2.75), (TRACE, 0.0, 4.0), (MLIR, 4.0, 5.0), (XLA, 5.0, 7.0))
    assert timers.phases(10.0) == {"trace": 3.75, "mlir": 1.0, "xla": 2.25, "rest": 3.0}


def test_phases_within_a_window_and_events_heard_only_while_listening():
    timers = timers_with((TRACE, 0.0, 4.0), (XLA, 5.0, 7.0))
    timers("/jax/other/event", 0.0, 9.0)
    timers(XLA, 8.0, 9.0)  # after listening
    assert timers.phases(4.0, within=(3.0, 6.0)) == {"trace": 1.0, "mlir": 0.0, "xla": 1.0, "rest": 2.0}


@pytest.mark.parametrize("system", cold_start.SYSTEMS)
def test_a_child_reports_each_stage_and_its_total(system):
    if system == "numpyro":
        pytest.importorskip("numpyro")
    seconds = cold_start.child(system, "gaussian", transitions=3)
    stages = cold_start.STAGES[system]
    assert seconds["total"] == pytest.approx(sum(seconds[stage] for stage in stages))
    assert seconds["xla"] > 0 and seconds["call xla"] > 0
    assert sum(seconds[phase] for phase in cold_start.JAX_COLUMNS) == pytest.approx(seconds["total"])
