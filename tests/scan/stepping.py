"""Scan steps run both as fixed loops and as ``until`` loops whose condition never holds."""

from collections.abc import Callable
from typing import Any

import aesara
import aesara.tensor as at
import pytest
from aesara.scan.utils import until

LOOPS = [pytest.param(False, id="fixed loop"), pytest.param(True, id="until loop")]
"""The ``stops`` values of `stepping`, with test ids."""


def stepping(step: Callable[..., Any], stops: bool) -> Callable[..., Any]:
    """``step``, also returning an ``until`` condition that never holds when ``stops``."""
    if not stops:
        return step

    def with_until(*args: Any) -> Any:
        result = step(*args)
        outputs = list(result.values()) if isinstance(result, dict) else result
        first = outputs[0] if isinstance(outputs, (list, tuple)) else outputs
        return result, until(at.sum(first) > 1e300)

    return with_until


def scanning(stops: bool) -> Callable[..., Any]:
    """``aesara.scan`` returning only its outputs, its step made by `stepping`."""

    def scan(step: Callable[..., Any], **kwargs: Any) -> Any:
        outputs, _ = aesara.scan(stepping(step, stops), **kwargs)
        return outputs

    return scan
