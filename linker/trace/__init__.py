"""A `FunctionGraph` as a function JAX can trace.

- `lowering`: the lowering loop (nodes in order, each folded or lowered,
  values of run-time length handed to the lowerings that take them).
- `folding`: small concrete values computed with numpy through ``perform``.
- `node_failures`: what a node that fails while traced is raised as.
- `loop_bodies`: whether the code being traced runs once per step of a loop.
- `branches`: lazy `IfElse`: the nodes only one branch needs run inside it.
- `call_values`: the values of the call a program is traced for, read where
  a node needs an input concrete (its static inputs).
- `refill`: traced values replaced by those the call tells, for a node that
  needs them concrete.
- `replay`: a function traced once, replayed from its jaxpr.
- `host_failures`: exceptions raised on the host inside a program, handed
  back to the caller as they were.

May import `lengths` and the leaf modules (`errors`, `checks`, `trace_context`, `graph`).
"""
