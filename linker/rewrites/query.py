"""The graph rewrites of aejax's JAX mode.

`JAX_REWRITES` selects Aesara's own rewrites:

- included: ``fast_run`` (canonicalisation, specialisation, the scan
  push-outs and merges, the shape rewrites that work without Aesara's
  `ShapeFeature`, below). Aesara's JAX rewrites for boolean masks are left
  out, since aejax lowers masks itself (`aejax.linker.lengths.masked`), and both are
  wrong: ``jax_boolean_indexing_sum`` turns ``x[mask].sum()`` into
  ``where(mask, x, 0).sum()``, which broadcasts a row mask of a matrix along
  its columns and drops the slices of ``m[mask, 1:]``;
  ``jax_boolean_indexing_set_or_inc`` turns ``set_subtensor(x[mask], y)``
  into ``where(mask, y, x)``, wrong whenever ``y`` has one row per selected
  element;
- excluded, each with what it would change in values (none stabilizes:
  ``tests/rewrites/test_stability.py`` gives FAST_RUN's values without
  them): ``inplace`` (JAX arrays are immutable; in-place Ops only add
  destroy-handler work; values: none), ``cxx_only`` (C Ops of sparse
  products, with no JAX lowering; values: none) and ``BlasOpt`` (``dot`` as
  C and BLAS Ops with no JAX lowering; values: the order of a product's
  sums, rounding only), ``fusion`` (XLA fuses elementwise work itself;
  Aesara's `Composite` loops would only hide the graph from it; values:
  none, the same scalar operations), ``scan_save_mem`` (replaced by ours,
  below; values: none, buffer sizes), ``scan_merge`` (replaced by
  `FixedLengthScanMerge`: Aesara's merges until loops whose conditions look
  alike but stop at different steps; values: none),
  ``local_subtensor_merge`` (it folds ``x[a:b][c:d]``
  into one slice whose bounds are ``switch`` expressions over the lengths;
  XLA slices a slice for free, while the merged bounds grow the graph: in an
  RNN gradient it ran 1,136 times, took 60% of Aesara's rewriting and left
  279 nodes instead of 76; values: none, integer bounds), ``ShapeOpt`` (Aesara's `ShapeFeature`, which
  infers a symbolic shape for every node the rewrites add, each Scan's inner
  graph included: more than half of the rewriting of an RNN gradient; JAX
  knows every shape while tracing, and the lowering reads a run-time length
  where it needs one; values: none itself, the rewrites that need it are
  below or in `aejax.linker.rewrites.shape`) and the rewrites that misbehave without that feature:
  ``local_adv_sub1_adv_inc_sub1`` reads it without checking that it is
  there (values: ``set_subtensor(x[i], y)[i]`` read as ``y``, which differs
  where ``i`` repeats an index), ``local_fill_to_alloc`` would turn ``zeros_like(x)`` into
  ``alloc(0, x.shape)``, which needs the length of a selection
  ``x[nonzero(m)]`` while tracing, where the elementwise ``fill`` keeps it
  masked (`aejax.linker.lengths.masked`; values: none), and four rewrites that would never stop
  (`SELF_SHAPED`), which do change values: they run as `ShapedByInputs`
  instead (`SHAPED_BY_INPUTS`). Aesara's
  ``jax_shape_parameter_as_tuple`` / ``jax_size_parameter_as_tuple`` are not
  needed: the lowering evaluates concrete shape arithmetic with numpy while
  tracing.

In place of the feature, aejax's own rewrites (`aejax.linker.rewrites.shape`)
write shapes per axis (read through ``DimShuffle``, ``Unbroadcast`` and
checks: `aejax.linker.rewrites.shape.VIEWS`), make no check for a value of which a fill reads only the
shape (``fill(assert_op(x, c), y)``, the gradient of a checked value, as
``local_fill_to_alloc`` leaves none) and drop whole slices ``x[0:]``, before
Aesara's rewrites and again after its stabilization; the second pass also
drops the ``fill(x, y)`` that ``local_fill_to_alloc`` would have removed.

Before Aesara's rewrites, as an extra rewrite of the query, runs aejax's own
rewrite `ScanKeepLast`: when only the last value of a Scan output is used,
its buffer holds only the rows the loop reads, so the loop carries no trace.
Unlike ``scan_save_mem`` it writes buffer sizes that do not depend on the
number of steps (JAX needs static shapes, while that number may be known
only at run time), and it also serves ``until`` loops, which
``scan_save_mem`` leaves alone. It runs first because later
canonicalisation rewrites ``x[1:][-1]`` into an index computed from the
shape, which no longer says "the last row". After Aesara's rewrites runs
`ScanSequencesUncut`, which gives a Scan the sequence ``x`` where
``aesara.scan`` gave it ``x[:n_steps]``. Last, once no rewrite changes a
Scan's sequences any more, `ScanSequenceBounds` gives an integer sequence
from whose rows the step makes a size (``arange(2, y_t + 1)``) the bounds of
its values, so the lowering can allocate that size.

A Scan's inner graph is rewritten by the Scan lowering with this query up
to `STEP_REWRITES_END`, and by what the Scan's own mode asks for by name or
tag (`step_rewrites`), as Aesara's backends compile it with that mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import numpy as np
from aesara import config
from aesara.compile.mode import get_mode, optdb
from aesara.graph.rewriting.basic import GraphRewriter, SequentialGraphRewriter, in2out
from aesara.graph.rewriting.db import RewriteDatabaseQuery

from aejax.linker.rewrites.scan import FixedLengthScanMerge, keep_last, sequence_bounds, sequences_uncut
from aejax.linker.rewrites.shape import (
    AxisLengthThroughViews,
    FillOfChecked,
    ShapeAsEntries,
    ShapedByInputs,
    UselessFill,
    WholeSlices,
)

early_rewrites = SequentialGraphRewriter(
    in2out(
        ShapeAsEntries(),
        AxisLengthThroughViews(),
        WholeSlices(),
        FillOfChecked(),
        name="aejax_shapes",
        ignore_newtrees=True,
    ),
    keep_last,
)
"""aejax's rewrites before Aesara's: shapes as entries, whole slices and the checks of fills removed, then `ScanKeepLast`."""

late_rewrites = SequentialGraphRewriter(
    in2out(
        ShapeAsEntries(), AxisLengthThroughViews(), WholeSlices(), FillOfChecked(), UselessFill(), name="aejax_clean_up"
    ),
    sequences_uncut,
)
"""The same for shapes and slices that Aesara's rewrites wrote, and the
``fill(x, y)`` that Aesara's stabilization leaves where ``y`` already has
the result's type (``log1p`` rewrites), as ``local_fill_to_alloc`` would
have removed it; then `ScanSequencesUncut`, after Aesara's rewrites that
push a Scan's work on its sequences out of the loop (they would apply it to
the whole uncut sequence)."""


EARLY_POSITION = -1.0
"""Where aejax's own rewrites run among Aesara's: before ``merge1`` (position 0)."""

LATE_POSITION = 1.51
"""Where aejax's clean-up runs: after Aesara's stabilization (1.5), where ``local_fill_to_alloc`` would run."""

SCAN_MERGE_POSITION = 1.59
"""Where `FixedLengthScanMerge` runs: before Aesara's later Scan rewrites (1.6), among which ``scan_merge`` ran."""

