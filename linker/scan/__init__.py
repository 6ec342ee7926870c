"""aejax's lowering of Aesara's `Scan`: a ``lax.scan`` or ``lax.while_loop`` per Scan node.

`layout` says where each kind of input and output (sequences, mit-mot,
mit-sot/sit-sot, nit-sot, shared states, non-sequences) sits in a Scan's
argument lists; `carry` holds the loop state (windows of recent values,
buffers) and lays results out as Aesara's Scan leaves its buffers; `noise`
takes random draws before the loop; `lower` builds the loop and registers
it on `aejax.linker.dispatch.jax_funcify` (importing `aejax.linker.dispatch`
imports it).
"""
