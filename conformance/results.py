"""Read the plugin's reports, classify each test against ``expected.toml``, and tabulate.

Each test lands in one column:

- ``passed``;
- ``failed as expected``: it failed (or gave a wrong value) and ``expected.toml`` lists it;
- ``wrong values``: a compared call differed from its reference (not listed);
- ``failed unexpectedly``: any other failure or error (not listed);
- ``listed but passing``: listed as expected to fail, and passed (its entry must go);
- ``skipped``: skipped or xfailed by the suite itself.

``reference raised`` counts, beside, the tests in which the asked mode
failed where AEJAX returned values: not a failure, but worth a look.
"""

from __future__ import annotations

import importlib.metadata
import json
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CATEGORIES = {
    "internals": "inspects C/VM internals, rewrite names or the rewritten graph",
    "numpy-draws": "asserts NumPy's exact random draws",
    "statistical": "a seed-dependent statistical test",
    "stricter": "aejax does more than the test allows (e.g. raises earlier, warns)",
    "known-bug": "a known aejax bug being fixed",
    "unspecified": "the value is not unique (eigenvector signs, searchsorted of unsorted values): backends may differ",
    "reference": "fails on the asked mode as well, without aejax (the suite against this environment)",
    "platform": "XLA's arithmetic differs from NumPy's on this platform, in any JAX program (docs/limits.md)",
    "jax-backend": "asserts what Aesara's own JAX backend does where its reference backend differs (AEJAX follows the "
    "reference)",
}
"""The categories of expected differences, and what each means."""

COLUMNS = ("passed", "failed as expected", "failed unexpectedly", "wrong values", "listed but passing", "skipped")
BAD = ("wrong values", "failed unexpectedly", "listed but passing")
"""The columns that fail a run: a listed failure that passes is a stale entry, which would hide the test's next
failure."""
FAILED = ("failed", "error")
ABORTED = {2: "interrupted", 3: "an internal error", 4: "a usage error (a path that names no test?)", 5: "no test run"}
"""pytest's exit statuses that say the asked tests did not run through: they fail a run whatever the report holds."""


def aborted(status: int) -> str:
    """What pytest's exit ``status`` says went wrong with the run itself; empty for 0 (all passed) and 1 (some
    failed)."""
    return f"pytest ended with status {status}: {ABORTED[status]}" if status in ABORTED else ""


@dataclass(frozen=True)
class Expected:
    """One entry of ``expected.toml``: a test (or a prefix of test ids) expected to fail, and why."""

    test: str
    category: str
    reason: str
    skip: bool = False
    """Not run at all (``--deselect``): the test hangs where pytest-timeout cannot stop it."""
    flaky: bool = False
    """Fails in some runs only: a pass counts as passed, not as listed but passing."""
    numpy: int | None = None
    """The major version of numpy under which the test fails (``numpy = 2``: the suite or Aesara against numpy 2);
    none: under any."""

    def matches(self, nodeid: str) -> bool:
        """The entry names this test, or a file, class or parametrized function that holds it."""
        if nodeid == self.test:
            return True
        if not nodeid.startswith(self.test):
            return False
        return self.test.endswith(("/", "::")) or nodeid[len(self.test)] in "[:/"


NUMPY_MAJOR = int(importlib.metadata.version("numpy").split(".")[0])
"""The major version of the numpy the suites run with (this interpreter's: the runner starts pytest with it)."""


def load_expected(path: Path, numpy_major: int = NUMPY_MAJOR) -> dict[str, list[Expected]]:
    """``expected.toml`` as suite -> the entries that hold under ``numpy_major``; a missing file expects nothing."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    expected = {}
    for suite, entries in data.items():
        found = (_entry(suite, item) for item in entries)
        expected[suite] = [entry for entry in found if entry.numpy in (None, numpy_major)]
    return expected


def _entry(suite: str, item: dict[str, Any]) -> Expected:
    missing = {"test", "category", "reason"} - set(item)
    if missing:
        raise ValueError(f"expected.toml: an entry of [[{suite}]] lacks {', '.join(sorted(missing))}: {item}")
    if item["category"] not in CATEGORIES:
        raise ValueError(
            f"expected.toml: {item['test']}: category {item['category']!r} is none of {', '.join(CATEGORIES)}"
        )
    return Expected(
        item["test"],
        item["category"],
        item["reason"],
        bool(item.get("skip", False)),
        bool(item.get("flaky", False)),
        item.get("numpy"),
    )


def read_report(path: Path) -> list[dict[str, Any]]:
    """The plugin's report lines (the last line of a test wins); none when the file is missing."""
    if not path.exists():
        return []
    lines: dict[str, dict[str, Any]] = {}
    for text in path.read_text(encoding="utf-8").splitlines():
        if text.strip():
            line = json.loads(text)
            lines[line["nodeid"]] = line
    return list(lines.values())


@dataclass
class Row:
    """One classified test."""

    nodeid: str
    column: str
    summary: str
    expected: Expected | None = None
    baseline: str = ""
    """How the test ended in a baseline run without aejax (empty when it did not run there)."""


