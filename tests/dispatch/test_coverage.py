"""Which of Aesara's Ops have a JAX lowering under aejax, and which do not.

Every `Op` class defined in the modules of `MODULES` is looked up the way
aejax's dispatcher looks it up: our registrations, then Aesara's. Aesara's
generic scalar lowering only works when the Op's ``nfunc_spec`` names a
function JAX has; a random variable is lowered when `SAMPLERS` has a sampler
for it. Ops without a lowering still run, through the host fallback (their
``perform`` in a callback), but not as JAX code. The test pins the list of
those, so adding a lowering, or an Aesara upgrade adding Ops, updates it.
"""

import importlib
import inspect

import pytest
from aesara.graph.op import Op
from aesara.link.jax.dispatch import jax_funcify as aesara_jax_funcify
from aesara.scalar.basic import (
    BinaryBitOp,
    BinaryScalarOp,
    FixedLogicalComparison,
    LogicalComparison,
    ScalarOp,
    UnaryBitOp,
    UnaryScalarOp,
)
from aesara.tensor.blas import GemmRelated
from aesara.tensor.elemwise import Elemwise
from aesara.tensor.random.op import RandomVariable
from aesara.tensor.slinalg import SolveBase

from aejax.linker.dispatch import elemwise, jax_funcify
from aejax.linker.dispatch.basic import jax_function_missing
from aejax.linker.dispatch.random import SAMPLERS

MODULES = [
    "aesara.scalar.basic",
    "aesara.scalar.math",
    "aesara.tensor.basic",
    "aesara.tensor.math",
    "aesara.tensor.elemwise",
    "aesara.tensor.extra_ops",
    "aesara.tensor.nlinalg",
    "aesara.tensor.slinalg",
    "aesara.tensor.special",
    "aesara.tensor.subtensor",
    "aesara.tensor.shape",
    "aesara.tensor.sort",
    "aesara.tensor.random.basic",
    "aesara.tensor.blas",
    "aesara.tensor.xlogx",
]

BASE_CLASSES = {
    # Bases that only share code with their subclasses; no graph holds them themselves.
    ScalarOp,
    UnaryScalarOp,
    BinaryScalarOp,
    LogicalComparison,
    FixedLogicalComparison,
    UnaryBitOp,
    BinaryBitOp,
    SolveBase,
    GemmRelated,
}
"""Excluded, besides the classes `inspect.isabstract` reports (e.g. ``ScipyRandomVariable``)."""

MISSING = [
    "aesara.scalar.math.BetaIncDer",
    "aesara.scalar.math.GammaIncCDer",
    "aesara.scalar.math.GammaIncDer",
    "aesara.scalar.math.Hyp2F1Der",
    "aesara.scalar.math.Iv",
    "aesara.scalar.math.Jv",
    "aesara.tensor.nlinalg.EighGrad",
    "aesara.tensor.random.basic.HyperGeometricRV",
    "aesara.tensor.slinalg.ExpmGrad",
]
"""Ops with no JAX lowering (sorted), which run their ``perform`` through a host callback: gradients
of special functions and matrix functions written as Python loops or scipy calls, real-order Bessel
functions (JAX has integer orders only) and the hypergeometric distribution."""


def op_classes() -> list[type]:
    """The concrete Op classes defined in `MODULES`."""
    classes = []
    for name in MODULES:
        for value in vars(importlib.import_module(name)).values():
            if (
                inspect.isclass(value)
                and issubclass(value, Op)
                and value.__module__ == name
                and value not in BASE_CLASSES
                and not inspect.isabstract(value)
            ):
                classes.append(value)
    return classes


def has_lowering(cls: type) -> bool:
    """Whether aejax lowers Ops of class ``cls`` to JAX code."""
    if issubclass(cls, RandomVariable):
        return any(base in SAMPLERS for base in cls.__mro__)
    if jax_funcify.dispatch(cls) is not jax_funcify.dispatch(object):
        return True
    if jax_function_missing(cls) is not None:
        return False
    return aesara_jax_funcify.dispatch(cls) is not aesara_jax_funcify.dispatch(object)


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_scalar_ops_are_looked_up_through_our_dispatcher():
    assert jax_funcify.dispatch(Elemwise).__module__ == elemwise.__name__


def test_ops_without_lowering_are_the_documented_ones():
    classes = op_classes()
    missing = sorted(_name(cls) for cls in classes if not has_lowering(cls))
    print(
        f"\nJAX lowerings: {len(classes) - len(missing)} lowered, {len(missing)} missing of {len(classes)} Op classes"
    )
    assert MISSING == sorted(MISSING)
    assert missing == [name for name in MISSING if name not in lowered_by_newer_jax()]


def lowered_by_newer_jax() -> set[str]:
    """The Ops of `MISSING` that the installed JAX lowers: ``Iv`` since JAX has ``jax.scipy.special.iv`` (0.12)."""
    from aesara.scalar.math import Iv

    return set() if jax_function_missing(Iv) else {"aesara.scalar.math.Iv"}


@pytest.mark.parametrize("name", MISSING)
def test_missing_names_are_real_op_classes(name):
    module, _, attribute = name.rpartition(".")
    assert issubclass(getattr(importlib.import_module(module), attribute), Op)
