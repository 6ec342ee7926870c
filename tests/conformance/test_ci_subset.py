"""The conformance run's CI subset: a few files of Aesara's own suite on AEJAX, every difference expected.

It downloads Aesara's sdist from PyPI once (into the conformance cache) and
takes well under a minute on an idle machine; it skips when the sdist cannot
be had.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.run import SUITES, download_sdist

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def aesara_sdist() -> None:
    """Aesara's sdist in the conformance cache (a skip when PyPI cannot be reached)."""
    try:
        download_sdist(SUITES["aesara"])
    except (subprocess.CalledProcessError, FileNotFoundError) as error:
        pytest.skip(f"Aesara's sdist cannot be downloaded: {error}")


def test_the_ci_subset_has_no_unexpected_failure_nor_wrong_value(aesara_sdist: None, tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(REPO / "conformance" / "run.py"), "--subset", "ci", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "| aesara |" in run.stdout
