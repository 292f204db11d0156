"""Gradient checks: leaves of typed expressions (with grad()), each Function locally, the
bundled wrong/right backward examples, and the overlay on the scene. No Qt."""

import math

import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Function, Variable, trace
from autodiff.core import Pow
from viewer.model import Document
from viewer.model.checks import gradcheck
from viewer.model.document import gradient_checks
from viewer.model.document.examples import find_example
from viewer.model.expression.program import parse
from viewer.model.scripts.run import ScriptRun


class Cube(Function):
    def forward(self, x):
        return x**3

    def backward(self, gy):
        (x,) = self.inputs
        return 3 * x**2 * gy


class BadCube(Function):
    def forward(self, x):
        return x**3

    def backward(self, gy):
        (x,) = self.inputs
        return x**2 * gy  # the factor 3 is missing


class BadFastPath(Cube):
    """Right on Variables (create_graph), wrong on the array fast path."""

    def backward_data(self, gy):
        (x,) = self.inputs
        return 2 * x.data**2 * gy


class WrongShape(Function):
    def forward(self, x):
        return x.sum()

    def backward(self, gy):
        return gy  # should be broadcast to the input's shape


def _script_document():
    doc = Document()
    gradient_checks.watch_scripts(doc)
    return doc


# ----------------------------------------------------------------------------- one Function
def test_check_function_passes_a_correct_backward_and_keeps_small_arrays():
    x = np.array([0.5, -1.5, 2.0])
    check = gradcheck.check_function(Cube(), x)
    assert check.status == "ok"
    (slot,) = check.slots
    assert slot.path == "backward" and slot.comparison.method == "elementwise"
    assert slot.comparison.error < 1e-6
    # the report keeps both arrays for small inputs: <gy, 3x^2> per element
    np.testing.assert_allclose(slot.comparison.analytic, slot.comparison.numeric, rtol=1e-6)


def test_check_function_flags_a_wrong_backward_with_figures():
    check = gradcheck.check_function(BadCube(), np.array([0.5, -1.5, 2.0]))
    assert check.status == "wrong"
    cmp = check.worst.comparison
    assert cmp.status == "wrong" and cmp.error > 0.1
    # backprop is a third of the truth everywhere
    np.testing.assert_allclose(cmp.analytic * 3, cmp.numeric, rtol=1e-6)
    assert "BadCube.backward disagrees" in check.message


def test_check_function_checks_the_array_fast_path_too():
    check = gradcheck.check_function(BadFastPath(), np.array([1.0, 2.0]))
    assert check.status == "wrong"
    by_path = {s.path: s.comparison.status for s in check.slots}
    assert by_path == {"backward": "ok", "backward_data": "wrong"}


def test_check_function_uses_the_objects_parameters_and_big_inputs_go_directional():
    x = np.random.default_rng(0).standard_normal((12, 10))
    check = gradcheck.check_function(Pow(3), x)
    assert check.status == "ok"
    cmp = check.slots[0].comparison
    assert cmp.method == "directional" and cmp.analytic is None and cmp.checked == 3


def test_check_function_reports_a_gradient_of_the_wrong_shape():
    check = gradcheck.check_function(WrongShape(), np.ones((2, 3)))
    assert check.status == "wrong"
    assert "shape" in check.message and "(2, 3)" in check.message


def test_check_function_leaves_the_function_alone():
    x = Variable(np.array([1.0, 2.0]))
    y = BadCube()(x)
    f = y.creator
    before = (f.inputs[0], f.outputs[0]())
    gradcheck.check_function(f, x.data)
    assert (f.inputs[0], f.outputs[0]()) == before


# ----------------------------------------------------------------------------- live graphs
def test_check_trace_flags_only_the_wrong_custom_function():
    x = Variable(np.random.default_rng(1).standard_normal((2, 3)), name="x")
    W = Variable(np.random.default_rng(2).standard_normal((3, 4)), name="W")
    y = F.sum(BadCube()(F.matmul(x, W)))
    y.backward()
    t = trace.from_output(y)
    report = gradcheck.check_trace(t)
    assert not report.ok
    assert [c.op for c in report.wrong_functions] == ["BadCube"]
    (flagged,) = report.flagged_node_ids
    assert t.node(flagged)["op"] == "BadCube"
    statuses = {c.op: c.status for c in report.functions}
    assert statuses == {"MatMul": "ok", "BadCube": "wrong", "Sum": "ok"}
    assert report.summary == "Gradient check: the backward of BadCube is wrong"


