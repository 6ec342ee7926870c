"""Many chains of one compiled graph: a function of a key and a number of chains.

`many_chains` takes a function compiled with aejax's mode (or the `JaxGraph`
of `jaxify`) and returns a `ManyChains`, called as
``run(key, n_chains, *inputs, state=None, chains=None)``. The call runs the graph once per
chain, vectorized (``jax.vmap`` in one ``jax.jit`` program), and returns a
`ChainRun`: the outputs and the new state, each with a leading axis of
``n_chains``, the state by the names of the graph's shared variables
(`aejax.linker.export.state_names`).

What each chain starts from:

- Random states come from ``key``: chain ``k`` has the key
  ``jax.random.split(key, n_chains)[k]``, and its ``j``-th random state (in
  the order of `ManyChains.random_names`) is
  ``jax.random.split(that_key, len(random_names))[j]``, in the state's own key
  implementation (`ManyChains.chain_state`). So chain ``k`` draws what
  ``graph.fn(run.chain_state(keys[k]), *inputs_k)`` draws.
- Other shared variables: their value at the call, the same for every chain.
- ``state={name: value}`` replaces any of these: a value shaped as the state
  entry is the same for every chain, one with a leading axis of ``n_chains``
  is one per chain (a random state too: then ``key`` is not used for it; with
  every random state given, ``key`` may be ``None``). A `ChainRun`'s state
  continues the chains where they stopped.
- Inputs: an argument with one more dimension than its variable is one per
  chain (leading axis ``n_chains``); one with as many is the same for every
  chain.

Nothing is written back into the shared variables: the call returns the new
state, and `ManyChains.store` writes one chain's state back when asked. A
call that fails has changed nothing.

Run-time checks of the graph (aeppl's parameter checks, index bounds,
`CheckAndRaise`) hold in every chain: the program returns each chain's
failure code (`JaxGraph.checked_fn`), and a call in which a chain failed one
raises that check's exception, as Aesara raises it, naming the chains that
failed it, and returns nothing.

Given a ``mesh`` (a ``jax.sharding.Mesh``, or a list of devices), each device
runs its own block of the chains: the program is ``jax.shard_map`` of the
vmapped chain over the mesh, so no loop of one device waits for another's
(with the chain axis merely sharded under ``jax.jit``, XLA would reduce a
vmapped loop's batched predicate across the devices at every iteration).
Per-chain arguments are split along the chain axis, the rest replicated; the
number of chains must be a multiple of the number of devices. A mesh may span
the processes of JAX's multi-controller runtime (``jax.distributed``): each
process then runs its own devices' chains, every process must make the same
call (`aejax.linker.mesh.check_same_in_every_process` refuses, in all of them,
a key or input that differs), a failed check raises in every process, and
`ChainRun.gathered` gives every chain's values in each. Progress bars
(`AejaxMode.with_progress`) show one bar for all chains and devices, in
process 0.

``chains=slice(a, b)`` runs chains ``a .. b - 1`` of the run, with the keys
they have in the whole run: a cluster engine's workers each run a share.

A compiled function's chains run in its precision (``function.x64``,
`aejax.linker.call.precision`); a `JaxGraph`'s in JAX's as the call finds it.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from aesara.compile.function.types import Function
from aesara.graph.basic import Variable
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from aejax.adapters import codec_for
from aejax.adapters.threefry import bits_of
from aejax.linker.call.linker import BACKEND
from aejax.linker.call.precision import running_in
from aejax.linker.checks import PASSED, CheckTable
from aejax.linker.errors import variable_name
from aejax.linker.export import JaxGraph, State, exported
from aejax.linker.mesh import check_same_in_every_process, gathered, placed, spans_processes

CHAIN_AXIS = "chains"
"""The name of the mesh axis a list of devices becomes."""


class ChainRun(NamedTuple):
    """What a `ManyChains` call returns: each value with a leading axis of one entry per chain."""

    outputs: Any
    """The graph's outputs, as the compiled function returns them (one, or a list)."""
    state: State
    """The new state, by name: every entry, per chain."""

    def gathered(self) -> ChainRun:
        """This run as numpy arrays, every chain's, in every process (on a mesh of several processes each holds
        only its own devices' chains); random states as their raw key data (``jax.random.key_data``).

        On a mesh of several processes every process must call it, as for any collective.
        """
        as_numpy = lambda value: gathered(jax.random.key_data(value) if is_key(value) else value)
        return ChainRun(jax.tree.map(as_numpy, self.outputs), {name: as_numpy(v) for name, v in self.state.items()})


