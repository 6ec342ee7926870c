"""`CumOp` (``cumsum``, ``cumprod``), also of values of run-time length.

A cumulative sum or product of a `Ragged` value computed on its whole buffer
is right on the value's rows: each entry depends only on the entries before
it, and the padding comes after the value (flattened, for ``axis=None``, the
value's rows are still first). A selection ``x[nonzero(m)]`` (`Masked`)
accumulates as its rows moved to the front.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from aesara.tensor.extra_ops import CumOp

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.lengths.consumers import takes_run_time_lengths
from aejax.linker.lengths.ragged import Ragged, selected_rows_first


@jax_funcify.register(CumOp)
def _cumulative(op: CumOp, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    accumulate = jnp.cumsum if op.mode == "add" else jnp.cumprod

    def cumulative(x: Any) -> Any:
        x = selected_rows_first(x)
        if not isinstance(x, Ragged):
            return accumulate(x, axis=op.axis)
        per_row = int(np.prod(x.buffer.shape[1:])) if op.axis is None else 1
        return Ragged(accumulate(x.buffer, axis=op.axis), x.length * per_row)

    return takes_run_time_lengths(cumulative, ragged=True, masked=True)
