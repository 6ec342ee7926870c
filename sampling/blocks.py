"""Programs of many chains: one chain's function vmapped over the chains, and on a mesh one block of chains per
device (``jax.shard_map``, as `aejax.linker.many_chains` runs them), jitted."""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding

from aejax.linker.chains import chain_spec


def chains_sharding(mesh: Mesh | None) -> NamedSharding | None:
    """Where a value with one row per chain lies: split across ``mesh`` (``None``: JAX's default device)."""
    return None if mesh is None else NamedSharding(mesh, chain_spec(mesh, 0))


def blocked(chain: Any, mesh: Mesh | None, in_axes: tuple[Any, ...]) -> Any:
    """``chain`` vmapped over the chains (``in_axes``) and jitted; on a mesh, one block of chains per device."""
    batched = jax.vmap(chain, in_axes=in_axes)
    if mesh is not None:
        spec = lambda axis: chain_spec(mesh, axis)
        specs = tuple(jax.tree.map(spec, axes, is_leaf=lambda axis: axis is None) for axes in in_axes)
        batched = jax.shard_map(batched, mesh=mesh, in_specs=specs, out_specs=chain_spec(mesh, 0), check_vma=False)
    return jax.jit(batched)
