"""Round-trip a numpy Generator through aejax's JAX state codec.

This is what happens to a shared random generator at every call of a
function compiled with ``mode="AEJAX"``: the numpy ``Generator`` is encoded
as a JAX PRNG key, JAX draws with it, and the advanced key is decoded back
into a numpy ``Generator`` that Aesara's C backend can use next.

Run: python examples/codec_roundtrip.py
"""

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara.tensor as at
import jax
import numpy as np

from aejax.adapters import codec_for


def main() -> None:
    rng_type = at.random.type.RandomGeneratorType()
    codec = codec_for("jax", rng_type)
    host = np.random.default_rng(2024)

    key = codec.encode(host, rng_type)
    print("A numpy Generator through aejax's JAX state codec and back, as at every call of an AEJAX function:")
    print(f"codec: {codec!r} for {rng_type}")
    print(f"numpy Generator(PCG64, seed 2024) -> JAX key {jax.random.key_data(key).tolist()}")

    new_key, draw_key = jax.random.split(key)
    draws = np.asarray(jax.random.normal(draw_key, (3,)), dtype=np.float64)
    print(f"JAX draws with it: {draws.round(4).tolist()}")

    back = codec.decode(new_key, rng_type)
    print(f"advanced key -> numpy {type(back).__name__}({type(back.bit_generator).__name__})")
    again = codec.encode(back, rng_type)
    same = jax.random.key_data(again).tolist() == jax.random.key_data(new_key).tolist()
    print(f"numpy draws from the decoded generator: {back.normal(size=3).round(4).tolist()}")
    print(f"the decoded generator encodes back to the same key, encode(decode(key)) == key: {'yes' if same else 'no'}")


if __name__ == "__main__":
    main()
