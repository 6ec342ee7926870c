"""The graph rewrites of the ``"AEJAX"`` mode.

- `query`: `JAX_REWRITES`, which of Aesara's rewrites run and where aejax's
  own run among them; `step_rewrites`, those of a Scan's inner graph (`rewrite_step` applies
  them); `folding_in_python`, the settings rewrites run in.
- `scan`: aejax's rewrites of Scans (`ScanKeepLast`, `ScanSequencesUncut`,
  `FixedLengthScanMerge`).
- `shape`: rewrites that stand in for Aesara's `ShapeFeature`.

May import only the leaf modules (`errors`, `checks`, `trace_context`, `graph`).
"""

from aejax.linker.rewrites.query import JAX_REWRITES, folding_in_python, rewrite_step, step_rewrites
from aejax.linker.rewrites.scan import ScanKeepLast

__all__ = ["JAX_REWRITES", "ScanKeepLast", "folding_in_python", "rewrite_step", "step_rewrites"]
