"""Progress bars moved from inside compiled loops (`AejaxMode.with_progress`, `aejax.linker.scan.progress`)."""

import pickle
import sys

import aesara
import aesara.tensor as at
import jax
import numpy as np
import pytest
from aesara.graph.basic import Apply
from aesara.graph.op import Op
from aesara.scan.utils import until
from aesara.tensor.random.utils import RandomStream

import aejax.linker
from aejax.linker import CallbackWarning
from aejax.linker.export import exported
from tests.reference import REFERENCE


class Bars:
    """Makes bars that record, in order, each bar opened, each move and each close (the bar tqdm would show)."""

    def __init__(self):
        self.events = []

    def __call__(self, total, desc):
        self.events.append(("open", total, desc))
        return self

    def update(self, steps):
        self.events.append(("update", steps))

    def close(self):
        self.events.append(("close",))

    def moves(self):
        return [event[1] for event in self.events if event[0] == "update"]


def recurrence(n_steps):
    """A loop with a sequence, a sit-sot and a nit-sot: the chunks must split and join all of them."""
    x0 = at.dscalar("x0")
    seq = at.dvector("seq")
    (trace, doubled), _ = aesara.scan(
        lambda s, x: (at.sin(x) * 0.9 + s, 2 * x), sequences=seq, outputs_info=[x0, None], n_steps=n_steps, name="rec"
    )
    return [x0, seq], [trace, doubled]


def with_bars(inputs, outputs, bars, every=None, min_seconds=0.5, **kwargs):
    mode = aejax.linker.mode.with_progress(every, bars, min_seconds=min_seconds)
    return aesara.function(inputs, outputs, mode=mode, **kwargs)


def test_the_bar_moves_every_k_steps_before_the_call_returns_and_the_values_are_the_reference_ones():
    bars = Bars()
    inputs, outputs = recurrence(1003)
    f = with_bars(inputs, outputs, bars, every=100)
    seq = np.linspace(0, 1, 1003)
    got = f(0.5, seq)
    assert bars.events == [("open", 1003, "rec"), *[("update", 100)] * 10, ("update", 3), ("close",)]
    expected = aesara.function(inputs, outputs, mode=REFERENCE)(0.5, seq)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)
    f(0.1, seq)
    assert bars.events[13:] == bars.events[:13]  # a bar for each call


def test_calls_too_short_to_watch_run_without_bars_until_one_takes_longer():
    bars = Bars()
    inputs, outputs = recurrence(1000)
    f = with_bars(inputs, outputs, bars, every=100)
    reference = aesara.function(inputs, outputs, mode=REFERENCE)
    opened = []
    for call, x0 in enumerate(np.linspace(0.1, 0.9, 7)):
        seq = np.full(1000, x0 / 10)
        if call == 4:
            f.vm.jit_fn.min_seconds = 0.0  # every call now counts as long: the next one has bars again
        got = f(x0, seq) if call % 2 else f(x0=x0, seq=seq)  # the direct call and Aesara's path
        for g, e in zip(got, reference(x0, seq)):
            np.testing.assert_allclose(g, e, rtol=1e-12)
        opened.append(sum(event[0] == "open" for event in bars.events))
    # 1: compiles, with bars; 2: timed, short; 3 and 4: without (3 compiles the twin); 5: timed, long; 6, 7: bars
    assert opened == [1, 2, 2, 2, 2, 3, 4]


def test_with_min_seconds_zero_every_call_has_its_bar():
    bars = Bars()
    inputs, outputs = recurrence(50)
    f = with_bars(inputs, outputs, bars, every=10, min_seconds=0)
    for _ in range(4):
        f(0.5, np.zeros(50))
    assert bars.moves() == [10] * 20


@pytest.mark.parametrize("seconds", [-1, "1", None, float("nan"), True])
def test_min_seconds_must_be_a_number_of_seconds(seconds):
    with pytest.raises(ValueError, match="min_seconds"):
        aejax.linker.mode.with_progress(bar=Bars(), min_seconds=seconds)


class Seen(Op):
    """The identity, run on the host (no JAX lowering): each step it runs in records ``("step",)`` in ``events``."""

    def __init__(self, events):
        self.events = events

    def make_node(self, x):
        x = at.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        self.events.append(("step",))
        outputs[0][0] = inputs[0].copy()


def test_the_bar_moves_inside_the_loop_right_after_the_steps_it_reports():
    bars = Bars()
    x0 = at.dscalar("x0")
    trace, _ = aesara.scan(lambda x: Seen(bars.events)(x * 0.5), outputs_info=x0, n_steps=25, name="seen")
    with pytest.warns(CallbackWarning):
        f = with_bars([x0], trace, bars, every=10)
        f(1.0)
    steps = [("step",)] * 10
    assert (
        bars.events
        == [
            *steps,
            ("open", 25, "seen"),  # at the first move
            ("update", 10),
            *steps,
            ("update", 10),
            *steps[:5],
            ("update", 5),
            ("close",),
        ]
    )


