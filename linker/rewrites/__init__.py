"""The graph rewrites of the ``"AEJAX"`` mode.

- `query`: `JAX_REWRITES`, which of Aesara's rewrites run and where aejax's
  own run among them; `rewrites_asked_by`, those a Scan's own mode asks for.
- `scan`: aejax's rewrites of Scans (`ScanKeepLast`, `ScanSequencesUncut`,
  `FixedLengthScanMerge`).
- `shape`: rewrites that stand in for Aesara's `ShapeFeature`.

May import only the leaf modules (`errors`, `checks`, `graph`).
"""

from aejax.linker.rewrites.query import JAX_REWRITES, rewrites_asked_by
from aejax.linker.rewrites.scan import ScanKeepLast, scan_rewrites

__all__ = ["JAX_REWRITES", "ScanKeepLast", "rewrites_asked_by", "scan_rewrites"]
