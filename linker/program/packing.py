"""Small outputs of one dtype leave a jit program as one buffer.

Each array a jit program returns costs its caller the same few microseconds
to turn into numpy, whatever its size: a step function returning a position,
an energy and a gradient pays three times. So a program's small array
outputs (at most `PACKED_SIZE` elements each) leave it packed: ravelled and
concatenated, one buffer per dtype that two or more of them share. The
caller copies each buffer into numpy once and takes every packed output as
a view of that copy (`PackedResults.unpacked`).

What was packed where is the static part of the returned pytree, so it is
fixed per compiled program and travels with every call's results (and, as
JSON, with a saved export's outputs: `aejax.linker.program.saved_programs`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import EllipsisType
from typing import Any, NamedTuple

import jax
import jax.export
import jax.numpy as jnp
import numpy as np

PACKED_SIZE = 1024
"""The most elements an output may have to be packed; larger ones gain nothing from it."""


class Piece(NamedTuple):
    """Where one packed output lies in its buffer, as the index of its view and the shape the view takes.

    A 0-d output's index is ``(start, ...)``, which views one element as a
    0-d array; a 1-d output's view is its slice as it is (``shape`` is
    ``None``). Only other ranks pay for a reshape.
    """

    output: int
    index: slice | tuple[int, EllipsisType]
    shape: tuple[int, ...] | None


class PackedResults:
    """A program's results with its small outputs packed, one buffer per dtype.

    ``others`` holds every output that was not packed at its position
    (``None`` where a packed one goes); ``layout`` holds, per buffer, the
    `Piece` of each output packed into it.
    """

    __slots__ = ("buffers", "others", "layout")

    def __init__(
        self, buffers: tuple[Any, ...], others: tuple[Any, ...], layout: tuple[tuple[Piece, ...], ...]
    ) -> None:
        self.buffers = buffers
        self.others = others
        self.layout = layout

    def unpacked(self) -> list[Any]:
        """Every output in order: a packed one as a view of its buffer's writable numpy copy, the others as they are."""
        values = list(self.others)
        for buffer, pieces in zip(self.buffers, self.layout):
            host = np.array(buffer)
            for output, index, shape in pieces:
                view = host[index]
                values[output] = view if shape is None else view.reshape(shape)
        return values


jax.tree_util.register_pytree_node(
    PackedResults,
    lambda packed: ((packed.buffers, packed.others), packed.layout),
    lambda layout, children: PackedResults(*children, layout),
)


def _layout_data(layout: tuple[tuple[Piece, ...], ...]) -> bytes:
    def index(i: Any) -> list[int]:
        return [i.start, i.stop] if isinstance(i, slice) else [i[0]]

    return json.dumps([[[p.output, index(p.index), p.shape] for p in pieces] for pieces in layout]).encode()


def _layout(data: bytes) -> tuple[tuple[Piece, ...], ...]:
    def piece(output: int, index: list[int], shape: list[int] | None) -> Piece:
        return Piece(int(output), slice(*index) if len(index) == 2 else (index[0], ...), shape and tuple(shape))

    return tuple(tuple(piece(*p) for p in pieces) for pieces in json.loads(data))


jax.export.register_pytree_node_serialization(  # the layout as JSON data, for a program's saved export
    PackedResults,
    serialized_name=f"{PackedResults.__module__}.{PackedResults.__qualname__}",
    serialize_auxdata=_layout_data,
    deserialize_auxdata=_layout,
)


def packed(results: tuple[Any, ...], packable: Sequence[bool]) -> tuple[Any, ...] | PackedResults:
    """``results`` of a traced function, as they are or with their small ``packable`` outputs packed.

    Only a dtype that two or more small packable outputs share gets a buffer.
    """
    by_dtype: dict[Any, list[int]] = {}
    for position, (result, may_pack) in enumerate(zip(results, packable)):
        if may_pack and result.size <= PACKED_SIZE:
            by_dtype.setdefault(result.dtype, []).append(position)
    groups = [positions for positions in by_dtype.values() if len(positions) > 1]
    if not groups:
        return results
    buffers = tuple(jnp.concatenate([jnp.ravel(results[p]) for p in positions]) for positions in groups)
    layout = tuple(_pieces(results, positions) for positions in groups)
    packed_positions = {p for positions in groups for p in positions}
    others = tuple(None if p in packed_positions else r for p, r in enumerate(results))
    return PackedResults(buffers, others, layout)


def unpacked(results: tuple[Any, ...] | PackedResults) -> Sequence[Any]:
    """Every output of a program's ``results``, packed ones as numpy views (see `PackedResults.unpacked`)."""
    return results.unpacked() if type(results) is PackedResults else results


def _pieces(results: tuple[Any, ...], positions: list[int]) -> tuple[Piece, ...]:
    pieces, start = [], 0
    for position in positions:
        result = results[position]
        shape = tuple(result.shape)
        stop = start + result.size
        if not shape:
            pieces.append(Piece(position, (start, ...), None))
        else:
            pieces.append(Piece(position, slice(start, stop), None if len(shape) == 1 else shape))
        start = stop
    return tuple(pieces)
