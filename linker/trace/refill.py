"""Traced values replaced by the values the call being traced gives them, for a node that needs them concrete.

A node that fails to lower because a size it needs is traced (its outcome
is `aejax.linker.trace.outcome.NeedsStatic`) may be lowered again on concrete
values: those the call gives the inputs that may be made static, constants,
values the trace has concrete, and what `aejax.linker.trace.folding.fold`
computes from them (`concrete_from_call`). The inputs so read are recorded
(`aejax.linker.trace.call_values.CallValues.note_read`): the program is right
for their values only, which makes them its static inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from aesara.graph.basic import Apply, Constant, Variable, ancestors
from aesara.tensor.type_other import SliceType

from aejax.linker.lengths.concrete import is_traced
from aejax.linker.trace.call_values import CallValues, call_values
from aejax.linker.trace.folding import fold, foldable
from aejax.linker.trace.outcome import NeedsStatic

Known = tuple[Any, frozenset[Variable]] | None
"""A value the call tells and the inputs it is computed from; ``None`` where the call does not tell it."""


def concrete_from_call(node: Apply, need: NeedsStatic, env: MutableMapping[Variable, Any]) -> bool:
    """Put in ``env`` the call's values of what ``node`` failed to have concrete (``need``); whether the call told any.

    ``need`` names the node whose inputs are needed: ``node``, or the node
    whose bounds a `BoundsNeeded` asks for. Which of those traced inputs and
    of the values they are computed from it needed is not said: every one
    the call tells is taken. The inputs they are computed from are read
    (`CallValues.note_read`): the program is right for their values only.
    """
    values = call_values()
    if values is None:
        return False
    needed = need.error.node.inputs
    found = [_call_value(var, values, env) for var in ancestors(needed) if _traced_in(var, env)]
    read = frozenset().union(*(known[1] for known in found if known is not None))
    if not read:
        return False
    values.note_read(read, node)
    for var in list(env):  # every value the inputs read so far tell, as if they had been concrete from the start
        if _traced_in(var, env):
            known = _call_value(var, values, env)
            if known is not None and known[1] <= values.read.keys():
                env[var] = known[0]
    return True


def _traced_in(var: Variable, env: Mapping[Variable, Any]) -> bool:
    """Whether ``var``'s value in ``env`` is traced (a slice of traced bounds too)."""
    if isinstance(var, Constant) or var not in env:
        return False
    value = env[var]
    if isinstance(value, slice):
        return any(is_traced(bound) for bound in (value.start, value.stop, value.step))
    return is_traced(value)


def _call_value(var: Variable, values: CallValues, env: Mapping[Variable, Any]) -> Known:
    """``var``'s value in the call being traced and the inputs it is computed from; ``None`` if the call does not tell it.

    Known are the call's values of its inputs, constants, values the trace
    has concrete, and what `fold` computes from known values.
    """
    known = values.known
    pending = [var]
    while pending:
        top = pending[-1]
        if top in known:
            pending.pop()
            continue
        if top in values.values:
            known[top] = (values.values[top], frozenset([top]))
        elif isinstance(top, Constant):
            known[top] = (top.data, frozenset())
        elif top in env and not _traced_in(top, env):
            known[top] = (env[top], frozenset())
        elif top.owner is None:
            known[top] = None
        else:
            missing = [i for i in top.owner.inputs if i not in known]
            if missing:
                pending.extend(missing)
                continue
            known.update(_folded_from_call(top.owner, known))
        pending.pop()
    return known[var]


def _folded_from_call(node: Apply, known: Mapping[Variable, Known]) -> dict[Variable, Known]:
    """The known values of ``node``'s outputs, computed with `fold` from those of its inputs."""
    inputs = [known[var] for var in node.inputs]
    results = None
    if all(found is not None for found in inputs):
        args = [found[0] for found in inputs]
        makes_slices = all(isinstance(out.type, SliceType) for out in node.outputs)  # ``x[i:k]``'s bounds
        results = fold(node, args) if makes_slices or foldable(node, args) else None
    if results is None:
        return dict.fromkeys(node.outputs)
    read = frozenset().union(*(found[1] for found in inputs))
    return {out: (result, read) for out, result in zip(node.outputs, results)}
