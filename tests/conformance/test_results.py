"""The classification of a conformance report against expected.toml."""

from pathlib import Path

import pytest

from conformance.results import Expected, classify, load_expected, table

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
        "t.py::fixed": "now pass",
        "t.py::wrong": "wrong values",
        "t.py::crash": "failed unexpectedly",
        "t.py::skip": "skipped",
        "t.py::seen": "passed",
        "t.py::hangs": "failed as expected",
    }
    assert result.bad and result.reference_raised == 1
    assert "| s | 3 | 2 | 1 | 1 | 1 | 1 | 1 | 1.0 min |" in table([result])


def test_an_unknown_category_is_refused(tmp_path: Path):
    path = tmp_path / "expected.toml"
    path.write_text('[[s]]\ntest = "t.py::x"\ncategory = "flaky"\nreason = "r"\n')
    with pytest.raises(ValueError, match="category 'flaky'"):
        load_expected(path)
