"""Threefry-2x32 PRNG keys whose hash compiles to straight-line code.

JAX's default key implementation, ``"threefry2x32"``, hashes counters with
Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC 2011): 20 rounds of add, rotate and xor on two ``uint32`` words, the key
schedule added after every fourth round. On the CPU, JAX 0.7.1 lowers that
hash as an XLA while loop of 5 iterations, which costs a few microseconds per
random draw: a NUTS program holds about twenty of them. This module defines
the same generator with the hash written out round by round (the Python
loops below run while tracing, so the program holds 20 rounds of plain
``uint32`` operations and no loop), as a key implementation of its own,
`THREEFRY_UNROLLED`, through `jax.extend.random.define_prng_impl`.

Its bits are those of ``"threefry2x32"`` for the same key data: seeding,
`jax.random.split`, `jax.random.fold_in` and `jax.random.bits` (and so every
draw built on them) derive their counters as JAX does, under either setting
of ``jax_threefry_partitionable`` (read while tracing; ``True``, JAX 0.7.1's
default: counters are the row-major positions in the output shape, as a
64-bit count split in two words; ``False``: a flat count hashed in two
halves). Only sizes JAX handles in one block are supported: about ``2**32``
counters per key (a larger request raises `NotImplementedError`). Floats
drawn through ``log``, ``exp`` or ``erf`` may still differ in the last
places: XLA compiles those functions differently in different programs, and
JAX 0.7.1 draws ``gamma`` (so ``beta``, ``dirichlet``, ...) element by element
(``lax.map``) for any implementation but its own object, vectorized for it.

It is the codecs' default (``DEFAULT_KEY_IMPL`` in `aejax.adapters.jax`),
and the hash of every draw inside a loop's body; a draw that runs once per
call hashes with JAX's rolled lowering instead (`with_jax_impl`, in
`aejax.linker.dispatch.random`), which keeps a small program small enough for
XLA:CPU to run it on the calling thread. Its
codecs embed and hash numpy states as those of ``"threefry2x32"`` do
(`bits_of`), so the same seeds give the same streams. ``jax.random.poisson``
of JAX 0.7.1 takes only JAX's own implementation: `with_jax_impl` hands it
the same key data as a ``"threefry2x32"`` key, the same bits.

The codecs carry implementations by name (in `KeyPayloadSpec`); JAX knows
this one by the spec ``define_prng_impl`` returns, not by its name, so
`key_impl` turns a name into what ``impl=`` of `jax.random` takes.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.random import define_prng_impl

THREEFRY_UNROLLED = "aejax_threefry2x32"
"""The name of the implementation (also its tag, shown in key dtypes as ``key<aejax_threefry2x32>``)."""

SAME_BITS_AS = "threefry2x32"
"""The JAX implementation whose bits `THREEFRY_UNROLLED` gives."""

_KEY_SHAPE = (2,)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)
_MAX_POSITIONS = 2**32
_MAX_FLAT_COUNT = 2**32 - 2
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _u32(value: int) -> np.uint32:
    return np.uint32(value)


def _rotate_left(x: Any, bits: int) -> Any:
    return lax.shift_left(x, _u32(bits)) | lax.shift_right_logical(x, _u32(32 - bits))


def threefry2x32_hash(k0: Any, k1: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """Threefry-2x32 with 20 rounds of the counter words ``(x0, x1)`` under the key ``(k0, k1)``.

    All four are ``uint32``; the keys are scalars, the counters arrays of
    one shape. Returns the two hashed words, of the counters' shape.
    """
    schedule = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0, x1 = x0 + k0, x1 + k1
    for injection in range(1, 6):
        for bits in _ROTATIONS[(injection - 1) % 2]:
            x0 = x0 + x1
            x1 = x0 ^ _rotate_left(x1, bits)
        x0 = x0 + schedule[injection % 3]
        x1 = x1 + schedule[(injection + 1) % 3] + _u32(injection)
    return x0, x1


def _computed_once(words: Any) -> Any:
    """``words`` as they are, hashed once however many fusions read them.

    XLA would otherwise copy the whole unrolled hash into each fusion that
    consumes its result (each step of a normal draw, each key of a split):
    an HMC transition's call took 92 µs instead of 56.
    """
    return lax.optimization_barrier(words)


def _words(key: Any) -> tuple[Any, Any]:
    return key[0], key[1]


def _check_counters(count: int, most: int) -> None:
    if count > most:
        raise NotImplementedError(f"{THREEFRY_UNROLLED} hashes at most {most} counters per key, asked for {count}")


def positions(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """The row-major position of every element of ``shape``, as its high and low ``uint32`` words."""
    size = math.prod(shape)
    _check_counters(size, _MAX_POSITIONS)
    low = lax.reshape(lax.iota(np.uint32, size), shape)
    return jnp.zeros(shape, np.uint32), low


def hash_in_halves(key: Any, counters: Any) -> Any:
    """The flat ``uint32`` ``counters`` hashed as pairs (first half, second half), odd sizes padded with a 0."""
    count = counters.shape[0]
    half = (count + 1) // 2
    padded = jnp.concatenate([counters, jnp.zeros(2 * half - count, np.uint32)])
    y0, y1 = threefry2x32_hash(*_words(key), padded[:half], padded[half:])
    return jnp.concatenate([y0, y1])[:count]


def _partitionable() -> bool:
    return bool(jax.config.jax_threefry_partitionable)


def _seed(seed: Any) -> Any:
    if seed.shape:
        raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
    if not jnp.issubdtype(seed.dtype, jnp.integer):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    low = lax.convert_element_type(seed, np.uint32)
    if seed.dtype.itemsize == 8:
        high = lax.convert_element_type(lax.shift_right_logical(seed, np.array(32, seed.dtype)), np.uint32)
    else:
        high = jnp.zeros((), np.uint32)
    return jnp.stack([high, low])


@partial(jax.jit, static_argnums=1)
def _split(key: Any, shape: tuple[int, ...]) -> Any:
    if _partitionable():
        y0, y1 = threefry2x32_hash(*_words(key), *positions(shape))
        return _computed_once(jnp.stack([y0, y1], axis=-1))
    size = math.prod(shape)
    _check_counters(2 * size, _MAX_FLAT_COUNT)
    return _computed_once(lax.reshape(hash_in_halves(key, lax.iota(np.uint32, 2 * size)), (*shape, 2)))


@jax.jit
def _fold_in(key: Any, data: Any) -> Any:
    y0, y1 = threefry2x32_hash(*_words(key), jnp.zeros((), np.uint32), jnp.asarray(data, np.uint32))
    return _computed_once(jnp.stack([y0, y1]))


def _combined(y0: Any, y1: Any, bit_width: int) -> Any:
    """The bits of ``bit_width`` from the two hashed words of each element (the partitionable layout)."""
    if bit_width == 64:
        high, low = (lax.convert_element_type(y, np.uint64) for y in (y0, y1))
        return lax.shift_left(high, np.uint64(32)) | low
    return lax.convert_element_type(y0 ^ y1, _UINT[bit_width])


def _unpacked(words: Any, bit_width: int, size: int) -> Any:
    """``size`` values of ``bit_width`` from the flat ``uint32`` ``words`` (the sequential layout), low bits first."""
    if bit_width == 64:
        high, low = (lax.convert_element_type(w, np.uint64) for w in (words[:size], words[size:]))
        return lax.shift_left(high, np.uint64(32)) | low
    if bit_width == 32:
        return words
    per_word = 32 // bit_width
    shifts = lax.iota(np.uint32, per_word) * _u32(bit_width)
    parts = lax.shift_right_logical(words[:, None], shifts[None, :]) & _u32((1 << bit_width) - 1)
    return lax.convert_element_type(parts.reshape(-1)[:size], _UINT[bit_width])


@partial(jax.jit, static_argnums=(1, 2))
def _random_bits(key: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    if _partitionable():
        return _computed_once(_combined(*threefry2x32_hash(*_words(key), *positions(shape)), bit_width))
    size = math.prod(shape)
    count = -(-bit_width * size // 32)
    _check_counters(count, _MAX_FLAT_COUNT)
    words = hash_in_halves(key, lax.iota(np.uint32, count))
    return _computed_once(lax.reshape(_unpacked(words, bit_width, size), shape))


def seed(seed: Any) -> Any:
    """The key data of an integer seed: its high and low 32 bits (high 0 for seeds of 32 bits or fewer)."""
    return _seed(jnp.asarray(seed))


def split(key: Any, shape: tuple[int, ...]) -> Any:
    """The key data of ``shape`` new keys from the key data ``key``."""
    return _split(key, tuple(int(n) for n in shape))


def fold_in(key: Any, data: Any) -> Any:
    """The key data of ``key`` with the ``uint32`` scalar ``data`` folded in: the hash of the counter ``(0, data)``."""
    return _fold_in(key, data)


def random_bits(key: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    """Random unsigned integers of ``bit_width`` (8, 16, 32 or 64) and ``shape`` from the key data ``key``."""
    if bit_width not in _UINT:
        raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
    return _random_bits(key, bit_width, tuple(int(n) for n in shape))


THREEFRY_UNROLLED_SPEC = define_prng_impl(
    key_shape=_KEY_SHAPE,
    seed=seed,
    split=split,
    random_bits=random_bits,
    fold_in=fold_in,
    name=THREEFRY_UNROLLED,
    tag=THREEFRY_UNROLLED,
)
"""The implementation as `jax.extend.random.define_prng_impl` returns it, what ``impl=`` of `jax.random` takes."""


def key_impl(name: str) -> Hashable:
    """What ``impl=`` of `jax.random` takes for the implementation named ``name``: its spec for `THREEFRY_UNROLLED`,
    the name itself for JAX's own."""
    return THREEFRY_UNROLLED_SPEC if name == THREEFRY_UNROLLED else name


