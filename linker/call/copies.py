"""Shared variables copied to the device and back by every call, and the warning that names a large one.

A shared variable made from a numpy array keeps a numpy value, which every
Aesara backend reads. A function that updates it copies the value onto the
device on the way in and the update back into numpy on the way out, on every
call: a 2048 x 2048 float64 SGD step then took 2.2 times JAX's time, where the
variable made with ``aesara.shared(jnp.asarray(W0))`` keeps its value on the
device between calls (`aejax.adapters.resident`) and the step costs what
JAX's does. Compiling a function that updates such a variable of over
`LARGE_BYTES` warns once with `SharedCopyWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from aesara.graph.basic import Variable

from aejax.adapters.resident import ResidentStorage
from aejax.linker.errors import caller_stacklevel, variable_name

LARGE_BYTES = 1 << 20
"""A value of more bytes than this (1 MiB) copied both ways by every call is worth a warning."""


class SharedCopyWarning(UserWarning):
    """A compiled function updates a large shared variable that holds a numpy value: every call copies it both ways."""


def warn_of_copied_updates(fgraph: Any, storage_map: Mapping[Variable, list[Any]]) -> None:
    """Warn for each shared variable of over `LARGE_BYTES` that ``fgraph`` updates and that holds a numpy value."""
    mapping = getattr(fgraph, "update_mapping", None) or {}
    for position in sorted(set(mapping.values())):
        var = fgraph.inputs[position]
        storage = storage_map[var]
        if isinstance(storage, ResidentStorage):  # keeps a device value already
            continue
        size = getattr(storage[0], "nbytes", 0)
        if size > LARGE_BYTES:
            warnings.warn(
                f"this function updates shared variable {variable_name(var)!r} ({size / 2**20:.1f} MiB), which "
                "holds a numpy array: every call copies it to the device and back. Make it from a JAX array, "
                "aesara.shared(jax.numpy.asarray(value)), to keep its value on the device between calls",
                SharedCopyWarning,
                stacklevel=caller_stacklevel(),
            )
