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


def test_typed_lists_stay_on_the_host_and_their_nodes_run_as_under_the_reference():
    """``aesara.typed_list``: the list is published, kept as it is, and its nodes give the reference's values."""
    import aesara.typed_list as typed_list
    import numpy as np

    from aejax.adapters import TypedListCodec

    matrices = typed_list.TypedListType(at.dmatrix().type)
    assert ("jax", "aesara.typed_list.type.TypedListType") in published_codecs(entry_points(group=ENTRY_POINT_GROUP))
    assert isinstance(codec_for("jax", matrices), TypedListCodec) and stays_on_host(matrices)
    with pytest.raises(PayloadError, match="Python list"):
        codec_for("jax", matrices).validate((1, 2), matrices)
    xs, y, i = matrices(), at.dmatrix("y"), at.lscalar("i")
    outputs = [typed_list.append(xs, y), typed_list.getitem(xs, i) * 2 + y.sum(), typed_list.length(xs)]
    given = [np.ones((2, 2)), np.arange(3.0).reshape(1, 3)]
    found = [
        aesara.function([xs, y, i], outputs, mode=mode)(given, np.eye(2), 1) for mode in (REFERENCE, aejax.linker.mode)
    ]
    (theirs_list, theirs_row, theirs_length), (ours_list, ours_row, ours_length) = found
    assert type(ours_list) is list and len(ours_list) == len(theirs_list) == 3
    for ours, theirs in zip(ours_list, theirs_list):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours_row, theirs_row)
    assert int(ours_length) == int(theirs_length) == 2