def test_checking_does_not_add_to_a_recording():
    with trace.record() as t:
        x = Variable(np.array([1.0, 2.0]), name="x")
        y = F.sum(Cube()(x))
        y.backward()
        n_steps, n_nodes = len(t.steps), t.graph.number_of_nodes()
        report = gradcheck.check_trace(t)
    assert report.ok
    assert (len(t.steps), t.graph.number_of_nodes()) == (n_steps, n_nodes)


def test_a_saved_trace_cannot_be_checked_and_says_why(tmp_path):
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.tanh(x)
        y.backward()
    t.to_json(tmp_path / "t.json")
    loaded = trace.load(tmp_path / "t.json")
    report = gradcheck.check_trace(loaded, saved=True)
    assert report.checked == 0 and report.ok
    # one message, and no rows that say otherwise ("skipped" per op, "each Function checked")
    assert report.summary == f"Gradient check: {gradcheck.SAVED_TRACE_REASON}"
    assert report.functions == () and report.rows() == [] and report.notes == ()
    report = gradcheck.check_trace(loaded)  # not known to be a file: the objects are gone
    assert report.summary == f"Gradient check: {gradcheck.OBJECTS_GONE_REASON}"
    assert report.rows() == [] and report.notes == ()


def test_a_saved_trace_opened_in_the_document_says_so_once(tmp_path):
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.tanh(x * x)
        y.backward()
    t.to_json(tmp_path / "t.json")
    doc = Document()
    assert doc.load_path(tmp_path / "t.json")
    statuses = []
    doc.status_changed.connect(statuses.append)
    report = gradient_checks.check_document(doc)
    assert report is not None and report.rows() == [] and report.notes == ()
    assert "saved trace holds no program to re-run" in report.summary
    assert statuses == [report.summary]
    assert doc.scene.overlay_arrays(gradcheck.OVERLAY_KIND)[0].size == 0


# ----------------------------------------------------------------------------- expressions
def test_expression_leaves_are_checked_at_the_current_values():
    program = parse("x = 1.0\ny = tanh(x) * x ** 2\n")
    report = gradcheck.check_program(program, {"x": 3.0})
    assert report.ok
    (leaf,) = report.leaves
    assert (leaf.name, leaf.order, leaf.status) == ("x", 1, "ok")
    t = math.tanh(3.0)
    exact = (1 - t * t) * 9 + 6 * t
    np.testing.assert_allclose(leaf.comparison.analytic, exact, rtol=1e-12)
    np.testing.assert_allclose(leaf.comparison.numeric, exact, rtol=1e-7)
    assert {c.op for c in report.functions} == {"Tanh", "Pow", "Mul"}
    assert all(c.status == "ok" for c in report.functions)


def test_second_derivative_with_grad_is_checked():
    program = parse("x = 2.0\ny = x ** 4 - 2 * x ** 2\ngx = grad(y, x)\n")
    report = gradcheck.check_program(program)
    assert report.ok
    by_label = {c.label: c for c in report.leaves}
    first = by_label["dy/dx"]
    second = by_label["dgx/dx (derivative of order 2)"]
    # dy/dx = 4x^3 - 4x = 24 (the grad() pass); d2y/dx2 = 12x^2 - 4 = 44 (the final backward)
    np.testing.assert_allclose(first.comparison.analytic, 24.0)
    np.testing.assert_allclose(second.comparison.analytic, 44.0)
    np.testing.assert_allclose(second.comparison.numeric, 44.0, rtol=1e-6)
    assert (first.backward_pass, second.backward_pass) == (0, 1)
    # every Function of the gradient graph was checked too (none had been freed)
    assert report.functions and all(c.status == "ok" for c in report.functions)


def test_higher_order_example_checks_three_orders():
    program = parse(find_example("higher_order").read())
    report = gradcheck.check_program(program)
    assert report.ok
    assert sorted(c.order for c in report.leaves) == [1, 2, 3]
    third = next(c for c in report.leaves if c.order == 3)
    np.testing.assert_allclose(third.comparison.analytic, 48.0)  # 24x at x = 2


