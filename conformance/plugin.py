"""pytest plugin of the conformance run: every Aesara function of the session compiles on AEJAX.

Load it with ``-p conformance.plugin`` (the repository root on ``PYTHONPATH``)::

    python -m pytest -p conformance.plugin --conformance-compare tests/test_ifelse.py

Options:

- ``--conformance-compare``: also compile each function with the mode the
  test asked for and compare every call (`conformance.hook`);
- ``--conformance-report=PATH``: write one JSON line per test (outcome,
  incidents, counts), which ``conformance/run.py`` reads;
- ``--conformance-off``: no redirect (a baseline run of the same tests that
  still writes the report);
- ``--conformance-resident-shared``: ``aesara.shared`` of a numpy array
  builds aejax's resident shared variable (`conformance.shared`).

The redirect is installed at session start, after the suite's own
``pytest_sessionstart`` (Aesara's and the client libraries' conftest files set
``AESARA_FLAGS`` there, before Aesara is imported), and removed at session
end. A test that swallowed a wrong value, a lowering error or an AEJAX-only
exception fails after its call with the incidents listed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

_REPORT_KEY = pytest.StashKey[dict[str, Any]]()
_LONGREPR_LIMIT = 4000


def pytest_addoption(parser: pytest.Parser) -> None:
    """The conformance options."""
    group = parser.getgroup("conformance", "aejax conformance run")
    group.addoption(
        "--conformance-compare",
        action="store_true",
        help="compile every function with the asked mode too and compare each call's outputs and updates",
    )
    group.addoption("--conformance-report", metavar="PATH", help="write one JSON line per test to PATH")
    group.addoption("--conformance-off", action="store_true", help="do not redirect compilation to AEJAX")
    group.addoption(
        "--conformance-resident-shared",
        action="store_true",
        help="make aesara.shared of a numpy array build a resident (jax.Array-valued) shared variable",
    )


class Session:
    """The plugin's state for one pytest session: its options and the report file."""

    def __init__(self, config: pytest.Config) -> None:
        self.compare = bool(config.getoption("conformance_compare"))
        self.off = bool(config.getoption("conformance_off"))
        self.resident_shared = bool(config.getoption("conformance_resident_shared"))
        path = config.getoption("conformance_report")
        self.report = Path(path).open("a", encoding="utf-8") if path else None
        self.outcomes: dict[str, dict[str, Any]] = {}

    def write(self, line: dict[str, Any]) -> None:
        """Append one line to the report."""
        if self.report is not None:
            self.report.write(json.dumps(line) + "\n")
            self.report.flush()

    def close(self) -> None:
        """Close the report file."""
        if self.report is not None:
            self.report.close()
            self.report = None


_session: Session | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Read the options (nothing of Aesara is imported yet)."""
    global _session
    _session = Session(config)
    config.addinivalue_line("markers", "conformance: a test of the conformance run")


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Install the redirect (and the resident constructor), after the suite's conftest has set its Aesara flags."""
    if _session is None:
        return
    import aejax.adapters  # noqa: F401  (before the suite imports Aesara: under numpy 2 it makes Aesara 2.9.4 work)

    if _session.resident_shared:
        from conformance import shared

        shared.install()
    if _session.off:
        return
    from conformance import hook

    hook.install(compare=_session.compare)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Remove the redirect (and the resident constructor) and close the report."""
    if _session is None:
        return
    import aejax.adapters  # noqa: F401  (before the suite imports Aesara: under numpy 2 it makes Aesara 2.9.4 work)

    if _session.resident_shared:
        from conformance import shared

        shared.uninstall()
    if not _session.off:
        from conformance import hook

        hook.uninstall()
    _session.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Open a record for the test, and write its report line when it is done."""
    record = _begin()
    item.stash[_REPORT_KEY] = {"nodeid": item.nodeid, "outcome": "passed", "duration": 0.0, "message": ""}
    try:
        return (yield)
    finally:
        line = item.stash[_REPORT_KEY]
        if _session is not None:
            line.update(_session.outcomes.pop(item.nodeid, {}))
        if record is not None:
            line.update(
                incidents=[i.as_dict() for i in record.incidents],
                compiled=record.compiled,
                compared_calls=record.compared_calls,
            )
        if _session is not None:
            _session.write(line)


def _begin() -> Any:
    if _session is None or _session.off:
        return None
    from conformance import hook

    return hook.begin_record()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Fail a test that passed although AEJAX gave a wrong value, could not lower a graph, or raised alone."""
    result = yield
    if _session is not None and not _session.off:
        from conformance import hook

        failing = hook.current().failing()
        if failing:
            listed = "\n".join(f"- {i.kind}: {i.message}" for i in failing)
            pytest.fail(f"the test passed, but the conformance run saw:\n{listed}", pytrace=False)
    return result


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Fold the setup, call and teardown reports into the test's outcome."""
    if _session is None:
        return
    line = _session.outcomes.setdefault(report.nodeid, {})
    line["duration"] = line.get("duration", 0.0) + report.duration
    outcome = _outcome_of(report)
    if outcome is not None and _RANK[outcome] > _RANK.get(line.get("outcome", "passed"), 0):
        line["outcome"] = outcome
        line["message"] = _message_of(report)
        line["trace"] = _trace_of(report)


_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 2, "failed": 3, "error": 4}


def _outcome_of(report: pytest.TestReport) -> str | None:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.failed:
        return "failed" if report.when == "call" else "error"
    if report.skipped:
        return "skipped"
    return "passed" if report.when == "call" else None


def _trace_of(report: pytest.TestReport) -> list[str]:
    """Where the failure's traceback passed, ``path:line`` per entry (the message keeps only its end)."""
    entries = getattr(getattr(report.longrepr, "reprtraceback", None), "reprentries", None) or []
    places = []
    for entry in entries:
        location = getattr(entry, "reprfileloc", None)
        if location is not None:
            places.append(f"{location.path}:{location.lineno}")
    return places


def _message_of(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    text = report.longreprtext or ""
    return text if len(text) <= _LONGREPR_LIMIT else "..." + text[-_LONGREPR_LIMIT:]


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A file or class that does not collect is one failed entry of the report."""
    if _session is not None and report.failed:
        _session.write({"nodeid": report.nodeid, "outcome": "error", "duration": 0.0, "message": _message_of(report)})
