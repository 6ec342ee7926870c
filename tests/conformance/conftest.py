"""Markers of the conformance tooling's tests."""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """``no_compare``: the hook redirects without compiling a reference."""
    config.addinivalue_line("markers", "no_compare: install the conformance hook without comparison")
