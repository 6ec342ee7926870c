"""Sizes while tracing: concrete values, and values whose length is known only at run time.

- `concrete`: the values a lowering needs as Python numbers (sizes, shapes,
  step counts), and the failures that say one was traced.
- `ragged`: the value classes (`Ragged` traces of until loops, `Masked`
  selections, `RangeRows`), and how a program splits after them.
- `masked`: selections ``x[nonzero(m)]`` and the Ops that work on them.
- `ragged_rows`: elementwise Ops, draws and reductions on `Ragged` values' rows.
- `bounds`: static upper bounds of run-time lengths, read from the graph.
- `consumers`: which lowerings take such values as they are, declared once per lowering.
- `taking`: how a node takes such values among its arguments, or why the
  program ends before it.

May import only the leaf modules (`errors`, `checks`, `trace_context`, `graph`).
"""