def test_matrix_leaves_and_kinks():
    program = parse(
        "x = [[1.0, -2.0], [0.0, 3.0]]\nW = randn(2, 3)\ny = sum(relu(x)) + sum(x @ W)\n"
    )
    report = gradcheck.check_program(program)
    assert report.ok  # relu at 0 is not differentiable: a kink, not an error
    x_check = next(c for c in report.leaves if c.name == "x")
    assert x_check.status == "kink" and x_check.comparison.kinks == 1
    assert x_check.comparison.analytic.shape == (2, 2)
    relu = next(c for c in report.functions if c.op == "ReLU")
    assert relu.status == "kink"


def test_big_leaves_are_checked_along_random_directions():
    program = parse("W = randn(10, 10)\ny = sum(tanh(W) * W)\n")
    report = gradcheck.check_program(program)
    (leaf,) = report.leaves
    assert leaf.status == "ok" and leaf.comparison.method == "directional"
    assert leaf.comparison.analytic is None


def test_nan_is_not_an_error_of_the_gradient():
    program = parse(find_example("nan_log").read())
    report = gradcheck.check_program(program)
    assert report.ok
    assert [c.status for c in report.leaves] == ["nonfinite"]
    assert next(c for c in report.functions if c.op == "Log").status == "nonfinite"
    assert "NaN/Inf" in report.summary


# ----------------------------------------------------------------------------- the document
def test_wrong_backward_example_is_flagged_on_the_graph():
    doc = _script_document()
    assert doc.run_script(find_example("wrong_backward").path)
    events = []
    doc.overlays_changed.connect(lambda: events.append("overlays"))
    assert doc.script_result.leak_report is None or not doc.script_result.leak_report.survivors
    report = gradient_checks.check_document(doc)
    assert report is not None and not report.ok
    assert [c.op for c in report.wrong_functions] == ["Softplus"]
    assert {c.op: c.status for c in report.functions} == {
        "MatMul": "ok",
        "Softplus": "wrong",
        "Sum": "ok",
    }
    assert events == ["overlays"]
    scene = doc.scene
    indexes, colours, badges = scene.overlay_arrays("gradcheck")
    flagged = {int(i): (tuple(c), b) for i, c, b in zip(indexes, colours, badges, strict=True)}
    (softplus,) = report.flagged_node_ids
    i = scene.index_of(softplus)
    assert flagged[i] == (scene.palette.error, "wrong backward")
    assert scene.names[i] == "Softplus"
    assert len(flagged) == 3  # the two correct Functions are coloured too (green)
    assert "Softplus.backward disagrees" in scene.node_tooltip(i, doc.playback.index)


def test_right_backward_example_is_not_flagged():
    doc = _script_document()
    assert doc.run_script(find_example("right_backward").path)
    report = gradient_checks.check_document(doc)
    assert report is not None and report.ok
    assert {c.op: c.status for c in report.functions} == {
        "MatMul": "ok",
        "Softplus": "ok",
        "Sum": "ok",
    }
    assert all(b != "wrong backward" for b in doc.scene.overlay_arrays("gradcheck")[2])


def test_the_worker_samples_the_scripts_functions_and_sends_them_back():
    from autodiff import core

    observers = core._observers
    doc = _script_document()
    run = doc.prepare_script(find_example("wrong_backward").path)
    assert run.sample_functions == 2  # watch_scripts asked the worker to keep samples
    result = run.run()
    assert core._observers == observers  # nothing was attached in the app's process
    sampler = gradient_checks.samples_for(result.trace)
    assert sampler is result.samples
    by_name = {cls.__name__: cls for cls in sampler.samples}
    assert {"MatMul", "Sum"} <= set(by_name)
    # An autodiff class is the real one (checked on demand); the script's own class is a
    # stand-in that carries the check made in the worker, while its module still existed.
    assert by_name["MatMul"] is F.MatMul
    (own,) = [cls for cls in sampler.samples if not cls.__module__.startswith("autodiff")]
    status, _, message = sampler.samples[own][0].check()
    assert status == "wrong", message