class ManyChains:
    """``run(key, n_chains, *inputs, state=None) -> ChainRun``: the graph run on ``n_chains`` chains.

    See the module docstring for what each chain starts from; `many_chains`
    makes one.

    Attributes
    ----------
    graph
        The graph as a pure function of one chain (`JaxGraph`).
    mesh
        The devices the chains are split across; ``None``: JAX's default device.
    x64
        The precision the chains compute in (``None``: JAX's as the call finds it).
    """

    def __init__(self, graph: JaxGraph, mesh: Mesh | None = None, x64: bool | None = None) -> None:
        self.graph = graph
        self.mesh = mesh
        self.x64 = x64
        self._impls = {name: jax.random.key_impl(value) for name, value in graph.state.items() if is_key(value)}
        self._programs: dict[Any, Any] = {}

    @property
    def names(self) -> list[str]:
        """The state's names, in the graph's order."""
        return list(self.graph.state)

    @property
    def random_names(self) -> list[str]:
        """The names of the random states, in the graph's order: the order in which a chain's key is split."""
        return list(self._impls)

    def chain_state(self, key: Any) -> State:
        """The random states of the chain whose key is ``key`` (``jax.random.split(key, n_chains)[k]`` for chain ``k``)."""
        keys = jax.random.split(key, len(self._impls))
        return {name: as_impl(k, impl) for (name, impl), k in zip(self._impls.items(), keys)}

    def __call__(
        self, key: Any, n_chains: int, *inputs: Any, state: State | None = None, chains: slice | None = None
    ) -> ChainRun:
        with running_in(self.x64):
            program, arguments = self._prepared(key, n_chains, inputs, state, chains)
            (outputs, new_state), failures = program(*arguments)
            raise_failed_check(failures, self.graph.checks)
        return ChainRun(outputs, new_state)

    def lower(
        self, key: Any, n_chains: int, *inputs: Any, state: State | None = None, chains: slice | None = None
    ) -> jax.stages.Lowered:
        """The program that a call of these arguments runs, lowered (``.as_text()``, ``.compile().as_text()``), not run."""
        with running_in(self.x64):
            program, arguments = self._prepared(key, n_chains, inputs, state, chains)
            return program.lower(*arguments)

    def _prepared(
        self, key: Any, n_chains: int, inputs: tuple[Any, ...], state: State | None, chains: slice | None
    ) -> tuple[Any, tuple[Any, State, tuple[Any, ...]]]:
        """The jitted program of a call and its arguments, checked and placed: ``(program, (key, state, inputs))``."""
        n_chains = chain_count(n_chains)
        span = chain_span(chains, n_chains)
        self._check_mesh(span[1] - span[0])
        given = self._given_state(state or {}, n_chains)
        derived = tuple(name for name in self._impls if name not in given)
        key = self._key(key, derived)
        impl = None if key is None else jax.random.key_impl(key)
        state_axes = {name: axis for name, (_, axis) in given.items()}
        input_axes = self._input_axes(inputs, n_chains)
        values = {name: value for name, (value, _) in given.items()}
        values.update({name: self._current(name) for name in self.names if name not in given and name not in derived})
        state_axes.update({name: None for name in values if name not in state_axes})
        axes = (None, state_axes, input_axes)
        arguments = self._placed(rows_of((key, values, tuple(inputs)), axes, span, n_chains), axes)
        return self._program(n_chains, span, derived, impl, tuple(sorted(state_axes.items())), input_axes), arguments

    def store(self, state: State, chain: int) -> None:
        """Write chain ``chain``'s entries of ``state`` (a `ChainRun`'s, all entries or some) into the shared variables.

        As `JaxGraph.store`: every entry is checked first, and if one is
        wrong nothing is written.
        """
        chain = operator.index(chain)
        with running_in(self.x64):
            self.graph.store({name: value[chain] for name, value in state.items()})

    def _key(self, key: Any, derived: tuple[str, ...]) -> Any:
        """``key`` as a typed key of the random states' bits; ``None`` when no random state comes from it."""
        if not derived:
            return None
        if key is None:
            raise TypeError(
                f"key is None, but the random states {list(derived)} are not given in state=: pass a key "
                "(jax.random.key(seed))"
            )
        return checked_key(key, {name: self._impls[name] for name in derived})

    def _given_state(self, state: State, n_chains: int) -> dict[str, tuple[Any, int | None]]:
        """``state``'s entries, each with its chain axis (0, or ``None`` for an entry shared by the chains)."""
        if not isinstance(state, dict):
            raise TypeError(f"state= takes a dict of state entries by name, not {type(state).__name__}")
        unknown = sorted(set(state) - set(self.names))
        if unknown:
            raise TypeError(
                f"state= has the entries {unknown}, which the graph does not have; its state is {self.names}"
            )
        return {
            name: (value, chain_axis(f"state entry {name!r}", value, jnp.ndim(self.graph.state[name]), n_chains))
            for name, value in state.items()
        }

    def _input_axes(self, inputs: Sequence[Any], n_chains: int) -> tuple[int | None, ...]:
        variables = self.graph.inputs
        if len(inputs) != len(variables):
            names = ", ".join(variable_name(var) for var in variables)
            raise TypeError(f"run(key, n_chains, {names}) takes {len(variables)} input(s), got {len(inputs)}")
        return tuple(
            chain_axis(f"input {variable_name(var)!r}", value, variable_ndim(var), n_chains)
            for var, value in zip(variables, inputs)
        )

    def _current(self, name: str) -> Any:
        """The shared variable's value now, in JAX form."""
        var = self.graph.shared[name]
        return codec_for(BACKEND, var.type).encode(var.get_value(borrow=True), var.type)

    def _check_mesh(self, n_chains: int) -> None:
        if self.mesh is not None and n_chains % self.mesh.size:
            raise ValueError(
                f"n_chains={n_chains} cannot be split across the mesh's {self.mesh.size} devices: "
                f"ask for a multiple of {self.mesh.size} chains"
            )

    def _spec(self, axis: int | None) -> PartitionSpec:
        """How a value whose chain axis is ``axis`` is laid on the mesh (`chain_spec`)."""
        return chain_spec(self.mesh, axis)

    def _placed(self, arguments: Any, axes: Any) -> Any:
        """``arguments`` on the mesh (`aejax.linker.mesh.placed`): split along the chain axis where ``axes`` has one,
        else replicated; typed keys as their raw data. Processes given different values fail here, all of them."""
        if self.mesh is None:
            return arguments
        data = jax.tree.map(lambda value: jax.random.key_data(value) if is_key(value) else value, arguments)
        if spans_processes(self.mesh):
            check_same_in_every_process(self._named(data))
        return jax.tree.map(
            lambda axis, value: placed(value, NamedSharding(self.mesh, self._spec(axis))),
            axes,
            data,
            is_leaf=lambda a: a is None,
        )

    def _named(self, arguments: tuple[Any, State, tuple[Any, ...]]) -> list[tuple[str, Any]]:
        """The arguments of a call by what the user calls them, for `check_same_in_every_process`."""
        key, state, inputs = arguments
        named = [] if key is None else [("key", key)]
        named += [(f"state entry {name!r}", value) for name, value in state.items()]
        named += [(f"input {variable_name(var)!r}", value) for var, value in zip(self.graph.inputs, inputs)]
        return named

    def _program(
        self,
        n_chains: int,
        span: tuple[int, int],
        derived: tuple[str, ...],
        impl: Any,
        state_axes: tuple[tuple[str, int | None], ...],
        input_axes: tuple[int | None, ...],
    ) -> Any:
        """The jitted program of one kind of call: ``program(key, state, inputs) -> ((outputs, new_state), failures)``.

        It runs chains ``span[0] .. span[1] - 1`` of ``n_chains``;
        ``failures`` holds each chain's failure code (`JaxGraph.checked_fn`);
        ``impl`` is the key's implementation (``None`` without a key).
        """
        signature = (n_chains, span, derived, impl, state_axes, input_axes)
        if signature not in self._programs:
            self._programs[signature] = self._compiled(n_chains, span, derived, impl, dict(state_axes), input_axes)
        return self._programs[signature]

    def _compiled(
        self,
        n_chains: int,
        span: tuple[int, int],
        derived: tuple[str, ...],
        impl: Any,
        state_axes: dict[str, int | None],
        input_axes: tuple[int | None, ...],
    ) -> Any:
        """The program: on a mesh, each device runs its own block of chains (``jax.shard_map`` of the vmapped
        chain), so that no loop of a chain waits for another device's (a vmapped loop's batched predicate,
        sharded across devices, would be reduced across them at every iteration)."""
        batched = jax.vmap(self.graph.checked_fn, in_axes=({**state_axes, **dict.fromkeys(derived, 0)}, *input_axes))

        def block(keys: Any, state: State, inputs: tuple[Any, ...]) -> tuple[tuple[Any, State], Any]:
            state = {name: self._typed(name, value) for name, value in state.items()}
            if derived:
                random = jax.vmap(self.chain_state)(keys)
                state = {**state, **{name: random[name] for name in derived}}
            return batched(state, *inputs)

        if self.mesh is not None:
            chains = self._spec(0)
            specs = ({name: self._spec(axis) for name, axis in state_axes.items()}, tuple(map(self._spec, input_axes)))
            block = jax.shard_map(block, mesh=self.mesh, in_specs=(chains, *specs), out_specs=chains, check_vma=False)

        def program(key: Any, state: State, inputs: tuple[Any, ...]) -> tuple[tuple[Any, State], Any]:
            keys = None
            if derived:
                key = key if is_key(key) else jax.random.wrap_key_data(key, impl=impl)
                keys = jax.random.split(key, n_chains)[span[0] : span[1]]
            result, failures = block(keys, state, inputs)
            return result, self._everywhere(failures)

        return jax.jit(program)

    def _everywhere(self, failures: Any) -> Any:
        """The chains' failure codes, on a mesh gathered onto every device once the chains are done, so that each
        process reads them all from its own device (gathering them afterwards costs another program a call)."""
        if self.mesh is None:
            return failures
        return jax.lax.with_sharding_constraint(failures, NamedSharding(self.mesh, PartitionSpec()))

    def _typed(self, name: str, value: Any) -> Any:
        """A state entry as the graph takes it: a random state given as raw key data wrapped as its state's key."""
        if name in self._impls and not is_key(value):
            return jax.random.wrap_key_data(value, impl=self._impls[name])
        return value


