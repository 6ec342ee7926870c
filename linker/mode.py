"""The ``"AEJAX"`` compilation mode.

Its rewrites are the query `aejax.linker.rewrites.JAX_REWRITES` (see that
module for which of Aesara's rewrites it selects and why); its linker is
`JAXCodecLinker`; its compiled functions are `AejaxFunction`s
(`aejax.linker.call.function`). It is an ordinary Aesara `Mode`: ``including``,
``excluding``, ``requiring`` and ``clone`` return modes on the same linker,
and it pickles.

Aesara's ``config.mode`` accepts only its own mode names as strings; to make
AEJAX the default, assign the mode object::

    aesara.config.mode = aejax.linker.mode
"""

from __future__ import annotations

from aesara.compile.mode import Mode, predefined_modes, register_mode

from aejax.linker.call.function import AejaxFunctionMaker
from aejax.linker.call.linker import JAXCodecLinker
from aejax.linker.rewrites import JAX_REWRITES

MODE_NAME = "AEJAX"


class AejaxMode(Mode):
    """An Aesara `Mode` whose functions are `AejaxFunction`s (through ``function_maker``)."""

    function_maker = AejaxFunctionMaker


mode = AejaxMode(linker=JAXCodecLinker(), optimizer=JAX_REWRITES)
"""The aejax JAX mode: pass ``mode=aejax.linker.mode`` or ``mode="AEJAX"``."""

if MODE_NAME not in predefined_modes:
    register_mode(MODE_NAME, mode)


def use_for_aesara_jax_mode() -> None:
    """Opt in: make Aesara's own ``mode="JAX"`` compile with aejax's linker.

    Aesara is unchanged until this is called.
    """
    predefined_modes["JAX"] = mode
