"""Run one script in several local processes joined by JAX's multi-controller runtime (``jax.distributed``).

Each process sees ``devices`` forced CPU devices, so ``jax.devices()`` lists
``processes * devices`` of them; the coordinator listens on a free port of
localhost. Every child is waited for within one deadline, ended by its own
pid if it outlives it, and every exit code is checked.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.two_devices import ROOT

JOIN = """
import os, jax
jax.distributed.initialize(
    os.environ["AEJAX_TEST_COORDINATOR"],
    num_processes=int(os.environ["AEJAX_TEST_PROCESSES"]),
    process_id=int(os.environ["AEJAX_TEST_PROCESS_ID"]),
    initialization_timeout=120,
)
"""
"""What each script starts with: joining the run (``jax.process_index()`` is then its process id)."""


def free_port() -> int:
    """A TCP port of localhost that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def run_in_processes(script: str, processes: int, devices: int, timeout: float = 300) -> list[str]:
    """Each process's standard output, ``script`` run in ``processes`` processes of ``devices`` CPU devices each.

    Fails the test, with the end of each process's standard error, when a
    process fails or the processes outlive ``timeout`` seconds together.
    """
    address = f"localhost:{free_port()}"
    with tempfile.TemporaryDirectory() as folder:
        logs = [(Path(folder, f"{rank}.out"), Path(folder, f"{rank}.err")) for rank in range(processes)]
        children = [start(script, address, processes, rank, devices, *logs[rank]) for rank in range(processes)]
        deadline = time.monotonic() + timeout
        try:
            for child in children:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for child in children:
                child.kill()
                child.wait()
        outputs = [out.read_text() for out, _ in logs]
        errors = [err.read_text()[-3000:] for _, err in logs]
    codes = [child.returncode for child in children]
    assert codes == [0] * processes, (
        f"exit codes {codes} (negative: ended after {timeout} s); standard errors: {errors}"
    )
    return outputs


def start(script: str, address: str, processes: int, rank: int, devices: int, out: Path, err: Path) -> subprocess.Popen:
    """Process ``rank`` of the run, writing its standard output and error into ``out`` and ``err``."""
    env = {
        **os.environ,
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
        "JAX_PLATFORMS": "cpu",
        "AEJAX_TEST_COORDINATOR": address,
        "AEJAX_TEST_PROCESSES": str(processes),
        "AEJAX_TEST_PROCESS_ID": str(rank),
    }
    with out.open("w") as stdout, err.open("w") as stderr:
        return subprocess.Popen([sys.executable, "-c", JOIN + script], cwd=ROOT, env=env, stdout=stdout, stderr=stderr)


def reported_by_new_process(script: str, argument: Any, compile_root: Path, switch: str = "1", **env: str) -> Any:
    """What ``script`` prints as JSON on its last line, run in a new process with ``argument`` (as JSON) as its
    ``sys.argv[1]``, Aesara's compile directory under ``compile_root``, aejax's store switched ``switch`` and the
    variables ``env`` set; fails the test, with the end of its standard error, when the process fails."""
    env = {
        **os.environ,
        "AESARA_FLAGS": f"base_compiledir={compile_root / 'aesara'}",
        "AEJAX_PERSISTENT_CACHE": switch,
        "PYTHONPATH": str(ROOT),
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(argument)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def store_entries(compile_root: Path) -> list[str]:
    """The names of the programs aejax's store holds under ``compile_root`` (as `reported_by_new_process` sets it)."""
    from aejax.linker.program.saved_programs import SUBDIRECTORY

    return sorted(path.name for path in (compile_root / "aesara").rglob(f"{SUBDIRECTORY}/*.exported"))