def many_chains(function: Function | JaxGraph, mesh: Mesh | Sequence[Any] | None = None) -> ManyChains:
    """``function`` (compiled with aejax's mode, or a `JaxGraph`) as a function of a key and a number of chains.

    ``run = many_chains(f, mesh=jax.devices())``, then
    ``run(key, n_chains, *inputs, state=None, chains=None)`` returns a
    `ChainRun` (see the module docstring for the chains' keys, states and
    inputs). ``mesh``, a ``jax.sharding.Mesh`` or a list of devices (those of
    several processes too, after ``jax.distributed.initialize()``), gives
    each device its own block of the chains.
    """
    if isinstance(function, JaxGraph):
        return ManyChains(function, chain_mesh(mesh))
    if not isinstance(function, Function):
        raise TypeError(
            f"many_chains takes a function compiled with aesara.function(..., mode=aejax.linker.mode) "
            f"or a JaxGraph (aejax.linker.jaxify), not {type(function).__name__}"
        )
    x64 = getattr(function, "x64", None)
    with running_in(x64):
        return ManyChains(exported(function), chain_mesh(mesh), x64)


def raise_failed_check(failures: Any, checks: CheckTable) -> None:
    """Raise the exception of the check that the first failing chain failed, naming the chains that failed it.

    ``failures`` holds one failure code per chain, numbering the checks of
    ``checks`` (`aejax.linker.checks`): the exception is the check's own type, its message the check's followed
    by the chains.
    """
    codes = gathered(failures)
    failed = np.flatnonzero(codes != PASSED)
    if not failed.size:
        return
    code = codes[failed[0]]
    exc_type, message = checks.entries()[code]
    chains = failed[codes[failed] == code].tolist()
    others = failed[codes[failed] != code].tolist()
    where = f"chain {chains[0]}" if len(chains) == 1 else f"chains {chains}"
    also = f"; chains {others} failed other checks" if others else ""
    raise exc_type(f"{message} (failed in {where} of {codes.size}{also}; the call returned nothing)")


