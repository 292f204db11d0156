"""The plot panel's data: f, df/dx, d2f/dx2 of an expression, loss and gradient-norm curves
of a script, histograms of a node. No Qt."""

import math
import textwrap

import numpy as np
import pytest

from viewer.model import Document
from viewer.model.expression.program import parse
from viewer.model.panels import plots
from viewer.model.scripts.pass_sampling import pass_label


def _tanh_x2(x):
    """y = tanh(x) x^2 and its first two derivatives, by hand."""
    t = np.tanh(x)
    s = 1 - t * t  # tanh'
    y = t * x**2
    dy = s * x**2 + 2 * x * t
    d2y = -2 * t * s * x**2 + 4 * x * s + 2 * t
    return y, dy, d2y


def test_function_plot_of_one_scalar_leaf():
    program = parse("x = 1.0\ny = tanh(x) * x ** 2\n")
    plot = plots.function_plot(program, {"x": 0.7}, n_points=41)
    assert plot.n_points == 41 and plot.x.shape == plot.f.shape == plot.df.shape == (41,)
    assert plot.leaf == "x" and plot.labels == ("y", "dy/dx", "d2y/dx2")
    assert plot.index == 20 and plot.x0 == 0.7
    np.testing.assert_allclose(plot.x[[0, -1]], [0.7 - 2, 0.7 + 2])  # x0 +- max(2, |x0|)
    y, dy, d2y = _tanh_x2(0.7)
    np.testing.assert_allclose((plot.f0, plot.df0, plot.d2f0), (y, dy, d2y), rtol=1e-12)
    # and everywhere on the grid
    y, dy, d2y = _tanh_x2(plot.x)
    np.testing.assert_allclose(plot.f, y, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(plot.df, dy, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(plot.d2f, d2y, rtol=1e-10, atol=1e-12)


def test_function_plot_defaults_and_odd_points():
    program = parse("x = 1.0\ny = tanh(x) * x ** 2\n")
    plot = plots.function_plot(program)
    assert plot.n_points == plots.DEFAULT_POINTS and plot.x0 == 1.0
    assert plots.function_plot(program, n_points=10, half_width=0.5).n_points == 11


def test_function_plot_of_an_expression_with_grad():
    # y = x^4 - 2x^2 plotted as its derivative gx: gx' = 12x^2 - 4, gx'' = 24x
    program = parse("x = 2.0\ny = x ** 4 - 2 * x ** 2\ngx = grad(y, x)\n")
    plot = plots.function_plot(program, n_points=5, half_width=1.0)
    np.testing.assert_allclose(plot.x, [1.0, 1.5, 2.0, 2.5, 3.0])
    np.testing.assert_allclose(plot.f, 4 * plot.x**3 - 4 * plot.x)
    np.testing.assert_allclose(plot.df, 12 * plot.x**2 - 4)
    np.testing.assert_allclose(plot.d2f, 24 * plot.x)


def test_function_plot_with_several_leaves_needs_a_choice():
    program = parse("y = x * z ** 2\n")
    with pytest.raises(ValueError, match=r"choose a leaf: the expression has 2 leaves \(x, z\)"):
        plots.function_plot(program)
    plot = plots.function_plot(program, {"z": 3.0}, leaf="x", n_points=3)
    np.testing.assert_allclose(plot.df, 9.0)  # the other leaf keeps its value
    with pytest.raises(ValueError, match="q is not a leaf of the expression"):
        plots.function_plot(program, leaf="q")


def test_function_plot_refuses_a_matrix_leaf_and_no_leaf():
    program = parse("W = randn(2, 3)\ny = sum(W)\n")
    with pytest.raises(
        ValueError, match=r"the leaf W has shape \(2, 3\); a 1-D plot needs a scalar"
    ):
        plots.function_plot(program)
    with pytest.raises(ValueError, match="no leaf variable"):
        plots.function_plot(parse("sum(randn(3))"))


def test_non_scalar_output_plots_its_sum():
    plot = plots.function_plot(parse("x = 1.0\ny = [1.0, 2.0] * x\n"), n_points=3)
    assert plot.output == "sum(y)"
    np.testing.assert_allclose(plot.df, 3.0)
    np.testing.assert_allclose(plot.d2f, 0.0)


def test_document_function_plot_uses_the_edited_value():
    doc = Document()
    doc.load_example("tanh_x2")
    doc.set_leaf_value("x", "0.25")
    plot = plots.document_function_plot(doc, n_points=5)
    assert plot.x0 == 0.25
    np.testing.assert_allclose(plot.df0, _tanh_x2(0.25)[1], rtol=1e-12)


def test_document_function_plot_needs_an_expression(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        "from autodiff import Variable\nimport numpy as np\n(Variable(np.ones(2)) * 2)\n"
    )
    doc = Document()
    assert doc.run_script(script)
    with pytest.raises(ValueError, match="typed expression"):
        plots.document_function_plot(doc)


# ----------------------------------------------------------------------------- training
TRAINING = textwrap.dedent(
    """
    import numpy as np
    import autodiff.functions as F
    from autodiff import Parameter

    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 1))
    y = 2 * x + 1
    W = Parameter(np.zeros((1, 1)), name="W")
    b = Parameter(np.zeros(1), name="b")
    LOSSES, NORMS = [], []
    for i in range(5):
        W.cleargrad()
        b.cleargrad()
        loss = F.mean_squared_error(F.matmul(x, W) + b, y)
        loss.backward()
        LOSSES.append(float(loss.data))
        NORMS.append((float(np.linalg.norm(W.grad.data)), float(np.linalg.norm(b.grad.data))))
        W.data = W.data - 0.1 * W.grad.data
        b.data = b.data - 0.1 * b.grad.data
    print(repr((LOSSES, NORMS)))
    """
)


def test_training_curves_of_a_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAINING)
    doc = Document()
    assert doc.run_script(script)
    losses, norms = eval(doc.script_result.stdout)  # the script's own figures
    curves = plots.document_training_curves(doc)
    assert curves.n_steps == 5
    np.testing.assert_array_equal(curves.steps, np.arange(5))
    np.testing.assert_allclose(curves.loss, losses, rtol=1e-12)
    assert curves.labels == ("W (1, 1)", "b (1,)")
    np.testing.assert_allclose(curves.grad_norms.T, norms, rtol=1e-12)
    assert set(curves.norms_by_label()) == {"W (1, 1)", "b (1,)"}


def test_training_curves_skip_passes_from_a_gradient():
    doc = Document()
    doc.load_example("newton")  # a prepared run: backward(create_graph=True) then gx.backward()
    assert doc.apply_script_result(doc.script_run.run())
    curves = plots.document_training_curves(doc)
    assert curves.n_steps == 7  # one loss per iteration, not two
    assert curves.loss[0] == 8.0  # y(2) = 16 - 8
    assert curves.loss[-1] == pytest.approx(-1.0)
    assert curves.labels == ("x",)  # a scalar: no shape in the label


def test_the_curves_count_passes_as_the_graphs_do_and_the_pass_on_screen_is_known(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAINING)
    doc = Document()
    assert doc.run_script(script)
    result = doc.script_result
    graphs = [plots.graph_pass(g) for g in result.graphs]
    assert graphs == list(plots.document_training_curves(doc).steps) == [0, 1, 2, 3, 4]
    assert plots.document_shown_pass(doc) == 4  # the last graph is shown
    assert doc.show_script_graph(1)
    assert plots.document_shown_pass(doc) == 1
    doc.load_example("newton")  # two backward() per iteration, one of them from a gradient
    assert doc.apply_script_result(doc.script_run.run())
    newton = doc.script_result
    passes = [plots.graph_pass(g) for g in newton.graphs]
    assert passes == list(range(len(passes)))
    assert set(plots.document_training_curves(doc).steps) < set(passes)
    assert plots.document_shown_pass(doc) == passes[-1]
    doc.run_expression("x = 2.0\ny = x * x")
    assert plots.document_shown_pass(doc) is None  # no script's pass on screen


def test_a_click_opens_the_nearest_kept_pass_and_says_which():
    from types import SimpleNamespace

    from viewer.model.scripts.run import ScriptGraph

    kept = (0, 1, 2, 10, 20, 40, 499)
    graphs = [ScriptGraph(f"#{p + 1}", 7, p if p < 3 else 0, p) for p in kept]
    graphs.append(ScriptGraph("output y", 9, -1))  # a graph of no pass is never chosen
    result = SimpleNamespace(graphs=graphs, passes=[None] * 500)
    for wanted, expected in ((0, 0), (7, 10), (15, 10), (30, 20), (31, 40), (600, 499)):
        choice = plots.nearest_kept_pass(result, wanted)  # ties: the earlier pass
        assert (choice.number, graphs[choice.index].number) == (expected, expected), wanted
    choice = plots.nearest_kept_pass(result, 399)
    assert choice.note() == (
        "Opened pass #500 (nearest kept to #400: the run kept the graphs of 7 of its 500 passes)"
    )
    assert plots.nearest_kept_pass(result, 20).note() == "Opened pass #21"
    assert plots.nearest_kept_pass(result, 20).note(on_screen=True) == "Pass #21 is on screen"
    # graphs of one trace (no pass log): their pass is their backward pass in it
    plain = SimpleNamespace(graphs=[ScriptGraph(f"backward #{k + 1}", 3, k) for k in range(4)])
    plain.passes = None
    assert plots.nearest_kept_pass(plain, 2).index == 2
    assert plots.nearest_kept_pass(plain, 9).note() == (
        "Opened pass #4 (nearest kept to #10: the run kept the graphs of 4 of its 4 passes)"
    )
    only_outputs = SimpleNamespace(graphs=[ScriptGraph("output y", 9, -1)], passes=None)
    assert plots.nearest_kept_pass(only_outputs, 0) is None


def test_training_curves_need_a_backward(tmp_path):
    script = tmp_path / "nobackward.py"
    script.write_text(
        "import numpy as np\nfrom autodiff import Variable\ny = Variable(np.ones(2)) * 2\n"
    )
    doc = Document()
    assert doc.run_script(script)
    with pytest.raises(ValueError, match=r"nobackward.py: .*never called backward\(\)"):
        plots.document_training_curves(doc)


# ----------------------------------------------------------------------------- histograms
def test_histogram_counts_finite_values_and_the_rest():
    h = plots.histogram(np.array([0.0, 0.0, 1.0, np.nan, np.inf, -np.inf]), bins=2)
    assert h.counts.tolist() == [2, 1] and h.n == 3
    assert (h.nan, h.inf) == (1, 2)
    np.testing.assert_allclose(h.edges, [0.0, 0.5, 1.0])


def test_node_histograms_of_value_and_gradient():
    doc = Document()
    doc.load_expression("W = randn(10, 10)\ny = sum(W * W)\n")
    node = next(n for n in doc.trace.variables if doc.trace.node(n)["name"] == "W")
    doc.select(node)
    doc.playback.to_end()
    h = plots.document_histograms(doc, bins=8)
    assert h.label == "W" and h.message == ""
    assert h.value.counts.sum() == 100 and len(h.value.edges) == 9
    assert h.grad.counts.sum() == 100
    w = doc.evaluation.values["W"]
    np.testing.assert_allclose(h.grad.edges[[0, -1]], [2 * w.min(), 2 * w.max()])
    # before backward the gradient does not exist yet
    doc.playback.seek(-1)
    early = plots.document_histograms(doc)
    assert early.grad is None and "no gradient" in early.message


def test_node_histograms_of_a_function_say_what_to_select():
    doc = Document()
    doc.load_example("tanh_x2")
    function = doc.trace.functions[0]
    h = plots.node_histograms(doc.trace, function, -1)
    assert h.value is None and h.grad is None and "Function" in h.message
    doc.select(None)
    assert plots.document_histograms(doc) is None


def test_a_flat_value_still_has_edges():
    h = plots.histogram(np.full(5, 3.0), bins=4)
    assert h.counts.sum() == 5 and math.isclose(h.edges[0], 2.5)


def test_a_summarised_array_is_drawn_only_while_the_object_still_holds_it():
    import autodiff.functions as F
    from autodiff import Variable, trace
    from viewer.model.panels.plots import node_histograms

    w = Variable(np.arange(100.0), name="w")
    with trace.record(max_array_size=10) as t:
        y = F.sum(w * 2.0)
        y.backward()
    last = len(t.steps) - 1
    shown = node_histograms(t, 0, last)
    assert shown.value is not None and shown.value.live and shown.value.n == 100
    w.data = w.data + 1.0  # the program moved on: the step's array is gone
    later = node_histograms(t, 0, last)
    assert later.value is None and "holds another array now" in later.message


def test_training_curves_do_not_build_the_networkx_graph(tmp_path):
    # a long run's t.graph takes seconds to build; the curves need only each node's creator
    script = tmp_path / "train.py"
    script.write_text(TRAINING)
    doc = Document()
    assert doc.run_script(script)
    trace = doc.script_result.trace
    curves = plots.training_curves(trace)
    assert curves.labels == ("W (1, 1)", "b (1,)")
    assert trace._graph is None


def test_a_pass_is_numbered_as_the_graph_list_numbers_it_without_a_thousands_comma():
    choice = plots.PassChoice(0, 1972, 1999, 800, 150_000)
    assert choice.note() == (
        "Opened pass #1973 (nearest kept to #2000: the run kept the graphs of 800 of its "
        "150,000 passes)"
    )
    assert pass_label(1973, 1972, 0.25).startswith("#1973 ")


DATA_AND_PARAMETERS = textwrap.dedent(
    """
    import numpy as np
    from autodiff import Parameter, Variable
    import autodiff.functions as F

    x = Variable(np.linspace(0.0, 1.0, 5).reshape(5, 1), name="x")
    t = Variable(np.sin(x.data), name="t")
    W = Parameter(np.full((1, 1), 0.5), name="W")
    b = Parameter(np.zeros(1), name="b")
    NORMS = []
    for i in range(3):
        W.cleargrad()
        b.cleargrad()
        x.cleargrad()
        t.cleargrad()
        loss = F.mean_squared_error(F.matmul(x, W) + b, t)
        loss.backward()
        NORMS.append((float(np.linalg.norm(W.grad.data)), float(np.linalg.norm(b.grad.data))))
        assert x.grad is not None and t.grad is not None  # the data leaves get gradients too
        W.data = W.data - 0.1 * W.grad.data
        b.data = b.data - 0.1 * b.grad.data
    print(repr(NORMS))
    """
)


def test_the_gradient_norm_curves_leave_out_data_leaves_beside_parameters(tmp_path):
    # x and t are Variables (the data), W and b Parameters: every one gets a gradient, only
    # the Parameters' norms are drawn, and a note names the others
    script = tmp_path / "train.py"
    script.write_text(DATA_AND_PARAMETERS)
    doc = Document()
    assert doc.run_script(script), doc.script_result.error
    norms = eval(doc.script_result.stdout)
    log = doc.script_result.passes
    assert len(log.parameter_labels) == 4  # the log keeps all four, read back from the worker
    assert {log.parameter_labels[k] for k in log.data_columns} == {"x (5, 1)", "t (5, 1)"}
    from_log = plots.pass_log_curves(log)  # a long run's curves: every pass's, from the log
    assert set(from_log.labels) == {"W (1, 1)", "b (1,)"}  # (in the order first reached)
    by_label = from_log.norms_by_label()
    np.testing.assert_allclose(by_label["W (1, 1)"], [w for w, _ in norms], rtol=1e-6)
    np.testing.assert_allclose(by_label["b (1,)"], [b for _, b in norms], rtol=1e-6)
    assert (
        "not drawn: t (5, 1), x (5, 1), leaves with a gradient that are not Parameters"
        in from_log.notes
    )
    # the same from the recorded graphs (the curves of a trace), which the panel shows here
    curves = plots.document_training_curves(doc)
    assert curves.labels == ("W (1, 1)", "b (1,)")
    np.testing.assert_allclose(curves.grad_norms.T, norms, rtol=1e-12)
    assert "not drawn: x, t, leaves with a gradient that are not Parameters" in curves.notes


def test_without_parameters_every_leaf_with_a_gradient_is_drawn(tmp_path):
    # the same program with Variables for W and b (DeZero's early steps, micrograd): nothing
    # tells data from weights, so all four are drawn
    script = tmp_path / "train.py"
    script.write_text(DATA_AND_PARAMETERS.replace("Parameter(", "Variable("))
    doc = Document()
    assert doc.run_script(script), doc.script_result.error
    for curves in (
        plots.document_training_curves(doc),
        plots.pass_log_curves(doc.script_result.passes),
    ):
        assert set(curves.labels) == {"x (5, 1)", "t (5, 1)", "W (1, 1)", "b (1,)"}
        assert not any(n.startswith("not drawn") for n in curves.notes)
