"""Values on a mesh (`aejax.linker.mesh`), within one process; across processes: tests/export/test_processes.py."""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from aejax.linker.mesh import digest, gathered, placed, spans_processes


def test_digests_tell_apart_contents_shapes_and_dtypes_and_agree_on_equal_values():
    values = [np.arange(4.0), np.arange(4.0).reshape(2, 2), np.arange(4, dtype=np.int64), np.arange(4.0) + 1e-12]
    digests = {digest(value).tobytes() for value in values}
    assert len(digests) == len(values)
    assert np.array_equal(digest(np.arange(4.0)), digest(jax.numpy.arange(4.0, dtype=np.float64)))
    assert digest(3).dtype == np.uint32 and digest(3).shape == (2,)


def test_a_value_placed_on_its_own_sharding_is_kept_and_comes_back_as_numpy():
    mesh = Mesh(np.array(jax.devices()[:1]), ("chains",))
    sharding = NamedSharding(mesh, PartitionSpec("chains"))
    value = placed(np.arange(6.0), sharding)
    assert value.sharding.is_equivalent_to(sharding, 1)
    assert placed(value, sharding) is value
    np.testing.assert_array_equal(gathered(value), np.arange(6.0))
    assert not spans_processes(mesh) and not spans_processes(None)