def with_jax_impl(key: Any) -> Any:
    """``key`` as a key of JAX's ``"threefry2x32"`` if it is one of `THREEFRY_UNROLLED` (the same bits), else itself.

    For the few `jax.random` functions of JAX 0.7.1 that take only JAX's own implementation (``poisson``).
    """
    if str(jax.random.key_impl(key)) != THREEFRY_UNROLLED:
        return key
    return jax.random.wrap_key_data(jax.random.key_data(key), impl=SAME_BITS_AS)


def with_impl_of(key: Any, like: Any) -> Any:
    """``key`` as a key of ``like``'s implementation, the same key data (``key`` itself if it is one already).

    Undoes `with_jax_impl`: ``with_impl_of(jax.random.split(with_jax_impl(k)), k)``
    are the keys ``jax.random.split(k)`` gives, bit for bit.
    """
    impl = jax.random.key_impl(like)
    if jax.random.key_impl(key) == impl:
        return key
    return jax.random.wrap_key_data(jax.random.key_data(key), impl=impl)


def bits_of(impl: str) -> str:
    """The name of the implementation whose bits the implementation named ``impl`` gives.

    ``SAME_BITS_AS`` for `THREEFRY_UNROLLED`, ``impl`` itself for any other:
    two implementations with the same `bits_of` draw the same numbers from
    the same key data.
    """
    return SAME_BITS_AS if impl == THREEFRY_UNROLLED else impl
