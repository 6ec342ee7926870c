"""The plugin in a pytest session of its own: a swallowed wrong value fails the test, and the report says so."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

SUITE = """
import aesara
import aesara.tensor as at
import numpy as np
from aesara.graph.basic import Apply
from aesara.graph.op import Op

import aejax.linker


class Doubled(Op):
    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] * 2


@aejax.linker.jax_funcify.register(Doubled)
def _triple(op, **kwargs):
    return lambda x: x * 3


def test_right():
    x = at.dvector("x")
    f = aesara.function([x], x + 1, mode="FAST_COMPILE")
    assert type(f.maker.linker).__name__ == "JAXCodecLinker"
    assert f([1.0]).tolist() == [2.0]


def test_swallows_a_wrong_value():
    x = at.dvector("x")
    f = aesara.function([x], Doubled()(x))
    try:
        f([1.0])
    except Exception:
        pass
"""


@pytest.fixture
def session_env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A folder with the small suite, the repository root importable."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("AESARA_FLAGS", "cxx=,blas__ldflags=")
    pytester.makepyfile(test_small=SUITE)
    return pytester


def test_a_swallowed_wrong_value_fails_the_test_and_is_reported(session_env: pytest.Pytester) -> None:
    report = session_env.path / "report.jsonl"
    result = session_env.runpytest_subprocess(
        "-p", "conformance.plugin", "--conformance-compare", f"--conformance-report={report}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*the test passed, but the conformance run saw:*", "*- wrong value: output 0*"])
    lines = {line["nodeid"]: line for line in map(json.loads, report.read_text().splitlines())}
    assert lines["test_small.py::test_right"]["outcome"] == "passed"
    swallowed = lines["test_small.py::test_swallows_a_wrong_value"]
    assert swallowed["outcome"] == "failed"
    assert [i["kind"] for i in swallowed["incidents"]] == ["wrong value"]
