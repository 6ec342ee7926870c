"""The one place where every Aesara function compiles: ``orig_function``, redirected to AEJAX.

`install` replaces ``aesara.compile.function.types.orig_function`` (and the
names other Aesara modules imported it under) by `redirected_orig_function`,
which compiles the graph with the AEJAX mode whatever mode was asked for;
`uninstall` puts Aesara's function back. Only the plugin calls them, inside
its pytest session: importing aejax changes nothing.

With ``compare=True`` each function is compiled a second time with the mode
the test asked for (the reference), on its own copy of the graph, of its
inner-graph Ops and of the shared variables (`clone_specs`, `Reference`),
and every call runs both: the test gets AEJAX's outputs, and any difference
in outputs or updates is recorded as a ``wrong value`` and fails the test
(`WrongValue`). How two values are compared is `conformance.compare`.

What happened during the current test is an `Incident` in `current()`'s
`Record`; the plugin opens one per test.

Compilations nested in another (a Scan's inner function, constant folding)
and those made while a compiled function runs keep their own mode: the
redirect is for the functions a test compiles.
"""

from __future__ import annotations

import copy
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import aejax.adapters  # noqa: F401  # isort: skip  (first: under numpy 2 it makes Aesara 2.9.4 work)
import aesara
import aesara.compile.function.types as function_types
import jax
import numpy as np
from aesara.compile.function.types import convert_function_input
from aesara.compile.io import In
from aesara.compile.mode import Mode, get_mode
from aesara.graph.basic import Variable, ancestors, clone_get_equiv
from aesara.graph.op import HasInnerGraph
from aesara.graph.rewriting.db import RewriteDatabaseQuery
from aesara.link.basic import Container
from aesara.scalar import ScalarType
from aesara.tensor.basic import AllocEmpty
from aesara.tensor.random.type import RandomType
from aesara.tensor.sort import TopKOp
from aesara.tensor.type import TensorType

import aejax.linker
from aejax.linker import AejaxFunction, JAXCodecLinker, LoweringError, NodeTypeError, NodeValueError
from conformance.compare import difference

FAILING_KINDS = ("wrong value", "lowering error", "AEJAX raised")
"""Incident kinds that fail a test; ``reference raised`` is only reported."""


@dataclass
class Incident:
    """Something the conformance run saw during a test."""

    kind: str
    message: str

    def as_dict(self) -> dict[str, str]:
        """The incident as the plugin's report writes it."""
        return {"kind": self.kind, "message": self.message}


@dataclass
class Record:
    """What happened during one test: incidents and how many functions compiled and calls compared."""

    incidents: list[Incident] = field(default_factory=list)
    compiled: int = 0
    compared_calls: int = 0

    def add(self, kind: str, message: str) -> Incident:
        """Record an incident (the same one once)."""
        incident = Incident(kind, message)
        if incident not in self.incidents:
            self.incidents.append(incident)
        return incident

    def failing(self) -> list[Incident]:
        """The incidents that fail the test."""
        return [incident for incident in self.incidents if incident.kind in FAILING_KINDS]


class WrongValue(AssertionError):
    """An AEJAX function returned (or stored) a value other than its reference's."""


_ORIGINAL: Callable[..., Any] = function_types.orig_function
_settings = {"installed": False, "compare": False}
_local = threading.local()
_record = Record()


def current() -> Record:
    """The record of the test that runs now."""
    return _record


def begin_record() -> Record:
    """Start a new record (the plugin calls it as each test starts)."""
    global _record
    _record = Record()
    return _record


def _depth() -> int:
    return getattr(_local, "depth", 0)


@contextmanager
def nested() -> Iterator[None]:
    """Compilations inside this block keep the mode they ask for."""
    _local.depth = _depth() + 1
    try:
        yield
    finally:
        _local.depth -= 1


