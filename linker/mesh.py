"""Values on a mesh of devices that may span several processes (JAX's multi-controller runtime).

After ``jax.distributed.initialize()`` every process runs the same program and
addresses only its own devices (``jax.local_devices()``), while ``jax.devices()``
lists every process's. A value placed on a mesh of all of them is one global
array of which each process holds its own shards. So here:

- `placed` puts a host value on a sharding, each process its shards, without
  asking a device of another process (typed PRNG keys cannot be placed on
  such a sharding: place their raw data and wrap it again inside the program);
- `gathered` brings a global array back as numpy, whole, in every process;
- `check_same_in_every_process` compares what each process was given, so that
  processes given different keys or inputs fail, all of them, with an error
  naming the value, before any program runs.

Within one process these cost what ``jax.device_put`` and ``np.asarray``
cost; the comparison runs only when a mesh spans several processes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, Sharding


def spans_processes(mesh: Mesh | None) -> bool:
    """Whether ``mesh`` holds devices of another process than this one."""
    return mesh is not None and any(device.process_index != jax.process_index() for device in mesh.devices.flat)


def placed(value: Any, sharding: Sharding) -> Any:
    """``value`` (numpy, a Python number or a ``jax.Array``, not a typed key) as a ``jax.Array`` of ``sharding``.

    An array already of that sharding is returned as it is; a value of this
    process only goes to a sharding of several processes through the host,
    each process placing its own shards.
    """
    if isinstance(value, jax.Array):
        if value.sharding.is_equivalent_to(sharding, value.ndim):
            return value
        if value.is_fully_addressable and not sharding.is_fully_addressable:
            value = np.asarray(value)
    return jax.device_put(value, sharding)


def gathered(value: Any) -> np.ndarray:
    """``value``, a ``jax.Array`` that may span processes (not a typed key), as one numpy array in every process.

    Every process must call this for the same value, as for any collective
    (but for a value replicated on every device, which each reads from its own).
    """
    if isinstance(value, jax.Array) and not value.is_fully_addressable:
        if value.is_fully_replicated:
            return np.asarray(value.addressable_data(0))
        return np.asarray(multihost_utils.process_allgather(value, tiled=True))
    return np.asarray(value)


def digest(value: Any) -> np.ndarray:
    """Two ``uint32`` words that differ, but for a one in 2**64 chance, between values of other shape, dtype or
    contents; zeros for a global array (one value, whichever process reads it)."""
    if isinstance(value, jax.Array) and not value.is_fully_addressable:
        return np.zeros(2, np.uint32)
    array = np.asarray(value)
    hashed = hashlib.blake2b(digest_size=8)
    hashed.update(f"{array.dtype.str}{array.shape}".encode())
    hashed.update(np.ascontiguousarray(array).tobytes())
    return np.frombuffer(hashed.digest(), np.uint32)


def check_same_in_every_process(values: Sequence[tuple[str, Any]]) -> None:
    """Raise `ValueError`, in every process, naming the first of ``values`` (named) that differs between processes.

    A collective: every process must call it with as many values. Typed keys
    must be given as their raw data.
    """
    local = np.stack([digest(value) for _, value in values]) if values else np.zeros((0, 2), np.uint32)
    every = np.asarray(multihost_utils.process_allgather(local))  # (processes, values, 2)
    differs = np.any(every != every[:1], axis=(0, 2))
    if not differs.any():
        return
    first = int(np.flatnonzero(differs)[0])
    others = [int(p) for p in np.flatnonzero(np.any(every[:, first] != every[0, first], axis=1))]
    raise ValueError(
        f"{values[first][0]} differs between processes: process 0 has one value, processes {others} another. "
        "Every process of a multi-process run must call with the same key and inputs (each runs its own "
        "devices' chains of one run)"
    )