def test_a_script_run_in_this_process_attaches_its_sampler_only_while_it_runs(tmp_path):
    from autodiff import core

    seen = []
    script = tmp_path / "s.py"
    script.write_text(
        "import numpy as np\nfrom autodiff import Variable, core\nimport autodiff.functions as F\n"
        "SEEN.append(len(core._observers))\n"
        "y = F.sum(Variable(np.ones(3)) * 2.0)\ny.backward()\n"
    )
    import builtins

    builtins.SEEN = seen
    try:
        run = ScriptRun(script)
        run.sample_functions = 1
        before = len(core._observers)
        result = run.run()
    finally:
        del builtins.SEEN
    assert seen and seen[0] > before + 1  # the recorder, the cancel hook and the sampler
    assert len(core._observers) == before
    assert {cls.__name__ for cls in result.samples.samples} == {"Mul", "Sum"}


def test_expression_document_colours_its_leaves():
    doc = Document()
    doc.load_example("tanh_x2")
    report = gradient_checks.check_document(doc)
    assert report is not None and report.ok
    assert report.summary.startswith("Gradient check passed: 1 leaf gradient and 3 Functions")
    x_index = doc.scene.names.index("x")
    indexes, colours, _ = doc.scene.overlay_arrays("gradcheck")
    assert x_index in indexes.tolist()
    green = colours[indexes.tolist().index(x_index)]
    assert green[1] > green[0]  # below 1e-6: the scene's green
    rows = report.rows()
    assert rows[0].kind == "leaf" and rows[0].node_id == doc.scene.node_id(x_index)


def test_check_document_without_a_graph_reports_an_error():
    doc = Document()
    errors = []
    doc.error_raised.connect(errors.append)
    assert gradient_checks.check_document(doc) is None
    (error,) = errors
    assert isinstance(error, ValueError) and "no graph to check" in str(error)


@pytest.mark.parametrize("key", ["square_exp_square", "diamond", "goldstein", "matyas"])
def test_bundled_expressions_pass(key):
    report = gradcheck.check_program(parse(find_example(key).read()))
    assert report.ok and report.checked > 0
    assert all(c.status == "ok" for c in (*report.leaves, *report.functions))


def test_a_big_graph_checks_a_few_functions_of_each_op():
    x = Variable(np.array([0.3, -0.2]), name="x")
    y = x
    for _ in range(250):
        y = F.sin(y) * 0.5 + y  # 750 Functions of three ops
    report = gradcheck.check_trace(trace.from_output(y), max_functions=100)
    assert report.ok
    assert {c.op for c in report.functions} == {"Sin", "Mul", "Add"}
    assert all(len(c.node_ids) == 250 and c.status == "ok" for c in report.functions)
    assert any("stand for the rest" in note for note in report.notes)


def test_check_function_sums_broadcast_gradients_as_backward_does():
    # Mul's derivative leaves the (3,) operand's gradient at the broadcast shape (4, 3);
    # backward sums it back, and so must the check, on both paths
    from autodiff.core import Mul

    x0 = np.random.default_rng(1).standard_normal((4, 3))
    check = gradcheck.check_function(Mul(), x0, np.array([1.0, -2.0, 3.0]))
    assert check.status == "ok", check.message
    assert {s.path for s in check.slots} == {"backward", "derivative(ARRAYS)"}
    assert {s.comparison.shape for s in check.slots if s.slot == 1} == {(3,)}


def test_a_window_after_a_cut_checks_its_own_functions_not_the_detached_ones():
    w = Variable(np.array(1.5), name="w")
    h = Variable(np.array(1.0), name="h")
    keep = []  # the Functions stay alive, so each is checked live
    with trace.record() as t:
        for _ in range(2):
            h = BadCube()(h * w)
            loss = h * h
            keep += [loss.creator, h.creator, h.creator.inputs[0].creator]
            loss.backward()
            loss.unchain_backward()
    view = trace.view_for_root(t, t.backward_roots[1], 1)
    assert view.detached()
    report = gradcheck.check_trace(view)
    checked = {fid for c in report.functions for fid in c.node_ids}
    assert checked == set(view.functions) - view.detached()
    assert checked and not checked & view.detached()
    assert {t.node(f)["op"] for f in report.flagged_node_ids} == {"BadCube"}
    assert not set(report.flagged_node_ids) & view.detached()
