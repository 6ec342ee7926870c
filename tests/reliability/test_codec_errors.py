"""Item 6: broken plugins and codecs fail with errors that name them."""

import aesara
import numpy as np
import pytest
from aesara.tensor.random.type import RandomGeneratorType
from aesara.tensor.type import TensorType

import aejax.linker
from aejax.adapters import CodecLoadError, CodecRegistry, PayloadError, codec_for, register_codec
from aejax.adapters.jax import TensorCodec
from aejax.linker import InputValueError
from tests.adapters.test_registry import PLUGIN_SOURCE, make_dist, site  # noqa: F401  (site is a fixture)
from tests.reliability.shared_state import assert_unchanged, shared_of, snapshot


def test_plugin_whose_spec_is_a_dict_names_its_distribution(site):  # noqa: F811
    source = PLUGIN_SOURCE.format(module="dict_plugin").replace(
        'spec = CodecSpec(backend="jax", type="dict_plugin.CounterType")',
        'spec = {"backend": "jax", "type": "dict_plugin.CounterType"}',
    )
    make_dist(site, "dictplugin", "dict_plugin", {"jax:dict_plugin.CounterType": "dict_plugin:CounterCodec"}, source)
    import dict_plugin

    with pytest.warns(UserWarning), pytest.raises(CodecLoadError, match="dictplugin.*CodecSpec"):
        CodecRegistry().codec_for("jax", dict_plugin.CounterType())


class _Vector(TensorType):
    """A TensorType whose codec cannot encode."""


class _Matrix(TensorType):
    """A TensorType whose codec cannot decode."""


class _UnencodableCodec(TensorCodec):
    spec = TensorCodec.spec.model_copy(update={"type": f"{__name__}._Vector"})

    def encode(self, host_value, type):
        raise ZeroDivisionError("bug in the codec")


class _UndecodableCodec(TensorCodec):
    spec = TensorCodec.spec.model_copy(update={"type": f"{__name__}._Matrix"})

    def decode(self, backend_value, type):
        raise ZeroDivisionError("bug in the codec")


@pytest.mark.parametrize(
    "codec, variable, role",
    [
        (_UnencodableCodec(), _Vector(dtype="float64", shape=(None,))("x"), "input"),
        (_UndecodableCodec(), _Matrix(dtype="float64", shape=(None, None))("x"), "output"),
    ],
)
def test_codec_bug_names_the_variable_and_the_codec_and_changes_nothing(codec, variable, role):
    register_codec(codec, replace=True)
    counter = aesara.shared(np.float64(0), name="counter")
    f = aesara.function([variable], [variable.sum(), variable], updates={counter: counter + 1}, mode=aejax.linker.mode)
    before = snapshot(shared_of(f))
    expected = rf"{role} 'x': codec {type(codec).__name__}\(\) failed with ZeroDivisionError"
    with pytest.raises(InputValueError, match=expected):
        f(np.ones((2,) * variable.ndim))
    assert_unchanged(shared_of(f), before)


def test_rng_payload_with_a_huge_integer_names_the_field():
    state = np.random.default_rng(0).bit_generator.state
    state["state"]["state"] = 10**5000
    codec = codec_for("jax", RandomGeneratorType())
    with pytest.raises(PayloadError, match="of 16610 bits") as error:
        codec.encode(state, RandomGeneratorType())
    assert error.value.field == "state.state"
