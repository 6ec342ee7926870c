"""Compiled programs of a lowered graph.

- `segments`: `GraphProgram`, one jit program or several in a row, each
  ending where its trace meets a node a later program (or the host) computes.
- `static_inputs`: `StaticInputProgram`, ``jax.jit`` of one segment, with the
  shape-deciding integer inputs made static when tracing reads their values.
- `watched`: `WatchedProgram`, a graph with progress bars and its twin without, for calls too short to watch.
- `cache`: the bounded, thread-safe cache of compiled programs.
- `persistent_cache`: JAX's persistent compilation cache, on by default, in Aesara's compile directory.
- `saved_programs`: programs kept across processes as `jax.export` exports, beside JAX's cache.
- `signing`: the per-user key that signs the saved programs.
- `packing`: small outputs of one dtype leave a program as one buffer.

May import `trace`, `lengths` and the leaf modules (`errors`, `checks`,
`trace_context`, `graph`).
"""
