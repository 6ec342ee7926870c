"""Snapshots of shared variables, to check that a failed call changed none of them."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

from aesara.compile.sharedvalue import SharedVariable


def snapshot(shared: Sequence[SharedVariable]) -> list[bytes]:
    """The bytes of every shared variable's value (numpy arrays and generators alike)."""
    return [pickle.dumps(var.get_value(borrow=True)) for var in shared]


def assert_unchanged(shared: Sequence[SharedVariable], before: list[bytes]) -> None:
    """Every shared variable holds bit for bit what `snapshot` saw."""
    for var, value in zip(shared, before):
        assert pickle.dumps(var.get_value(borrow=True)) == value, f"shared variable {var} changed"


def shared_of(fn: Any) -> list[SharedVariable]:
    """The shared variables of a compiled Aesara function."""
    return [spec.variable for spec in fn.maker.inputs if spec.shared]
