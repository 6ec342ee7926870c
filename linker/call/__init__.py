"""What happens on each call of a compiled function.

- `linker`: `JAXCodecLinker`, Aesara's `JITLinker` whose storage boundary
  encodes inputs and decodes outputs through the codecs (`BoundaryValue`),
  and `HostCall`, one call of the graph's program on host values.
- `function`: `AejaxFunction`, Aesara's `Function` with a direct call.
- `direct_call`: that call, and its fast path once a call has run.
- `device_call`: the calls of the device-I/O mode ``"AEJAX_DEVICE"``:
  ``jax.Array`` arguments checked, not copied to the host; ``jax.Array`` outputs.
- `copies`: the warning for a large shared variable held in numpy that every
  call updates, so copies to the device and back.
- `input_checks`: the arguments of an exported function (``jaxify``) checked
  against their inputs' Types while JAX traces it.

May import `program`, `trace`, `lengths`, `dispatch`, `scan`, `rewrites` and
the leaf modules (`errors`, `checks`, `trace_context`, `graph`); nothing imports it but
`aejax.linker.mode`, `aejax.linker.export` and the package itself.
"""
