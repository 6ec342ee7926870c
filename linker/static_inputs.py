"""Compile a lowered graph with `jax.jit`, making shape-deciding scalar inputs static.

JAX needs static shapes; Aesara decides shapes at run time. When tracing fails
on a node that depends on integer scalar inputs of the graph (``x[:a]``,
``alloc(0, n * 2)``, a scan's ``n_steps``), those inputs are made static: one
program is compiled per distinct value and kept in a cache, and a
`ShapeInputWarning` names each such input once.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import aesara

import jax
import numpy as np
from aesara.graph.basic import Variable, ancestors
from aesara.scalar.basic import ScalarType
from aesara.tensor.type import TensorType

from aejax.linker.checks import CheckedProgram, NeedsChecks, discovering
from aejax.linker.errors import LoweringError, variable_name


class ShapeInputWarning(UserWarning):
    """An input decides a shape, so one program is compiled per value of it."""


def is_integer_scalar(var: Variable) -> bool:
    """Whether ``var`` is a 0-d integer tensor or an integer scalar."""
    if isinstance(var.type, TensorType) and var.type.ndim != 0:
        return False
    if not isinstance(var.type, (TensorType, ScalarType)):
        return False
    return np.dtype(var.type.dtype).kind in "iu"


_LIBRARIES = tuple(
    str(Path(module.__file__).resolve().parent) for module in (aesara, jax, sys.modules["aejax.linker"])
)


def caller_stacklevel() -> int:
    """The `warnings.warn` stack level of the first frame outside aejax, Aesara and JAX."""
    frame, level = sys._getframe(1), 1
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(_LIBRARIES):
        frame, level = frame.f_back, level + 1
    return level


class StaticInputProgram:
    """A traced graph compiled with `jax.jit`, static in its shape-deciding inputs.

    Attributes
    ----------
    static_positions
        Positions of the graph inputs that are static, in increasing order.
    programs
        The compiled programs, keyed by the values of the static inputs.
    checked
        Whether the graph met a run-time check while tracing (see `aejax.linker.checks`).
    """

    def __init__(self, inputs: Sequence[Variable], traced_fn: Callable[..., tuple[Any, ...]]) -> None:
        self.inputs = list(inputs)
        self.traced_fn = traced_fn
        self.checked = False
        self.static_positions: tuple[int, ...] = ()
        self.programs: dict[tuple[Any, ...], Callable[..., Any]] = {}
        self._only: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        while True:
            try:
                if self._only is not None:
                    return self._only(*args)
                return self._program_for(args)(*self._dynamic(args))
            except LoweringError as error:
                if not self._make_static(error):
                    raise
            except NeedsChecks:
                self.checked = True
                self._forget_programs()

    def _static_key(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(np.asarray(args[i]).item() for i in self.static_positions)

    def _dynamic(self, args: tuple[Any, ...]) -> list[Any]:
        if not self.static_positions:
            return list(args)
        return [a for i, a in enumerate(args) if i not in self.static_positions]

    def _program_for(self, args: tuple[Any, ...]) -> Callable[..., Any]:
        key = self._static_key(args) if self.static_positions else ()
        program = self.programs.get(key)
        if program is None:
            program = self.programs[key] = self._compile(key)
            if not self.static_positions:
                self._only = program
        return program

    def _compile(self, key: tuple[Any, ...]) -> Callable[..., Any]:
        inputs = self.inputs
        statics = {
            pos: np.asarray(value, dtype=inputs[pos].type.dtype)
            for pos, value in zip(self.static_positions, key)
        }
        n_inputs = len(inputs)
        traced_fn = self.traced_fn

        def program(*dynamic: Any) -> tuple[Any, ...]:
            rest = iter(dynamic)
            full = [statics[i] if i in statics else next(rest) for i in range(n_inputs)]
            return traced_fn(*full)

        return CheckedProgram(program) if self.checked else jax.jit(discovering(program))

    def _make_static(self, error: LoweringError) -> bool:
        if error.node is None or not error.needs_static:
            return False
        inputs = self.inputs
        found = set(ancestors(error.node.inputs)) & set(inputs)
        new = [
            inputs.index(var)
            for var in found
            if is_integer_scalar(var) and inputs.index(var) not in self.static_positions
        ]
        if not new:
            return False
        for pos in sorted(new):
            warnings.warn(
                f"input {variable_name(inputs[pos])!r} decides a shape in node {error.node}; "
                "aejax compiles one JAX program per distinct value of it",
                ShapeInputWarning,
                stacklevel=caller_stacklevel(),
            )
        self.static_positions = tuple(sorted(set(self.static_positions) | set(new)))
        self._forget_programs()
        return True

    def _forget_programs(self) -> None:
        self.programs.clear()
        self._only = None
