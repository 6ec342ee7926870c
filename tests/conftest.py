"""Test-wide settings.

The session compiles into its own Aesara compile directory, a fresh
temporary ``base_compiledir`` removed when the process ends: aejax's program
store and JAX's persistent cache live there (`aejax.linker.program.persistent_cache`),
so a test never finds a program an earlier run saved, and the user's
``~/.aesara`` is never written. It is set in ``AESARA_FLAGS`` after the flags
the user set, before Aesara is imported; tests that start Python processes
pass it on through the environment.

Aesara's reference backend runs in pure Python (FAST_COMPILE, no C
compilation), and JAX runs with 64-bit types, as a process working in
Aesara's default ``floatX=float64`` sets it: then a call of a float64 program
switches nothing. aejax leaves the flag as it is; the tests of precision
(``tests/call/test_precision.py``) hold with it on or off. The program
store's key is made in a temporary folder, which child processes inherit.
"""

import atexit
import os
import shutil
import sys
import tempfile

if "aesara" in sys.modules:
    raise RuntimeError(
        "aesara was imported before tests/conftest.py (by a pytest plugin, or the process running pytest), so the "
        "tests would compile into the user's compile directory; run `python -m pytest` in a fresh process"
    )
COMPILE_DIRECTORY = tempfile.mkdtemp(prefix="aejax-tests-aesara-")
"""The session's ``base_compiledir``."""
os.environ["AESARA_FLAGS"] = ",".join(
    filter(None, [os.environ.get("AESARA_FLAGS"), f"base_compiledir={COMPILE_DIRECTORY}"])
)
atexit.register(shutil.rmtree, COMPILE_DIRECTORY, ignore_errors=True)  # after Aesara's own exit handlers, which use it

import aejax.adapters  # noqa: E402, F401, I001 - first: under numpy 2 it gives Aesara what numpy 2 removed
import aesara  # noqa: E402 - after its compile directory is chosen
import jax  # noqa: E402

from aejax.linker.program.signing import KEY_DIRECTORY  # noqa: E402

aesara.config.mode = "FAST_COMPILE"
os.environ[KEY_DIRECTORY] = tempfile.mkdtemp(prefix="aejax-test-key-")  # the store's key, never the user's
atexit.register(shutil.rmtree, os.environ[KEY_DIRECTORY], True)
jax.config.update("jax_enable_x64", True)