def test_without_every_the_bar_moves_twenty_times():
    bars = Bars()
    inputs, outputs = recurrence(1000)
    with_bars(inputs, outputs, bars)(0.5, np.zeros(1000))
    assert bars.moves() == [50] * 20


def test_a_loop_shorter_than_every_moves_once():
    bars = Bars()
    inputs, outputs = recurrence(7)
    with_bars(inputs, outputs, bars, every=100)(0.5, np.zeros(7))
    assert bars.moves() == [7]


def stablehlo(f, *args):
    graph = exported(f)
    return jax.jit(graph.fn).lower(graph.state, *args).as_text()


def test_off_the_program_is_the_one_without_the_option():
    inputs, outputs = recurrence(1000)
    args = (0.5, np.zeros(1000))
    plain = stablehlo(aesara.function(inputs, outputs, mode=aejax.linker.mode), *args)
    off = aejax.linker.mode.with_progress(every=10, bar=Bars()).with_progress(False)
    assert off.progress is None
    assert stablehlo(aesara.function(inputs, outputs, mode=off), *args) == plain
    assert "callback" not in plain
    assert "callback" in stablehlo(with_bars(inputs, outputs, Bars(), every=10), *args)


def test_one_bar_for_all_chains_under_vmap():
    bars = Bars()
    srng = RandomStream(4)
    x0 = at.dscalar("x0")
    walk, updates = aesara.scan(lambda x: x + srng.normal(0.0, 1.0), outputs_info=x0, n_steps=120)
    graph = exported(with_bars([x0], walk, bars, every=50, updates=updates))
    keys = jax.random.split(graph.state["rng_0"], 6)
    paths, _ = jax.jit(jax.vmap(graph.fn))({"rng_0": keys}, np.zeros(6))
    assert paths.shape == (6, 120) and len({p.tobytes() for p in np.asarray(paths)}) == 6
    assert bars.moves() == [50, 50, 20]


def test_only_the_outermost_fixed_loop_has_a_bar():
    bars = Bars()
    x0 = at.dscalar("x0")

    def outer(x):
        inner, _ = aesara.scan(lambda y: y * 0.5 + 1, outputs_info=x, n_steps=7)
        return inner[-1]

    trace, _ = aesara.scan(outer, outputs_info=x0, n_steps=30, name="outer")
    f = with_bars([x0], trace, bars, every=10)
    np.testing.assert_allclose(f(2.0), aesara.function([x0], trace, mode=REFERENCE)(2.0), rtol=1e-12)
    assert bars.events == [("open", 30, "outer"), *[("update", 10)] * 3, ("close",)]


def test_an_until_loop_has_no_bar():
    bars = Bars()
    x0 = at.dscalar("x0")
    trace, _ = aesara.scan(lambda x: (x / 2, until(x < 1)), outputs_info=x0, n_steps=100)
    f = with_bars([x0], trace[-1], bars, every=10)
    assert f(1000.0) == aesara.function([x0], trace[-1], mode=REFERENCE)(1000.0)
    assert bars.events == []


def test_the_gradient_loop_has_its_own_bar_and_the_reference_values():
    bars = Bars()
    x0, w = at.dscalar("x0"), at.dscalar("w")
    trace, _ = aesara.scan(lambda x: at.tanh(w * x) + 0.1, outputs_info=x0, n_steps=45)
    grads = aesara.grad(trace.sum(), [x0, w])
    got = with_bars([x0, w], grads, bars, every=20)(0.3, 0.9)
    expected = aesara.function([x0, w], grads, mode=REFERENCE)(0.3, 0.9)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    bar = [("update", 20), ("update", 20), ("update", 5), ("close",)]
    assert bars.events == [("open", 45, "scan_fn"), *bar, ("open", 45, "grad_of_scan_fn"), *bar]


def test_the_default_bar_is_tqdms(capsys):
    inputs, outputs = recurrence(200)
    aesara.function(inputs, outputs, mode=aejax.linker.mode.with_progress())(0.5, np.zeros(200))
    assert "200/200" in capsys.readouterr().err


def test_without_tqdm_asking_for_progress_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match=r"pip install 'aejax\[progress\]'"):
        aejax.linker.mode.with_progress()
    assert aejax.linker.mode.with_progress(bar=Bars()).progress.every is None  # a bar of one's own needs no tqdm


@pytest.mark.parametrize(("every", "error"), [(0, ValueError), (-3, ValueError), (2.5, TypeError), ("10", TypeError)])
def test_every_must_be_a_positive_number_of_steps(every, error):
    with pytest.raises(error, match="every"):
        aejax.linker.mode.with_progress(every)


def test_a_mode_with_progress_pickles():
    mode = pickle.loads(pickle.dumps(aejax.linker.mode.with_progress(every=7)))
    assert mode.progress.every == 7