SEQUENCE_BOUNDS_POSITION = 48.9
"""Where `ScanSequenceBounds` runs: after Aesara's rewrites that change a Scan's sequences (its push-outs,
``specialize``), before the last merge (49)."""

SELF_SHAPED = ("local_pow_canonicalize", "local_zero_div", "local_mul_specialize", "local_div_to_reciprocal")
"""Aesara rewrites that, without its `ShapeFeature`, shape their replacement by the shape of the very
output they replace (``broadcast_like``), which keeps that output in the graph: the rewrite then fires
again forever (``x ** 0``, the second derivative of ``x ** 2``). They run as `ShapedByInputs`, under
`SHAPED_BY_INPUTS`, where Aesara registers them."""

SHAPED_BY_INPUTS = "aejax_shaped_by_inputs"
"""The tag of the `ShapedByInputs` copies of `SELF_SHAPED`, which only the AEJAX mode includes.

Their values count: ``local_mul_specialize`` turns canonicalization's
``mul(-1, sigmoid(u))`` back into ``neg(sigmoid(u))``, the form Aesara's
``log1p_neg_sigmoid`` stabilizes (``log1p(-sigmoid(u))`` is ``-u``, not
``-inf``, for ``u`` above 37); ``local_zero_div`` makes ``0 / x`` zero
where ``x`` is zero too, and ``local_mul_specialize`` ``0 * x`` zero where
``x`` is ``inf`` or ``nan`` (``nan`` otherwise), as under FAST_RUN."""


def _register_shaped_by_inputs() -> None:
    for database_name in ("canonicalize", "specialize"):
        database = optdb[database_name]
        for name in SELF_SHAPED:
            if name in database._names:  # `in` is also true of a name looked up before (a defaultdict)
                copy = ShapedByInputs(database, name)
                database.register(f"{name}_shaped_by_inputs", copy, SHAPED_BY_INPUTS, use_db_name_as_tag=False)


_register_shaped_by_inputs()

STEP_REWRITES_END = 3.0
"""Where the rewrites of a Scan's inner graph end: after Aesara's specialization (2), before ``uncanonicalize`` (3).

The rest (``uncanonicalize``, ``specialize_device``, `ScanSequenceBounds`, the last merges), run on each
inner graph, gave aehmc's NUTS 135 evaluations of the potential for 42 positions, 44 for 44 without
it (``tests/scan/test_nested_invariants.py``); it stabilizes nothing (``specialize_device`` writes
``x ** n`` as products, a change of rounding)."""

