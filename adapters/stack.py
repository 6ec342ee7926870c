"""Which Aesara, numpy and JAX this environment holds, checked before aejax imports Aesara or JAX.

aejax runs on two stacks: the old pins (numpy 1.26, ``jax`` 0.7.1, ``aesara==2.9.4`` as pip
installs it) and the current one (numpy 2, the newest ``jax``, ``aesara==2.9.4`` installed without
its ``numpy<2`` pin). `check` fails the import with the command that makes a working environment
when Aesara is missing or is another release (pip, asked for a package that needs Aesara beside
numpy 2, picks ``aesara`` 2.9.3 rather than fail), when numpy or JAX is older than aejax runs on, or
when the two stacks are mixed: a jaxlib of the current stack beside numpy 1.x (installed ``--no-deps``).
"""

import importlib.metadata
import re

AESARA_VERSION = "2.9.4"
"""The Aesara release aejax is built on."""

OLDEST = {"numpy": (1, 26), "jax": (0, 7, 1), "jaxlib": (0, 7, 1)}
"""The oldest release of each package aejax runs on."""

INSTALL = (
    "on numpy 1.26 and jax 0.7.1 (the old pins): pip install 'aejax[pins]'; "
    "on numpy 2 and the newest jax: pip install --no-deps aesara==2.9.4 (and aeppl==0.1.5 aehmc==0.0.11 "
    "aemcmc==0.0.8 if you use them) && pip install aejax"
)
"""The commands that make a working environment, one per stack (README.rst, Install)."""


class StackError(ImportError):
    """The environment holds no Aesara 2.9.4, a numpy or JAX older than aejax runs on, or a mix of the stacks."""


def check():
    """Raise `StackError`, naming the install commands, unless the environment is one aejax runs on."""
    installed = {name: _version(name) for name in ("aesara", *OLDEST)}
    if installed["aesara"] != AESARA_VERSION:
        found = "no aesara" if installed["aesara"] is None else f"aesara {installed['aesara']}"
        raise StackError(f"aejax needs aesara=={AESARA_VERSION}, and this environment has {found}; {INSTALL}")
    for name, oldest in OLDEST.items():
        if installed[name] is None or _release(installed[name]) < oldest:
            raise StackError(
                f"aejax needs {name}>={'.'.join(map(str, oldest))}, and this environment has "
                f"{name} {installed[name]}; {INSTALL}"
            )
    needed = _numpy_needed_by("jaxlib")
    if needed is not None and _release(installed["numpy"]) < needed:
        raise StackError(
            f"this environment mixes the two stacks: jaxlib {installed['jaxlib']} needs numpy>="
            f"{'.'.join(map(str, needed))}, and it has numpy {installed['numpy']}; {INSTALL}"
        )


def _version(distribution):
    """The installed version of ``distribution``, or None."""
    return next((d.version for d in importlib.metadata.distributions(name=distribution)), None)


def _numpy_needed_by(distribution):
    """The oldest numpy ``distribution`` declares it needs (``numpy>=X``), or None."""
    for requirement in importlib.metadata.requires(distribution) or ():
        match = re.fullmatch(r"numpy\s*>=\s*([\d.]+)", requirement.split(";")[0].strip())
        if match:
            return _release(match[1])
    return None


def _release(version):
    """The leading numbers of a version string: ``"2.0.0rc1"`` gives ``(2, 0, 0)``."""
    return tuple(int(number) for number in re.match(r"\d+(?:\.\d+)*", version).group().split("."))
