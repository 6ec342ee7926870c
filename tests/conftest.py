"""Test-wide settings.

Aesara's reference backend runs in pure Python (FAST_COMPILE, no C
compilation), and JAX runs with 64-bit types, as Aesara's JAX backend sets
up for the default ``floatX=float64``.
"""

import aesara
import jax

aesara.config.mode = "FAST_COMPILE"
jax.config.update("jax_enable_x64", True)
