"""Forward-only work is counted, not kept (autodiff.trace._compact): what goes, what stays,
and that what stays reads as a recording without the forward-only work would."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Variable, models, no_grad
from autodiff.trace import ForwardOnly, Trace, forward_only_note


@pytest.fixture(autouse=True)
def _no_collector():
    # the engine's graphs die by reference counting, as in the script worker
    was = gc.isenabled()
    gc.disable()
    yield
    if was:
        gc.enable()


def _recording(sample: int = 0) -> tuple[Trace, ForwardOnly]:
    t = Trace(4096)
    summary = ForwardOnly(sample)
    t.tables.forward_only = summary
    t._start()
    return t, summary


def _train(x: Variable, steps: int) -> list[float]:
    losses = []
    for _ in range(steps):
        loss = F.sin(x) * x
        x.cleargrad()
        loss.backward()
        losses.append(float(loss.data))
        x.data = x.data - 0.1 * x.grad.data
    return losses


def test_throwaway_operations_are_counted_and_the_passes_stay_as_recorded():
    x = Variable(np.array(1.0), name="x")
    t, summary = _recording()
    for _ in range(500):
        F.exp(x)
    losses = _train(x, 3)
    t.tables.compact()
    t._stop()
    assert summary.operations == 500
    assert summary.graphs == 500
    assert dict(summary.ops) == {"Exp": 500}
    # what stays: the three passes' steps only, with the values the program computed
    ops = [s.op for s in t.steps if s.phase == "forward"]
    assert ops == ["Sin", "Mul"] * 3
    assert len(t.backward_roots) == 3
    for k, root in enumerate(t.backward_roots):
        made = [s for s in t.steps if s.phase == "forward" and root in s.outputs]
        assert float(made[0].values[0].array) == losses[k]


def test_a_live_graph_is_kept_and_counted_once_it_dies():
    x = Variable(np.array(0.5), name="x")
    t, summary = _recording()
    held = F.tanh(F.exp(x))  # forward only, but the program still holds it
    for _ in range(10):
        F.sin(x)
    assert t.tables.compact() == 10
    assert summary.operations == 10
    del held
    for _ in range(5):
        F.cos(x)
    t.tables.compact()
    t._stop()
    assert summary.operations == 17
    assert summary.ops["Exp"] == 1 and summary.ops["Tanh"] == 1 and summary.ops["Cos"] == 5
    assert summary.graphs == 16  # exp -> tanh is one graph


def test_a_chain_whose_end_is_alive_is_kept_whole():
    x = Variable(np.array(0.3), name="x")
    t, summary = _recording()
    y = x
    for _ in range(20):
        y = F.sin(y)
    end = y
    del y
    t.tables.compact()
    t._stop()
    assert summary.operations == 0
    assert len(t.steps) == 20
    assert float(t.steps[-1].values[0].array) == float(end.data)


def test_steps_a_backward_reached_stay_after_their_graph_is_freed():
    x = Variable(np.array(2.0), name="x")
    t, summary = _recording()
    _train(x, 2)  # each pass's graph dies when the next loss replaces it
    t.tables.compact()
    t._stop()
    assert summary.operations == 0
    assert [s.phase for s in t.steps].count("backward") == 4


def test_a_forward_run_through_parameters_is_named_an_evaluation():
    np.random.seed(0)
    model = models.MLP((4, 1))
    x = np.random.rand(8, 2)
    t, summary = _recording()
    for _ in range(6):  # an evaluation loop without no_grad()
        F.sum(model(x))
    with no_grad():  # not recorded at all
        F.sum(model(x))
    t.tables.compact()
    t._stop()
    assert summary.graphs == 6
    assert summary.through_parameters == 6
    note = forward_only_note(summary.as_dict())
    assert "6 of these graphs ran Parameters without no_grad()" in note
    assert "with no_grad():" in note


def test_module_scopes_of_removed_graphs_go_with_them():
    np.random.seed(0)
    model = models.MLP((4, 1))
    x = np.random.rand(8, 2)

    def scope_rows(forwards: int) -> int:
        t, _ = _recording()
        for _ in range(forwards):
            F.sum(model(x))
        t.tables.compact()
        t._stop()
        return len(t.tables._scopes)

    # the root and the scopes the parameters were first registered in: not one per forward
    assert scope_rows(2) == scope_rows(40) <= 4


def test_the_first_graphs_are_kept_whole_as_the_sample():
    x = Variable(np.array(1.0), name="x")
    t, summary = _recording(sample=2)
    for k in range(6):
        F.mul(F.sin(x), float(k + 1))
    t.tables.compact()
    t._stop()
    assert summary.sampled == 2 and summary.graphs == 4 and summary.operations == 8
    roots = t.tables.forward_samples
    assert len(roots) == 2
    for k, root in enumerate(roots):
        step = next(s for s in t.steps if root in s.outputs)
        assert step.op == "Mul"
        assert float(step.values[0].array) == pytest.approx(np.sin(1.0) * (k + 1))


def test_no_summary_no_compaction():
    x = Variable(np.array(1.0))
    t = Trace(4096)
    t._start()
    for _ in range(10):
        F.sin(x)
    assert t.tables.compact() == 0
    t._stop()
    assert len(t.steps) == 10


@pytest.mark.parametrize(
    "summary",
    [
        None,
        {},
        {"operations": 0},
        {"operations": "many"},
        {"operations": 3, "ops": "Sin"},
    ],
)
def test_a_missing_or_malformed_summary_makes_no_line(summary):
    assert forward_only_note(summary) == ""
