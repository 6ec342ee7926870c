"""The JAX API aejax uses where JAX's releases differ, from JAX 0.7.1 to the newest.

Everything else aejax takes from JAX's public API as it is. Here:

- `enable_x64(value)`: a context manager setting this thread's ``jax_enable_x64``. JAX 0.7 has it
  as ``jax.experimental.enable_x64``; later releases as ``jax.enable_x64`` and without the
  experimental one. Both are JAX's own objects, bound here: entering one adds no frame of ours.
- `disable_x64()`: ``enable_x64(False)`` (JAX 0.7's ``jax.experimental.disable_x64``).
"""

import jax

if hasattr(jax, "enable_x64"):
    enable_x64 = jax.enable_x64
else:
    from jax.experimental import enable_x64


def disable_x64():
    """A context manager with this thread's ``jax_enable_x64`` off."""
    return enable_x64(False)
