"""The "AEJAX" mode behaves as an Aesara mode: refined, cloned, made the default, pickled."""

import pickle

import aesara
import aesara.tensor as at
import numpy as np
import pytest
from aesara.compile.mode import Mode, get_default_mode
from aesara.raise_op import assert_op

import aejax.linker
from aejax.linker import JAXCodecLinker


def _rewritten_ops(mode):
    x = at.dvector("x")
    f = aesara.function([x], at.log(1 + x), mode=mode)
    return f, {type(node.op.scalar_op).__name__ for node in f.maker.fgraph.apply_nodes if hasattr(node.op, "scalar_op")}


@pytest.mark.parametrize(
    "refine",
    [
        lambda m: m.including("local_remove_all_assert"),
        lambda m: m.excluding("local_log1p"),
        lambda m: m.requiring("fast_run"),
        lambda m: m.clone(),
    ],
    ids=["including", "excluding", "requiring", "clone"],
)
def test_refined_modes_keep_the_linker_and_compute(refine):
    refined = refine(aejax.linker.mode)
    assert isinstance(refined.linker, JAXCodecLinker)
    f, _ = _rewritten_ops(refined)
    np.testing.assert_allclose(f(np.array([1.0, 2.0])), np.log1p([1.0, 2.0]))


def test_excluding_a_rewrite_keeps_its_pattern_in_the_graph():
    _, rewritten = _rewritten_ops(aejax.linker.mode)
    _, kept = _rewritten_ops(aejax.linker.mode.excluding("local_log1p"))
    assert rewritten == {"Log1p"}
    assert kept == {"Add", "Log"}


def test_default_mode_set_to_aejax_can_be_refined(monkeypatch):
    monkeypatch.setattr(aesara.config, "mode", aejax.linker.mode)
    refined = get_default_mode().excluding("local_log1p")
    assert isinstance(refined.linker, JAXCodecLinker)
    x = at.dvector("x")
    f = aesara.function([x], x * 2)
    assert isinstance(f.maker.linker, JAXCodecLinker)
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])


def test_mode_pickles():
    restored = pickle.loads(pickle.dumps(aejax.linker.mode))
    assert isinstance(restored.linker, JAXCodecLinker)
    x = at.dvector("x")
    np.testing.assert_array_equal(aesara.function([x], x + 1, mode=restored)(np.zeros(2)), [1.0, 1.0])


@pytest.mark.parametrize("mode", ["FAST_COMPILE", aejax.linker.mode], ids=["reference", "aejax"])
def test_pickled_function_computes_and_updates_its_shared_variables(mode):
    x = at.dvector("x")
    total = aesara.shared(np.float64(1.0), name="total")
    f = aesara.function([x], x.sum() * total, updates={total: total + x.sum()}, mode=mode)
    f(np.ones(2))
    g = pickle.loads(pickle.dumps(f))
    results = [g(np.arange(3.0)) for _ in range(2)]
    np.testing.assert_allclose(results, [9.0, 18.0])
    assert g.input_storage[-1].data == pytest.approx(9.0)
    assert total.get_value() == pytest.approx(3.0)


def test_pickled_function_with_a_random_stream_keeps_drawing():
    srng = at.random.RandomStream(3)
    f = aesara.function([], srng.normal(size=4), mode=aejax.linker.mode)
    f()
    g = pickle.loads(pickle.dumps(f))
    first, second = g(), g()
    assert first.shape == (4,) and not np.allclose(first, second)
    h = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(h(), first)


@pytest.mark.parametrize(
    "scan_mode, asserts_kept",
    [
        (Mode().including("local_remove_all_assert"), False),
        (Mode(optimizer="unsafe"), False),
        (aejax.linker.mode.including("local_remove_all_assert"), False),
        (Mode(optimizer="fast_run"), True),
        (None, True),
    ],
    ids=["Mode including", "unsafe optimizer", "AEJAX including", "fast_run", "default"],
)
def test_a_scan_steps_with_the_rewrites_its_own_mode_asks_for(scan_mode, asserts_kept):
    """Aesara compiles a Scan's step with the Scan's mode; the assert it removes is gone on AEJAX too."""
    start = at.dscalar("start")
    trace, _ = aesara.scan(lambda v: assert_op(v - 1.0, v > 0), outputs_info=[start], n_steps=3, mode=scan_mode)
    reference = aesara.function([start], trace, mode="FAST_COMPILE")
    ours = aesara.function([start], trace, mode=aejax.linker.mode)
    np.testing.assert_array_equal(ours(5.0), reference(5.0))
    if asserts_kept:
        for f in (reference, ours):
            with pytest.raises(AssertionError):
                f(1.0)
    else:
        np.testing.assert_array_equal(ours(1.0), reference(1.0))
