"""64-bit values as their 32-bit words, for a boundary where JAX's ``jax_enable_x64`` may not be the program's.

JAX converts a value that enters or leaves a program with the setting of
the thread that hands it over: without x64 a numpy ``float64`` array becomes
``float32`` (rounded), an ``int64`` one ``int32``. A 64-bit value
(`aejax.adapters.jax.NARROWED`: ``float64``, ``int64``, ``uint64``,
``complex128``) crosses such a boundary unchanged as its ``uint32`` words,
on a new last axis (two words an element, four for ``complex128``): words
are what they are whatever the setting, and the program, traced with x64,
turns them back into the value bit for bit. On the host the words of a
numpy array are a view of its memory, made without a copy.

Where it is used: a host callback's values (`aejax.linker.dispatch.callback`),
and the arguments of a program with x64 called in a process without it
(`aejax.linker.call.precision.taking_words`).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from aejax.adapters.jax import NARROWED

WORD = np.dtype(np.uint32)
"""The dtype of a word."""


def word_count(dtype: Any) -> int:
    """How many words an element of ``dtype`` crosses as; 0 for a dtype that crosses as it is (32 bits or fewer)."""
    dtype = np.dtype(dtype)
    return dtype.itemsize // WORD.itemsize if dtype in NARROWED else 0


def host_words(array: Any) -> np.ndarray:
    """The words of ``array``, a numpy array or scalar of a 64-bit dtype: a view of its memory, of shape ``(..., n)``."""
    return array[..., None].view(WORD)


def host_words_value(words: Any, dtype: np.dtype) -> np.ndarray:
    """On the host: the array of ``dtype`` whose words are ``words``."""
    return np.asarray(words, order="C").view(dtype)[..., 0]


def program_words(value: Any) -> Any:
    """In a program traced with x64: the words of the 64-bit ``value``."""
    if value.dtype.kind == "c":
        parts = jax.lax.bitcast_convert_type(jax.numpy.stack([value.real, value.imag], -1), WORD)
        return parts.reshape(*value.shape, word_count(value.dtype))
    return jax.lax.bitcast_convert_type(value, WORD)


def program_value(words: Any, dtype: np.dtype) -> Any:
    """In a program traced with x64: the value of ``dtype`` whose words are ``words``.

    The words are joined elementwise (the first the low half, as in the
    memory of a little-endian host and in XLA's ``bitcast_convert``): XLA
    turns a ``bitcast_convert`` from two words into a reduction over them,
    its own loop on the CPU, where this joins the consumer's fusion.
    """
    if dtype.kind == "c":
        part = np.dtype(f"f{dtype.itemsize // 2}")
        return jax.lax.complex(program_value(words[..., :2], part), program_value(words[..., 2:], part))
    low, high = (jax.lax.convert_element_type(words[..., i], np.uint64) for i in (0, 1))
    return jax.lax.bitcast_convert_type(low | jax.lax.shift_left(high, np.uint64(32)), dtype)
