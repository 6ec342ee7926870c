"""The JAX codec of Aesara's `Generic` Type: any Python object, kept on the host as it is."""

from importlib.metadata import entry_points

import aesara
import aesara.tensor as at
import jax
import pytest
from aesara.ifelse import ifelse
from aesara.link.c.type import Generic, generic
from aesara.tensor.type_other import slicetype

import aejax.linker
from aejax.adapters import (
    ENTRY_POINT_GROUP,
    CodecRegistry,
    GenericCodec,
    HostPayloadSpec,
    PayloadError,
    codec_for,
    published_codecs,
    stays_on_host,
)
from tests.reference import REFERENCE

VALUES = [["testX"], {"a": 1}, "text", None, object(), (1, [2.0])]


def test_the_codec_is_published_as_an_entry_point():
    published = published_codecs(entry_points(group=ENTRY_POINT_GROUP))
    assert ("jax", "aesara.link.c.type.Generic") in published
    assert isinstance(CodecRegistry().codec_for("jax", generic), GenericCodec)


def test_lookup_finds_it_for_generic_values():
    assert isinstance(codec_for("jax", Generic()), GenericCodec)


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_encode_and_decode_keep_the_very_object(value):
    codec = codec_for("jax", generic)
    assert codec.encode(value, generic) is value
    assert codec.decode(codec.encode(value, generic), generic) is value
    codec.validate(value, generic)


def test_validate_rejects_a_value_that_entered_a_jit_program():
    codec = codec_for("jax", generic)

    def traced(x):
        codec.validate(x, generic)
        return x

    with pytest.raises(PayloadError, match="kept on the host"):
        jax.jit(traced)(1.0)


def test_its_payload_is_a_host_object():
    assert codec_for("jax", generic).payload_spec(generic) == HostPayloadSpec()


def test_only_python_object_values_stay_on_the_host():
    assert stays_on_host(generic)
    assert stays_on_host(slicetype)
    assert not stays_on_host(at.dvector().type)
    assert not stays_on_host(at.dvector().type, backend="nowhere")  # a Type without a codec there


def test_the_slice_codec_refuses_anything_but_a_slice():
    codec = codec_for("jax", slicetype)
    assert codec.encode(slice(1, None), slicetype) == slice(1, None)
    with pytest.raises(PayloadError, match="slice"):
        codec.validate([1, 2], slicetype)


def test_a_generic_input_reaches_the_output_as_under_the_reference():
    x, y, c = generic(), generic(), at.iscalar("c")
    reference = aesara.function([c, x, y], ifelse(c, x, y), mode=REFERENCE)
    ours = aesara.function([c, x, y], ifelse(c, x, y), mode=aejax.linker.mode)
    vx, vy = ["testX"], ["testY"]
    for condition in (1, 0):
        assert ours(condition, vx, vy) == reference(condition, vx, vy)
    assert (vx, vy) == (["testX"], ["testY"])
