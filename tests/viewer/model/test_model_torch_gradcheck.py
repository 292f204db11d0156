"""Check Gradients on a program's own ``torch.autograd.Function``: ``torch.autograd.gradcheck``
in float64 on the first inputs of each class, at a pass's end within the run's check budget;
the pass flagged and the rows reported as the project's own check reports an autodiff
Function, through the script worker (``Document.run_script``) and Ctrl+G
(``check_document``)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from autodiff.trace import pytorch  # noqa: E402
from viewer.model import Document  # noqa: E402
from viewer.model.checks.function_check import FunctionSampler  # noqa: E402
from viewer.model.checks.gradcheck import (  # noqa: E402
    TORCH_NOTE,
    check_trace,
    torch_unreachable_reason,
)
from viewer.model.checks.torch_check import FunctionInputs, gradcheck_function  # noqa: E402
from viewer.model.document import gradient_checks  # noqa: E402
from viewer.model.scripts.pass_sampling import FLAG_GRADCHECK, FLAG_UNCHECKED  # noqa: E402


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x


class HalfSquare(torch.autograd.Function):
    """x² with the factor 2 missing from its backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x


class ScaledProduct(torch.autograd.Function):
    """k · a · b, right for ``a``, wrong for ``b`` (its gradient has k twice)."""

    @staticmethod
    def forward(ctx, a, b, k):
        ctx.save_for_backward(a, b)
        ctx.k = k
        return a * b * k

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b * ctx.k, g * a * ctx.k * ctx.k, None


class Pick(torch.autograd.Function):
    """x[index]: an integer input beside the differentiable one."""

    @staticmethod
    def forward(ctx, x, index):
        ctx.save_for_backward(index)
        ctx.size = x.shape[0]
        return x[index]

    @staticmethod
    def backward(ctx, g):
        (index,) = ctx.saved_tensors
        gx = torch.zeros(ctx.size, dtype=g.dtype)
        gx.index_add_(0, index, g)
        return gx, None


class Positives(torch.autograd.Function):
    """How many entries are positive: an integer output, nothing to differentiate."""

    @staticmethod
    def forward(ctx, x):
        return (x > 0).sum()

    @staticmethod
    def backward(ctx, g):
        return None


