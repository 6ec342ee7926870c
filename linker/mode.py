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

``"AEJAX_DEVICE"`` (`device_mode`, an `AejaxDeviceMode`) is the device-I/O
variant: the same rewrites and lowering, but its functions take ``jax.Array``
arguments without copying them to the host and return ``jax.Array``s where
XLA put them (`JAXDeviceLinker`, `aejax.linker.call.device_call`). In both
modes a shared variable made from a ``jax.Array`` keeps its value on the
device between calls (`aejax.adapters.resident`); others keep host values.

Each compiled function computes with JAX's 64-bit types or without them,
decided from its graph and backend (`aejax.linker.call.precision`); a mode
asks for one or the other with `AejaxMode.with_x64`::

    f32_mode = aejax.linker.mode.with_x64(False)  # 32-bit ints, float32 accumulators

A mode shows progress bars for long loops, moved from inside the program,
with `AejaxMode.with_progress` (tqdm, the ``progress`` extra)::

    bar_mode = aejax.linker.mode.with_progress(every=100)  # a bar moving every 100 steps
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aesara.compile.mode import Mode, predefined_modes, register_mode

from aejax.linker.call.function import AejaxDeviceFunctionMaker, AejaxFunctionMaker
from aejax.linker.call.linker import JAXCodecLinker, JAXDeviceLinker
from aejax.linker.rewrites import JAX_REWRITES
from aejax.linker.scan.progress import MIN_SECONDS, Progress

MODE_NAME = "AEJAX"
DEVICE_MODE_NAME = "AEJAX_DEVICE"


class AejaxMode(Mode):
    """An Aesara `Mode` whose functions are `AejaxFunction`s (through ``function_maker``)."""

    function_maker = AejaxFunctionMaker

    @property
    def x64(self) -> bool | None:
        """The precision its functions compute in: ``True``/``False`` as asked by `with_x64`, ``None`` decided per graph."""
        return getattr(self.linker, "x64", None)

    def with_x64(self, x64: bool | None) -> AejaxMode:
        """This mode, its functions computing with JAX's 64-bit types (``True``), without them (``False``), or as
        decided for each graph (``None``, the default: `aejax.linker.call.precision.program_x64`).

        Without them, 64-bit inputs are narrowed to 32 bits on the way in
        and outputs widened back to their Types' dtypes: a float64 graph then
        computes in float32. With them, a float32 graph keeps Aesara's
        float64 accumulators, also on an accelerator.
        """
        if x64 not in (True, False, None):
            raise TypeError(f"with_x64 takes True, False or None, not {x64!r}")
        mode = self.clone()
        mode.linker.x64 = None if x64 is None else bool(x64)
        return mode

    @property
    def progress(self) -> Progress | None:
        """The progress option `with_progress` set (`aejax.linker.scan.progress.Progress`); ``None``: no bars."""
        return getattr(self.linker, "progress", None)

    def with_progress(
        self, every: int | bool | None = None, bar: Callable[..., Any] | None = None, min_seconds: float = MIN_SECONDS
    ) -> AejaxMode:
        """This mode, its functions showing a progress bar for each long loop while the program runs it.

        Each outermost Scan of a fixed number of steps (not one nested in
        another's step, nor an ``until`` loop) moves a bar every ``every``
        steps (``None``: 20 times in all) from inside the program, one bar
        for all chains under ``jax.vmap`` (`aejax.linker.scan.progress`).
        ``bar`` makes the bars (default: tqdm's, ``pip install
        'aejax[progress]'``; without tqdm this raises `ImportError`).
        ``with_progress(False)`` turns them off: the program is then the one
        without this option. Each move costs a host callback (about 15 us
        on the CPU), and a program with bars 0.1 ms more a call: a function
        whose call took under ``min_seconds`` (0.1 s) runs the next
        ones without bars, until one takes longer again (0: bars on every
        call; `aejax.linker.program.watched`).
        """
        mode = self.clone()
        every = None if every is True else every
        mode.linker.progress = None if every is False else Progress(every, bar, min_seconds)
        return mode


mode = AejaxMode(linker=JAXCodecLinker(), optimizer=JAX_REWRITES)
"""The aejax JAX mode: pass ``mode=aejax.linker.mode`` or ``mode="AEJAX"``."""


class AejaxDeviceMode(AejaxMode):
    """The device-I/O mode: `AejaxMode` whose functions take and return ``jax.Array``s (`AejaxDeviceFunction`)."""

    function_maker = AejaxDeviceFunctionMaker


device_mode = AejaxDeviceMode(linker=JAXDeviceLinker(), optimizer=JAX_REWRITES)
"""The device-I/O mode: pass ``mode=aejax.linker.device_mode`` or ``mode="AEJAX_DEVICE"``."""

for _name, _mode in ((MODE_NAME, mode), (DEVICE_MODE_NAME, device_mode)):
    if _name not in predefined_modes:
        register_mode(_name, _mode)


def use_for_aesara_jax_mode() -> None:
    """Opt in: make Aesara's own ``mode="JAX"`` compile with aejax's linker.

    Aesara is unchanged until this is called.
    """
    predefined_modes["JAX"] = mode
