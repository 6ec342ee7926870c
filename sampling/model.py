"""A model written with Aesara random variables, as the graphs a sampler needs.

`model_graphs` takes the model as aeppl does (the random variables to
sample, the observed ones with their values) and plans, once, what sampling
it takes: aeppl's log-density of the free variables on the unconstrained
scale (aeppl's default transforms, or the user's, Jacobians included), the
constrained value of each free variable and of each deterministic the user
names, each observation's log-likelihood, and the forward transforms that
take a user's initial values to the unconstrained scale. Every graph is a
function of the value variables, which `Layout` lays in one flat vector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aesara
import aesara.tensor as at
import numpy as np
from aeppl import conditional_logprob
from aeppl.transforms import RVTransform, TransformValuesRewrite, _default_transformed_rv
from aesara.graph.basic import Variable, ancestors, clone_replace, io_toposort
from aesara.tensor.random.op import RandomVariable

from aejax.sampling.layout import Layout

DEFAULT = "default"
"""The transform a free variable gets unless the user names another: aeppl's default for its distribution."""


@dataclass(frozen=True)
class ModelGraphs:
    """What sampling a model takes, as Aesara graphs of the value variables `values` (unconstrained scale).

    Attributes
    ----------
    layout
        Where each value variable lies in the position vector (named by its random variable).
    values
        The value variables, in the layout's order.
    log_density
        The joint log-density (a scalar), Jacobians of the transforms in.
    posterior
        The constrained value of each free variable, then each deterministic, by name.
    log_likelihood
        Each observed variable's log-likelihood, one entry per observation, by name.
    observed
        The observed values, by name.
    placeholders
        One variable per free variable, standing for its constrained value (a user's initial value).
    unconstrained
        The free variables' values on the unconstrained scale, as graphs of `placeholders`.
    """

    layout: Layout
    values: tuple[Variable, ...]
    log_density: Variable
    posterior: dict[str, Variable]
    log_likelihood: dict[str, Variable]
    observed: dict[str, np.ndarray]
    placeholders: tuple[Variable, ...]
    unconstrained: tuple[Variable, ...]

    @property
    def x64(self) -> bool:
        """Whether the model computes in 64 bits (a value or the log-density is float64), as Aesara's floatX does."""
        return any(var.dtype == "float64" for var in (*self.values, self.log_density))


def model_graphs(
    free: Sequence[Variable],
    observed: Mapping[Variable, Any],
    transforms: Mapping[Variable | str, RVTransform | None] | None = None,
    deterministics: Mapping[str, Variable] | None = None,
) -> ModelGraphs:
    """The graphs of sampling the model whose free variables are ``free`` and observed ones ``observed``.

    ``free`` empty: every random variable the observed ones depend on that is
    not observed. ``transforms`` maps a free variable (or its name) to an
    aeppl ``RVTransform``, or ``None`` to sample it as it is; the others get
    aeppl's default transform for their distribution. ``deterministics`` maps
    a name to an Aesara expression of the model's variables.
    """
    observed = dict(observed)
    free = list(free) or discovered_free(observed)
    check_variables(free, observed)
    shapes = evaluated_shapes([*free, *observed])
    values_observed = {rv: observed_value(rv, value, shapes[rv]) for rv, value in observed.items()}
    chosen = chosen_transforms(free, transforms or {})
    realized = {rv: at.as_tensor_variable(value) for rv, value in values_observed.items()}
    applied = {rv: transform for rv, transform in chosen.items() if transform is not None}
    logprobs, values = conditional_logprob(*free, realized=realized, extra_rewrites=TransformValuesRewrite(applied))
    log_density = at.add(*[term.sum() for term in logprobs.values()])
    constrained = constrained_values(free, values, chosen, realized)
    posterior = {rv.name: constrained[rv] for rv in free}
    posterior.update(deterministic_graphs(deterministics or {}, {**constrained, **realized}, posterior))
    placeholders = tuple(rv.type(name=rv.name) for rv in free)
    unconstrained = forward_values(free, placeholders, chosen, realized)
    value_shapes = evaluated_shapes(list(unconstrained), given=dict(zip(placeholders, free)))
    layout = Layout(tuple(rv.name for rv in free), tuple(value_shapes[v] for v in unconstrained))
    return ModelGraphs(
        layout=layout,
        values=tuple(values),
        log_density=log_density,
        posterior=posterior,
        log_likelihood={rv.name: logprobs[rv] for rv in observed},
        observed={rv.name: value for rv, value in values_observed.items()},
        placeholders=placeholders,
        unconstrained=unconstrained,
    )


