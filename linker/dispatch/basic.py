"""Our `jax_funcify` dispatcher.

A lowering is chosen for an `Op` in this order:

1. The registration on the most specific class of the Op's MRO, looking at
   ours (``aejax.linker.jax_funcify.register``) and at those added to Aesara's
   ``aesara.link.jax.dispatch.jax_funcify`` from outside Aesara (by users or
   other libraries). When both name the same class, ours wins. Aesara's own
   lowerings never override ours: aejax replaces some of them on purpose.
   A lowering made by Aesara's dispatcher is adapted to aejax's values by
   `from_aesara_convention` (random states, for one, differ).
2. Aesara's own dispatch.
3. The Op's Python ``perform``, run on the host with `jax.pure_callback`
   (`aejax.linker.dispatch.callback`).

Aesara's modules are not modified. Importing Aesara's JAX dispatch sets
JAX's process-wide ``jax_enable_x64`` (from ``aesara.config.floatX``); this
module is where aejax first imports it, and it puts the setting back as it
was (`keeping_global_x64`): a program's precision is the program's own
(`aejax.linker.call.precision`), not the process's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Iterator, Mapping
from contextlib import contextmanager
from functools import singledispatch
from typing import Any

import jax

from aejax.linker.dispatch.callback import host_fallback_problem, host_lowering
from aejax.linker.errors import LoweringError


def global_x64() -> bool:
    """JAX's process-wide ``jax_enable_x64``, whatever this thread's own setting (`jax.experimental.enable_x64`) is.

    Read from a new thread, which sees only the process-wide value.
    """
    seen: list[bool] = []
    reader = threading.Thread(target=lambda: seen.append(jax.config.jax_enable_x64))
    reader.start()
    reader.join()
    return seen[0]


@contextmanager
def keeping_global_x64() -> Iterator[None]:
    """Run the block, then put JAX's process-wide ``jax_enable_x64`` back as it was before it, if the block changed it."""
    before = global_x64()
    try:
        yield
    finally:
        if global_x64() != before:
            jax.config.update("jax_enable_x64", before)


def _aesara_dispatcher() -> Any:
    """Aesara's ``jax_funcify``, imported without the process-wide change of ``jax_enable_x64`` its first import makes."""
    with keeping_global_x64():
        from aesara.link.jax.dispatch import jax_funcify

    return jax_funcify


aesara_jax_funcify = _aesara_dispatcher()

Lowering = Callable[..., Any]


def registered_outside_aesara(function: Any) -> bool:
    """Whether a registration on one of Aesara's dispatchers comes from outside Aesara."""
    module = getattr(function, "__module__", None) or ""
    return module != "aesara" and not module.startswith("aesara.")


def overriding_class(cls: type, ours: Container[type], aesaras: Mapping[type, Any]) -> type | None:
    """The class of ``cls``'s MRO whose registration decides, if not Aesara's own dispatch.

    That is the first class of the MRO that is in ``ours``, or in ``aesaras``
    with a registration made outside Aesara; the caller prefers ours when
    both name it. Registrations on `object` (the defaults) do not count.
    """
    for base in cls.__mro__[:-1]:
        if base in ours or (base in aesaras and registered_outside_aesara(aesaras[base])):
            return base
    return None


@singledispatch
def from_aesara_convention(op: Any, lowering: Lowering) -> Lowering:
    """Adapt a lowering made by Aesara's ``jax_funcify`` to aejax's values.

    The identity, except for Ops whose values differ between the two (e.g.
    random states: a dict holding ``"jax_state"`` for Aesara, a key for us).
    """
    return lowering


def _aesara_or_host(op: Any, node: Any = None, **kwargs: Any) -> Lowering:
    missing = jax_function_missing(type(op))
    if missing is None:
        try:
            return from_aesara_convention(op, aesara_jax_funcify(op, node=node, **kwargs))
        except NotImplementedError as error:
            missing = str(error)
    problem = host_fallback_problem(op, node)
    if problem is None:
        return host_lowering(node)
    raise LoweringError(
        f"no JAX lowering for Op {op} in node {node} ({missing}), and {problem}.\n"
        "Register one with aejax.linker.jax_funcify.register("
        f"{type(op).__name__}), or compile this graph with another mode.",
        node=node,
    )


def jax_function_missing(op_class: type) -> str | None:
    """Why Aesara's generic lowering of a scalar Op cannot lower Ops of ``op_class``, if it is their lowering.

    That lowering calls the function of JAX that the Op's ``nfunc_spec``
    names; an Op that names none (``GammaIncDer``), or a function JAX lacks
    (``jax.scipy.special.jv``), would fail there. ``None`` for any other Op.
    """
    if aesara_jax_funcify.dispatch(op_class) is not _aesara_generic_scalar_lowering():
        return None
    spec = getattr(op_class, "nfunc_spec", None)
    if not spec:
        return f"{op_class.__name__} names no numpy or scipy function"
    found: Any = jax if "." in spec[0] else jax.numpy
    for part in spec[0].split("."):
        found = getattr(found, part, None)
    return None if found is not None else f"JAX has no function {spec[0]!r}"


def _aesara_generic_scalar_lowering() -> Lowering:
    """Aesara's lowering of a scalar Op through the function its ``nfunc_spec`` names."""
    from aesara.link.jax.dispatch.scalar import jax_funcify_ScalarOp

    return jax_funcify_ScalarOp


def _registered_with_aesara(aesaras: Lowering) -> Lowering:
    def lower(op: Any, node: Any = None, **kwargs: Any) -> Lowering:
        return from_aesara_convention(op, aesaras(op, node=node, **kwargs))

    return lower


class LoweringDispatcher:
    """Find the JAX lowering of an `Op`: call it as ``jax_funcify(op, node=node)``.

    It returns a JAX-traceable Python function computing ``node``'s outputs.
    ``register`` works as `functools.singledispatch`'s does.
    """

    def __init__(self, default: Lowering) -> None:
        self._ours = singledispatch(default)
        self._default = default

    @property
    def registry(self) -> Mapping[type, Lowering]:
        """Our registrations, by class (the default is registered on `object`)."""
        return self._ours.registry

    def register(self, cls: Any, func: Lowering | None = None) -> Any:
        """Register a lowering for ``cls`` (usable as a decorator)."""
        return self._ours.register(cls, func)

    def dispatch(self, cls: type) -> Lowering:
        """The function that lowers Ops of class ``cls``."""
        registered, ours = self._registration(cls)
        if registered is None:
            return self._default
        return registered if ours else _registered_with_aesara(registered)

    def lowering_module(self, cls: type) -> str:
        """The module whose code lowers Ops of class ``cls``: ours, Aesara's, or where someone registered one."""
        registered, _ = self._registration(cls)
        lowering = aesara_jax_funcify.dispatch(cls) if registered is None else registered
        return getattr(lowering, "__module__", None) or ""

    def _registration(self, cls: type) -> tuple[Lowering | None, bool]:
        """The registration that decides for ``cls`` and whether it is ours; ``None`` for Aesara's own dispatch."""
        base = overriding_class(cls, self._ours.registry, aesara_jax_funcify.registry)
        if base is None:
            return None, False
        if base in self._ours.registry:
            return self._ours.registry[base], True
        return aesara_jax_funcify.registry[base], False

    def __call__(self, op: Any, node: Any = None, **kwargs: Any) -> Lowering:
        return self.dispatch(type(op))(op, node=node, **kwargs)


jax_funcify = LoweringDispatcher(_aesara_or_host)
"""aejax's JAX lowerings of Aesara Ops (see the module's docstring for the order)."""
