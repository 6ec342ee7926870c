"""What names a compiled graph in every process, for its programs to be saved (`aejax.linker.program.saved_programs`).

The identity covers the graph (`aejax.linker.graph.fingerprint`), how each
of its inputs and outputs crosses the program's boundary (the cell's kind,
its codec and the codec's payload spec) and which inputs are donated. A
graph has none, and is never saved, when an Op is lowered by code from
outside aejax and Aesara (`lowered_by_aejax_or_aesara`), a codec comes from
another package, or the fingerprint cannot capture a value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from aesara.graph.fg import FunctionGraph

from aejax.linker.dispatch.provenance import OWN_PACKAGES, lowered_by_aejax_or_aesara
from aejax.linker.graph.fingerprint import NotFingerprintable, graph_fingerprint


def graph_identity(fgraph: FunctionGraph, cells: Sequence[Any], donated: frozenset[int]) -> str | None:
    """The identity of ``fgraph`` with its boundary ``cells`` and ``donated`` inputs: a hex digest, or ``None``."""
    if not lowered_by_aejax_or_aesara(fgraph):
        return None
    boundary = [_cell(cell) for cell in cells]
    if None in boundary:
        return None
    try:
        graph = graph_fingerprint(fgraph.inputs, fgraph.outputs)
    except NotFingerprintable:
        return None
    return hashlib.sha256(repr((graph, boundary, sorted(donated))).encode()).hexdigest()


def _cell(cell: Any) -> tuple[str, ...] | None:
    codec = type(cell.codec)
    if not codec.__module__.startswith(OWN_PACKAGES):
        return None
    spec = cell.codec.payload_spec(cell.variable.type)
    return (type(cell).__qualname__, f"{codec.__module__}.{codec.__qualname__}", repr(spec))