@dataclass
class SuiteResult:
    """A suite's classified tests."""

    suite: str
    rows: list[Row] = field(default_factory=list)
    elapsed: float = 0.0
    reference_raised: int = 0
    note: str = ""
    aborted: str = ""
    """Why pytest did not run the asked tests through (`ABORTED`), empty when it did."""

    @classmethod
    def unavailable(cls, suite: str, note: str) -> SuiteResult:
        """A suite that could not run (its tests are not to be had)."""
        return cls(suite, note=note)

    def mark_baseline(self, lines: list[dict[str, Any]]) -> None:
        """Note how each test ended in a run without aejax."""
        outcomes = {line["nodeid"]: line["outcome"] for line in lines}
        for row in self.rows:
            row.baseline = outcomes.get(row.nodeid, row.baseline)

    @property
    def counts(self) -> Counter:
        """How many tests in each column."""
        return Counter(row.column for row in self.rows)

    @property
    def bad(self) -> bool:
        """Whether any test failed unexpectedly, gave a wrong value, or passed though listed (`BAD`)."""
        counts = self.counts
        return bool(self.aborted) or any(counts[column] for column in BAD)

    def as_dict(self) -> dict[str, Any]:
        """The result as ``summary.json`` holds it."""
        return {
            "suite": self.suite,
            "elapsed": round(self.elapsed, 1),
            "counts": {column: self.counts[column] for column in COLUMNS},
            "reference_raised": self.reference_raised,
            "note": self.note,
            "aborted": self.aborted,
            "rows": [
                {"test": r.nodeid, "column": r.column, "summary": r.summary, "without_aejax": r.baseline}
                for r in self.rows
                if r.column not in ("passed", "skipped")
            ],
        }


def classify(suite: str, lines: list[dict[str, Any]], expected: list[Expected], elapsed: float) -> SuiteResult:
    """Put each test of a report in its column."""
    result = SuiteResult(suite, elapsed=elapsed)
    seen = {line["nodeid"] for line in lines}
    for entry in expected:
        if entry.skip and entry.test not in seen:
            result.rows.append(Row(entry.test, "failed as expected", f"not run: {entry.reason}", entry))
    for line in lines:
        entry = next((e for e in expected if e.matches(line["nodeid"])), None)
        kinds = {incident["kind"] for incident in line.get("incidents", [])}
        result.reference_raised += "reference raised" in kinds
        result.rows.append(Row(line["nodeid"], _column(line["outcome"], kinds, entry), summary_of(line), entry))
    return result


def _column(outcome: str, kinds: set[str], entry: Expected | None) -> str:
    if outcome in ("skipped", "xfailed"):
        return "skipped"
    if outcome not in FAILED:
        return "listed but passing" if entry is not None and not entry.flaky else "passed"
    if entry is not None:
        return "failed as expected"
    return "wrong values" if "wrong value" in kinds else "failed unexpectedly"


def summary_of(line: dict[str, Any], limit: int = 240) -> str:
    """A test's failure in one line: its first failing incident, else the last error line of its report."""
    for incident in line.get("incidents", []):
        if incident["kind"] != "reference raised":
            return _clip(f"{incident['kind']}: {incident['message']}", limit)
    message = line.get("message", "")
    errors = [text.strip() for text in message.splitlines() if text.startswith("E ")]
    if errors:
        return _clip(" ".join(errors[:3]).replace("E  ", "").strip(), limit)
    lines = [text.strip() for text in message.splitlines() if text.strip()]
    return _clip(lines[-1] if lines else line.get("outcome", ""), limit)


def _baseline_note(row: Row) -> str:
    if row.baseline in FAILED:
        return " (fails without aejax too)"
    return " (passes without aejax)" if row.baseline else ""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def table(results: list[SuiteResult], details: bool = False) -> str:
    """The Markdown table of the results, and with ``details`` what failed, each in one line."""
    head = ["suite", *COLUMNS, "reference raised", "time"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [r.suite, *(str(r.counts[c]) for c in COLUMNS), str(r.reference_raised), f"{r.elapsed / 60:.1f} min"]
        if r.note:
            cells = [r.suite, *("-" for _ in COLUMNS), "-", "not run"]
        lines.append("| " + " | ".join(cells) + " |")
    if details:
        lines += _details(results)
    return "\n".join(lines)


def _details(results: list[SuiteResult]) -> list[str]:
    lines = []
    for r in results:
        if r.note:
            lines += ["", f"{r.suite}: not run: {r.note}"]
        if r.aborted:
            lines += ["", f"{r.suite}: {r.aborted}"]
        for column in BAD:
            rows = [row for row in r.rows if row.column == column]
            if rows:
                lines += ["", f"### {r.suite}: {column} ({len(rows)})", ""]
                lines += [f"- `{row.nodeid}`{_baseline_note(row)}: {row.summary}" for row in rows]
        by_category = Counter(row.expected.category for row in r.rows if row.column == "failed as expected")
        if by_category:
            listed = ", ".join(f"{category} {n}" for category, n in sorted(by_category.items()))
            lines += ["", f"{r.suite}: failed as expected by category: {listed}"]
    return lines
