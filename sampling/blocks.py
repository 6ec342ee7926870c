"""Programs of many chains: one chain's function vmapped over the chains, and on a mesh one block of chains per
device (``jax.shard_map``, as `aejax.linker.many_chains` runs them), jitted; their arguments placed on the mesh."""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding

from aejax.linker.chains import chain_spec
from aejax.linker.mesh import placed


def chains_sharding(mesh: Mesh | None, axis: int | None = 0) -> NamedSharding | None:
    """Where a value of the chains lies: split across ``mesh`` along its chain axis ``axis``, or whole on every
    device (``None``); without a mesh, ``None`` (JAX's default device)."""
    return None if mesh is None else NamedSharding(mesh, chain_spec(mesh, axis))


def on_chains(value: Any, mesh: Mesh | None, axis: int | None) -> Any:
    """``value`` (arrays, or a dict of them) placed for a program of the chains (`chains_sharding`): across
    processes, each places its own shards; without a mesh, as it is."""
    if mesh is None:
        return value
    return jax.tree.map(lambda leaf: placed(leaf, chains_sharding(mesh, axis)), value)


def blocked(chain: Any, mesh: Mesh | None, in_axes: tuple[Any, ...]) -> Any:
    """``chain`` vmapped over the chains (``in_axes``) and jitted; on a mesh, one block of chains per device."""
    batched = jax.vmap(chain, in_axes=in_axes)
    if mesh is not None:
        spec = lambda axis: chain_spec(mesh, axis)
        specs = tuple(jax.tree.map(spec, axes, is_leaf=lambda axis: axis is None) for axes in in_axes)
        batched = jax.shard_map(batched, mesh=mesh, in_specs=specs, out_specs=chain_spec(mesh, 0), check_vma=False)
    return jax.jit(batched)
