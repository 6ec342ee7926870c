"""Exceptions raised on the host inside a jit program, handed back to its caller as they were.

An Op run on the host through `jax.pure_callback` may raise (aemcmc's
Polya-gamma sampler rejects ``h <= 0`` with a `ValueError`). JAX reports any
such failure as a `jax.errors.JaxRuntimeError` whose message holds the
traceback text. The callback records the exception under a number written
into that text (`recorded`), and the caller raises the recorded exception
instead of JAX's (`raised_on_host`), so ``pytest.raises(ValueError)`` and
``except ValueError`` see what the reference backend raises.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict

_KEPT = 64
"""How many recorded exceptions are kept: a failure whose program error is never
read (a call retried by another path) is dropped once this many came after it."""

_MARKER = "aejax host failure #{}"
_MARKED = re.compile(r"aejax host failure #(\d+)")

_numbers = itertools.count()
_recorded: OrderedDict[int, BaseException] = OrderedDict()
_lock = threading.Lock()


class HostFailure(RuntimeError):
    """What a host callback raises in place of an exception it recorded; its message names the record."""


def recorded(error: BaseException) -> HostFailure:
    """Record ``error``, raised on the host inside a callback, and return the exception to raise there instead."""
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
