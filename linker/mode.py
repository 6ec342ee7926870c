"""The ``"AEJAX"`` compilation mode.

Its rewrites are `aejax.linker.rewrites.JAXGraphRewriter` (see that module
for which of Aesara's rewrites it selects and why); its linker is
`JAXCodecLinker`.
"""

from __future__ import annotations

from aesara.compile.mode import Mode, predefined_modes, register_mode

from aejax.linker.linker import JAXCodecLinker
from aejax.linker.rewrites import JAXGraphRewriter

MODE_NAME = "AEJAX"

mode = Mode(linker=JAXCodecLinker(), optimizer=JAXGraphRewriter())
"""The aejax JAX mode: pass ``mode=aejax.linker.mode`` or ``mode="AEJAX"``."""

if MODE_NAME not in predefined_modes:
    register_mode(MODE_NAME, mode)


def use_for_aesara_jax_mode() -> None:
    """Opt in: make Aesara's own ``mode="JAX"`` compile with aejax's linker.

    Aesara is unchanged until this is called.
    """
    predefined_modes["JAX"] = mode
