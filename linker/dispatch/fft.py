"""The real Fourier transforms `RFFTOp` and `IRFFTOp` of `aesara.tensor.fft`, which Aesara's JAX backend lacks.

A complex array travels as a real one with a last axis of size 2 (real
part, imaginary part). Each Op transforms the last ``len(s)`` axes of its
array (of the spectrum, for `IRFFTOp`) to or from the signal sizes ``s``,
cropping or padding with zeros as numpy's ``rfftn`` and ``irfftn`` do; `rfft`
and `irfft` pass the sizes of every axis but the first, the batch. ``s``
decides the output shape, so it must be known while tracing: a symbolic
``s`` raises `NotStaticError`, on which aejax makes it static or runs the node
on the host. `IRFFTOp` is not normalized (numpy's ``1 / prod(s)`` undone);
`irfft` and `rfft` divide afterwards in the graph.

numpy computes its transforms in double precision whatever the input; so do
these, rounding to the Op's output dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from aesara.tensor.fft import IRFFTOp, RFFTOp

from aejax.linker.dispatch.basic import jax_funcify
from aejax.linker.errors import InvalidValueError
from aejax.linker.lengths.concrete import static_ints


def signal_sizes(s: Any, node: Any) -> tuple[int, ...]:
    """The sizes ``s`` of ``node``'s transformed axes as Python ints; `InvalidValueError` for one below 1, as numpy."""
    sizes = static_ints(list(s), f"the signal sizes of {node}")
    if min(sizes, default=1) < 1:
        raise InvalidValueError(f"node {node}: invalid number of FFT data points {sizes}: each must be at least 1")
    return sizes


def last_axes(ndim: int, count: int) -> tuple[int, ...]:
    """The last ``count`` axes of an array of ``ndim`` dimensions, those numpy's ``rfftn(s=...)`` transforms."""
    return tuple(range(ndim - count, ndim))


@jax_funcify.register(RFFTOp)
def _rfft(op: RFFTOp, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """numpy's ``rfftn(a, s)``, its real and imaginary parts stacked on a new last axis."""
    dtype = node.outputs[0].dtype

    def rfft(a: Any, s: Any) -> Any:
        sizes = signal_sizes(s, node)
        signal = jnp.asarray(a).astype("float64")
        spectrum = jnp.fft.rfftn(signal, s=sizes, axes=last_axes(signal.ndim, len(sizes)))
        return jnp.stack([spectrum.real, spectrum.imag], axis=-1).astype(dtype)

    return rfft


@jax_funcify.register(IRFFTOp)
def _irfft(op: IRFFTOp, node: Any = None, **kwargs: Any) -> Callable[..., Any]:
    """numpy's ``irfftn`` to the sizes ``s`` of the spectrum whose real and imaginary parts are ``a[..., 0]`` and
    ``a[..., 1]``, unnormalized."""
    dtype = node.outputs[0].dtype

    def irfft(a: Any, s: Any) -> Any:
        sizes = signal_sizes(s, node)
        parts = jnp.asarray(a).astype("float64")
        spectrum = jax.lax.complex(parts[..., 0], parts[..., 1])
        # norm="forward" puts numpy's 1 / prod(s) on the forward transform: none on this one.
        signal = jnp.fft.irfftn(spectrum, s=sizes, axes=last_axes(spectrum.ndim, len(sizes)), norm="forward")
        return signal.astype(dtype)

    return irfft
