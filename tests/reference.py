"""Compare aejax's JAX mode with Aesara's reference backend on the same graph."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aesara
import numpy as np
import pytest
from aesara.compile.mode import Mode
from aesara.graph.rewriting.db import RewriteDatabaseQuery
from aesara.link.vm import VMLinker

import aejax.linker

REFERENCE = "FAST_COMPILE"

FAST_RUN_IN_PYTHON = Mode(
    VMLinker(use_cloop=False, c_thunks=False),
    RewriteDatabaseQuery(include=["fast_run"], exclude=["cxx_only", "fusion"]),
)
"""FAST_RUN's rewrites run by Aesara's Python implementations, as ``get_mode("FAST_RUN")`` is without a C compiler.

Its stabilizing rewrites are the reference for numerically delicate
expressions. Without fusion, which changes no value: whether its Python
`Composite` is kept under NumPy's 32 operands is decided when Aesara is
imported, by whether a C compiler is configured.
"""


def compile_both(
    inputs: Sequence[Any], outputs: Any, reference_mode: Any = REFERENCE, **kwargs: Any
) -> tuple[Any, Any]:
    """The same graph compiled with the reference backend (``reference_mode``) and with aejax."""
    reference = aesara.function(inputs, outputs, mode=reference_mode, **kwargs)
    ours = aesara.function(inputs, outputs, mode=aejax.linker.mode, **kwargs)
    return reference, ours


def assert_matches_reference(inputs: Sequence[Any], outputs: Any, *args: Any, rtol: float = 1e-7, **kwargs: Any) -> Any:
    """Run both backends on ``args`` and check outputs agree in value, dtype and shape."""
    reference, ours = compile_both(inputs, outputs, **kwargs)
    expected, got = reference(*args), ours(*args)
    if not isinstance(expected, list):
        expected, got = [expected], [got]
    for e, g in zip(expected, got):
        g = np.asarray(g)
        e = np.asarray(e)
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        assert g.shape == e.shape, (g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=1e-12)
    return got


def assert_raises_like_reference(
    inputs: Sequence[Any], outputs: Any, args: Sequence[Any], error: type[BaseException], match: str, **kwargs: Any
) -> None:
    """The reference backend raises ``error`` for ``args``, and aejax raises it with a message matching ``match``."""
    reference, ours = compile_both(inputs, outputs, **kwargs)
    with pytest.raises(error):
        reference(*args)
    with pytest.raises(error, match=match):
        ours(*args)
