"""Run other projects' test suites with every Aesara function compiled on AEJAX, and tabulate.

    python conformance/run.py aesara --paths tests/scan tests/link/jax
    python conformance/run.py aeppl aehmc aemcmc --tests-from aeppl=/path/to/aeppl-checkout
    python conformance/run.py --subset ci

Each suite's sources come from its PyPI sdist, downloaded once into the
cache (``~/.cache/aejax-conformance``, or ``$AEJAX_CONFORMANCE_CACHE``). The
suite runs in its own folder of that cache with its own pytest
configuration and conftest, under the plugin `conformance.plugin` (with
``--conformance-compare`` unless ``--no-compare``); its report is classified
against ``conformance/expected.toml``. The exit status is 1 when any test
failed unexpectedly, gave a wrong value, or passed though listed as expected
to fail, or when pytest did not run the tests through (a usage error, an
internal error, no test run); 0 otherwise. See README.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from conformance.results import SuiteResult, aborted, classify, load_expected, read_report, table  # noqa: E402

CACHE = Path(os.environ.get("AEJAX_CONFORMANCE_CACHE", Path.home() / ".cache" / "aejax-conformance"))
AESARA_FLAGS = "cxx=,blas__ldflags="
"""No C compilation for the reference modes (their Python implementations run) and no BLAS probe."""


@dataclass(frozen=True)
class Suite:
    """A test suite: the PyPI sdist it comes from and the files of it that a run needs."""

    name: str
    version: str
    default_paths: tuple[str, ...]
    tag: str

    @property
    def sdist_name(self) -> str:
        """The sdist's folder and archive name."""
        return f"{self.name}-{self.version}"


SUITES = {
    "aesara": Suite(
        "aesara",
        "2.9.4",
        (
            "tests/scan",
            "tests/link/jax",
            "tests/test_ifelse.py",
            "tests/test_gradient.py",
            "tests/test_raise_op.py",
            "tests/test_updates.py",
            "tests/test_rop.py",
            "tests/compile/function",
            "tests/compile/test_builders.py",
            "tests/compile/test_shared.py",
            "tests/tensor/test_sharedvar.py",
            "tests/tensor/test_xlogx.py",
            "tests/tensor/test_keepdims.py",
            "tests/tensor/test_casting.py",
            "tests/tensor/test_complex.py",
            "tests/tensor/test_math_scipy.py",
            "tests/typed_list",
            "tests/tensor/random",
            "tests/tensor/test_basic.py",
            "tests/tensor/test_math.py",
            "tests/tensor/test_subtensor.py",
            "tests/tensor/test_elemwise.py",
            "tests/tensor/test_extra_ops.py",
            "tests/tensor/test_nlinalg.py",
            "tests/tensor/test_slinalg.py",
            "tests/tensor/test_shape.py",
            "tests/tensor/test_sort.py",
            "tests/tensor/test_special.py",
            "tests/tensor/test_fft.py",
            "tests/tensor/test_fourier.py",
            "tests/tensor/test_inplace.py",
            "tests/tensor/test_io.py",
            "tests/tensor/test_misc.py",
            "tests/tensor/test_type_other.py",
            "tests/tensor/test_var.py",
            "tests/tensor/nnet/test_basic.py",
            "tests/tensor/nnet/test_sigm.py",
            "tests/tensor/nnet/test_batchnorm.py",
            "tests/tensor/nnet/test_neighbours.py",
            "tests/tensor/signal/test_conv.py",
            "tests/compile/test_ops.py",
            "tests/compile/test_misc.py",
            "tests/compile/test_nanguardmode.py",
            "tests/graph/test_compute_test_value.py",
            "tests/test_printing.py",
        ),
        "rel-2.9.4",
    ),
    "aeppl": Suite("aeppl", "0.1.5", ("tests",), "v0.1.5"),
    "aehmc": Suite("aehmc", "0.0.11", ("tests",), "v0.0.11"),
    "aemcmc": Suite("aemcmc", "0.0.8", ("tests",), "v0.0.8"),
}

SUBSETS = {
    "ci": {
        "aesara": (
            "tests/test_ifelse.py",
            "tests/scan/test_basic.py::TestScan::test_one_sequence_one_output_weights",
            "tests/scan/test_basic.py::TestScan::test_shared_updates",
        ),
    },
}
"""Named short runs: suite -> paths."""

CONFIG_FILES = ("conftest.py", "setup.cfg", "pyproject.toml", "pytest.ini", "tox.ini")


class Unavailable(Exception):
    """A suite's tests cannot be had (its sdist ships none and no ``--tests-from`` was given)."""