def _x(*values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


# ----------------------------------------------------------------------------- one Function
def test_a_correct_backward_passes_gradcheck_with_the_projects_figures():
    status, slots, message = gradcheck_function(Square, (_x(1.0, -2.0, 0.5),))
    assert status == "ok", message
    assert "torch.autograd.gradcheck passed" in message
    (slot,) = slots
    assert slot.slot == 0 and slot.comparison.status == "ok"
    assert slot.comparison.max_abs_error < 1e-8
    assert slot.comparison.method == "elementwise"


def test_a_wrong_backward_fails_and_names_the_input_with_backprop_against_numeric():
    x = _x(1.0, -2.0, 0.5)
    status, slots, message = gradcheck_function(HalfSquare, (x,))
    assert status == "wrong"
    assert "HalfSquare.backward disagrees with torch.autograd.gradcheck" in message
    assert "for input 0" in message
    (slot,) = slots
    cmp = slot.comparison
    # with a random gy, backprop gives gy·x where central differences give 2·gy·x
    np.testing.assert_allclose(cmp.numeric, 2 * cmp.analytic, rtol=1e-6)
    assert cmp.max_abs_error == pytest.approx(np.max(np.abs(cmp.analytic)), rel=1e-6)
    assert "backprop [" in message and "numeric [" in message


def test_the_failing_input_is_named_among_several_and_plain_arguments_pass_through():
    a, b = _x(1.0, 2.0), _x(3.0, -1.0)
    status, slots, message = gradcheck_function(ScaledProduct, (a, b, 3.0))
    assert status == "wrong"
    assert "for input 1" in message
    by_slot = {s.slot: s.comparison.status for s in slots}
    assert by_slot == {0: "ok", 1: "wrong"}


def test_an_integer_input_is_passed_as_it_is_and_the_float_one_checked():
    x = _x(1.0, 2.0, 3.0)
    status, slots, message = gradcheck_function(Pick, (x, torch.tensor([2, 0, 2])))
    assert status == "ok", message
    assert [s.slot for s in slots] == [0]


def test_no_gradient_to_check_is_skipped_with_why_not_failed():
    status, slots, message = gradcheck_function(Positives, (_x(1.0, -1.0),))
    assert status == "skipped" and slots == ()
    assert "not differentiable" in message
    status, _, message = gradcheck_function(Square, (torch.tensor([1.0, 2.0]),))
    assert status == "skipped"
    assert "no floating-point input that requires grad" in message


def test_a_backward_that_raises_is_wrong():
    class Broken(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("not written yet")

    status, _, message = gradcheck_function(Broken, (_x(1.0),))
    assert status == "wrong"
    assert "Broken.backward raised ValueError: not written yet" in message


def test_a_random_forward_is_skipped_and_the_programs_random_numbers_are_left_alone():
    class Noisy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * torch.rand_like(x)

        @staticmethod
        def backward(ctx, g):
            return g

    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    status, _, message = gradcheck_function(Noisy, (_x(1.0, 2.0),))  # it drew numbers
    assert status == "skipped" and "random" in message
    x = torch.linspace(-1, 1, 200, dtype=torch.float64).requires_grad_()
    assert gradcheck_function(Square, (x,))[0] == "ok"  # (fast_mode: random directions)
    assert torch.equal(torch.rand(4), expected)


def test_big_inputs_go_to_gradchecks_fast_mode_and_still_catch_the_error():
    x = torch.linspace(-1, 1, 200, dtype=torch.float64).requires_grad_()
    status, slots, _ = gradcheck_function(HalfSquare, (x,))
    assert status == "wrong" and slots[0].comparison.method == "directional"
    assert gradcheck_function(Square, (x,))[0] == "ok"


# ----------------------------------------------------------------------------- capturing inputs
def test_only_the_first_call_of_each_own_class_is_copied_in_float64():
    sampler = FunctionSampler()
    inputs = FunctionInputs(sampler, max_elements=100)
    x = torch.tensor([1.0, 2.0], requires_grad=True)  # float32: the copy is float64
    inputs.start()
    try:
        for _ in range(3):
            Square.apply(x).sum().backward()
        # torch's own Functions are no program's code: not queued
        torch.utils.checkpoint.checkpoint(torch.sin, x, use_reentrant=True).sum().backward()
    finally:
        inputs.stop()
    assert [q[0] for q in sampler._queued] == [Square]
    (arrays,) = [q[2] for q in sampler._queued]
    assert arrays[0].dtype == np.float64 and arrays[0].tolist() == [1.0, 2.0]
    sampler.run_queued()
    (sample,) = sampler.samples[Square]
    assert sample.torch and sample.result[0] == "ok"
    assert sampler.for_op("Square") == [] and sampler.for_op("Square", torch=True) == [sample]


def test_apply_is_restored_and_inputs_over_the_size_limit_are_not_copied():
    original = torch.autograd.Function.__dict__["apply"]
    sampler = FunctionSampler()
    inputs = FunctionInputs(sampler, max_elements=10)
    inputs.start()
    assert torch.autograd.Function.__dict__["apply"] is not original
    try:
        Square.apply(torch.ones(11, requires_grad=True))
        Pick.apply(torch.ones(3), torch.tensor([0]))  # nothing requires grad: waits
        sparse = torch.eye(2).to_sparse().requires_grad_()
        HalfSquare.apply(sparse)  # no float64 copy of it: the program's call still runs
    finally:
        inputs.stop()
    assert torch.autograd.Function.__dict__["apply"] is original
    sampler.run_queued()
    status, _, message = sampler.samples[Square][0].result
    assert status == "skipped" and "11 elements, over max_array_size (10)" in message
    status, _, message = sampler.samples[HalfSquare][0].result
    assert status == "skipped" and "could not be copied" in message
    status, _, message = sampler.samples[Pick][0].result
    assert status == "skipped" and "never called with a floating-point input" in message


def test_the_check_budget_leaves_a_pass_unchecked_and_checks_later():
    now = [0.0]
    sampler = FunctionSampler(budget=0.2, clock=lambda: now[0])
    sampler.priority = False
    sampler._spent = 10.0  # the checks took far more than 20% of the run so far
    sampler.queue_check(HalfSquare, lambda: gradcheck_function(HalfSquare, (_x(1.0),)), ())
    now[0] = 1.0
    sampler.run_queued()
    assert sampler.end_pass() == () and sampler.last_pass_missed
    assert HalfSquare not in sampler.samples
    now[0] = 100.0  # the run went on without checks: the budget has room again
    sampler.run_queued()
    assert sampler.end_pass() == ("HalfSquare",) and not sampler.last_pass_missed


# ----------------------------------------------------------------------------- through a script
SCRIPT = textwrap.dedent(
    """
    import torch

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return {backward}

    class Positives(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x > 0).sum()

        @staticmethod
        def backward(ctx, g):
            return None

    class Bucket(torch.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            return i // 2

        @staticmethod
        def backward(ctx, g):
            return None

    w = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5]))
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(3):
        opt.zero_grad()
        count = Positives.apply(w)
        buckets = Bucket.apply(torch.arange(4))
        loss = (torch.tanh(Square.apply(w)) * 3).sum()
        loss.backward()
        opt.step()
    print("positives", int(count), "buckets", buckets.tolist())
    """
)


def _run(tmp_path: Path, backward: str) -> Document:
    path = tmp_path / "custom.py"
    path.write_text(SCRIPT.format(backward=backward))
    doc = Document()
    gradient_checks.watch_scripts(doc)
    assert doc.run_script(path)
    assert doc.script_result.ok, doc.script_result.error
    # the script's globals (reached through its classes' static methods) are cleared after the
    # run: its last loss is not taken for a leak
    assert doc.script_result.leak_report.survivors == []
    return doc


def test_a_wrong_custom_function_flags_its_pass_and_ctrl_g_names_it(tmp_path):
    doc = _run(tmp_path, "g * x  # the factor 2 is missing")
    result = doc.script_result
    flags = result.passes.flags
    # checked once, on its first inputs, at the end of the first pass
    assert flags[0] & FLAG_GRADCHECK and not flags[0] & FLAG_UNCHECKED
    assert not any(f & FLAG_GRADCHECK for f in flags[1:])
    assert result.graphs[0].title.endswith("wrong backward: Square")
    # what the sampler sent back, as for the engine's own Functions
    samples = {cls.__name__: found for cls, found in result.samples.samples.items()}
    status, _, _ = samples["Square"][0].check()
    assert status == "wrong" and samples["Square"][0].torch
    assert samples["Square"][0].inputs[0].tolist() == [1.0, -2.0, 0.5]
    assert samples["Positives"][0].check()[0] == "skipped"
    assert "not differentiable" in samples["Positives"][0].check()[2]
    assert samples["Bucket"][0].check()[0] == "skipped"
    assert "never called with a floating-point input" in samples["Bucket"][0].check()[2]
    # Ctrl+G on the graph of the first pass
    doc.show_script_graph(0)
    report = gradient_checks.check_document(doc)
    assert report is not None and not report.ok
    assert [c.op for c in report.wrong_functions] == ["Square"]
    assert report.summary == "Gradient check: the backward of Square is wrong"
    row = report.rows()[0]
    assert row.label.startswith("Square #") and row.status == "wrong"
    assert "for input 0" in row.detail and "torch.autograd.gradcheck" in row.detail
    (square,) = report.wrong_functions
    cmp = square.worst.comparison
    np.testing.assert_allclose(cmp.numeric, 2 * cmp.analytic, rtol=1e-6)
    assert row.max_abs_error == pytest.approx(cmp.max_abs_error)
    assert math.isfinite(row.error) and row.error > 0.1
    # torch's own ops are listed as not checked, never as passed
    assert {c.status for c in report.functions if c.op != "Square"} == {"skipped"}
    assert report.notes == (TORCH_NOTE,)
    (node,) = report.flagged_node_ids
    scene = doc.scene
    badges = dict(zip(*scene.overlay_arrays("gradcheck")[::2], strict=True))
    assert badges[scene.index_of(node)] == "wrong backward"


def test_a_correct_custom_function_passes_and_no_pass_is_flagged(tmp_path):
    doc = _run(tmp_path, "2 * g * x")
    flags = doc.script_result.passes.flags
    assert not any(f & (FLAG_GRADCHECK | FLAG_UNCHECKED) for f in flags)
    report = gradient_checks.check_document(doc)
    assert report is not None and report.ok
    (square,) = [c for c in report.functions if c.op == "Square"]
    assert square.status == "ok" and square.source == "sample"
    assert square.max_abs_error < 1e-8
    assert report.summary.startswith("Gradient check passed: 1 Function agrees")


def test_ctrl_g_on_a_recording_made_here_gradchecks_the_live_class_on_its_recorded_inputs():
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    with pytorch.record() as t:
        (HalfSquare.apply(x * 1.0) + Square.apply(x)).sum().backward()
    doc = Document()
    doc.load_trace(t, "custom")
    report = gradient_checks.check_document(doc)
    assert report is not None and [c.op for c in report.wrong_functions] == ["HalfSquare"]
    by_op = {c.op: c for c in report.functions}
    assert by_op["Square"].status == "ok" and by_op["Square"].source == "live"
    half = by_op["HalfSquare"]
    assert (
        "for input 0" in half.message and "on the inputs recorded for HalfSquare #" in half.message
    )
    # the recorded inputs: x * 1.0 = [1, -2]; backprop gives gy·x, the numbers 2·gy·x
    cmp = half.worst.comparison
    np.testing.assert_allclose(cmp.numeric, 2 * cmp.analytic, rtol=1e-6)
    assert np.all(np.abs(cmp.analytic) > 0)


def test_a_custom_function_whose_inputs_were_not_all_recorded_is_not_checked_and_says_why():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytorch.record() as t:
        ScaledProduct.apply(x, torch.ones(2), 3.0).sum().backward()
    report = check_trace(t)
    (row,) = [c for c in report.functions if c.op == "ScaledProduct"]
    assert row.status == "skipped"
    assert "input 1 of ScaledProduct #" in row.message and "does not require grad" in row.message
    assert report.summary == f"Gradient check: {row.message}"


def test_a_script_whose_custom_function_could_not_be_checked_says_why_not_that_it_was(tmp_path):
    path = tmp_path / "noisy.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch

            class Noisy(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * torch.rand_like(x)

                @staticmethod
                def backward(ctx, g):
                    return g

            w = torch.nn.Parameter(torch.ones(3))
            Noisy.apply(w).sum().backward()
            """
        )
    )
    doc = Document()
    gradient_checks.watch_scripts(doc)
    assert doc.run_script(path)
    assert not doc.script_result.passes.flags[0] & FLAG_GRADCHECK
    report = gradient_checks.check_document(doc)
    (noisy,) = [c for c in report.functions if c.op == "Noisy"]
    assert noisy.status == "skipped" and "random" in noisy.message
    assert report.summary == f"Gradient check: {noisy.message}"


def test_a_saved_recording_says_its_custom_function_is_not_reachable(tmp_path):

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytorch.record() as t:
        HalfSquare.apply(x).sum().backward()
    path = tmp_path / "custom.json"
    t.to_json(path)
    doc = Document()
    assert doc.load_path(path)
    report = gradient_checks.check_document(doc)
    assert report is not None and report.functions == ()
    assert report.reason == torch_unreachable_reason(["HalfSquare"])
    assert "HalfSquare is not reachable" in report.summary and "passed" not in report.summary


def test_a_pass_whose_check_the_budget_left_out_is_flagged_unchecked(tmp_path, monkeypatch):
    from viewer.model.checks import function_check
    from viewer.model.scripts.pass_sampling import PassReservoir
    from viewer.model.scripts.run import ScriptRun

    # every check is over the budget, and no pass after the first is sure to be kept
    monkeypatch.setattr(function_check, "PASS_CHECK_GRACE", -1.0)
    monkeypatch.setattr(PassReservoir, "likely_kept", lambda self, index: False)
    path = tmp_path / "late.py"
    path.write_text(
        SCRIPT.format(backward="g * x").replace(
            "loss = (torch.tanh(Square.apply(w)) * 3).sum()",
            "loss = (torch.tanh(Square.apply(w) if step else w) * 3).sum()",
        )
    )
    run = ScriptRun(path)
    run.sample_functions = 2
    result = run.run()
    assert result.ok, result.error
    flags = result.passes.flags
    assert not flags[0] & (FLAG_GRADCHECK | FLAG_UNCHECKED)  # Square was not called yet
    assert all(f & FLAG_UNCHECKED and not f & FLAG_GRADCHECK for f in flags[1:])
    assert "backward not checked" in result.graphs[1].title
    assert Square.__name__ not in {cls.__name__ for cls in result.samples.samples}


BOTH_ENGINES = textwrap.dedent(
    """
    import numpy as np
    import torch
    from autodiff import Function, Variable
    import autodiff.functions as F

    class Square(Function):  # autodiff's, with the factor 2 missing
        def forward(self, x):
            return x * x

        def backward(self, gy):
            (x,) = self.inputs
            return gy * x

    y = F.sum(Square()(Variable(np.array([1.0, 2.0]))))
    y.backward()

    class Square(torch.autograd.Function):  # torch's, of the same name, right
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x

    w = torch.tensor([1.0, 2.0], requires_grad=True)
    Square.apply(w).sum().backward()
    """
)


def test_a_script_of_both_engines_keeps_each_engines_own_check(tmp_path):
    path = tmp_path / "both.py"
    path.write_text(BOTH_ENGINES)
    doc = Document()
    gradient_checks.watch_scripts(doc)
    assert doc.run_script(path)
    result = doc.script_result
    assert result.ok, result.error
    assert [bool(f & FLAG_GRADCHECK) for f in result.passes.flags] == [True, False]
    samples = result.samples
    # one name, two engines: each graph's op is matched to its own engine's check
    (autodiff_square,) = samples.for_op("Square")
    assert autodiff_square.check()[0] == "wrong" and not autodiff_square.torch
    (torch_square,) = samples.for_op("Square", torch=True)
    assert torch_square.check()[0] == "ok"
    doc.show_script_graph(0)
    report = gradient_checks.check_document(doc)
    assert [c.op for c in report.wrong_functions] == ["Square"]
    doc.show_script_graph(1)
    report = gradient_checks.check_document(doc)
    assert report.ok and {c.op: c.status for c in report.functions}["Square"] == "ok"
