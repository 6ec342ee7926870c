"""Compile a lowered graph with `jax.jit`, making shape-deciding scalar inputs static.

JAX needs static shapes; Aesara decides shapes at run time. When tracing fails
on a node that depends on integer scalar inputs of the graph (``x[:a]``,
``alloc(0, n * 2)``, a scan's ``n_steps``), those inputs are made static: one
program is compiled per distinct value. A `ShapeInputWarning` names such an
input once it takes a second value, when that costs a compilation: a function
always called with the same value stays silent, as the reference backends do.

Programs are kept per value of the static inputs and per shape of the other
inputs in a `ProgramCache` of `StaticInputProgram.cache_size` entries (least
recently used out); a function that keeps recompiling warns once with a
`RecompileWarning`. Discovery (which inputs are static, whether the graph has
run-time checks) is safe when several threads make first calls at once.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import jax
import numpy as np
from aesara.graph.basic import Variable, ancestors
from aesara.scalar.basic import ScalarType
from aesara.tensor.type import TensorType

from aejax.linker.checks import CHECKS, CheckedProgram, ProgramTrace, coded_program, recording_program
from aejax.linker.errors import LoweringError, caller_stacklevel, variable_name
from aejax.linker.lengths.bounds import with_static_inputs
from aejax.linker.program.cache import ProgramCache
from aejax.linker.program.collection import collection_paused
from aejax.linker.program.persistent_cache import use_persistent_cache
from aejax.linker.program.saved_programs import Discovered, SavedAs
from aejax.linker.trace.replay import replaying


class ShapeInputWarning(UserWarning):
    """An input decides a shape and took a new value, so another program was compiled for it."""


def is_integer_scalar(var: Variable) -> bool:
    """Whether ``var`` is a 0-d integer tensor or an integer scalar."""
    if isinstance(var.type, TensorType) and var.type.ndim != 0:
        return False
    if not isinstance(var.type, (TensorType, ScalarType)):
        return False
    return np.dtype(var.type.dtype).kind in "iu"


MAX_STATIC_LENGTH = 32
"""The longest integer vector an input may be to be made static (a size such as ``normal(size=s)``)."""


def may_be_static(var: Variable) -> bool:
    """Whether ``var`` may be made a static input: an integer or boolean scalar, or a short integer vector.

    A vector qualifies when its length is fixed by its type (at most
    `MAX_STATIC_LENGTH`), so that its values can key a program like a scalar's.
    """
    if not isinstance(var.type, (TensorType, ScalarType)) or np.dtype(var.type.dtype).kind not in "iub":
        return False
    shape = getattr(var.type, "shape", ())
    if len(shape) == 0:
        return True
    return (
        len(shape) == 1
        and shape[0] is not None
        and shape[0] <= MAX_STATIC_LENGTH
        and np.dtype(var.type.dtype).kind != "b"
    )


def _static_key(value: Any) -> Any:
    """A static input's value as a hashable key: a Python scalar, or a tuple for a vector."""
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else tuple(array.tolist())


def _static_value(key: Any, var: Variable) -> Any:
    """The value a static input enters the traced function with: its key in ``var``'s dtype.

    ``None`` stays ``None``: Aesara passes a ``None`` argument to the graph as
    it is (``eye(n, None)`` means ``eye(n, n)``).
    """
    return None if key is None else np.asarray(key, dtype=var.type.dtype)


