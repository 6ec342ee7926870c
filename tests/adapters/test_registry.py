"""Codec lookup: MRO resolution, explicit registration, entry-point plugins."""

import sys
import textwrap
import warnings
from importlib.metadata import EntryPoint

import pytest
from aesara.tensor import dvector
from aesara.tensor.random.type import RandomGeneratorType

from aejax.adapters import (
    ENTRY_POINT_GROUP,
    CodecConflictError,
    CodecLoadError,
    CodecNotFoundError,
    CodecRegistry,
    CodecSpec,
    StateCodec,
    codec_for,
    published_codecs,
)
from aejax.adapters import registry as registry_module
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
    import aejax.adapters  # first: under numpy 2 it makes Aesara 2.9.4 work
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


def point(name, value):
    """An entry point of the ``aejax.codecs`` group, in memory (no installed distribution)."""
    return EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP)


@pytest.fixture
def published(monkeypatch):
    """Make registries read the given in-memory entry points instead of the installed ones."""

    def publish(*points):
        monkeypatch.setattr(registry_module, "entry_points", lambda group: [p for p in points if p.group == group])

    return publish


CONFLICTING = [point("jax:shared.CounterType", f"{name}_mod:CounterCodec") for name in ("alpha", "beta")]
"""Two values published under one key."""


def test_published_codecs_maps_each_key_to_its_entry_point():
    counter = point("jax:mypkg.types.CounterType", "mypkg.codecs:CounterCodec")
    tensor = point("c:aesara.tensor.type.TensorType", "mypkg.codecs:TensorCodec")
    codecs = published_codecs([counter, tensor])
    assert sorted(codecs) == [("c", "aesara.tensor.type.TensorType"), ("jax", "mypkg.types.CounterType")]
    assert codecs[("jax", "mypkg.types.CounterType")] is counter


def test_published_codecs_with_two_values_for_a_key_raise_a_conflict_naming_both():
    codecs = published_codecs(CONFLICTING)
    assert ("jax", "shared.CounterType") in codecs
    with pytest.raises(CodecConflictError, match="alpha_mod:CounterCodec.*beta_mod:CounterCodec"):
        codecs[("jax", "shared.CounterType")]


def test_published_codecs_conflict_fails_only_its_own_key():
    other = point("jax:mypkg.types.OtherType", "mypkg.codecs:OtherCodec")
    codecs = published_codecs([*CONFLICTING, other])
    assert codecs[("jax", "mypkg.types.OtherType")] is other


def test_published_codecs_count_the_same_value_twice_once():
    twice = [point("jax:mypkg.types.CounterType", "mypkg.codecs:CounterCodec")] * 2
    assert published_codecs(twice)[("jax", "mypkg.types.CounterType")].value == "mypkg.codecs:CounterCodec"


def test_published_codecs_skip_a_malformed_name_with_a_warning():
    with pytest.warns(UserWarning, match="nocolon"):
        codecs = published_codecs([point("nocolon", "odd_plugin:X")])
    assert len(codecs) == 0


def test_registry_looks_up_an_in_memory_entry_point(site, published):
    (site / "memory_plugin.py").write_text(textwrap.dedent(PLUGIN_SOURCE.format(module="memory_plugin")))
    published(point("jax:memory_plugin.CounterType", "memory_plugin:CounterCodec"))
    import memory_plugin

    codec = CodecRegistry().codec_for("jax", memory_plugin.CounterType())
    assert codec.decode(codec.encode(4, None), None) == 4


def test_registry_lookup_of_a_conflicting_key_raises_naming_both(published):
    key = "jax:aesara.tensor.type.TensorType"
    published(point(key, "alpha_mod:Codec"), point(key, "beta_mod:Codec"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CodecConflictError, match="alpha_mod:Codec.*beta_mod:Codec"):
            CodecRegistry().codec_for("jax", dvector().type)


def test_listing_keys_imports_no_plugin(site, published):
    (site / "lazy_types.py").write_text(textwrap.dedent(PLUGIN_SOURCE.format(module="lazy_types")))
    (site / "lazy_plugin.py").write_text("from lazy_types import CounterCodec\n")
    published(point("jax:lazy_types.CounterType", "lazy_plugin:CounterCodec"))
    registry = CodecRegistry()
    assert registry.keys() == [("jax", "lazy_types.CounterType")]
    assert "lazy_plugin" not in sys.modules
    import lazy_types

    registry.codec_for("jax", lazy_types.CounterType())
    assert "lazy_plugin" in sys.modules


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


def test_explicit_registration_takes_precedence_over_entry_points():
    registry = CodecRegistry()
    mine = TensorCodec()
    registry.register(mine)
    assert registry.codec_for("jax", dvector().type) is mine


def test_registering_a_second_codec_for_a_key_is_a_conflict():
    registry = CodecRegistry()
    registry.register(TensorCodec())
    with pytest.raises(CodecConflictError, match="replace=True"):
        registry.register(TensorCodec())


def test_registering_with_replace_replaces_the_codec():
    registry = CodecRegistry()
    registry.register(TensorCodec())
    other = TensorCodec()
    registry.register(other, replace=True)
    assert registry.codec_for("jax", dvector().type) is other


def test_registering_what_is_not_a_codec_is_a_type_error():
    with pytest.raises(TypeError, match="not a StateCodec"):
        CodecRegistry().register(object())


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