def install(compare: bool = False) -> None:
    """Make every Aesara function compile on AEJAX (and, with ``compare``, check it against its reference)."""
    jax.config.update("jax_enable_x64", True)  # as Aesara's JAX backend does for floatX=float64
    _settings["compare"] = compare
    if _settings["installed"]:
        return
    for module in _modules_holding(_ORIGINAL):
        module.orig_function = redirected_orig_function
    _settings["installed"] = True


def uninstall() -> None:
    """Give Aesara its own ``orig_function`` back."""
    for module in _modules_holding(redirected_orig_function):
        module.orig_function = _ORIGINAL
    _settings["installed"] = False


def installed() -> bool:
    """Whether the redirect is in place."""
    return _settings["installed"]


def _modules_holding(function: Callable[..., Any]) -> list[Any]:
    return [
        module
        for name, module in list(sys.modules.items())
        if name.startswith("aesara") and getattr(module, "orig_function", None) is function
    ]


def is_aejax(mode: Mode) -> bool:
    """Whether ``mode`` already compiles with aejax's linker."""
    return isinstance(getattr(mode, "linker", None), JAXCodecLinker)


def aejax_mode_for(asked: Mode) -> Mode:
    """The AEJAX mode, less the rewrites that the asked mode excludes."""
    query = getattr(asked, "_optimizer", None)
    excluded = tuple(getattr(query, "exclude", ())) if isinstance(query, RewriteDatabaseQuery) else ()
    return aejax.linker.mode.excluding(*excluded) if excluded else aejax.linker.mode


def describe_mode(mode: Mode) -> str:
    """A short name of a mode for messages."""
    return f"{type(mode).__name__}(linker={type(mode.linker).__name__})"


def redirected_orig_function(
    inputs: Any,
    outputs: Any,
    mode: Any = None,
    accept_inplace: bool = False,
    name: str | None = None,
    profile: Any = None,
    on_unused_input: str | None = None,
    output_keys: list[str] | None = None,
    fgraph: Any = None,
) -> Any:
    """Aesara's ``orig_function`` with the AEJAX mode in place of the asked one (see the module docstring)."""
    kwargs = dict(
        accept_inplace=accept_inplace,
        name=name,
        profile=profile,
        on_unused_input=on_unused_input,
        output_keys=output_keys,
        fgraph=fgraph,
    )
    asked = get_mode(mode)
    if _depth() > 0 or not _settings["installed"] or is_aejax(asked):
        return _ORIGINAL(inputs, outputs, mode=asked, **kwargs)
    inputs = [convert_function_input(i) for i in inputs]
    twin = None
    if _settings["compare"] and fgraph is None:
        # orig_function rewrites the graph it is given in place (it clones only graphs whose
        # inputs have owners), so the reference gets its own copy before AEJAX rewrites this one
        twin = clone_specs(inputs, outputs)
    variables = output_variables(twin[1] if twin else outputs)
    random = [is_random(variable) or is_unspecified(variable) for variable in variables]
    unordered = [unordered_axis(variable) for variable in variables]
    try:
        with nested():
            function = _ORIGINAL(inputs, outputs, mode=aejax_mode_for(asked), **kwargs)
    except LoweringError as error:
        _lowering_failed(error, twin, asked, kwargs)
        raise
    _record.compiled += 1
    if not isinstance(function, AejaxFunction):
        return function
    reference = Reference.compile(*twin, asked, kwargs) if twin else None
    if reference is not None:
        reference.bind_defaults(inputs, function)
    function.__class__ = ConformanceFunction
    function._conformance = Watch(reference, variables, random, asked, unordered)
    return function


def clone_specs(inputs: list[In], outputs: Any) -> tuple[list[In], Any]:
    """Copies of ``orig_function``'s inputs and outputs on a copy of the graph between them.

    The input variables stay (the reference reads the same arguments and
    shared variables); the nodes, the outputs and the update expressions are new.
    """
    updates = [item.update for item in inputs if item.update is not None]
    variables = [v for v in output_variables(outputs) if v is not None]
    equiv = clone_get_equiv(
        [item.variable for item in inputs], variables + updates, copy_inputs=False, copy_orphans=False
    )
    _own_inner_graphs(equiv.values())
    new_inputs = []
    for item in inputs:
        if item.update is not None:
            item = copy.copy(item)
            item.update = equiv[item.update]
        new_inputs.append(item)
    return new_inputs, _clone_outputs(outputs, equiv)


