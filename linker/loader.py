"""Read and run a serialized aejax export with JAX and numpy alone (docs/export.md).

This module imports nothing of aejax or Aesara: on a machine without them
(a cluster node, an accelerator host), copy this one file beside a runner and
``import loader`` (``aejax.linker.loader.__file__`` says where it is).
``jax.export.deserialize`` also needs the pure-Python ``flatbuffers`` package.

    description, program, state = load(open("model.aejax", "rb").read())
    jax.config.update("jax_enable_x64", description["x64"])
    outputs, state = program.call(state, *inputs)

`chain_keys` gives the chains of a run their random states from one key, as
`aejax.linker.many_chains` does, so a farm of workers can each run a share
(``start:stop``) of one run of an export of ``chains="chains"``.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import jax
import numpy as np
from jax import export

FORMAT = "aejax-export"
"""The ``format`` entry of a serialized export's description."""

VERSION = 1
"""The version of that format that this module reads (and `aejax.linker.exporting` writes)."""

DESCRIPTION = "description.json"
"""The archive member that describes the export (format, precision, chains, inputs, state, outputs)."""

PROGRAM = "program.bin"
"""The archive member holding ``jax.export.Exported.serialize()``."""


def state_member(index: int) -> str:
    """The archive member holding the initial value of the ``index``-th state entry."""
    return f"state/{index}.npy"


def load(data: bytes) -> tuple[dict[str, Any], export.Exported, dict[str, np.ndarray]]:
    """The description, the program and the initial state (by name) of a serialized aejax export.

    `ValueError` for the description of another format or version; `KeyError` or `zipfile.BadZipFile` where
    ``data`` is no such archive.
    """
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        description = json.loads(archive.read(DESCRIPTION))
        check_description(description)
        program = export.deserialize(bytearray(archive.read(PROGRAM)))
        state = {
            entry["name"]: np.load(io.BytesIO(archive.read(state_member(k))))
            for k, entry in enumerate(description["state"])
        }
    return description, program, state


def chain_keys(description: dict[str, Any], key: Any, n_chains: int, start: int = 0, stop: int | None = None) -> dict:
    """The random states (raw key data, by name) of chains ``start .. stop - 1`` of a run of ``n_chains`` from ``key``.

    Chain ``k``'s key is ``jax.random.split(key, n_chains)[k]``, split again
    into one key per random state in the description's order: the data of
    the keys `aejax.linker.many_chains` gives chain ``k`` of the same run
    (``key`` of the states' implementation, ``description["state"][i]["key_impl"]``).
    """
    names = [entry["name"] for entry in description["state"] if "key_impl" in entry]
    keys = jax.random.split(key, n_chains)[start:stop]
    per_chain = jax.vmap(lambda k: jax.random.split(k, len(names)))(keys)
    return {name: jax.random.key_data(per_chain[:, j]) for j, name in enumerate(names)}


def check_description(description: Any) -> None:
    """`ValueError` unless ``description`` is that of an export of `FORMAT` and `VERSION`."""
    if not isinstance(description, dict) or description.get("format") != FORMAT:
        raise ValueError(f"{DESCRIPTION} does not describe an aejax export (its format is not {FORMAT!r})")
    if description.get("version") != VERSION:
        raise ValueError(
            f"the export is of version {description.get('version')!r} of {FORMAT!r}; this aejax reads version "
            f"{VERSION}: export the graph again with this aejax"
        )
