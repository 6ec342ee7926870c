"""aejax.linker: a JAX linker for Aesara graphs built on aejax.adapters codecs."""
