"""Codec lookup: MRO resolution, explicit registration, entry-point plugins."""

import textwrap
import warnings

import pytest
from aesara.tensor.random.type import RandomGeneratorType

from aejax.adapters import (
    CodecConflictError,
    CodecLoadError,
    CodecNotFoundError,
    CodecRegistry,
    CodecSpec,
    StateCodec,
    codec_for,
)
from aejax.adapters.host import TypeFilterCodec
from aejax.adapters.jax import RandomGeneratorCodec, TensorCodec


class SubGeneratorType(RandomGeneratorType):
    """A Type that only inherits from RandomGeneratorType."""


def make_dist(root, dist, module, entry_points, source):
    """Write a throwaway installed distribution (dist-info + module) under ``root``."""
    info = root / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "\n".join(f"{name} = {value}" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[aejax.codecs]\n{lines}\n")
    (root / f"{module}.py").write_text(textwrap.dedent(source))


PLUGIN_SOURCE = """
    from aesara.graph.type import Type
    from aejax.adapters import ArrayPayloadSpec, CodecSpec


    class CounterType(Type):
        def filter(self, data, strict=False, allow_downcast=None):
            return int(data)

        def __eq__(self, other):
            return type(self) is type(other)

        def __hash__(self):
            return hash(type(self))


    class CounterCodec:
        spec = CodecSpec(backend="jax", type="{module}.CounterType")

        def encode(self, host_value, type):
            return host_value * 10

        def decode(self, backend_value, type):
            return backend_value // 10

        def validate(self, backend_value, type):
            pass

        def payload_spec(self, type):
            return ArrayPayloadSpec(shape=(), dtype="int64")
"""


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_builtin_codecs_come_from_our_own_entry_points():
    keys = CodecRegistry().keys()
    assert ("jax", "aesara.tensor.random.type.RandomGeneratorType") in keys
    assert ("c", "aesara.graph.type.Type") in keys


def test_lookup_follows_the_mro():
    codec = codec_for("jax", SubGeneratorType())
    assert isinstance(codec, RandomGeneratorCodec)
    assert isinstance(codec_for("py", SubGeneratorType()), TypeFilterCodec)


def test_more_specific_codec_wins_over_base_class_codec():
    registry = CodecRegistry()
    special = RandomGeneratorCodec(impl="rbg")
    special.spec = CodecSpec(backend="jax", type=f"{__name__}.SubGeneratorType")
    registry.register(special)
    assert registry.codec_for("jax", SubGeneratorType()) is special
    assert isinstance(registry.codec_for("jax", RandomGeneratorType()), RandomGeneratorCodec)
    assert registry.codec_for("jax", RandomGeneratorType()) is not special


def test_missing_codec_error_lists_what_is_registered():
    with pytest.raises(CodecNotFoundError) as info:
        CodecRegistry().codec_for("numba", RandomGeneratorType())
    message = str(info.value)
    assert "'numba'" in message and "RandomGeneratorType" in message
    assert "jax:aesara.tensor.type.TensorType" in message


def test_explicit_registration_takes_precedence_and_conflicts_are_errors():
    registry = CodecRegistry()
    mine = TensorCodec()
    registry.register(mine)
    from aesara.tensor import dvector

    assert registry.codec_for("jax", dvector().type) is mine
    with pytest.raises(CodecConflictError, match="replace=True"):
        registry.register(TensorCodec())
    other = TensorCodec()
    registry.register(other, replace=True)
    assert registry.codec_for("jax", dvector().type) is other
    with pytest.raises(TypeError, match="not a StateCodec"):
        registry.register(object())


def test_plugin_distribution_is_found_through_its_entry_point(site):
    make_dist(
        site,
        "counterplugin",
        "counter_plugin",
        {"jax:counter_plugin.CounterType": "counter_plugin:CounterCodec"},
        PLUGIN_SOURCE.format(module="counter_plugin"),
    )
    import counter_plugin

    registry = CodecRegistry()
    codec = registry.codec_for("jax", counter_plugin.CounterType())
    assert isinstance(codec, StateCodec)
    assert codec.decode(codec.encode(4, None), None) == 4


def test_plugin_appears_after_refresh(site):
    registry = CodecRegistry()
    registry.keys()
    make_dist(
        site,
        "lateplugin",
        "late_plugin",
        {"jax:late_plugin.CounterType": "late_plugin:CounterCodec"},
        PLUGIN_SOURCE.format(module="late_plugin"),
    )
    assert ("jax", "late_plugin.CounterType") not in registry.keys()
    registry.refresh()
    assert ("jax", "late_plugin.CounterType") in registry.keys()


def test_conflicting_plugins_name_both_distributions(site):
    source = PLUGIN_SOURCE.format(module="shared_types")
    (site / "shared_types.py").write_text(textwrap.dedent(source))
    for dist in ("alphacodecs", "betacodecs"):
        make_dist(
            site,
            dist,
            f"{dist}_mod",
            {"jax:shared_types.CounterType": f"{dist}_mod:CounterCodec"},
            "from shared_types import CounterCodec\n",
        )
    import shared_types

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CodecConflictError) as info:
            CodecRegistry().codec_for("jax", shared_types.CounterType())
    assert "alphacodecs" in str(info.value) and "betacodecs" in str(info.value)


def test_broken_plugin_warns_and_fails_only_its_own_key(site):
    make_dist(
        site,
        "brokenplugin",
        "broken_plugin",
        {"jax:broken_types.BrokenType": "broken_plugin:Codec"},
        "raise RuntimeError('plugin import exploded')\n",
    )
    (site / "broken_types.py").write_text(
        "from aesara.graph.type import Type\n\nclass BrokenType(Type):\n    def filter(self, d, strict=False, allow_downcast=None):\n        return d\n"
    )
    import broken_types

    registry = CodecRegistry()
    with pytest.warns(UserWarning, match="brokenplugin"):
        with pytest.raises(CodecLoadError, match="plugin import exploded"):
            registry.codec_for("jax", broken_types.BrokenType())
    with pytest.raises(CodecLoadError, match="brokenplugin"):
        registry.codec_for("jax", broken_types.BrokenType())
    assert isinstance(registry.codec_for("jax", RandomGeneratorType()), RandomGeneratorCodec)


def test_plugin_whose_spec_disagrees_with_its_name_is_rejected(site):
    make_dist(
        site,
        "liarplugin",
        "liar_plugin",
        {"jax:liar_plugin.OtherType": "liar_plugin:CounterCodec"},
        textwrap.dedent(PLUGIN_SOURCE.format(module="liar_plugin")) + "\nclass OtherType(CounterType):\n    pass\n",
    )
    import liar_plugin

    with pytest.warns(UserWarning):
        with pytest.raises(CodecLoadError, match="must agree"):
            CodecRegistry().codec_for("jax", liar_plugin.OtherType())


def test_malformed_entry_point_name_is_skipped_with_a_warning(site):
    make_dist(site, "oddplugin", "odd_plugin", {"nocolon": "odd_plugin:X"}, "X = 1\n")
    with pytest.warns(UserWarning, match="nocolon"):
        keys = CodecRegistry().keys()
    assert ("jax", "aesara.tensor.type.TensorType") in keys


def test_codec_lookup_is_cached_per_type_class():
    registry = CodecRegistry()
    first = registry.codec_for("jax", RandomGeneratorType())
    assert registry.codec_for("jax", RandomGeneratorType()) is first
