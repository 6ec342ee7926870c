"""A call passes at most three layers of aejax's code before its jitted program runs (issues #39, #49).

The spy replaces the jitted function itself (inside a `CheckedProgram` when the graph has a check), so every
aejax frame between the call and XLA counts, whether JAX's ``jax_enable_x64`` is the program's or not.
"""

import inspect
from pathlib import Path

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.raise_op import Assert

import aejax.linker
from aejax.adapters.jax_api import disable_x64, enable_x64
from aejax.linker.checks import CheckedProgram
from aejax.linker.program.static_inputs import Shortcut

LINKER = Path(aejax.linker.__file__).resolve().parent


def _layers() -> list[str]:
    """The aejax frames that called the caller, innermost first, each by the class of its ``self``."""
    layers = []
    for frame in inspect.stack()[2:]:
        if Path(frame.filename).resolve().is_relative_to(LINKER):
            layers.append(type(frame.frame.f_locals.get("self")).__name__)
    return layers


def _spied(f):
    """Replace the jitted function of ``f``'s compiled program by a spy; what the spy saw, as it sees it."""
    program = f.vm.jit_fn.segments[0].program
    shortcut = program.shortcut
    checked = isinstance(shortcut.program, CheckedProgram)
    jitted = shortcut.program.jitted if checked else shortcut.program
    seen = []

    def spy(*values):
        seen.append((_layers(), jax.config.jax_enable_x64))
        return jitted(*values)

    if checked:
        shortcut.program.jitted = spy
    else:
        program.shortcut = Shortcut(shortcut.shapes, spy)  # a new shortcut: the next call makes a new exact call
    return seen


@pytest.mark.parametrize("checked", [False, True], ids=["no check", "an Assert"])
@pytest.mark.parametrize("x64", [True, False], ids=["x64 on", "x64 off"])
def test_a_call_passes_at_most_three_layers(x64, checked):
    x = at.dvector("x")
    y = Assert("x must be positive")(x, at.all(x > 0)) if checked else x
    f = aesara.function([x], y * 2, mode=aejax.linker.mode)
    assert f.x64 is True  # on the CPU
    with enable_x64(x64):
        f(np.ones(3))
        seen = _spied(f)
        np.testing.assert_array_equal(f([1.0, 2.0, 3.0]), [2.0, 4.0, 6.0])  # a list: the general path
        np.testing.assert_array_equal(f(np.ones(3)), [2.0, 2.0, 2.0])  # a numpy array like the last: the exact call
    checks = ["CheckedProgram"] if checked else []
    assert seen == [
        (checks + ["DirectCall", "AejaxFunction"], True),
        (checks + ["ExactCall", "AejaxFunction"], True),
    ]


def test_an_exact_call_of_a_function_made_without_x64_passes_two_layers_and_switches_nothing():
    """Its program is compiled ahead of time to take 64-bit arguments as words (`precision.taking_words`): the spy
    replaces that program in the exact call."""
    x = at.dvector("x")
    with disable_x64():
        f = aesara.function([x], x * 2, mode=aejax.linker.mode)
        f(np.ones(3))
        f._direct.exact.take_words()  # at once, not after the calls that pay for its compilation
        exact = f._direct.exact
        program, seen = exact._program, []

        def spy(*values):
            seen.append((_layers(), jax.config.jax_enable_x64, [v.dtype for v in values]))
            return program(*values)

        exact._program = spy
        np.testing.assert_array_equal(f(np.ones(3)), [2.0, 2.0, 2.0])
    assert seen == [(["ExactCall", "AejaxFunction"], False, [np.uint32])]
