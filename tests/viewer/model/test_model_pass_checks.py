"""Long runs flag the passes where a Function of the script's own fails its gradient check:
the first call of each such class in every pass is checked during the run (within a share of
the run's time), the graph list says which, the filter finds them, and they stay in the
sample."""

from __future__ import annotations

import textwrap

import numpy as np

from viewer.model.checks import gradcheck
from viewer.model.checks.function_check import FunctionSampler
from viewer.model.scripts.pass_sampling import FLAG_GRADCHECK, filter_entries
from viewer.model.scripts.run import ScriptRun

# right for x > 0, wrong for x < 0: only the passes with a negative input are flagged
_SCRIPT = """
import numpy as np
from autodiff import Function, Variable

class Square(Function):
    def forward(self, x):
        return x ** 2

    def backward(self, gy):
        x = self.inputs[0].data
        return gy * (2 * x if x > 0 else 2 * abs(x))

x = Variable(np.array(1.0), name="x")
for v in {values}:
    x.data = np.array(v)
    y = Square()(x) * 1.5
    y.backward()
    x.cleargrad()
"""
VALUES = [1.0, 2.0, -1.5, 0.5, -3.0, 2.5, 0.7, -0.2, 1.1, 0.3]


def _run(tmp_path, sample_functions=2, max_passes=4, values=VALUES):
    path = tmp_path / "s.py"
    path.write_text(textwrap.dedent(_SCRIPT.format(values=values)))
    run = ScriptRun(path)
    run.sample_functions = sample_functions
    run.max_passes = max_passes
    result = run.run()
    assert result.ok, result.error
    return result


def test_the_passes_where_the_scripts_own_function_is_wrong_are_flagged_and_kept(tmp_path):
    result = _run(tmp_path)
    flags = result.passes.flags
    wrong = [k for k, v in enumerate(VALUES) if v < 0]
    assert [k for k in range(len(VALUES)) if flags[k] & FLAG_GRADCHECK] == wrong
    kept = {g.number: g for g in result.graphs}
    assert set(wrong) <= set(kept)  # flagged: kept whatever the sample's stride
    for number, graph in kept.items():
        assert ("wrong backward: Square" in graph.title) == (number in wrong), graph.title
        assert bool(graph.flags & FLAG_GRADCHECK) == (number in wrong)
    assert [result.graphs[k].number for k in filter_entries(result.graphs, "wrong")] == wrong
    assert "wrong backward" in result.sampling
    # the check added nothing to what was recorded: two steps forward, two back, a pass
    for k in range(len(result.graphs)):
        assert len(result.view(k).steps) == 4


def test_a_flagged_pass_checks_as_wrong_in_the_app_too(tmp_path):
    """Ctrl+G on a flagged pass's graph uses the samples: the failing call is one of them,
    so the gradient panel agrees with the list (the first calls, all positive, pass)."""
    result = _run(tmp_path)
    flagged = next(k for k, g in enumerate(result.graphs) if g.flags & FLAG_GRADCHECK)
    report = gradcheck.check_trace(result.view(flagged), result.samples)
    assert [c.op for c in report.wrong_functions] == ["Square"]


def test_without_sampling_nothing_is_checked_or_flagged(tmp_path):
    result = _run(tmp_path, sample_functions=0)
    assert not (result.passes.flags & FLAG_GRADCHECK).any()
    assert all("wrong" not in g.title for g in result.graphs)


def test_the_checks_keep_to_their_share_of_the_run(monkeypatch):
    """Past the budget a pass goes unchecked, and the sampler counts it. The sampler reads a
    clock the test moves: each pass of the run takes 0.5 s, each check 0.25 s; the checks may
    add a quarter of the run's own time plus a grace of 0.125 s, so before pass k (counting
    from 0) with j checks done, the next check fits while 0.25 j <= 0.25 * 0.5 (k + 1) + 0.125,
    that is while 2 j <= k + 2: passes 0, 1 and 2, then every other pass."""
    from autodiff import Function, Variable

    class Slow(Function):
        def forward(self, x):
            return x * 2.0

        def backward(self, gy):
            return gy * 2.0

    import viewer.model.checks.function_check as fc

    now = [0.0]

    def slow_check(*args, **kwargs):
        now[0] += 0.25
        return "ok", (), "fine"

    monkeypatch.setattr(fc, "_check_at", slow_check)
    monkeypatch.setattr(fc, "PASS_CHECK_GRACE", 0.125)
    sampler = FunctionSampler(per_class=1, budget=0.25, clock=lambda: now[0])
    sampler.priority = False  # no pass of it is to be shown (a recording sets this per pass)
    x = Variable(np.array(1.0))
    checked = []
    for k in range(40):
        now[0] += 0.5  # the run's own work in pass k
        sampler.on_forward(Slow(), (x,), (), True)
        sampler.end_pass()
        if not sampler.last_pass_missed:
            checked.append(k)
    assert checked == [0, 1, 2, *range(4, 40, 2)]
    assert sampler.passes_checked == 21 and sampler.passes_unchecked == 19
    assert sampler._spent == 21 * 0.25 and now[0] == 40 * 0.5 + 21 * 0.25


def test_past_the_budget_the_passes_shown_are_still_checked_or_say_they_were_not(
    tmp_path, monkeypatch
):
    """The QA run of 20 000 passes checked 1 613 of them, and the last pass (shown first)
    read clean with a wrong backward: no flag must never stand for 'not checked'."""
    import viewer.model.checks.function_check as fc

    monkeypatch.setattr(fc, "PASS_CHECK_GRACE", -1.0)  # the budget is spent from the start
    values = [(-1.0) ** k * (1 + k % 3) for k in range(41)]
    result = _run(tmp_path, max_passes=6, values=values)
    assert result.samples.passes_unchecked > 0
    assert "gradient-checked in" in result.sampling
    for graph in result.graphs:
        negative = values[graph.number] < 0
        wrong = "wrong backward: Square" in graph.title
        unchecked = "backward not checked" in graph.title
        assert not (wrong and unchecked)
        assert wrong == (negative and not unchecked), graph.title
    checked_shown = [g for g in result.graphs if "not checked" not in g.title]
    assert len(checked_shown) >= len(result.graphs) - 1  # all but perhaps the last pass
    assert filter_entries(result.graphs, "unchecked") == [
        k for k, g in enumerate(result.graphs) if "not checked" in g.title
    ]