def density_graphs(
    log_density: Variable, values: Sequence[Variable], deterministics: Mapping[str, Variable] | None = None
) -> ModelGraphs:
    """The graphs of sampling ``log_density``, a scalar expression of the value variables ``values`` (named, of
    fixed shapes), on their own scale: no transform, no observations."""
    values = list(values)
    if not values:
        raise ValueError("values= is empty: name the variables log_density is a function of")
    check_values(log_density, values)
    own = {var.name: var for var in values}
    posterior = {**own, **deterministic_graphs(deterministics or {}, {}, own)}
    layout = Layout(tuple(own), tuple(tuple(var.type.shape) for var in values))
    return ModelGraphs(
        layout=layout,
        values=tuple(values),
        log_density=at.as_tensor_variable(log_density),
        posterior=posterior,
        log_likelihood={},
        observed={},
        placeholders=tuple(values),
        unconstrained=tuple(values),
    )


def check_values(log_density: Variable, values: Sequence[Variable]) -> None:
    """`TypeError` or `ValueError` naming what cannot be sampled: a log-density that is not a float scalar, a value
    that is unnamed, named twice, discrete, of a shape not fixed in its type, or not among the log-density's inputs."""
    if not isinstance(log_density, Variable) or log_density.ndim != 0 or not log_density.dtype.startswith("float"):
        raise TypeError(f"log_density must be a scalar Aesara expression of floats, not {log_density!r}")
    inputs = set(ancestors([log_density]))
    names = [var.name for var in values]
    for var in values:
        if not isinstance(var, Variable) or not var.name:
            raise ValueError(f"every value variable needs a name: {var!r} has none")
        if names.count(var.name) > 1:
            raise ValueError(f"several value variables are named {var.name!r}: give each its own name")
        if not var.dtype.startswith("float"):
            raise TypeError(f"the value variable {var.name!r} is {var.dtype}: NUTS samples floats only")
        if any(n is None for n in var.type.shape):
            raise ValueError(
                f"the value variable {var.name!r} has shape {var.type.shape}: fix its shape in its type, "
                f"e.g. at.tensor('float64', shape=(3,), name={var.name!r})"
            )
        if var not in inputs:
            raise ValueError(f"log_density does not depend on the value variable {var.name!r}")


def is_random_variable(var: Variable) -> bool:
    """Whether ``var`` is the draw of an Aesara ``RandomVariable``."""
    return var.owner is not None and isinstance(var.owner.op, RandomVariable) and var.owner.default_output() is var


def discovered_free(observed: Mapping[Variable, Any]) -> list[Variable]:
    """The random variables the observed ones depend on that are not observed, in the graph's order."""
    found = [var for var in ancestors(list(observed)) if is_random_variable(var) and var not in observed]
    if not found:
        raise ValueError("the observed variables depend on no random variable: there is nothing to sample")
    return list(reversed(found))


def check_variables(free: Sequence[Variable], observed: Mapping[Variable, Any]) -> None:
    """`TypeError` or `ValueError` naming the variable at fault: unnamed, named twice, discrete and free."""
    for var in [*free, *observed]:
        if not isinstance(var, Variable):
            raise TypeError(f"the model's variables are Aesara random variables, not {type(var).__name__} ({var!r})")
        if not var.name:
            raise ValueError(f"the random variable {var} has no name: name it (e.g. srng.normal(0, 1, name='mu'))")
    names = [var.name for var in [*free, *observed]]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"the model has several variables named {twice}: give each its own name")
    both = [var.name for var in free if var in observed]
    if both:
        raise ValueError(f"the variables {both} are both sampled and observed")
    for var in free:
        if var.dtype.startswith(("int", "uint", "bool")):
            raise TypeError(
                f"the random variable {var.name!r} is discrete ({var.dtype}) and not observed: NUTS samples "
                "continuous variables only; observe it or marginalize it out of the model"
            )


def evaluated_shapes(variables: list[Variable], given: Mapping[Variable, Variable] | None = None) -> dict:
    """The shape of each of ``variables`` (``given`` replaces placeholders by variables of their shape first)."""
    shapes = [var.shape for var in variables]
    if given:
        shapes = clone_replace(shapes, replace=dict(given))
    computed = aesara.function([], shapes, mode="FAST_COMPILE", no_default_updates=True, on_unused_input="ignore")()
    return {var: tuple(int(n) for n in shape) for var, shape in zip(variables, computed)}


