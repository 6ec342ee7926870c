"""Compile a lowered graph with `jax.jit`, making shape-deciding scalar inputs static.

JAX needs static shapes; Aesara decides shapes at run time. A program is
traced with every input traced; a node that needs an integer input concrete
(``x[:a]``, ``alloc(0, n * 2)``, a scan's ``n_steps``) is lowered on the
value the call gave it (`aejax.linker.trace.call_values`), and the inputs so
read become static: the program is kept under their values, and one program
is compiled per distinct value. The trace that compiles a program finds them,
so a first call traces its graph once. A `ShapeInputWarning` names such an
input once it takes a second value, when that costs a compilation: a function
always called with the same value stays silent, as the reference backends do.

Programs are kept per value of the static inputs and per shape of the other
inputs in a `ProgramCache` of `StaticInputProgram.cache_size` entries (least
recently used out); a function that keeps recompiling warns once with a
`RecompileWarning`. Finding static inputs is safe when several threads make
first calls at once.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, NamedTuple

import jax
import numpy as np
from aesara.graph.basic import Variable
from aesara.scalar.basic import ScalarType
from aesara.tensor.type import TensorType

from aejax.linker.checks import CheckedProgram, CheckTable, ProgramTrace, coded_program
from aejax.linker.errors import caller_stacklevel, variable_name
from aejax.linker.lengths.bounds import with_static_inputs
from aejax.linker.program.cache import ProgramCache
from aejax.linker.program.collection import collection_paused
from aejax.linker.program.persistent_cache import use_persistent_cache
from aejax.linker.program.saved_programs import Discovered, SavedAs
from aejax.linker.trace.call_values import CallValues, reading_call_values
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


class TracedProgram(NamedTuple):
    """A program jitted and traced: what its trace found, the arguments it donates, and whether it completes."""

    jitted: Callable[..., Any]
    trace: ProgramTrace
    donated: tuple[int, ...]
    completes: bool


def _traced(
    coded: Callable[..., Any], args: Sequence[Any], donated: tuple[int, ...], completes: Callable[[Any], bool]
) -> TracedProgram:
    """``coded`` jitted and traced on ``args`` (its first call compiles it), what the trace found, the arguments
    it donates and whether it computes all it computes (``completes`` of the result it traced to): it donates none
    once it met a check or staged a callback (a failure after it started would lose them), nor when it does not
    complete (programs after it may need them).

    The program given no buffers computes the trace already made: nothing is traced twice.
    """
    jitted = jax.jit(coded, donate_argnums=donated)
    traced = jitted.trace(*args)
    trace = ProgramTrace.of(traced)
    complete = completes(traced.out_info.outputs if trace.checked else traced.out_info)
    if donated and (trace.callbacks or trace.checked or not complete):
        return TracedProgram(jax.jit(replaying(traced.jaxpr, traced.out_info)), trace, (), complete)
    return TracedProgram(jitted, trace, donated, complete)


def _reading(traced_fn: Callable[..., Any], values: CallValues) -> Callable[..., Any]:
    """``traced_fn``, reading ``values`` wherever it is traced: its first trace, and any that JAX makes again."""

    def reading(*args: Any) -> Any:
        with reading_call_values(values):
            return traced_fn(*args)

    return reading


def _checked(jitted: Callable[..., Any], trace: ProgramTrace, table: CheckTable) -> Callable[..., Any]:
    """The program that runs ``jitted``: a `CheckedProgram` of its checks (``table``) if its trace met one."""
    return CheckedProgram(jitted, table) if trace.checked else jitted


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
    """A program made for a call: when its making started, its store entry if its first call is to be saved, and
    whether it computes all its function computes (`StaticInputProgram.completes`)."""

    program: Callable[..., Any]
    started: float
    entry: str | None
    completes: bool


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
        A program takes every input, the static ones too, and is kept under
        their values.
    programs
        The compiled programs (a `ProgramCache`), keyed by the values of the
        static inputs and the shapes of the others.
    checked
        Whether a program it keeps met a run-time check while tracing (see `aejax.linker.checks`).
    completes
        Whether a program computed all its function computes, from the result
        its trace returned (`jax.stages.Traced.out_info`): a graph's program
        may end early (`aejax.linker.program.segments`), and one that did
        neither reuses donated buffers, nor is saved, nor becomes the shortcut.
    donated
        Positions of the inputs whose buffers a program may reuse for its
        outputs (``donate_argnums``): the old values of updated resident
        shared variables. Not in a program with a check or a callback (each
        program is traced once, then compiled with or without donations).
    shortcut
        The program of the last call that ran and completes, while no input is
        static (`Shortcut`); ``None`` before the first call and after a trace
        finds another static input.
    """

    cache_size = 32

    def __init__(
        self,
        inputs: Sequence[Variable],
        traced_fn: Callable[..., tuple[Any, ...]],
        donated: frozenset[int] = frozenset(),
        saved_as: SavedAs | None = None,
        completes: Callable[[Any], bool] = lambda out: True,
    ) -> None:
        self.inputs = list(inputs)
        self.completes = completes
        self._traced_fn = with_static_inputs(traced_fn)  # a Scan may ask for the bounds of its sequences (BoundsNeeded)
        self.donated = donated
        self.saved_as = saved_as
        self._store = None if saved_as is None else saved_as.store
        self.programs = ProgramCache(lambda: self.cache_size)
        self._discovered = Discovered()
        self._lock = threading.Lock()
        self._warned = False
        self._shape_nodes: dict[int, str] = {}  # static input position -> the node whose shape it decides
        self._first_values: dict[int, Any] = {}  # static input position -> the value of its first program
        self._announced: set[int] = set()  # static input positions already warned about
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
        discovered = self._discovered
        key = self._key(discovered, args)
        program = self.programs.get(key)
        if program is not None:
            return program(*args)
        store = self._store
        entry = None if store is None else store.entry(discovered, key, args)
        with collection_paused(), nullcontext() if entry is None else store.compiling(entry):
            program = self.programs.get(key) if discovered is self._discovered else None
            if program is not None:  # made by another thread while this one waited for the entry
                return program(*args)
            key, new = self._new_program(discovered, key, args, entry)
            program = self._kept(key, new.program)
            outputs = self._first_run(key, program, args, new)
        if new.completes and not self.static_positions:
            self.shortcut = Shortcut(key, program)  # only once it ran: then it is traced
        return outputs

    def _key(self, discovered: Discovered, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """What a program for ``args`` is kept under: the values of the static inputs, the shapes of the others."""
        statics = discovered.static_positions
        return tuple(_static_key(a) if i in statics else _shape_key(a) for i, a in enumerate(args))

    def _candidates(self, args: tuple[Any, ...]) -> dict[Variable, Any]:
        """The inputs that may be made static, each with its value in ``args`` (`aejax.linker.trace.call_values`)."""
        return {var: _static_value(_static_key(arg), var) for var, arg in zip(self.inputs, args) if may_be_static(var)}

    def _kept(self, key: tuple[Any, ...], program: Callable[..., Any]) -> Callable[..., Any]:
        """``program``, kept in the cache under ``key``; the first eviction warns that the function keeps recompiling."""
        kept = self.programs.add(key, program)
        if self.programs.evicted and not self._warned:
            self._warned = True
            self._warn_recompiling()
        return kept

    def _new_program(
        self, discovered: Discovered, key: tuple[Any, ...], args: tuple[Any, ...], entry: str | None
    ) -> tuple[tuple[Any, ...], NewProgram]:
        """The program for ``args`` and its key: loaded from the store's ``entry``, or traced (and exported if it may
        be saved).

        Tracing may find more static inputs (those whose call values a node
        read): the program is then kept under a key that holds their values.
        """
        started = time.perf_counter()
        use_persistent_cache()
        values = CallValues(self._candidates(args))
        store, donated = self._store, tuple(sorted(self.donated))
        table = CheckTable()
        coded = coded_program(_reading(self._traced_fn, values), table)
        loaded = None if entry is None else store.loaded(entry, jax.jit(coded), donated, args, table)
        if loaded is not None:
            values.limit = self._static_inputs(discovered)
            self._announce_new_values(discovered.static_positions, key)
            return key, NewProgram(loaded, started, None, True)  # only programs that complete are saved
        jitted, trace, donated, complete = _traced(coded, args, donated, self.completes)
        found = self._found_static(discovered, values)
        values.limit = self._static_inputs(found)
        if found is not discovered:
            key = self._key(found, args)
        self._announce_new_values(found.static_positions, key)
        if store is None or trace.callbacks or not complete:
            return key, NewProgram(_checked(jitted, trace, table), started, None, complete)
        if found is not discovered:  # the key holds the static values tracing found
            entry = store.entry(found, key, args)
        return key, NewProgram(
            _checked(store.exporting(entry, jitted, donated, args), trace, table), started, entry, True
        )

    def _static_inputs(self, discovered: Discovered) -> frozenset[Variable]:
        return frozenset(self.inputs[i] for i in discovered.static_positions)

    def _first_run(self, key: Any, program: Callable[..., Any], args: tuple[Any, ...], new: NewProgram) -> Any:
        """The first call of a ``new`` program, which the store keeps if tracing and compiling it took long enough."""
        outputs = _first_call(program, args) if self.donated else program(*args)
        store, seconds = self._store, time.perf_counter() - new.started
        if new.entry is not None and store.worth_saving(new.entry, seconds):
            checks = program.checks if isinstance(program, CheckedProgram) else None
            store.save(new.entry, args, self._discovered, checks, dict(self._shape_nodes))
        return outputs

    def _found_static(self, discovered: Discovered, values: CallValues) -> Discovered:
        """``discovered`` with the inputs whose call values tracing read made static; the program's from then on."""
        inputs = self.inputs
        read = {inputs.index(var): node for var, node in values.read.items()}
        if set(read) <= set(discovered.static_positions):
            return discovered
        with self._lock:
            known = set(self._discovered.static_positions)  # another thread may have found some meanwhile
            for pos, node in read.items():
                if pos not in known:
                    self._shape_nodes.setdefault(pos, str(node))
            found = Discovered(tuple(sorted(known | set(read) | set(discovered.static_positions))))
            if found != self._discovered:
                self._replace(found)
            return self._discovered

    def _announce_new_values(self, statics: tuple[int, ...], key: tuple[Any, ...]) -> None:
        """Warn, once per input, when a static input takes a value other than its first program's."""
        for pos in statics:
            first = self._first_values.setdefault(pos, key[pos])
            if key[pos] == first or pos in self._announced or pos not in self._shape_nodes:
                continue
            self._announced.add(pos)
            warnings.warn(
                f"input {variable_name(self.inputs[pos])!r} decides a shape in node {self._shape_nodes[pos]} and "
                f"took a new value ({key[pos]!r} after {first!r}); aejax compiles one JAX program per distinct value "
                "of it",
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