def download_sdist(suite: Suite) -> Path:
    """The suite's sdist archive in the cache, downloaded with pip when missing."""
    folder = CACHE / "sdists"
    archive = folder / f"{suite.sdist_name}.tar.gz"
    if not archive.exists():
        folder.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*command, f"{suite.name}=={suite.version}", "-d", str(folder)], check=True)
    if not archive.exists():
        raise FileNotFoundError(f"pip did not leave {archive.name} in {folder}")
    return archive


def prepare(suite: Suite, tests_from: Path | None, out: Path) -> Path:
    """The suite's working folder: its tests and pytest configuration, without the package's source.

    The package itself is the installed one; a copy of its source beside the
    tests would shadow it.
    """
    work = out / "work" / suite.sdist_name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    with tarfile.open(download_sdist(suite)) as archive:
        for member in archive.getmembers():
            relative = Path(*Path(member.name).parts[1:])
            if relative.parts and (relative.parts[0] == "tests" or str(relative) in CONFIG_FILES):
                member.name = str(relative)
                archive.extract(member, work, filter="data")
    if tests_from is not None:
        _copy_tests(suite, tests_from, work)
    if not (work / "tests").is_dir():
        raise Unavailable(
            f"the PyPI sdist of {suite.sdist_name} ships no tests; pass --tests-from {suite.name}=DIR "
            "(a checkout of its sources, or a git repository holding the tag "
            f"{suite.tag})"
        )
    return work


def _copy_tests(suite: Suite, source: Path, work: Path) -> None:
    """Tests (and conftest.py) from a checkout, or from a git repository at the suite's tag."""
    if (source / "tests").is_dir():
        shutil.copytree(source / "tests", work / "tests", dirs_exist_ok=True)
        if (source / "conftest.py").exists():
            shutil.copy(source / "conftest.py", work / "conftest.py")
        return
    wanted = [p for p in ("tests", "conftest.py") if _git_has(source, suite.tag, p)]
    if not wanted:
        raise Unavailable(f"{source} has neither tests/ nor a git tag {suite.tag} with tests/")
    archive = subprocess.run(
        ["git", f"--git-dir={source}", "archive", "--format=tar", suite.tag, *wanted],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)


def _git_has(git_dir: Path, tag: str, path: str) -> bool:
    found = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "-e", f"{tag}:{path}"], capture_output=True, check=False
    )
    return found.returncode == 0


def run_suite(
    suite: Suite,
    work: Path,
    paths: list[str],
    args: argparse.Namespace,
    out: Path,
    baseline: bool = False,
    deselect: tuple[str, ...] = (),
) -> tuple[float, int]:
    """Run pytest on ``paths`` of the suite in its folder; returns the wall time in seconds and pytest's exit status.

    With ``baseline`` the tests run without the redirect (``--conformance-off``)
    into ``SUITE.baseline.jsonl``: does a failure happen without aejax too?
    """
    stem = f"{suite.name}.baseline" if baseline else suite.name
    report, log = out / f"{stem}.jsonl", out / f"{stem}.log"
    report.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", "-p", "conformance.plugin", f"--conformance-report={report}"]
    command += ["-p", "no:cacheprovider", "-q", "-rN", "--continue-on-collection-errors"]
    if importlib.util.find_spec("pytest_timeout") is not None:
        command += [f"--timeout={args.timeout}", "-o", "timeout_method=signal"]
    else:
        print(f"[{suite.name}] pytest-timeout is not installed: no per-test timeout", flush=True)
    if baseline:
        command.append("--conformance-off")
    elif not args.no_compare:
        command.append("--conformance-compare")
    if args.resident_shared:
        command.append("--conformance-resident-shared")
    command += [item for test in deselect for item in ("--deselect", test)]
    command += [*args.pytest_args, *paths]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["AESARA_FLAGS"] = ",".join(filter(None, [AESARA_FLAGS, env.get("AESARA_FLAGS")]))
    shown = command[1:] if len(command) < 40 else [*command[1:30], f"... ({len(paths)} tests)"]
    print(f"[{suite.name}] {' '.join(shown)}  (in {work}, log {log})", flush=True)
    start = time.monotonic()
    with log.open("w", encoding="utf-8") as stream:
        done = subprocess.run(command, cwd=work, env=env, stdout=stream, stderr=subprocess.STDOUT, check=False)
    return time.monotonic() - start, done.returncode


