"""A third-party codec of a key-held state, published through the ``aejax.codecs`` entry points, compiles."""

import aesara
import jax
import numpy as np
import pytest
from aesara.compile.sharedvalue import SharedVariable

import aejax.linker
from aejax.adapters import KeyCodec, StateCodec, refresh_codecs
from tests.adapters.test_registry import make_dist, site  # noqa: F401  (site is a fixture)

SEED_PLUGIN = """
    import jax
    import numpy as np
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
    from aesara.graph.basic import Apply
    from aesara.graph.op import Op
    from aesara.graph.type import Type
    from aesara.tensor import dscalar
    from aejax.adapters import CodecSpec, KeyPayloadSpec, PayloadError

    IMPL = "threefry2x32"


    class Seed:
        def __init__(self, words):
            self.words = np.asarray(words, dtype=np.uint32)


    class SeedType(Type):
        def filter(self, data, strict=False, allow_downcast=None):
            if not isinstance(data, Seed):
                raise TypeError(f"expected a Seed, got {{data!r}}")
            return data

        def __eq__(self, other):
            return type(self) is type(other)

        def __hash__(self):
            return hash(type(self))


    class SeedCodec:
        spec = CodecSpec(backend="jax", type="{module}.SeedType")

        def encode(self, host_value, type):
            return jax.random.wrap_key_data(host_value.words, impl=IMPL)

        def decode(self, backend_value, type):
            return Seed(jax.random.key_data(backend_value))

        def validate(self, backend_value, type):
            if not jax.dtypes.issubdtype(backend_value.dtype, jax.dtypes.prng_key):
                raise PayloadError(type, "key", "a typed PRNG key", backend_value)

        def payload_spec(self, type):
            return KeyPayloadSpec(impl=IMPL, key_data_shape=(2,))
{extra}

    class Flip(Op):
        def make_node(self, seed):
            return Apply(self, [seed], [SeedType()(), dscalar()])

        def perform(self, node, inputs, outputs):
            raise NotImplementedError("Flip runs on JAX only")
"""

KEY_DATA_METHODS = """
        def encode_words(self, host_value, type):
            return host_value.words

        def decode_words(self, words, type, into=None):
            return Seed(words)
"""


def _publish(site, module, extra=""):  # noqa: F811  (site is the fixture's value)
    make_dist(
        site,
        module.replace("_", ""),
        module,
        {f"jax:{module}.SeedType": f"{module}:SeedCodec"},
        SEED_PLUGIN.format(module=module, extra=extra),
    )
    refresh_codecs()
    return __import__(module)


def _flip(key):
    new, draw = jax.random.split(key)
    return new, jax.random.uniform(draw, dtype="float64")


@pytest.fixture
def published(site):  # noqa: F811
    """Publishes a plugin module (its own classes, so nothing leaks into other tests); codecs re-read afterwards."""

    def publish(module, extra):
        plugin = _publish(site, module, extra)
        aejax.linker.jax_funcify.register(plugin.Flip, lambda op, **kwargs: _flip)
        return plugin

    yield publish
    refresh_codecs()


@pytest.mark.parametrize("extra", [KEY_DATA_METHODS, ""], ids=["a KeyCodec", "a StateCodec only"])
def test_a_published_codec_of_a_key_held_state_compiles_and_advances_its_state(published, extra):
    plugin = published("seed_plugin_full" if extra else "seed_plugin_plain", extra)
    codec = aejax.adapters.codec_for("jax", plugin.SeedType())
    assert isinstance(codec, StateCodec) and isinstance(codec, KeyCodec) == bool(extra)

    start = np.asarray(jax.random.key_data(jax.random.key(3)))
    state = SharedVariable(name="seed", type=plugin.SeedType(), value=plugin.Seed(start), strict=False)
    new_state, draw = plugin.Flip()(state)
    f = aesara.function([], draw, updates={state: new_state}, mode=aejax.linker.mode)

    key = jax.random.wrap_key_data(start)
    for _ in range(3):
        key, expected = _flip(key)
        assert f() == float(expected)
        np.testing.assert_array_equal(np.asarray(state.get_value().words), np.asarray(jax.random.key_data(key)))
