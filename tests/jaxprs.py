"""The jaxprs inside an equation's parameters (loop bodies, branches), on every JAX release aejax runs on.

JAX 0.12 removed ``jax.core.jaxprs_in_params``; this reads the parameters with ``jax.extend.core``'s types.
"""

from jax.extend.core import ClosedJaxpr, Jaxpr


def inner_jaxprs(params):
    """The ``Jaxpr``s among an equation's parameter values, as they are or in tuples and lists."""
    for value in params.values():
        for item in value if isinstance(value, tuple | list) else (value,):
            if isinstance(item, ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, Jaxpr):
                yield item
