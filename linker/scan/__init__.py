"""aejax's lowering of Aesara's `Scan`: a ``lax.scan`` or ``lax.while_loop`` per Scan node.

`carry` holds the loop state (windows of recent values, buffers) and lays
results out as Aesara's Scan leaves its buffers; `noise` takes random draws
before the loop; `row_bounds` asks for the bounds of a sequence's values as
static inputs when the step makes a size from its rows; `lower` builds the
loop and registers it on `aejax.linker.dispatch.jax_funcify` (importing this
package imports it).
Where each kind of input and output sits in a Scan's argument lists is
`aejax.linker.graph.scan_layout`.

May import `dispatch`, `rewrites`, `trace`, `lengths` and the leaf modules
(`errors`, `checks`, `trace_context`, `graph`).
"""

from aejax.linker.scan import lower  # noqa: F401  (importing registers the Scan lowering)
