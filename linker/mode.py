"""The ``"AEJAX"`` compilation mode and its rewrite query.

Rewrites, chosen for a backend that traces the whole graph with `jax.jit`:

- included: ``fast_run`` (canonicalisation, specialisation, scan rewrites such
  as ``scan_save_mem`` and the scan push-outs, shape rewrites), plus Aesara's
  two JAX rewrites that turn boolean-mask indexing into ``where``
  (``jax_boolean_indexing_sum``, ``jax_boolean_indexing_set_or_inc``);
- excluded: ``inplace`` (JAX arrays are immutable; in-place Ops only add
  destroy-handler work), ``cxx_only`` and ``BlasOpt`` (C and BLAS Ops with no
  JAX lowering), ``fusion`` (XLA fuses elementwise work itself; Aesara's
  `Composite` loops would only hide the graph from it). Aesara's
  ``jax_shape_parameter_as_tuple`` / ``jax_size_parameter_as_tuple`` are not
  needed: our lowering evaluates concrete shape arithmetic with numpy while
  tracing.
"""

from __future__ import annotations

from aesara.compile.mode import Mode, predefined_modes, register_mode
from aesara.graph.rewriting.db import RewriteDatabaseQuery

from aejax.linker.linker import JAXCodecLinker

MODE_NAME = "AEJAX"

JAX_REWRITES = RewriteDatabaseQuery(
    include=["fast_run", "jax_boolean_indexing_sum", "jax_boolean_indexing_set_or_inc"],
    exclude=["cxx_only", "BlasOpt", "inplace", "fusion"],
)

mode = Mode(linker=JAXCodecLinker(), optimizer=JAX_REWRITES)
"""The aejax JAX mode: pass ``mode=aejax.linker.mode`` or ``mode="AEJAX"``."""

if MODE_NAME not in predefined_modes:
    register_mode(MODE_NAME, mode)


def use_for_aesara_jax_mode() -> None:
    """Opt in: make Aesara's own ``mode="JAX"`` compile with aejax's linker.

    Aesara is unchanged until this is called.
    """
    predefined_modes["JAX"] = mode