JAX_REWRITES = RewriteDatabaseQuery(
    include=["fast_run", SHAPED_BY_INPUTS],
    exclude=[
        "cxx_only",
        "BlasOpt",
        "inplace",
        "fusion",
        "scan_save_mem",
        "scan_merge",
        "local_subtensor_merge",
        "ShapeOpt",
        "local_adv_sub1_adv_inc_sub1",
        "local_fill_to_alloc",
        *SELF_SHAPED,
    ],
    extra_rewrites=[
        (early_rewrites, EARLY_POSITION),
        (late_rewrites, LATE_POSITION),
        (FixedLengthScanMerge(), SCAN_MERGE_POSITION),
        (sequence_bounds, SEQUENCE_BOUNDS_POSITION),
    ],
)
"""The rewrite query of the ``"AEJAX"`` mode; ``mode.including(...)`` and
``mode.excluding(...)`` refine it as for any Aesara mode."""

OPTIMIZATION_LEVELS = frozenset({"fast_run", "fast_compile", "merge", "fusion", "jax", "numba", *JAX_REWRITES.include})
"""Tags that only say how much a mode rewrites, which the AEJAX mode decides itself (Aesara's predefined
optimizers and the JAX and Numba modes include them)."""


@contextmanager
def folding_in_python() -> Iterator[None]:
    """Rewrite with ``config.cxx`` empty and numpy's floating-point warnings off.

    Aesara's constant folding runs each folded node through the Op's thunk,
    which by default compiles the Op's C code (about 40 s for an RNN gradient
    on an empty Aesara cache), while a JAX program needs none of it; the Op's
    Python code folds the same constants, silently as C code does
    (``log1p(-1.0)`` is ``-inf``).
    """
    with config.change_flags(cxx=""), np.errstate(all="ignore"):
        yield


def rewrite_step(inner: Any, mode: Any) -> None:
    """Rewrite a Scan's inner graph in place with `step_rewrites` of the Scan's ``mode``, folding constants in Python.

    A rewrite that fails on the step is skipped, whatever ``config.on_opt_error``
    says: on a Scan nested in a step whose constants the step's rewrites made
    broadcastable (aehmc's window adaptation: ``(1,) of 0`` for a ``(?,)`` loop
    variable) Aesara's ``remove_constants_and_unused_inputs_scan`` and
    ``scan_merge_inouts`` raise ``ValueError``, which Aesara's own compile of
    that step never meets; the step stays as it was, and its values with it.
    """
    with folding_in_python(), config.change_flags(on_opt_error="ignore"):
        step_rewrites(mode).rewrite(inner)


def step_rewrites(mode: Any) -> GraphRewriter:
    """The rewrites of the inner graph of a Scan whose own mode is ``mode``.

    Aesara compiles a Scan's inner graph with the Scan's mode (``Scan.fn``),
    FAST_RUN's rewrites by default, so its stabilizing rewrites reach the
    loop's step: ``logsumexp`` of a step's values near -2000 is -2000, not
    ``-inf``. The lowering rewrites the inner graph of each Scan (nested
    ones as each is lowered) with the AEJAX mode's query, which decides the
    optimization level itself, as for the outer graph; the Scan's mode adds
    what it asks for by name or tag beyond an optimization level
    (``scan(..., mode=Mode().including("local_remove_all_assert"))`` removes
    the step's asserts) and removes what it excludes.

    The query runs up to `STEP_REWRITES_END`, then its rewrites but the
    Scan rewrites once more: specialization can make two copies of a value
    alike after the last merge, as in the gradient of ``log1p(-sigmoid(x))``
    in a nested step, ``g / (1 - s) * s * (1 - s)``, whose copies of
    ``1 - s`` then cancel only in the second pass (``nan`` at ``x = 40``
    otherwise, where FAST_RUN gives -1). The Scan rewrites would rebuild the
    nested Scans in each pass.
    """
    query = get_mode(mode).provided_optimizer
    if not isinstance(query, RewriteDatabaseQuery):
        return _step_rewrites((), ())
    asked = tuple(tag for tag in query.include if tag not in OPTIMIZATION_LEVELS)
    return _step_rewrites(asked, tuple(query.exclude))


@cache
def _step_rewrites(asked: tuple[str, ...], excluded: tuple[str, ...]) -> GraphRewriter:
    include, exclude = [*JAX_REWRITES.include, *asked], [*JAX_REWRITES.exclude, *excluded]
    whole = RewriteDatabaseQuery(
        include, exclude=exclude, position_cutoff=STEP_REWRITES_END, extra_rewrites=JAX_REWRITES.extra_rewrites
    )
    again = RewriteDatabaseQuery(include, exclude=[*exclude, "scan"], position_cutoff=STEP_REWRITES_END)
    return SequentialGraphRewriter(optdb.query(whole), optdb.query(again))
