"""JAX's API where its releases differ (`aejax.adapters.jax_api`): 64-bit types on this thread only.

`enable_x64` and `disable_x64` set ``jax_enable_x64`` inside their block, on the thread that
entered it, and give back the process's value when the block ends, however it ends. Each test runs
with the process's value on and off.
"""

import threading

import jax
import jax.numpy as jnp
import pytest

from aejax.adapters import jax_api
from aejax.adapters.jax_api import disable_x64, enable_x64


@pytest.fixture(params=[False, True], ids=["process x64 off", "process x64 on"])
def process_x64(request):
    """The process's ``jax_enable_x64`` for the test (the parameter), set back to what it was afterwards."""
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", request.param)
    yield request.param
    jax.config.update("jax_enable_x64", before)


def _x64():
    """This thread's ``jax_enable_x64``, and the integer type JAX then gives ``arange``."""
    return jax.config.jax_enable_x64, jnp.arange(3).dtype


def _types(x64):
    return x64, jnp.dtype("int64" if x64 else "int32")


@pytest.mark.parametrize(
    ("block", "inside"),
    [(lambda: enable_x64(True), True), (lambda: enable_x64(False), False), (disable_x64, False)],
    ids=["enable_x64(True)", "enable_x64(False)", "disable_x64()"],
)
def test_the_flag_holds_inside_the_block_and_is_given_back_after(process_x64, block, inside):
    """Inside the block JAX makes 64-bit (or 32-bit) integers; after it, the process's value is back."""
    with block():
        assert _x64() == _types(inside)
    assert _x64() == _types(process_x64)


def test_the_flag_is_given_back_when_the_block_raises(process_x64):
    """A block left by an exception gives the process's value back too."""
    with pytest.raises(RuntimeError), enable_x64(not process_x64):
        raise RuntimeError("leaving the block")
    assert _x64() == _types(process_x64)


def test_blocks_nest(process_x64):
    """An inner block's value holds inside it, and the outer block's again after it."""
    with disable_x64():
        with enable_x64(True):
            assert _x64() == _types(True)
        assert _x64() == _types(False)
    assert _x64() == _types(process_x64)


def test_another_thread_sees_the_process_value(process_x64):
    """While one thread is inside a block, another thread sees the process's value, and makes its types."""
    seen = []
    with enable_x64(not process_x64):
        reader = threading.Thread(target=lambda: seen.append(_x64()))
        reader.start()
        reader.join()
        assert _x64() == _types(not process_x64)
    assert seen == [_types(process_x64)]


def test_enable_x64_is_jaxs_own():
    """`enable_x64` is JAX's object itself (``jax.enable_x64``, or JAX 0.7's ``jax.experimental.enable_x64``)."""
    import jax.experimental

    assert jax_api.enable_x64 is getattr(jax, "enable_x64", None) or jax_api.enable_x64 is jax.experimental.enable_x64
