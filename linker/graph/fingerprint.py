"""A digest of what a graph computes, equal in every process that builds the same graph.

`graph_fingerprint` walks a graph's nodes in topological order and hashes,
for each, its Op and where its inputs come from (a graph input by position,
a constant by type and value, an earlier node's output by place), then the
graph's outputs. Names, ``auto_name`` counters and object identities never
enter it, so two processes that build the same graph get the same digest.

An Op (or another of Aesara's objects with ``__props__``) is hashed by its
class and its ``__props__`` (Aesara's own rule for when two are the same); a `Scan` by its info, options, mode and inner
graph; any other Op by all its attributes. Values are hashed only when their
meaning is plain data (numbers, strings, arrays, dtypes, classes by name,
Types, Ops, dataclasses and containers of those), and module-level functions
of Aesara and aejax by name: anything else (a lambda, another package's
function, an arbitrary object) raises `NotFingerprintable`, and the graph has
no fingerprint. A digest is sound only for what it covers: the code of those
packages and the code that lowers the Ops are the caller's to vouch for.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from types import FunctionType
from typing import Any

import numpy as np
from aesara.graph.basic import Constant, Variable, io_toposort
from aesara.graph.fg import FunctionGraph
from aesara.graph.op import Op
from aesara.graph.rewriting.db import RewriteDatabaseQuery
from aesara.graph.type import Type
from aesara.scan.op import Scan
from aesara.tensor.type import TensorType


class NotFingerprintable(Exception):
    """The graph holds a value whose meaning a digest cannot capture."""


_PLAIN_KINDS = (type(None), bool, int, float, complex, str, bytes)
_PLAIN = frozenset(_PLAIN_KINDS)
VERSIONED_PACKAGES = ("aesara.", "aejax.")
"""Packages whose functions a fingerprint names instead of hashing: a digest holds only with their code unchanged."""


def graph_fingerprint(inputs: Sequence[Variable], outputs: Sequence[Variable]) -> str:
    """The hex digest of the graph from ``inputs`` to ``outputs``; raises `NotFingerprintable`."""
    return hashlib.sha256(repr(_Fingerprinter().graph(inputs, outputs)).encode()).hexdigest()


class _Fingerprinter:
    """Turns a graph into plain data whose ``repr`` is the same in every process; each Op is worked out once."""

    def __init__(self) -> None:
        self._ops: dict[int, Any] = {}

    def graph(self, inputs: Sequence[Variable], outputs: Sequence[Variable]) -> tuple[Any, ...]:
        places: dict[Variable, Any] = {var: ("input", n) for n, var in enumerate(inputs)}
        nodes = []
        for n, node in enumerate(io_toposort(list(inputs), list(outputs))):
            sources = [self.source(var, places) for var in node.inputs]
            nodes.append((self.op(node.op), sources, [self.value(out.type) for out in node.outputs]))
            places.update({out: ("node", n, k) for k, out in enumerate(node.outputs)})
        return ([self.value(var.type) for var in inputs], nodes, [self.source(var, places) for var in outputs])

    def source(self, var: Variable, places: dict[Variable, Any]) -> Any:
        if var in places:
            return places[var]
        if isinstance(var, Constant):
            return ("constant", self.value(var.type), self.value(var.data))
        raise NotFingerprintable(f"variable {var} is neither an input, a constant nor computed in the graph")

    def op(self, op: Op) -> Any:
        known = self._ops.get(id(op))
        if known is None:
            known = self._ops[id(op)] = self._op(op)
        return known

    def _op(self, op: Op) -> tuple[Any, ...]:
        cls = _class_name(type(op))
        if isinstance(op, Scan):
            options = (op.info, op.profile, op.truncate_gradient, op.name, op.allow_gc)
            return (cls, self.value(options), _mode(op.mode), self.graph(op.inner_inputs, op.inner_outputs))
        props = getattr(op, "__props__", None)
        if props is not None:
            return (cls, [(name, self.value(getattr(op, name))) for name in props])
        return (cls, self.value(vars(op)))

    def value(self, value: Any) -> Any:
        """``value`` as plain data; the common kinds first, found by their exact class."""
        kind = type(value)
        if kind in _PLAIN:
            return (kind.__name__, value)
        if kind is tuple or kind is list:
            return (kind.__name__, [self.value(v) for v in value])
        if kind is TensorType:
            return ("tensor", value.dtype, value.shape)
        return self._other_value(value)

    def _other_value(self, value: Any) -> Any:
        if isinstance(value, _PLAIN_KINDS):
            return (type(value).__name__, value)
        if isinstance(value, (tuple, list)):
            return (type(value).__name__, [self.value(v) for v in value])
        if isinstance(value, (np.ndarray, np.generic)):
            return _array(np.asarray(value))
        if isinstance(value, np.dtype):
            return ("dtype", value.str)
        if isinstance(value, slice):
            return ("slice", self.value(value.start), self.value(value.stop), self.value(value.step))
        if value is Ellipsis:
            return ("Ellipsis",)
        if isinstance(value, type):
            return ("class", _class_name(value))
        if isinstance(value, FunctionType):
            return ("function", _function_name(value))
        if isinstance(value, Op):
            return ("op", self.op(value))
        if getattr(type(value), "__props__", None) is not None:  # Aesara's objects compared by their props
            return ("props", _class_name(type(value)), [(p, self.value(getattr(value, p))) for p in value.__props__])
        if isinstance(value, Type):
            return ("type", _class_name(type(value)), self.value(vars(value)))
        if isinstance(value, FunctionGraph):
            return ("graph", self.graph(value.inputs, value.outputs))
        if isinstance(value, AbstractSet):
            return ("set", sorted(repr(self.value(v)) for v in value))
        if isinstance(value, Mapping):
            return ("mapping", sorted((repr(self.value(k)), self.value(v)) for k, v in value.items()))
        if dataclasses.is_dataclass(value):
            fields = [(f.name, self.value(getattr(value, f.name))) for f in dataclasses.fields(value)]
            return ("dataclass", _class_name(type(value)), fields)
        raise NotFingerprintable(f"a value of type {type(value).__qualname__}: {value!r:.80}")


def _mode(mode: Any) -> Any:
    """A Scan's mode: its name, or its linker's class and the rewrites its query asks for."""
    if isinstance(mode, str):
        return ("mode", mode)
    query = mode.provided_optimizer
    if not isinstance(query, RewriteDatabaseQuery) or query.extra_rewrites:
        raise NotFingerprintable(f"the mode {mode}")
    asked = (query.include, query.exclude, query.require, query.subquery, query.position_cutoff)
    return ("mode", _class_name(type(mode)), _class_name(type(mode.linker)), _Fingerprinter().value(asked))


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _function_name(function: FunctionType) -> str:
    """A module-level function of Aesara's or aejax's, by name: their versions are the caller's to key on."""
    module, name = function.__module__ or "", function.__qualname__
    if "<" in name or not module.startswith(VERSIONED_PACKAGES):
        raise NotFingerprintable(f"the function {module}.{name}")
    return f"{module}.{name}"


def _array(array: np.ndarray) -> tuple[Any, ...]:
    if array.dtype.hasobject:
        raise NotFingerprintable("an array of Python objects")
    data = np.ascontiguousarray(array).tobytes()
    return ("array", array.dtype.str, array.shape, hashlib.sha256(data).hexdigest())