def observed_value(rv: Variable, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as the observed values of ``rv``: `ValueError` or `TypeError` naming it if its shape or dtype
    cannot be ``rv``'s."""
    array = np.asarray(value)
    if array.shape != shape:
        raise ValueError(
            f"the observed value of {rv.name!r} has shape {array.shape}, but {rv.name!r} has shape {shape}"
        )
    cast = array.astype(rv.dtype)
    if array.dtype.kind not in "biuf" or not np.array_equal(cast, array):
        raise TypeError(
            f"the observed value of {rv.name!r} ({array.dtype}) cannot be taken as {rv.dtype} without changing it"
        )
    return cast


def chosen_transforms(
    free: Sequence[Variable], transforms: Mapping[Variable | str, RVTransform | None]
) -> dict[Variable, RVTransform | None]:
    """Each free variable's transform: the user's (by variable or name), else aeppl's default for its distribution."""
    by_name = {var.name: var for var in free}
    given: dict[Variable, RVTransform | None] = {}
    for key, transform in transforms.items():
        var = by_name.get(key) if isinstance(key, str) else key
        if var not in free:
            raise ValueError(f"transforms= names {getattr(key, 'name', key)!r}, which is not a sampled variable")
        if transform is not None and not isinstance(transform, RVTransform):
            raise TypeError(f"the transform of {var.name!r} must be an aeppl RVTransform or None, not {transform!r}")
        given[var] = transform
    return {var: given[var] if var in given else default_transform(var) for var in free}


def default_transform(rv: Variable) -> RVTransform | None:
    """aeppl's default transform for ``rv``'s distribution (``None``: it is unconstrained)."""
    node = _default_transformed_rv(rv.owner.op, rv.owner)
    return None if node is None else node.op.transform


def in_graph_order(free: Sequence[Variable]) -> list[Variable]:
    """``free``, each after the random variables it depends on."""
    order = {node: i for i, node in enumerate(io_toposort([], list(free)))}
    return sorted(free, key=lambda var: order[var.owner])


def constrained_values(
    free: Sequence[Variable],
    values: Sequence[Variable],
    chosen: Mapping[Variable, RVTransform | None],
    realized: Mapping[Variable, Variable],
) -> dict[Variable, Variable]:
    """Each free variable's constrained value as a graph of the value variables (the transforms' backward)."""
    value_of = dict(zip(free, values))
    replaced: dict[Variable, Variable] = dict(realized)
    for rv in in_graph_order(free):
        transform = chosen[rv]
        raw = value_of[rv] if transform is None else transform.backward(value_of[rv], *rv.owner.inputs)
        replaced[rv] = clone_replace(raw, replace=replaced) if transform is not None else raw
    return {rv: replaced[rv] for rv in free}


def forward_values(
    free: Sequence[Variable],
    placeholders: Sequence[Variable],
    chosen: Mapping[Variable, RVTransform | None],
    realized: Mapping[Variable, Variable],
) -> tuple[Variable, ...]:
    """Each free variable's unconstrained value as a graph of its constrained value's placeholder."""
    replace = {**realized, **dict(zip(free, placeholders))}
    forward = []
    for rv, placeholder in zip(free, placeholders):
        transform = chosen[rv]
        raw = placeholder if transform is None else transform.forward(placeholder, *rv.owner.inputs)
        forward.append(clone_replace(raw, replace=replace) if transform is not None else raw)
    return tuple(forward)


def deterministic_graphs(
    deterministics: Mapping[str, Variable], replace: Mapping[Variable, Variable], posterior: Mapping[str, Variable]
) -> dict[str, Variable]:
    """The deterministics as graphs of the value variables: `ValueError` naming one that draws a random variable
    the model neither samples nor observes, or that takes a name the model's variables have."""
    graphs = {}
    for name, expression in deterministics.items():
        if name in posterior:
            raise ValueError(f"the deterministic {name!r} takes the name of a sampled variable: name it otherwise")
        graph = clone_replace(at.as_tensor_variable(expression), replace=dict(replace))
        drawn = [var for var in ancestors([graph]) if is_random_variable(var)]
        if drawn:
            raise ValueError(
                f"the deterministic {name!r} depends on the random variable {drawn[0]}, which the model neither "
                "samples nor observes: pass it to sample() or observe it"
            )
        graphs[name] = graph
    return graphs