def run_baseline(suite: Suite, work: Path, result: SuiteResult, args: argparse.Namespace, out: Path) -> None:
    """Run the suite's unexpected failures again without aejax, and note those that fail there too."""
    failing = [row.nodeid for row in result.rows if row.column in ("failed unexpectedly", "wrong values")]
    tests = [nodeid for nodeid in failing if "::" in nodeid]  # a file that failed to collect is no test id
    if not tests:
        return
    run_suite(suite, work, tests, args, out, baseline=True)
    result.mark_baseline(read_report(out / f"{suite.name}.baseline.jsonl"))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The runner's command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suites", nargs="*", metavar="SUITE", help=f"suites to run: {', '.join(SUITES)}")
    parser.add_argument("--paths", nargs="+", help="test paths inside the suite (default: the suite's own list)")
    parser.add_argument("--subset", choices=list(SUBSETS), help="a named short run (ci: a few minutes)")
    parser.add_argument("--tests-from", action="append", default=[], metavar="SUITE=DIR", help="where tests are")
    parser.add_argument("--no-compare", action="store_true", help="only redirect to AEJAX, compare nothing")
    parser.add_argument(
        "--resident-shared",
        action="store_true",
        help="numpy-valued aesara.shared builds resident (jax.Array-valued) shared variables",
    )
    parser.add_argument(
        "--baseline",
        action="store_true",
        help="run the unexpected failures again without aejax, and say which fail there too",
    )
    parser.add_argument("--timeout", type=int, default=300, help="seconds per test (pytest-timeout)")
    parser.add_argument("--expected", type=Path, default=REPO / "conformance" / "expected.toml")
    parser.add_argument("--out", type=Path, help="results folder (default: a new one in the cache)")
    parser.add_argument("--reclassify", type=Path, metavar="DIR", help="classify the reports in DIR again; run none")
    parser.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=[], help="passed on to pytest")
    args = parser.parse_args(argv)
    if not args.suites and not args.subset and not args.reclassify:
        parser.error("name a suite, --subset or --reclassify")
    unknown = [name for name in args.suites if name not in SUITES]
    if unknown:
        parser.error(f"unknown suite {', '.join(unknown)}; the suites are {', '.join(SUITES)}")
    return args


def _tests_from(args: argparse.Namespace) -> dict[str, Path]:
    found = {}
    for item in args.tests_from:
        name, _, path = item.partition("=")
        if name not in SUITES or not path:
            raise SystemExit(f"--tests-from wants SUITE=DIR with SUITE one of {', '.join(SUITES)}, not {item!r}")
        found[name] = Path(path).expanduser().resolve()
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the asked suites, print the table; 1 if any suite has a test in a column of `conformance.results.BAD`, else 0."""
    args = parse_args(argv)
    expected = load_expected(args.expected)
    if args.reclassify:
        return _report(_reclassify(args.reclassify, expected), args.reclassify)
    out = args.out or CACHE / "results" / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    plan = {name: list(paths) for name, paths in SUBSETS[args.subset].items()} if args.subset else {}
    for name in args.suites:
        plan[name] = list(args.paths or SUITES[name].default_paths)
    sources = _tests_from(args)
    results = []
    for name, paths in plan.items():
        suite = SUITES[name]
        try:
            work = prepare(suite, sources.get(name), out)
        except Unavailable as reason:
            print(f"[{name}] not run: {reason}", flush=True)
            results.append(SuiteResult.unavailable(name, str(reason)))
            continue
        hanging = tuple(entry.test for entry in expected.get(name, []) if entry.skip)
        elapsed, status = run_suite(suite, work, paths, args, out, deselect=hanging)
        result = classify(name, read_report(out / f"{name}.jsonl"), expected.get(name, []), elapsed)
        result.aborted = aborted(status)
        if args.baseline:
            run_baseline(suite, work, result, args, out)
        (out / f"{name}.paths").write_text("\n".join(paths) + "\n", encoding="utf-8")
        results.append(result)
        print(table([result]), flush=True)
    return _report(results, out)


def _reclassify(folder: Path, expected: dict) -> list[SuiteResult]:
    results = []
    for report in sorted(folder.glob("*.jsonl")):
        name = report.stem
        if name.endswith(".baseline"):
            continue
        timing = folder / f"{name}.time"
        elapsed = float(timing.read_text()) if timing.exists() else 0.0
        result = classify(name, read_report(report), expected.get(name, []), elapsed)
        result.mark_baseline(read_report(folder / f"{name}.baseline.jsonl"))
        results.append(result)
    return results


def _report(results: list[SuiteResult], out: Path) -> int:
    for result in results:
        if result.elapsed:
            (out / f"{result.suite}.time").write_text(f"{result.elapsed:.1f}\n", encoding="utf-8")
    text = table(results, details=True)
    (out / "summary.md").write_text(text + "\n", encoding="utf-8")
    (out / "summary.json").write_text(json.dumps([r.as_dict() for r in results], indent=1) + "\n", encoding="utf-8")
    print(text)
    print(f"\nresults in {out}")
    return 1 if any(r.bad for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
