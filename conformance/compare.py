"""Compare one output of a reference function with the same output of its AEJAX twin.

`difference` returns ``None`` when the two agree and otherwise a sentence
saying how they differ: kind of value (array, NumPy scalar, sparse matrix,
list, ...), dtype, shape, then values (floats and complex numbers within a
tolerance of their dtype, everything else exactly; NaNs equal in the same
places).
"""

from __future__ import annotations

from typing import Any

import numpy as np

TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3),
    "float32": (1e-4, 1e-5),
    "float64": (1e-6, 1e-9),
    "longdouble": (1e-6, 1e-9),
}
"""(rtol, atol) per real dtype; complex dtypes use their components' dtype."""

MAX_SHOWN = 6
"""How many differing elements a message shows."""


def tolerance(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for values of ``dtype`` (a complex dtype counts as its components' dtype)."""
    if dtype.kind == "c":
        dtype = np.empty((), dtype).real.dtype
    return TOLERANCES.get(dtype.name, TOLERANCES["float64"])


def kind_of(value: Any) -> str:
    """The kind of an output value, as two functions of one graph must return alike."""
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return "array"
    if isinstance(value, np.generic):
        return "NumPy scalar"
    if isinstance(value, (bool, int, float, complex)):
        return "Python scalar"
    if _is_sparse(value):
        return "sparse matrix"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, (np.random.Generator, np.random.RandomState)):
        return "random state"
    if hasattr(value, "__array__") and hasattr(value, "dtype") and hasattr(value, "shape"):
        return "array"  # a JAX array (Aesara's own JAX backend returns them) counts as an array
    return type(value).__name__


def _is_sparse(value: Any) -> bool:
    try:
        import scipy.sparse
    except ImportError:  # pragma: no cover - scipy comes with Aesara
        return False
    return scipy.sparse.issparse(value)


STRAYS = ("array", "NumPy scalar", "Python scalar", "list")
"""The kinds a reference may return in place of the kind its output's type gives (see `difference`)."""


def difference(
    expected: Any,
    got: Any,
    random: bool = False,
    declared: str | None = None,
    ndim: int | None = None,
    kind: str | None = None,
) -> str | None:
    """How ``got`` (AEJAX) differs from ``expected`` (the reference), or ``None``.

    ``declared`` is the dtype of the output's Aesara type: when the reference
    returns another dtype and AEJAX the declared one, the reference is at
    fault (Aesara's JAX backend returns complex eigenvalues of a real ``Eig``),
    and the values are compared across the two dtypes.

    ``kind`` is the kind of value the output's Aesara type gives (``"array"``
    for a tensor, ``"NumPy scalar"`` for a scalar): when the reference returns
    another (a NumPy scalar for a 0-d tensor from Aesara's Python
    implementations; a 0-d JAX array for a scalar, or a tuple of JAX arrays for
    a ``Shape``, from Aesara's JAX backend) and AEJAX this one, the reference
    is at fault, and the values are compared.

    With ``random`` only the kind, dtype and number of dimensions (``ndim``,
    the output type's, when given; else the reference's) are compared: random draws cannot match across random number generators, nor
    can the shapes they decide (the steps of a loop until a draw passes a bound).
    """
    expected_kind, got_kind = kind_of(expected), kind_of(got)
    if got_kind == kind and expected_kind != kind and expected_kind in STRAYS:
        expected, expected_kind = np.asarray(expected), got_kind  # the reference strays from its type, AEJAX not
    if expected_kind != got_kind:
        return f"a {got_kind} ({_short(got)}) where the reference returns a {expected_kind} ({_short(expected)})"
    if expected_kind in ("None", "random state"):
        return None
    if expected_kind == "list":
        return _list_difference(expected, got, random)
    if expected_kind == "sparse matrix":
        if expected.format != got.format:
            return f"sparse format {got.format} where the reference has {expected.format}"
        return _array_difference(expected.toarray(), got.toarray(), random)
    if expected_kind in ("array", "NumPy scalar", "Python scalar"):
        return _array_difference(np.asarray(expected), np.asarray(got), random, declared, ndim)
    return _object_difference(expected, got, random)


def _list_difference(expected: Any, got: Any, random: bool) -> str | None:
    if len(expected) != len(got):
        return f"{len(got)} items where the reference has {len(expected)}"
    for i, (e, g) in enumerate(zip(expected, got)):
        found = difference(e, g, random)
        if found is not None:
            return f"item {i}: {found}"
    return None


def _object_difference(expected: Any, got: Any, random: bool) -> str | None:
    if random:
        return None
    try:
        same = bool(expected == got)
    except Exception:  # values without a usable ==: nothing more to compare
        return None
    return None if same else f"{_short(got)} where the reference has {_short(expected)}"


def _array_difference(
    expected: np.ndarray, got: np.ndarray, random: bool, declared: str | None = None, ndim: int | None = None
) -> str | None:
    if expected.dtype != got.dtype:
        if declared is None or got.dtype != np.dtype(declared):
            return f"dtype {got.dtype} where the reference has {expected.dtype}"
        expected = _as_declared(expected, got.dtype)
        if expected is None:
            return None  # the reference's values do not fit the declared dtype: nothing to compare them with
    if random:
        if ndim is not None:
            return None if got.ndim == ndim else f"{got.ndim} dimensions where the output's type has {ndim}"
        return None if got.ndim == expected.ndim else f"{got.ndim} dimensions where the reference has {expected.ndim}"
    if expected.shape != got.shape:
        return f"shape {got.shape} where the reference has {expected.shape}"
    if expected.size == 0:
        return None
    if expected.dtype.kind in "fc":
        rtol, atol = tolerance(expected.dtype)
        close = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
        what = f"values differ beyond rtol={rtol:g}, atol={atol:g}"
    elif expected.dtype.kind == "O":
        close = np.array([difference(e, g) is None for e, g in zip(expected.ravel(), got.ravel())]).reshape(
            expected.shape
        )
        what = "objects differ"
    else:
        close = expected == got
        what = "values differ"
    if np.all(close):
        return None
    return f"{what} at {int(np.size(close) - np.count_nonzero(close))} of {expected.size} elements: " + _shown(
        expected, got, close
    )


def _as_declared(values: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    """The reference's values in the declared dtype, or ``None`` when they do not fit it."""
    if values.dtype.kind == "c" and dtype.kind != "c":
        if np.any(values.imag != 0):
            return None
        values = values.real
    try:
        return values.astype(dtype)
    except (TypeError, ValueError):
        return None


def _shown(expected: np.ndarray, got: np.ndarray, close: np.ndarray) -> str:
    if expected.ndim == 0:
        return f"AEJAX {got.item()!r}, reference {expected.item()!r}"
    where = np.argwhere(~np.asarray(close))[:MAX_SHOWN]
    parts = [
        f"[{', '.join(map(str, index))}]: AEJAX {got[tuple(index)].item()!r}, reference {expected[tuple(index)].item()!r}"
        for index in where
    ]
    return "; ".join(parts)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
