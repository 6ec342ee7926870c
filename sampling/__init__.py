"""aejax.sampling: an Aesara model of random variables, sampled by NUTS on many chains, into ArviZ.

::

    from aejax.sampling import sample

    idata = sample(mu, tau, theta, observed={y: y_data}, chains=4)

See `sample` for its options: NumPyro's or BlackJAX's NUTS with Stan's window
adaptation, aeppl's transforms, deterministics, initial values, a mesh of
devices. Proposals that fail one of the model's checks are rejected, as
Stan rejects them.
"""

import aejax.adapters  # noqa: F401  (first: under numpy 2 it makes Aesara 2.9.4 importable)
from aejax.sampling.sample import sample

__all__ = ["sample"]
