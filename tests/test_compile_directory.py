"""The tests compile into a directory of their own (tests/conftest.py), never the user's ``~/.aesara``."""

import os
import subprocess
import sys
from pathlib import Path

import aesara

from aejax.linker.program.persistent_cache import cache_directory

ROOT = Path(__file__).resolve().parent.parent
SAVING_TEST = "tests/scan/test_on_host.py::test_shape_from_a_scalar_input_still_makes_it_static"
"""A test whose programs the store saves (with JAX's threshold at 0 s), and that fails if one loaded from an
earlier run gives no ``ShapeInputWarning``."""


def test_this_session_compiles_outside_the_users_home():
    compiledir = Path(aesara.config.compiledir)
    assert compiledir.name.startswith("compiledir_")
    assert compiledir.parent.name.startswith("aejax-tests-aesara-")
    assert cache_directory().is_relative_to(compiledir)


def test_two_sessions_in_a_row_pass_write_nothing_in_home_and_leave_no_compile_directory(tmp_path):
    home, temporary = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    temporary.mkdir()
    env = {name: value for name, value in os.environ.items() if name != "AESARA_FLAGS"}  # as a user runs pytest
    env.update(HOME=str(home), TMPDIR=str(temporary), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", SAVING_TEST]
    for _ in range(2):
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:]
    assert not (home / ".aesara").exists()
    assert list(temporary.glob("aejax-tests-aesara-*")) == []