def chain_spec(mesh: Mesh, axis: int | None) -> PartitionSpec:
    """How a value whose chain axis is ``axis`` lies on ``mesh``: split along it (0), or replicated (``None``)."""
    return PartitionSpec(tuple(mesh.axis_names)) if axis == 0 else PartitionSpec()


def chain_mesh(mesh: Mesh | Sequence[Any] | None) -> Mesh | None:
    """``mesh`` as a `Mesh`: a list of devices becomes a one-axis mesh (`CHAIN_AXIS`)."""
    if mesh is None or isinstance(mesh, Mesh):
        return mesh
    if isinstance(mesh, Sequence) and mesh and all(isinstance(device, jax.Device) for device in mesh):
        return Mesh(np.array(mesh), (CHAIN_AXIS,))
    raise TypeError(f"mesh= takes a jax.sharding.Mesh or a non-empty list of jax devices, not {mesh!r}")


def chain_count(n_chains: Any) -> int:
    """``n_chains`` as a positive Python int; `TypeError` or `ValueError` naming it otherwise."""
    if isinstance(n_chains, bool) or not isinstance(n_chains, (int, np.integer)):
        raise TypeError(f"n_chains must be an int, not {type(n_chains).__name__} ({n_chains!r})")
    if n_chains < 1:
        raise ValueError(f"n_chains must be at least 1, not {n_chains}")
    return int(n_chains)


