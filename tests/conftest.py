"""Test-wide settings.

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
import tempfile

import aesara
import jax

from aejax.linker.program.signing import KEY_DIRECTORY

aesara.config.mode = "FAST_COMPILE"
os.environ[KEY_DIRECTORY] = tempfile.mkdtemp(prefix="aejax-test-key-")  # the store's key, never the user's
atexit.register(shutil.rmtree, os.environ[KEY_DIRECTORY], True)
jax.config.update("jax_enable_x64", True)