def _own_inner_graphs(variables: Any) -> None:
    """Give the cloned nodes of Ops with an inner graph (Scan, OpFromGraph) their own copy of the Op.

    Compiling a Scan's inner function rewrites the Op's own inner graph in
    place, so a reference sharing the Op with AEJAX would change the graph
    that AEJAX lowers.
    """
    seen: set[int] = set()
    for variable in variables:
        node = getattr(variable, "owner", None)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node.op, HasInnerGraph) and hasattr(node.op, "clone"):
            node.op = node.op.clone()
            _own_inner_graphs(v for inner in node.op.fgraph.apply_nodes for v in inner.outputs)


def _clone_outputs(outputs: Any, equiv: dict) -> Any:
    if outputs is None:
        return None
    if isinstance(outputs, (list, tuple)):
        return [_clone_outputs(item, equiv) for item in outputs]
    if isinstance(outputs, Variable):
        return equiv.get(outputs, outputs)
    twin = copy.copy(outputs)
    twin.variable = equiv.get(outputs.variable, outputs.variable)
    return twin


def _lowering_failed(error: LoweringError, twin: tuple[list[In], Any] | None, asked: Mode, kwargs: dict) -> None:
    """Record a graph AEJAX cannot compile, unless the reference cannot either."""
    if twin is not None:
        try:
            with nested():
                _ORIGINAL(*twin, mode=asked, **kwargs)
        except Exception:
            return  # the asked mode fails as well: the test may expect it
    _record.add("lowering error", f"{type(error).__name__}: {_first_line(error)}")


def output_variables(outputs: Any) -> list[Variable | None]:
    """The graph variables of ``orig_function``'s ``outputs`` argument, in the order of the returned values."""
    if outputs is None:
        return []
    items = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    return [
        getattr(item, "variable", item) if isinstance(getattr(item, "variable", item), Variable) else None
        for item in items
    ]


def is_unspecified(variable: Variable | None) -> bool:
    """Whether a variable's values are unspecified (``empty``'s uninitialized memory)."""
    return variable is not None and variable.owner is not None and isinstance(variable.owner.op, AllocEmpty)


def unordered_axis(variable: Variable | None) -> int | None:
    """The axis along which an output's order is unspecified (``topk``/``argtopk`` with ``sorted=False``)."""
    node = getattr(variable, "owner", None)
    if node is not None and isinstance(node.op, TopKOp) and not node.op.sorted:
        return node.op.axis
    return None


def is_random(variable: Variable | None) -> bool:
    """Whether a variable depends on a random state (its value cannot match across generators)."""
    if variable is None:
        return False
    return any(isinstance(v.type, RandomType) for v in ancestors([variable]))


def describe_variable(variable: Variable | None, limit: int = 160) -> str:
    """A variable as a message names it: its name or its pretty-printed graph."""
    if variable is None:
        return "?"
    if variable.name:
        return variable.name
    try:
        text = aesara.pprint(variable)
    except Exception:
        text = str(variable)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class SharedPair:
    """A shared variable's (or a default's) container, and the reference's own copy of it."""

    variable: Variable
    real: Container
    private: Container
    update: Variable | None

    def sync(self) -> None:
        """Give the reference the shared variable's current value."""
        self.private.storage[0] = copy.deepcopy(self.real.storage[0])


