"""JAX's persistent compilation cache is on by default, in Aesara's compile directory, and can be turned off."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

THRESHOLD = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"

PROGRAM = textwrap.dedent(
    """
    import json, sys
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    import aesara, aesara.tensor as at, jax, numpy as np
    import aejax.linker
    from aejax.linker.program.persistent_cache import cache_directory

    if sys.argv[1] != "-":
        jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    x = at.dvector("x")
    f = aesara.function([x], (at.exp(x) * 2).sum(), mode="AEJAX")
    f(np.arange(3.0))
    from aesara.link.c.basic import get_module_cache
    get_module_cache().refresh()  # Aesara removes the empty folders of its compile directory
    print(json.dumps({
        "jax": jax.config.jax_compilation_cache_dir,
        "ours": str(cache_directory()),
        "kept": cache_directory().is_dir(),
        "threshold": jax.config.jax_persistent_cache_min_compile_time_secs,
    }))
    """
)


def _run(tmp_path, chosen="-", threshold="0", **env):
    """What the program's process ends with; ``threshold`` is the user's minimum compile time, ``None`` for JAX's."""
    environment = {
        **{k: v for k, v in os.environ.items() if k != THRESHOLD},
        "AESARA_FLAGS": f"base_compiledir={tmp_path / 'aesara'}",
        "PYTHONPATH": str(ROOT),
        **({} if threshold is None else {THRESHOLD: threshold}),
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, chosen], env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _entries(folder):
    return [p for p in Path(folder).rglob("*") if p.is_file()] if Path(folder).exists() else []


def test_programs_are_cached_in_aesaras_compile_directory(tmp_path):
    where = _run(tmp_path)
    assert where["jax"] == where["ours"]
    assert Path(where["ours"]).is_relative_to(tmp_path / "aesara")
    assert _entries(where["ours"])


def test_the_cache_directory_outlives_aesaras_removal_of_empty_folders_before_its_first_entry(tmp_path):
    """JAX makes the folder empty; without it, JAX fails to write every entry (with a warning) until it restarts."""
    where = _run(tmp_path, threshold="1000")  # nothing compiles for that long: no entry
    assert where["kept"]


@pytest.mark.parametrize("how", ["switched off", "chosen by the user"])
def test_the_cache_is_left_alone_when_switched_off_or_chosen(tmp_path, how):
    if how == "switched off":
        where = _run(tmp_path, AEJAX_PERSISTENT_CACHE="0")
        assert where["jax"] is None
    else:
        where = _run(tmp_path, chosen=str(tmp_path / "mine"))
        assert where["jax"] == str(tmp_path / "mine") and _entries(tmp_path / "mine")
    assert not _entries(where["ours"])


def test_shorter_compiles_are_kept_where_aejax_chose_the_directory(tmp_path):
    from aejax.linker.program.persistent_cache import MIN_COMPILE_SECONDS

    assert MIN_COMPILE_SECONDS < 1.0  # JAX's default, which a NUTS chain's 0.9 s compile misses
    assert _run(tmp_path, threshold=None)["threshold"] == MIN_COMPILE_SECONDS


@pytest.mark.parametrize("how", ["set by the user", "directory chosen by the user"])
def test_the_users_threshold_is_kept(tmp_path, how):
    if how == "set by the user":
        assert _run(tmp_path, threshold="2.5")["threshold"] == 2.5
    else:
        assert _run(tmp_path, chosen=str(tmp_path / "mine"), threshold=None)["threshold"] == 1.0
