"""What runs on the host around and inside jit programs: its exceptions, its values, its unknown shapes.

Exceptions raised on the host inside a jit program are handed back to its
caller as they were. An Op run on the host through `jax.pure_callback` may
raise (aemcmc's Polya-gamma sampler rejects ``h <= 0`` with a `ValueError`).
JAX reports any such failure as a `jax.errors.JaxRuntimeError` whose message
holds the traceback text. The callback records the exception under a number written
into that text (`recorded`), and the caller raises the recorded exception
instead of JAX's (`raised_on_host`), so ``pytest.raises(ValueError)`` and
``except ValueError`` see what the reference backend raises. An exception
raised by a node's ``perform``, in a callback or between two programs,
carries that node and its input values (`aejax.linker.errors.raised_by`), so
that the call's error names the node as Aesara's does, not the program's.

Values that stay on the host (a `Generic` Python object, whose codec says
so: `aejax.adapters.stays_on_host`) never enter a program: `host_objects`
names them among a node's inputs and outputs, and `HostObjectError` is the
error of a lowering that would take one. A node run on the host through a
callback needs its output shapes while tracing; `UnknownShapesError` says
they are unknown, so that the node runs on the host between two programs
instead, where its ``perform`` computes them.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from collections import OrderedDict

from aesara.graph.basic import Apply, Constant, Variable

from aejax.adapters.generic import built_while_tracing, stays_on_host
from aejax.linker.errors import LoweringError, variable_name

_KEPT = 64
"""How many recorded exceptions are kept: a failure whose program error is never
read (a call retried by another path) is dropped once this many came after it."""

JAX_CALLBACK_LOGGER = "jax._src.callback"
"""The logger JAX reports a failed callback to."""

_MARKER = "aejax host failure #{}"
_MARKED = re.compile(r"aejax host failure #(\d+)")

_numbers = itertools.count()
_recorded: OrderedDict[int, BaseException] = OrderedDict()
_lock = threading.Lock()


class HostFailure(RuntimeError):
    """What a host callback raises in place of an exception it recorded; its message names the record."""


class _UnloggedHostFailures(logging.Filter):
    """Drops JAX's log record of a callback that failed with a `HostFailure`: the caller gets the error itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], HostFailure))


_UNLOGGED = _UnloggedHostFailures()


def recorded(error: BaseException) -> HostFailure:
    """Record ``error``, raised on the host inside a callback, and return the exception to raise there instead.

    JAX logs a failed callback's exception as an error with its traceback
    (its logger ``jax._src.callback``), on every failing call: the record
    of a `HostFailure` is dropped from that logger (`_UnloggedHostFailures`,
    added at the first failure), since the caller is handed the error as
    the reference backend raises it.
    """
    logger = logging.getLogger(JAX_CALLBACK_LOGGER)
    if _UNLOGGED not in logger.filters:
        logger.addFilter(_UNLOGGED)
    number = next(_numbers)
    with _lock:
        _recorded[number] = error
        while len(_recorded) > _KEPT:
            _recorded.popitem(last=False)
    return HostFailure(f"{_MARKER.format(number)}: {type(error).__name__}: {error}")


def raised_on_host(error: Exception) -> BaseException | None:
    """The exception recorded on the host that made a jit program fail with ``error``, if one did."""
    found = _MARKED.search(str(error))
    if found is None:
        return None
    with _lock:
        return _recorded.pop(int(found.group(1)), None)


class UnknownShapesError(LoweringError):
    """The output shapes of a node that would run in a host callback are unknown while tracing.

    Neither its output types nor an ``infer_shape`` tell them; running the
    node on the host between two programs does (`aejax.linker.program.host_node`).
    """


class HostObjectError(LoweringError):
    """A value that stays on the host (a `Generic` Python object) would have to enter a JAX lowering."""


def host_objects(node: Apply) -> list[Variable]:
    """The inputs and outputs of ``node`` whose values stay on the host; constants are part of the lowering."""
    variables = dict.fromkeys([*node.inputs, *node.outputs])
    return [var for var in variables if _is_host_object(var)]


def _is_host_object(var: Variable) -> bool:
    if isinstance(var, Constant) or not stays_on_host(var.type):
        return False
    return var.owner is None or not built_while_tracing(var.type)  # a slice a node builds stays in the program


def host_object_error(node: Apply, var: Variable, why: str, remedy: str | None = None) -> HostObjectError:
    """The error for ``node``, whose variable ``var`` stays on the host, when it cannot run there: ``why``.

    ``remedy`` tells the user what to do; by default, to compute the value with Ops aejax can run on the host.
    """
    role = "output" if var.owner is node else "input"
    remedy = remedy or (
        "Compute it with Ops that have a Python perform, which aejax runs on the host between its JAX "
        "programs, or compile the graph with another mode."
    )
    return HostObjectError(
        f"{role} {variable_name(var)!r} of node {node} is of type {var.type}, a Python object that stays on "
        f"the host and cannot enter a JAX program, and {why}. {remedy}",
        node=node,
    )
