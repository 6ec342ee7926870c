"""The classification of a conformance report against expected.toml."""

import json
from pathlib import Path

import pytest

from conformance.results import Expected, aborted, classify, load_expected, table
from conformance.run import main

REPO = Path(__file__).resolve().parents[2]


def line(nodeid: str, outcome: str, *kinds: str) -> dict:
    return {"nodeid": nodeid, "outcome": outcome, "incidents": [{"kind": k, "message": "m"} for k in kinds]}


def test_the_expected_file_of_the_repository_is_valid():
    expected = load_expected(REPO / "conformance" / "expected.toml")
    assert {"aesara", "aeppl", "aehmc", "aemcmc"} <= set(expected)


def test_an_entry_names_a_test_or_a_prefix_ending_at_a_boundary():
    entry = Expected("tests/a.py::test_f", "internals", "r")
    assert entry.matches("tests/a.py::test_f")
    assert entry.matches("tests/a.py::test_f[int64]")
    assert not entry.matches("tests/a.py::test_f2")
    assert Expected("tests/a.py::TestK::", "internals", "r").matches("tests/a.py::TestK::test_g")


def test_each_test_lands_in_one_column():
    expected = [Expected("t.py::listed", "known-bug", "r"), Expected("t.py::fixed", "known-bug", "r")]
    expected.append(Expected("t.py::hangs", "known-bug", "r", skip=True))
    lines = [
        line("t.py::ok", "passed"),
        line("t.py::xpass", "xpassed"),
        line("t.py::listed", "failed", "wrong value"),
        line("t.py::fixed", "passed"),
        line("t.py::wrong", "failed", "wrong value"),
        line("t.py::crash", "error"),
        line("t.py::skip", "skipped"),
        line("t.py::seen", "passed", "reference raised"),
    ]
    result = classify("s", lines, expected, 60.0)
    columns = {row.nodeid: row.column for row in result.rows}
    assert columns == {
        "t.py::ok": "passed",
        "t.py::xpass": "passed",
        "t.py::listed": "failed as expected",
        "t.py::fixed": "listed but passing",
        "t.py::wrong": "wrong values",
        "t.py::crash": "failed unexpectedly",
        "t.py::skip": "skipped",
        "t.py::seen": "passed",
        "t.py::hangs": "failed as expected",
    }
    assert result.bad and result.reference_raised == 1
    assert "| s | 3 | 2 | 1 | 1 | 1 | 1 | 1 | 1.0 min |" in table([result])


def test_an_entry_for_one_numpy_holds_only_under_it(tmp_path: Path):
    path = tmp_path / "expected.toml"
    entries = [("t.py::any", ""), ("t.py::old", "numpy = 1\n"), ("t.py::new", "numpy = 2\n")]
    path.write_text("".join(f'[[s]]\ntest = "{t}"\ncategory = "reference"\nreason = "r"\n{n}' for t, n in entries))
    for major, tests in ((1, ["t.py::any", "t.py::old"]), (2, ["t.py::any", "t.py::new"])):
        assert [entry.test for entry in load_expected(path, numpy_major=major)["s"]] == tests


def test_an_unknown_category_is_refused(tmp_path: Path):
    path = tmp_path / "expected.toml"
    path.write_text('[[s]]\ntest = "t.py::x"\ncategory = "flaky"\nreason = "r"\n')
    with pytest.raises(ValueError, match="category 'flaky'"):
        load_expected(path)


def reclassified(tmp_path: Path, outcome: str, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    """The runner's exit status and table for a report in which the listed test ``t.py::listed`` ended so."""
    (tmp_path / "expected.toml").write_text('[[s]]\ntest = "t.py::listed"\ncategory = "known-bug"\nreason = "r"\n')
    results = tmp_path / "results"
    results.mkdir()
    (results / "s.jsonl").write_text(json.dumps(line("t.py::listed", outcome)) + "\n")
    status = main(["--reclassify", str(results), "--expected", str(tmp_path / "expected.toml")])
    return status, capsys.readouterr().out


def test_a_listed_failure_that_passes_fails_the_run(tmp_path: Path, capsys: pytest.CaptureFixture):
    status, text = reclassified(tmp_path, "passed", capsys)
    assert status == 1
    assert "| listed but passing |" in text.splitlines()[0] and "| s | 0 | 0 | 0 | 0 | 1 | 0 |" in text
    assert "### s: listed but passing (1)" in text and "`t.py::listed`" in text


def test_a_listed_failure_that_fails_passes_the_run(tmp_path: Path, capsys: pytest.CaptureFixture):
    status, text = reclassified(tmp_path, "failed", capsys)
    assert status == 0
    assert "s: failed as expected by category: known-bug 1" in text


def test_a_flaky_entry_counts_a_pass_as_passed_and_a_failure_as_expected():
    expected = [Expected("t.py::sometimes", "internals", "r", flaky=True)]
    for outcome, column in (("passed", "passed"), ("failed", "failed as expected")):
        result = classify("s", [line("t.py::sometimes", outcome)], expected, 1.0)
        assert [row.column for row in result.rows] == [column] and not result.bad


def test_a_run_pytest_could_not_start_fails_whatever_its_report_holds():
    result = classify("s", [line("t.py::ok", "passed")], [], 1.0)
    assert not result.bad
    result.aborted = aborted(4)
    assert result.bad and "s: pytest ended with status 4: a usage error" in table([result], details=True)
    assert aborted(0) == aborted(1) == ""