@dataclass
class Reference:
    """The function compiled with the asked mode, on private copies of the shared variables."""

    function: Any
    shared: list[SharedPair]

    @classmethod
    def compile(cls, inputs: list[In], outputs: Any, asked: Mode, kwargs: dict) -> Reference | None:
        """Compile the reference; ``None`` (recorded) when the asked mode cannot compile the graph."""
        private_inputs, shared = [], []
        for item in inputs:
            if isinstance(getattr(item, "value", None), Container):  # a shared variable's, or another function's
                item, pair = _private_copy(item)
                shared.append(pair)
            private_inputs.append(item)
        try:
            with nested():
                function = _ORIGINAL(private_inputs, outputs, mode=asked, **kwargs)
        except Exception as error:
            _record.add(
                "reference raised",
                f"the asked mode {describe_mode(asked)} cannot compile the graph "
                f"({type(error).__name__}: {_first_line(error)}); AEJAX's values are not compared",
            )
            return None
        return cls(function, shared)

    def bind_defaults(self, inputs: list[In], function: Any) -> None:
        """Pair the containers of inputs with a default value (``In(x, value=..., update=...)``).

        Each function keeps its own container of these (unless it was given
        one: ``In(s, value=f.container[s])`` shares ``f``'s, which `compile`
        copied, as a shared variable's); the test may set them
        (``f["x"] = None``) and updates change them, so each call starts the
        reference from AEJAX's values and their updates are compared too.
        """
        for item, real, private in zip(inputs, function.input_storage, self.function.input_storage):
            if not isinstance(item.value, Container) and item.value is not None:
                self.shared.append(SharedPair(item.variable, real, private, item.update))

    def sync(self) -> None:
        """Give the reference the current values of the shared variables and of the inputs' defaults."""
        for pair in self.shared:
            pair.sync()


def _private_copy(item: In) -> tuple[In, SharedPair]:
    real = item.value
    private = Container(
        real.type,
        [copy.deepcopy(real.storage[0])],
        readonly=real.readonly,
        strict=real.strict,
        allow_downcast=real.allow_downcast,
        name=real.name,
    )
    twin = copy.copy(item)
    twin.value = private
    return twin, SharedPair(item.variable, real, private, item.update)


class Watch:
    """What a `ConformanceFunction` checks at each call."""

    def __init__(
        self,
        reference: Reference | None,
        outputs: list[Variable | None],
        random: list[bool],
        asked: Mode,
        unordered: list[int | None] | None = None,
    ) -> None:
        self.reference = reference
        self.outputs = outputs
        self.random = random
        self.asked = asked
        self.unordered = unordered or [None] * len(outputs)

    def call(self, run_aejax: Callable[[], Any], args: tuple, kwargs: dict) -> Any:
        """Run the reference (when there is one) and AEJAX; return AEJAX's outputs."""
        expected, reference_error = self._run_reference(args, kwargs)
        try:
            with nested():
                got = run_aejax()
        except Exception as error:
            self._aejax_failed(error, reference_error)
            raise
        if self.reference is None:
            return got
        _record.compared_calls += 1
        if reference_error is not None:
            _record.add(
                "reference raised",
                f"{describe_mode(self.asked)} raised {type(reference_error).__name__}: "
                f"{_first_line(reference_error)}; AEJAX returned values",
            )
            return got
        mismatches = self._output_mismatches(expected, got, kwargs.get("output_subset"))
        mismatches += self._update_mismatches()
        if mismatches:
            message = "\n  ".join(mismatches)
            _record.add("wrong value", message)
            raise WrongValue(f"AEJAX differs from {describe_mode(self.asked)}: {message}")
        return got

    def _run_reference(self, args: tuple, kwargs: dict) -> tuple[Any, Exception | None]:
        if self.reference is None:
            return None, None
        self.reference.sync()
        try:
            ref_args, ref_kwargs = faithful_copy(args), faithful_copy(kwargs)
            with nested():
                return self.reference.function(*ref_args, **ref_kwargs), None
        except Exception as error:
            return None, error

    def _aejax_failed(self, error: Exception, reference_error: Exception | None) -> None:
        if isinstance(error, LoweringError) and not isinstance(error, (NodeValueError, NodeTypeError)):
            if reference_error is None:
                _record.add("lowering error", f"{type(error).__name__}: {_first_line(error)}")
        elif self.reference is not None and reference_error is None:
            _record.add(
                "AEJAX raised",
                f"AEJAX raised {type(error).__name__}: {_first_line(error)}; "
                f"{describe_mode(self.asked)} returned values",
            )

    def _output_mismatches(self, expected: Any, got: Any, subset: list[int] | None) -> list[str]:
        indices = list(subset) if subset is not None else list(range(len(self.outputs)))
        expected_values, got_values = _as_list(expected), _as_list(got)
        if len(expected_values) != len(got_values):
            return [f"{len(got_values)} outputs where the reference returns {len(expected_values)}"]
        mismatches = []
        for position, (e, g) in enumerate(zip(expected_values, got_values)):
            index = indices[position] if position < len(indices) else position
            variable = self.outputs[index] if index < len(self.outputs) else None
            random = self.random[index] if index < len(self.random) else False
            kind = getattr(variable, "type", None)
            axis = self.unordered[index] if index < len(self.unordered) else None
            if axis is not None and isinstance(e, np.ndarray) and isinstance(g, np.ndarray) and e.shape == g.shape:
                e, g = np.sort(e, axis=axis), np.sort(g, axis=axis)  # the same elements, in any order
            found = difference(
                e, g, random, getattr(kind, "dtype", None), getattr(kind, "ndim", None), kind_of_type(kind)
            )
            if found is not None:
                mismatches.append(f"output {index} `{describe_variable(variable)}`: {found}")
        return mismatches

    def _update_mismatches(self) -> list[str]:
        mismatches = []
        for pair in self.reference.shared:
            if pair.update is None or isinstance(pair.variable.type, RandomType):
                continue
            found = difference(pair.private.storage[0], pair.real.storage[0], random=is_random(pair.update))
            if found is not None:
                mismatches.append(f"update of shared variable `{describe_variable(pair.variable)}`: {found}")
        return mismatches


