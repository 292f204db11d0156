"""The plot panel: f, df/dx, d2f/dx2 of an expression (point count, values at the current x,
following the leaf's value), training curves of a script, histograms of the selected node, and
the messages where a plot does not apply."""

import math

import numpy as np
import pytest
from PySide6 import QtWidgets

from viewer.model.plots import DEFAULT_POINTS


def _plotted(qtbot, window):
    binding = window.plot_binding
    qtbot.waitUntil(lambda: not binding.busy, timeout=30_000)
    return window.plot_panel.function_data


def _tanh_x2(x):
    t = math.tanh(x)
    f = t * x * x
    df = (1 - t * t) * x * x + 2 * x * t
    d2f = -2 * t * (1 - t * t) * x * x + 4 * x * (1 - t * t) + 2 * t
    return f, df, d2f


def test_function_plot_of_one_scalar_leaf_follows_its_value(qtbot, window):
    dock = window.findChild(QtWidgets.QDockWidget, "plotPanel")
    assert dock is not None and dock.widget() is window.plot_panel
    window.raise_dock("plotPanel")
    assert window.load_example("tanh_x2")
    assert window.plot_panel.current_tab == "function"
    data = _plotted(qtbot, window)
    assert data is not None and data.leaf == "x"
    assert data.n_points == DEFAULT_POINTS
    for curve, expected in zip(window.plot_panel.curves, _tanh_x2(1.0), strict=True):
        x, y = curve.getData()
        assert len(x) == len(y) == DEFAULT_POINTS
        assert x[data.index] == pytest.approx(1.0)
        assert y[data.index] == pytest.approx(expected, rel=1e-9)
    assert window.plot_panel.marker_line.value() == pytest.approx(1.0)
    markers = window.plot_panel.markers.getData()
    assert np.allclose(markers[0], 1.0) and np.allclose(sorted(markers[1]), sorted(_tanh_x2(1.0)))
    assert "dy/dx = 1.94316" in window.plot_panel.function_values.text()

    # a new value of the leaf: the plot is recomputed around it
    assert window.set_leaf_value("x", "0.5")
    data = _plotted(qtbot, window)
    assert data.x0 == pytest.approx(0.5)
    assert (data.f0, data.df0, data.d2f0) == pytest.approx(_tanh_x2(0.5), rel=1e-9)
    assert window.plot_panel.marker_line.value() == pytest.approx(0.5)


def test_the_function_plot_is_computed_without_blocking_the_window(qtbot, window):
    window.raise_dock("plotPanel")
    assert window.run_program("y = sin(x) * exp(x)")
    binding = window.plot_binding
    assert binding.busy  # computed in slices between events, not at once
    qtbot.wait(20)
    assert binding.busy or window.plot_panel.function_data is not None
    # a newer request replaces the one under way
    assert window.run_program("y = cos(x)")
    data = _plotted(qtbot, window)
    assert data.f0 == pytest.approx(math.cos(1.0))


def test_several_leaves_plot_against_the_chosen_one(qtbot, window):
    window.raise_dock("plotPanel")
    assert window.run_program("x = 0.5\nz = 2.0\ny = x * z ** 2")
    data = _plotted(qtbot, window)
    assert data.leaf == "x" and data.df0 == pytest.approx(4.0)
    combo = window.plot_panel.leaf_combo
    assert [combo.itemText(i) for i in range(combo.count())] == ["x", "z"]
    window.plot_panel.leaf_chosen.emit("z")
    data = _plotted(qtbot, window)
    assert data.leaf == "z" and data.x0 == pytest.approx(2.0)
    assert data.df0 == pytest.approx(2.0) and data.d2f0 == pytest.approx(1.0)


def test_plot_requests_that_do_not_apply_say_why_and_keep_the_state(qtbot, window):
    window.raise_dock("plotPanel")
    panel = window.plot_panel
    # a matrix leaf
    assert window.run_program("W = [[1.0, 2.0], [3.0, 4.0]]\ny = sum(W * W)")
    _plotted(qtbot, window)
    scene = window.document.scene
    assert panel.function_data is None
    assert "shape (2, 2)" in panel.function_message.text()
    assert "scalar leaf" in panel.function_message.text()
    assert window.document.scene is scene and "W" in scene.names
    # no leaf at all
    assert window.run_program("y = sin(3.0) * 2")
    _plotted(qtbot, window)
    assert "no leaf" in panel.function_message.text()
    assert window.document.scene is not None


def _run_script(wait_for_script, window, path):
    window.open_path(path, confirm_scripts=False)
    wait_for_script(window)


def test_training_curves_of_a_script(qtbot, window, wait_for_script):
    from viewer.model.examples import find_example

    window.raise_dock("plotPanel")
    _run_script(wait_for_script, window, find_example("linear_regression").path)
    panel = window.plot_panel
    assert panel.current_tab == "training"
    data = panel.training_data
    assert data is not None and data.n_steps == len(window.document.script_result.graphs)
    x, loss = panel.loss_curve.getData()
    assert len(x) == data.n_steps and loss[-1] < loss[0]
    assert len(panel.norm_curves) == len(data.labels) == 2
    assert all(len(c.getData()[1]) == data.n_steps for c in panel.norm_curves)


def test_a_script_that_never_calls_backward_has_no_loss_curve(
    qtbot, window, wait_for_script, tmp_path
):
    script = tmp_path / "forward_only.py"
    script.write_text(
        "import numpy as np\n"
        "import autodiff.functions as F\n"
        "from autodiff import Variable\n"
        "x = Variable(np.array(0.5), name='x')\n"
        "y = F.exp(x) * x\n"
        "y.name = 'y'\n"
    )
    window.raise_dock("plotPanel")
    _run_script(wait_for_script, window, script)
    assert window.document.scene is not None  # its forward graph is shown
    panel = window.plot_panel
    assert panel.current_tab == "training" and panel.training_data is None
    assert "never called backward()" in panel.training_message.text()
    assert "loss.backward()" in panel.training_message.text()
    assert "never called backward()" in window.script_panel.error_text()


def test_histograms_of_the_selected_node(qtbot, window):
    window.raise_dock("plotPanel")
    assert window.run_program("x = linspace(-1, 1, 50)\ny = sum(tanh(x) * x)")
    panel = window.plot_panel
    panel.set_current_tab("histogram")
    assert "Select a variable" in panel.histogram_message.text()
    doc = window.document
    doc.playback.to_end()
    x = next(n for n in doc.trace.variables if doc.trace.node(n).get("name") == "x")
    doc.select(x)
    data = panel.histogram_data
    assert data is not None and data.value is not None and data.grad is not None
    assert data.value.n == 50 and int(data.value.counts.sum()) == 50
    edges, counts = panel.value_histogram.getPlotItem().listDataItems()[0].getData()
    assert len(edges) == len(counts) + 1
    # before backward the gradient is missing, and the panel says so
    doc.playback.to_start()
    assert panel.histogram_data.grad is None
    assert "no gradient" in panel.histogram_message.text()
    # a Function has no value of its own
    doc.select(doc.trace.steps[0].function)
    assert "a Function has no value" in panel.histogram_message.text()
