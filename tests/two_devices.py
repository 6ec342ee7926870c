"""Run a script in a fresh Python process that sees several CPU devices (forced before JAX starts)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_on_devices(script: str, count: int) -> str:
    """``script``'s standard output, run seeing ``count`` CPU devices; fails the test, with the end of its standard
    error, if it fails."""
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={count}", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def run_on_two_devices(script: str) -> str:
    """``script``'s standard output, run seeing two CPU devices (`run_on_devices`)."""
    return run_on_devices(script, 2)
