"""aejax's JAX lowerings, one module per family of Ops.

Importing this package registers them on `jax_funcify`, which falls back to
Aesara's own lowerings for every other Op; the Scan lowering lives in
`aejax.linker.scan`, which registers itself on the same dispatcher.

May import `trace`, `lengths` and the leaf modules (`errors`, `checks`, `trace_context`, `graph`).
"""

from aejax.linker.dispatch import (  # noqa: F401  (importing registers the lowerings)
    basic_ops,
    bessel,
    blas,
    cumulative,
    elemwise,
    extra_ops,
    fft,
    ifelse,
    join,
    linalg,
    random,
    reductions,
    scalar,
    shape,
    sort,
    special,
    subtensor,
    tensor_basic,
)
from aejax.linker.dispatch.basic import jax_funcify

__all__ = ["jax_funcify"]
