"""Indexing with concrete slice bounds and traced scalar indices."""

from __future__ import annotations

from typing import Any, Callable

from aesara.tensor.subtensor import (
    AdvancedSubtensor,
    AdvancedSubtensor1,
    Subtensor,
    indices_from_subtensor,
)

from aejax.linker.dispatch.basic import jax_funcify


@jax_funcify.register(Subtensor)
@jax_funcify.register(AdvancedSubtensor)
@jax_funcify.register(AdvancedSubtensor1)
def _subtensor(op: Any, **kwargs: Any) -> Callable[..., Any]:
    idx_list = getattr(op, "idx_list", None)

    def subtensor(x: Any, *index_values: Any) -> Any:
        indices = indices_from_subtensor(index_values, idx_list)
        return x[tuple(indices)]

    return subtensor