def chain_span(chains: slice | None, n_chains: int) -> tuple[int, int]:
    """The chains ``chains`` selects of ``n_chains`` as ``(start, stop)``: all for ``None``; `TypeError` or
    `ValueError` for anything but a non-empty slice of step 1."""
    if chains is None:
        return 0, n_chains
    if not isinstance(chains, slice) or chains.step not in (None, 1):
        raise TypeError(f"chains= takes a slice of step 1 of the run's chains, e.g. slice(0, 8), not {chains!r}")
    start, stop, _ = chains.indices(n_chains)
    if stop <= start:
        raise ValueError(f"chains={chains!r} selects no chain of n_chains={n_chains}")
    return start, stop


def rows_of(arguments: Any, axes: Any, span: tuple[int, int], n_chains: int) -> Any:
    """``arguments`` with each per-chain value (chain axis 0 in ``axes``) cut to the rows of ``span``."""
    if span == (0, n_chains):
        return arguments
    cut = lambda axis, value: value if axis is None else value[span[0] : span[1]]
    return jax.tree.map(cut, axes, arguments, is_leaf=lambda a: a is None)


def chain_axis(what: str, value: Any, ndim: int, n_chains: int) -> int | None:
    """0 if ``value`` is one per chain (one more dimension than ``ndim``, ``n_chains`` long), ``None`` if shared."""
    shape = jnp.shape(value)
    if len(shape) == ndim:
        return None
    if len(shape) != ndim + 1:
        raise ValueError(
            f"{what} has shape {shape}: give it {ndim} dimension(s) to share it between the chains, or "
            f"{ndim + 1} with a leading axis of n_chains={n_chains} for one per chain"
        )
    if shape[0] != n_chains:
        raise ValueError(f"{what} has {shape[0]} rows along its chain axis (shape {shape}), not n_chains={n_chains}")
    return 0


def variable_ndim(var: Variable) -> int:
    """The number of dimensions of ``var``'s values (0 for a scalar)."""
    return getattr(var.type, "ndim", 0)


def is_key(value: Any) -> bool:
    """Whether ``value`` is a typed PRNG key (array)."""
    return jnp.issubdtype(jnp.result_type(value), jax.dtypes.prng_key)


def as_impl(key: Any, impl: Any) -> Any:
    """``key`` as a key of ``impl``, which draws the same bits (its data wrapped again)."""
    if jax.random.key_impl(key) == impl:
        return key
    return jax.random.wrap_key_data(jax.random.key_data(key), impl=impl)


def checked_key(key: Any, impls: dict[str, Any]) -> Any:
    """``key`` (a typed key, or raw ``uint32`` key data) as a typed key that seeds the random states ``impls``.

    Raw data is taken as data of the first state's implementation, as JAX
    takes it as its default one's. `TypeError` for a key of another kind, or
    of an implementation whose bits differ from a state's; `ValueError` for
    a key that is not one key (shape ``()``).
    """
    first = next(iter(impls.values()))
    if isinstance(key, (jax.Array, np.ndarray)) and is_key(key):
        typed = key
    elif isinstance(key, (jax.Array, np.ndarray)) and jnp.result_type(key) == np.uint32:
        data_shape = jax.random.key_data(jax.random.key(0, impl=first)).shape
        if key.shape != data_shape:
            raise ValueError(
                f"key is raw key data of shape {key.shape}; one key of {first} has data of shape {data_shape}"
            )
        typed = jax.random.wrap_key_data(key, impl=first)
    else:
        kind = f"{type(key).__name__} of dtype {jnp.result_type(key)}" if hasattr(key, "dtype") else repr(key)
        raise TypeError(f"key must be a PRNG key (jax.random.key(seed)) or its raw uint32 data, not {kind}")
    if typed.shape != ():
        raise ValueError(
            f"key must be one PRNG key (shape ()), not keys of shape {typed.shape}: every chain's key is split from "
            "it (to give each chain its random states, pass them in state=)"
        )
    impl = str(jax.random.key_impl(typed))
    for name, state_impl in impls.items():
        if bits_of(impl) != bits_of(str(state_impl)):
            raise TypeError(
                f"key is a key of {impl}, which cannot seed the random state {name!r} of {state_impl}: "
                f"make it with jax.random.key(seed, impl={bits_of(str(state_impl))!r})"
            )
    return typed
