"""aejax.linker: compile Aesara graphs to JAX behind a codec boundary.

Importing it registers the mode ``"AEJAX"``, and its device-I/O variant
``"AEJAX_DEVICE"`` (``jax.Array``s in and out)::

    import aejax.linker
    f = aesara.function([x], y, mode="AEJAX")   # or mode=aejax.linker.mode
    g = aesara.function([x], y, mode="AEJAX_DEVICE")   # or mode=aejax.linker.device_mode
"""

from aejax.adapters.resident import register_resident_shared
from aejax.linker import scan  # noqa: F401  (registers the Scan lowering)
from aejax.linker.call.copies import SharedCopyWarning
from aejax.linker.call.device_call import JaxArgumentError
from aejax.linker.call.function import AejaxFunction
from aejax.linker.call.linker import JAXCodecLinker
from aejax.linker.call.precision import PrecisionWarning
from aejax.linker.chains import ChainRun, ManyChains, many_chains
from aejax.linker.dispatch import jax_funcify
from aejax.linker.dispatch.callback import CallbackWarning
from aejax.linker.errors import (
    AejaxLinkerError,
    AllocationError,
    IndexOutOfBoundsError,
    InputValueError,
    InvalidValueError,
    LoweringError,
    NodeTypeError,
    NodeValueError,
)
from aejax.linker.export import JaxGraph, jaxify
from aejax.linker.exporting import ExportedGraph, export_graph
from aejax.linker.mode import (
    DEVICE_MODE_NAME,
    MODE_NAME,
    AejaxDeviceMode,
    AejaxMode,
    device_mode,
    mode,
    use_for_aesara_jax_mode,
)
from aejax.linker.program.host_node import HostNodeWarning
from aejax.linker.program.static_inputs import RecompileWarning, ShapeInputWarning, StaticInputProgram
from aejax.linker.rewrites import JAX_REWRITES, ScanKeepLast

register_resident_shared()

__all__ = [
    "DEVICE_MODE_NAME",
    "JAX_REWRITES",
    "MODE_NAME",
    "AejaxFunction",
    "AejaxDeviceMode",
    "AejaxLinkerError",
    "AejaxMode",
    "AllocationError",
    "CallbackWarning",
    "ChainRun",
    "ExportedGraph",
    "IndexOutOfBoundsError",
    "InputValueError",
    "InvalidValueError",
    "JAXCodecLinker",
    "JaxArgumentError",
    "HostNodeWarning",
    "JaxGraph",
    "LoweringError",
    "ManyChains",
    "NodeTypeError",
    "NodeValueError",
    "PrecisionWarning",
    "RecompileWarning",
    "ShapeInputWarning",
    "SharedCopyWarning",
    "ScanKeepLast",
    "StaticInputProgram",
    "device_mode",
    "export_graph",
    "jax_funcify",
    "jaxify",
    "many_chains",
    "mode",
    "use_for_aesara_jax_mode",
]