def _first_call(program: Callable[..., Any], args: Sequence[Any]) -> Any:
    """The first call of a new ``program``: JAX's warning that a donated buffer found no output to go to is not shown.

    An update may change its variable's shape; its old buffer is then freed
    rather than reused, which is all the warning says.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
        return program(*args)


def _traced(
    coded: Callable[..., Any], dynamic: Sequence[Any], donated: tuple[int, ...]
) -> tuple[Callable[..., Any], ProgramTrace, tuple[int, ...]]:
    """``coded`` jitted and traced on ``dynamic`` (its first call compiles it), what the trace found, and the
    arguments it donates: none once it met a check or staged a callback (a failure after it started would lose them).

    The program given no buffers computes the trace already made: nothing is traced twice.
    """
    jitted = jax.jit(coded, donate_argnums=donated)
    with recording_program() as trace:
        traced = jitted.trace(*dynamic)
    if donated and (trace.callbacks or trace.checked):
        return jax.jit(replaying(traced.jaxpr, traced.out_info)), trace, ()
    return jitted, trace, donated


def _checked(jitted: Callable[..., Any], trace: ProgramTrace) -> Callable[..., Any]:
    """The program that runs ``jitted``: a `CheckedProgram` if its trace met a check."""
    return CheckedProgram(jitted) if trace.checked else jitted


class RecompileWarning(UserWarning):
    """A compiled function keeps compiling new programs, more than its cache keeps."""


def _shape_key(value: Any) -> Any:
    shape = getattr(value, "shape", None)
    if shape is not None:
        return shape
    return tuple(np.shape(leaf) for leaf in jax.tree_util.tree_leaves(value))


class Shortcut(NamedTuple):
    """A compiled program with no static inputs and the input shapes it was traced for.

    A traced program computes the graph for any input values of those
    shapes, whatever later tracing finds out about other shapes, so a caller
    may keep it and call it directly while its inputs keep their shapes.
    """

    shapes: tuple[Any, ...]
    program: Callable[..., tuple[Any, ...]]

    def fits(self, args: Sequence[Any]) -> bool:
        """Whether ``args`` have the shapes the program was traced for."""
        return self.shapes == tuple([getattr(a, "shape", None) for a in args])


class NewProgram(NamedTuple):
    """A program made for a call: when its making started, and its store entry if its first call is to be saved."""

    program: Callable[..., Any]
    started: float
    entry: str | None


class StaticInputProgram:
    """A traced graph compiled with `jax.jit`, static in its shape-deciding inputs.

    Attributes
    ----------
    cache_size
        How many compiled programs one function keeps (default 32; set it on
        the class for every function, or on one instance). Each distinct
        value of the static inputs, and each distinct shape of the others,
        is one program.
    static_positions
        Positions of the graph inputs that are static, in increasing order.
    programs
        The compiled programs (a `ProgramCache`), keyed by the values of the
        static inputs and the shapes of the others.
    checked
        Whether a program it keeps met a run-time check while tracing (see `aejax.linker.checks`).
    donated
        Positions of the inputs whose buffers a program may reuse for its
        outputs (``donate_argnums``): the old values of updated resident
        shared variables. Not in a program with a check or a callback (each
        program is traced once, then compiled with or without donations),
        nor for static inputs.
    shortcut
        The program of the last call that ran, while no input is static
        (`Shortcut`); ``None`` before the first call and after discovery
        changes what is static.
    """

    cache_size = 32

    def __init__(
        self,
        inputs: Sequence[Variable],
        traced_fn: Callable[..., tuple[Any, ...]],
        donated: frozenset[int] = frozenset(),
        saved_as: SavedAs | None = None,
    ) -> None:
        self.inputs = list(inputs)
        self.traced_fn = traced_fn
        self.donated = donated
        self.saved_as = saved_as
        self._store = None if saved_as is None else saved_as.store
        self.programs = ProgramCache(lambda: self.cache_size)
        self._discovered = Discovered()
        self._lock = threading.Lock()
        self._warned = False
        self._shape_nodes: dict[int, str] = {}  # static input position -> the node whose shape it decides
        self._first_values: dict[int, Any] = {}  # static input position -> the value of its first program
        self.shortcut: Shortcut | None = None
        if saved_as is not None and saved_as.found is not None:  # start from what the saving process found out
            self._discovered, shape_nodes = saved_as.found
            self._shape_nodes.update(shape_nodes)

    @property
    def static_positions(self) -> tuple[int, ...]:
        return self._discovered.static_positions

    @property
    def checked(self) -> bool:
        """Whether a program it keeps met a run-time check while tracing (see `aejax.linker.checks`)."""
        return any(isinstance(program, CheckedProgram) for program in self.programs.values())

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        shortcut = self.shortcut
        if shortcut is not None and shortcut.fits(args):
            return shortcut.program(*args)  # the common call: inputs shaped as last time, already traced
        return self._call(args)

    def _call(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        while True:
            discovered = self._discovered
            try:
                dynamic = self._dynamic(discovered, args)
                key, program, new = self._program_for(discovered, args, dynamic)
                if new is None:
                    outputs = program(*dynamic)
                else:
                    with collection_paused():
                        outputs = self._first_run(discovered, key, program, dynamic, new)
            except LoweringError as error:
                if not self._make_static(discovered, error):
                    raise
            else:
                if not discovered.static_positions:
                    self.shortcut = Shortcut(key, program)  # only once it ran: then it is traced
                return outputs

    def _program_for(
        self, discovered: Discovered, args: tuple[Any, ...], dynamic: Sequence[Any]
    ) -> tuple[Any, Callable[..., Any], NewProgram | None]:
        """The key and program for ``args`` (``dynamic`` without the static ones), and how it was made if it is new.

        A new program is one saved by an earlier process, if the store has it
        (`aejax.linker.program.saved_programs`), else one traced now, which
        its first call compiles.
        """
        statics = discovered.static_positions
        key = tuple(_static_key(a) if i in statics else _shape_key(a) for i, a in enumerate(args))
        program = self.programs.get(key)
        if program is not None:
            return key, program, None
        self._announce_new_values(statics, key)
        with collection_paused():  # tracing makes many objects; the first run compiles with it paused too
            new = self._new_program(discovered, key, dynamic)
        program = self.programs.add(key, new.program)
        if self.programs.evicted and not self._warned:
            self._warned = True
            self._warn_recompiling()
        return key, program, new

    def _new_program(self, discovered: Discovered, key: tuple[Any, ...], dynamic: Sequence[Any]) -> NewProgram:
        """The program for ``key``: loaded from the store, or traced on ``dynamic`` (and exported if it may be saved)."""
        started = time.perf_counter()
        store, coded = self._store, coded_program(self._bound(discovered, key))
        donated = self._donated_argnums(discovered.static_positions)
        entry = None if store is None else store.entry(discovered, key, dynamic)
        loaded = None if entry is None else store.loaded(entry, jax.jit(coded), donated)
        if loaded is not None:
            return NewProgram(loaded, started, None)
        jitted, trace, donated = _traced(coded, dynamic, donated)
        if entry is None or trace.callbacks or not self.saved_as.storable():
            return NewProgram(_checked(jitted, trace), started, None)
        return NewProgram(_checked(store.exporting(entry, jitted, donated), trace), started, entry)

    def _first_run(
        self, discovered: Discovered, key: Any, program: Callable[..., Any], dynamic: Any, new: NewProgram
    ) -> Any:
        """The first call of a ``new`` program, which the store keeps if tracing and compiling it took long enough."""
        outputs = _first_call(program, dynamic) if self.donated else program(*dynamic)
        store, seconds = self._store, time.perf_counter() - new.started
        if new.entry is not None and store.worth_saving(seconds):
            checks = CHECKS.entries() if isinstance(program, CheckedProgram) else None
            store.save(new.entry, dynamic, discovered, checks, dict(self._shape_nodes))
        return outputs

    @staticmethod
    def _dynamic(discovered: Discovered, args: tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
        statics = discovered.static_positions
        if not statics:
            return args
        return [a for i, a in enumerate(args) if i not in statics]

    def _bound(self, discovered: Discovered, key: tuple[Any, ...]) -> Callable[..., Any]:
        """The traced function of the dynamic inputs, the static ones bound to their values in ``key``."""
        inputs = self.inputs
        statics = {pos: _static_value(key[pos], inputs[pos]) for pos in discovered.static_positions}
        n_inputs = len(inputs)
        traced_fn = self.traced_fn

        def program(*dynamic: Any) -> tuple[Any, ...]:
            rest = iter(dynamic)
            full = [statics[i] if i in statics else next(rest) for i in range(n_inputs)]
            return traced_fn(*full)

        use_persistent_cache()
        return with_static_inputs(program)  # a Scan may ask for the bounds of its sequences (BoundsNeeded)

    def _donated_argnums(self, statics: tuple[int, ...]) -> tuple[int, ...]:
        """The positions among the dynamic arguments of the inputs whose buffers the program may reuse."""
        dynamic = [i for i in range(len(self.inputs)) if i not in statics]
        return tuple(n for n, i in enumerate(dynamic) if i in self.donated)

    def _make_static(self, discovered: Discovered, error: LoweringError) -> bool:
        if error.node is None or not error.needs_static:
            return False
        with self._lock:
            if self._discovered is not discovered:
                return True  # another thread found out more meanwhile: try again with that
            inputs = self.inputs
            found = set(ancestors(error.node.inputs)) & set(inputs)
            new = [
                inputs.index(var)
                for var in found
                if may_be_static(var) and inputs.index(var) not in discovered.static_positions
            ]
            if not new:
                return False
            self._shape_nodes.update((pos, str(error.node)) for pos in new)
            positions = tuple(sorted(set(discovered.static_positions) | set(new)))
            self._replace(replace(discovered, static_positions=positions))
        return True

    def _announce_new_values(self, statics: tuple[int, ...], key: tuple[Any, ...]) -> None:
        """Warn, once per input, when a static input takes a value other than its first program's."""
        for pos in statics:
            first = self._first_values.setdefault(pos, key[pos])
            if key[pos] == first:
                continue
            node = self._shape_nodes.pop(pos, None)  # None once warned
            if node is not None:
                warnings.warn(
                    f"input {variable_name(self.inputs[pos])!r} decides a shape in node {node} and took a new "
                    f"value ({key[pos]!r} after {first!r}); aejax compiles one JAX program per distinct value of it",
                    ShapeInputWarning,
                    stacklevel=caller_stacklevel(),
                )

    def _replace(self, discovered: Discovered) -> None:
        self._discovered = discovered
        self.shortcut = None
        self.programs.clear()

    def _warn_recompiling(self) -> None:
        statics = ", ".join(repr(variable_name(self.inputs[i])) for i in self.static_positions)
        why = f"values of its static inputs {statics} and " if statics else ""
        warnings.warn(
            f"a compiled function has compiled {self.programs.compiled} JAX programs (one per distinct "
            f"{why}input shapes) and keeps only the last {self.cache_size}; every new one costs a "
            "compilation. Reuse fewer distinct values, or raise the function's cache_size (f.cache_size = n).",
            RecompileWarning,
            stacklevel=caller_stacklevel(),
        )
