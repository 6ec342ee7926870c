"""Test-wide settings.

Aesara's reference backend runs in pure Python (FAST_COMPILE, no C
compilation), and JAX runs with 64-bit types, as a process working in
Aesara's default ``floatX=float64`` sets it: then a call of a float64 program
switches nothing. aejax leaves the flag as it is; the tests of precision
(``tests/call/test_precision.py``) hold with it on or off.
"""

import aesara
import jax

aesara.config.mode = "FAST_COMPILE"
jax.config.update("jax_enable_x64", True)
