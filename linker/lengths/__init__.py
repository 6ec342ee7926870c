"""Sizes while tracing: concrete values, and values whose length is known only at run time.

- `concrete`: the values a lowering needs as Python numbers (sizes, shapes,
  step counts), and the failures that say one was traced.
- `ragged`: the value classes (`Ragged` traces of until loops, `Masked`
  selections, `RangeRows`), and how a program splits after them.
- `masked`: selections ``x[nonzero(m)]`` and the Ops that work on them.
- `bounds`: static upper bounds of run-time lengths, read from the graph.
- `consumers`: which lowerings take such values as they are, declared once per lowering.

May import only the leaf modules (`errors`, `checks`, `graph`).
"""
