"""The environment check (`aejax.adapters.stack`): aejax imports only on a stack it runs on.

The installed versions are faked by replacing `stack._version` (and, for a mix of the two stacks,
what jaxlib declares it needs): each environment aejax does not run on fails the check with a
`StackError` that names what was found and the install commands of both stacks.
"""

import importlib.metadata

import numpy as np
import pytest

from aejax.adapters import stack


def _installed(monkeypatch, **versions):
    """Makes `stack._version` report ``versions`` (None: not installed) and the real version of the rest."""
    real = stack._version
    monkeypatch.setattr(stack, "_version", lambda name: versions[name] if name in versions else real(name))


def test_the_environment_running_the_tests_passes():
    """The environment the tests run in is one aejax runs on."""
    assert stack.check() is None


def test_the_install_commands_name_both_stacks():
    """`INSTALL` names the old pins' command and the current stack's, which installs Aesara without its pins."""
    assert "pip install 'aejax[pins]'" in stack.INSTALL
    assert "pip install --no-deps aesara==2.9.4" in stack.INSTALL


@pytest.mark.parametrize(
    ("versions", "found"),
    [
        ({"aesara": None}, "no aesara"),
        ({"aesara": "2.9.3"}, "aesara 2.9.3"),
        ({"numpy": "1.25.2"}, "numpy 1.25.2"),
        ({"jax": "0.6.2"}, "jax 0.6.2"),
        ({"jax": "0.7.0"}, "jax 0.7.0"),
        ({"jaxlib": "0.6.0"}, "jaxlib 0.6.0"),
    ],
    ids=["no aesara", "aesara 2.9.3", "numpy 1.25", "jax 0.6", "jax 0.7.0", "jaxlib 0.6"],
)
def test_an_environment_aejax_does_not_run_on_fails_naming_what_it_found(monkeypatch, versions, found):
    """No Aesara, another Aesara, or a numpy, jax or jaxlib too old: `StackError` names it and the commands."""
    _installed(monkeypatch, **versions)
    with pytest.raises(stack.StackError) as raised:
        stack.check()
    assert found in str(raised.value)
    assert str(raised.value).endswith(stack.INSTALL)


@pytest.mark.parametrize("name", ["numpy", "jax", "jaxlib"])
def test_a_missing_package_fails_naming_it(monkeypatch, name):
    """numpy, jax or jaxlib not installed at all fails the check, naming the package and the commands."""
    _installed(monkeypatch, **{name: None})
    with pytest.raises(stack.StackError, match=f"aejax needs {name}>="):
        stack.check()


def test_a_mix_of_the_two_stacks_fails_naming_both_versions(monkeypatch):
    """A jaxlib that needs numpy 2 beside numpy 1.26 (installed ``--no-deps``) fails the check, naming both."""
    _installed(monkeypatch, numpy="1.26.4", jaxlib="0.12.1")
    monkeypatch.setattr(stack, "_numpy_needed_by", lambda name: (2, 0))
    with pytest.raises(stack.StackError) as raised:
        stack.check()
    assert "mixes the two stacks" in str(raised.value)
    assert "jaxlib 0.12.1 needs numpy>=2.0" in str(raised.value)
    assert "numpy 1.26.4" in str(raised.value)
    assert str(raised.value).endswith(stack.INSTALL)


@pytest.mark.parametrize("needed", [None, (1, 26)])
def test_a_jaxlib_that_this_numpy_satisfies_passes(monkeypatch, needed):
    """A jaxlib that declares no numpy, or one the installed numpy satisfies, passes the check."""
    _installed(monkeypatch, numpy="1.26.4", jax="0.7.1", jaxlib="0.7.1")
    monkeypatch.setattr(stack, "_numpy_needed_by", lambda name: needed)
    assert stack.check() is None


def test_the_stack_error_is_an_import_error():
    """`StackError` is an ``ImportError``: the import of aejax fails as a missing dependency does."""
    assert issubclass(stack.StackError, ImportError)


@pytest.mark.parametrize(
    ("requirements", "needed"),
    [
        (["scipy>=1.12", "numpy>=1.26", "ml_dtypes>=0.5.0"], (1, 26)),
        (["numpy >= 2.0 ; python_version >= '3.11'"], (2, 0)),
        (["scipy>=1.12"], None),
        (None, None),
    ],
    ids=["jaxlib 0.7.1", "with a marker", "no numpy", "no requirements"],
)
def test_what_jaxlib_needs_of_numpy_is_read_from_its_requirements(monkeypatch, requirements, needed):
    """`_numpy_needed_by` reads the oldest numpy a distribution declares (``numpy>=X``), or None."""
    monkeypatch.setattr(importlib.metadata, "requires", lambda name: requirements)
    assert stack._numpy_needed_by("jaxlib") == needed


def test_the_installed_versions_are_read_from_the_distributions():
    """`_version` gives an installed distribution's version (numpy's own), and None for one not installed."""
    assert stack._version("numpy") == np.__version__
    assert stack._version("aejax-no-such-distribution") is None


@pytest.mark.parametrize(
    ("version", "release"),
    [
        ("2.0.0rc1", (2, 0, 0)),
        ("0.12.1", (0, 12, 1)),
        ("1.26.4", (1, 26, 4)),
        ("1.26", (1, 26)),
        ("0.7.1.dev20250801", (0, 7, 1)),
        ("2.9.4.post1", (2, 9, 4)),
    ],
)
def test_a_release_is_the_leading_numbers_of_a_version(version, release):
    """`_release` gives a version's leading numbers, which compare as releases do."""
    assert stack._release(version) == release