def kind_of_type(type: Any) -> str | None:
    """The kind of value (`conformance.compare.kind_of`) an output of Aesara ``type`` holds, where one is known."""
    if isinstance(type, TensorType):
        return "array"
    return "NumPy scalar" if isinstance(type, ScalarType) else None


def faithful_copy(values: Any) -> Any:
    """A deep copy of a call's arguments whose arrays keep the flags Aesara's input checks read.

    ``copy.deepcopy`` gives an aligned, writeable array whatever the original
    was; Aesara's tensor types reject unaligned arrays (``test_unalign``), so
    the reference would accept what AEJAX rightly rejects.
    """
    memo: dict[int, Any] = {id(array): _array_copy(array) for array in _arrays_in(values)}
    return copy.deepcopy(values, memo)


def _arrays_in(values: Any) -> Iterator[np.ndarray]:
    if type(values) is np.ndarray:
        yield values
    elif isinstance(values, (list, tuple)):
        for value in values:
            yield from _arrays_in(value)
    elif isinstance(values, dict):
        for value in values.values():
            yield from _arrays_in(value)


def _array_copy(array: np.ndarray) -> np.ndarray:
    """A copy of ``array`` as aligned and as writeable as it is."""
    if array.flags.aligned:
        copied = array.copy(order="K")
    else:
        copied = np.empty(array.nbytes + 1, np.uint8)[1:].view(array.dtype).reshape(array.shape)
        copied[...] = array
    copied.flags.writeable = array.flags.writeable
    return copied


def _as_list(values: Any) -> list[Any]:
    if isinstance(values, dict):
        return [values[key] for key in sorted(values)]
    if isinstance(values, (list, tuple)):
        return list(values)
    return [values]


class ConformanceFunction(AejaxFunction):
    """An AEJAX function whose calls the conformance run watches (and compares, with a reference)."""

    _conformance: Watch | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        watch = self._conformance
        if watch is None or _depth() > 0:
            return super().__call__(*args, **kwargs)
        return watch.call(lambda: AejaxFunction.__call__(self, *args, **kwargs), args, kwargs)


def _first_line(error: BaseException, limit: int = 300) -> str:
    text = str(error).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."
