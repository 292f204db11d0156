"""The plot panel: f, df/dx, d2f/dx2 of an expression (point count, values at the current x,
following the leaf's value), training curves of a script, histograms of the selected node, and
the messages where a plot does not apply; plots stay readable (a row and a range per curve,
log-axis labels apart, the legend beside the data)."""

import itertools
import math

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.expression.program import parse
from viewer.model.panels.plots import DEFAULT_POINTS, TrainingCurves, function_plot
from viewer.qt.drawing.themes import DARK
from viewer.qt.panels.plots import PlotPanel


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
    for marker, expected in zip(window.plot_panel.markers, _tanh_x2(1.0), strict=True):
        xs, ys = marker.getData()  # one point per row: the current x on its curve
        assert np.allclose(xs, [1.0]) and np.allclose(ys, [expected])
    shown = window.plot_panel.function_values.text()
    assert "dy/dx = 1.94316" in shown.replace("\u00a0", " ").replace("\u2060", "")
    # each "name = value" is one piece a line never breaks ("d2y/" was cut from "dx2")
    assert "d2y/\u2060dx2\u00a0=\u00a0" in shown and "d2y/dx2 " not in shown

    # a new value of the leaf: the plot is recomputed around it
    assert window.variables_binding.set_leaf_value("x", "0.5")
    data = _plotted(qtbot, window)
    assert data.x0 == pytest.approx(0.5)
    assert (data.f0, data.df0, data.d2f0) == pytest.approx(_tanh_x2(0.5), rel=1e-9)
    assert window.plot_panel.marker_line.value() == pytest.approx(0.5)


def test_the_function_plot_is_computed_without_blocking_the_window(qtbot, window):
    window.raise_dock("plotPanel")
    assert window.editor_binding.run("y = sin(x) * exp(x)")
    binding = window.plot_binding
    assert binding.busy  # computed in slices between events, not at once
    qtbot.wait(20)
    assert binding.busy or window.plot_panel.function_data is not None
    # a newer request replaces the one under way
    assert window.editor_binding.run("y = cos(x)")
    data = _plotted(qtbot, window)
    assert data.f0 == pytest.approx(math.cos(1.0))


def test_several_leaves_plot_against_the_chosen_one(qtbot, window):
    window.raise_dock("plotPanel")
    assert window.editor_binding.run("x = 0.5\nz = 2.0\ny = x * z ** 2")
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
    assert window.editor_binding.run("W = [[1.0, 2.0], [3.0, 4.0]]\ny = sum(W * W)")
    _plotted(qtbot, window)
    scene = window.document.scene
    assert panel.function_data is None
    assert "shape (2, 2)" in panel.function_message.text()
    assert "scalar leaf" in panel.function_message.text()
    assert window.document.scene is scene and "W" in scene.names
    # no leaf at all
    assert window.editor_binding.run("y = sin(3.0) * 2")
    _plotted(qtbot, window)
    assert "no leaf" in panel.function_message.text()
    assert window.document.scene is not None


def _run_script(wait_for_script, window, path):
    window.open_path(path, confirm_scripts=False)
    wait_for_script(window)


def test_training_curves_of_a_script(qtbot, window, wait_for_script):
    from viewer.model.document.examples import find_example

    window.raise_dock("plotPanel")
    _run_script(wait_for_script, window, find_example("linear_regression").path)
    panel = window.plot_panel
    assert panel.current_tab == "training"
    data = panel.training_data
    assert data is not None and data.n_steps == len(window.document.script_result.graphs)
    x, loss = panel.loss_curve.getData()
    assert len(x) == data.n_steps and loss[-1] < loss[0]
    assert x[0] == 1 and x[-1] == data.n_steps  # numbered as the graph list: backward #1..
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
    assert window.editor_binding.run("x = linspace(-1, 1, 50)\ny = sum(tanh(x) * x)")
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


# ----------------------------------------------------------------------------- readability
SEED = "x = 0.5\ny = square(exp(square(x)))"  # the first launch's program


@pytest.fixture
def shown_panel(qtbot):
    """The panel alone, about as big as in a 1024x700 window."""
    panel = PlotPanel()
    qtbot.addWidget(panel)
    panel.resize(420, 330)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def _training_like_spiral(n=3000):
    """Losses from 1.2 down to 0.03 with noise, and four parameters' gradient norms."""
    rng = np.random.default_rng(0)
    loss = np.exp(np.linspace(0.1, -2.6, n) + 0.25 * rng.standard_normal(n))
    norms = np.exp(rng.normal(-3.0, 0.7, size=(4, n)))
    labels = ("W #1 (2, 10)", "b #2 (10,)", "W #7 (10, 3)", "b #8 (3,)")
    return TrainingCurves(np.arange(n), loss, "loss", (1, 2, 7, 8), labels, norms)


def _drawn_labels(axis):
    image = QtGui.QImage(8, 8, QtGui.QImage.Format.Format_ARGB32)
    painter = QtGui.QPainter(image)
    try:
        _axis, _ticks, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(rect, text) for rect, _flags, text in texts if text]


def _global_rect(widget, rect=None):
    rect = widget.rect() if rect is None else rect
    return QtCore.QRect(widget.mapToGlobal(rect.topLeft()), rect.size())


def test_log_axis_tick_labels_do_not_overlap(qtbot, shown_panel):
    panel = shown_panel
    panel.set_current_tab("training")
    panel.show_training(_training_like_spiral())
    QtWidgets.QApplication.processEvents()
    for plot in (panel.loss_plot, panel.norm_plot):
        axis = plot.getAxis("left")
        assert axis.logMode
        low, high = axis.range
        size = plot.getViewBox().height()
        assert size > 40
        labelled = []
        for spacing, values in axis.tickValues(low, high, size):
            strings = axis.tickStrings(values, axis.autoSIPrefixScale * axis.scale, spacing)
            labelled += [v for v, text in zip(values, strings, strict=True) if text]
        pixels = np.sort((np.asarray(labelled) - low) / (high - low) * size)
        line = QtGui.QFontMetricsF(axis.font()).height()
        assert len(pixels) >= 2 and np.all(np.diff(pixels) >= line)
        drawn = _drawn_labels(axis)  # what pyqtgraph would paint
        assert len(drawn) >= 2
        for (a, ta), (b, tb) in itertools.combinations(drawn, 2):
            assert not a.intersects(b), f"{ta!r} overlaps {tb!r}"


def test_the_gradient_norm_legend_is_beside_the_data_and_hides_curves(qtbot, shown_panel):
    panel = shown_panel
    panel.set_current_tab("training")
    data = _training_like_spiral()
    panel.show_training(data)
    QtWidgets.QApplication.processEvents()
    legend = panel.norm_legend
    assert legend.isVisible() and legend.labels() == list(data.labels)
    assert panel.norm_plot.getPlotItem().legend is None  # nothing drawn over the curves
    view = panel.norm_plot.getViewBox()
    corners = view.mapRectToScene(view.boundingRect())
    data_rect = QtCore.QRect(
        panel.norm_plot.mapFromScene(corners.topLeft()),
        panel.norm_plot.mapFromScene(corners.bottomRight()),
    )
    assert not _global_rect(legend).intersects(_global_rect(panel.norm_plot, data_rect))
    # the two x-linked plots keep one width, so they show the same backward() calls
    xs = [p.getViewBox().viewRange()[0] for p in (panel.loss_plot, panel.norm_plot)]
    assert xs[0] == pytest.approx(xs[1])
    legend.item(1).setCheckState(QtCore.Qt.CheckState.Unchecked)
    assert not panel.norm_curves[1].isVisible() and panel.norm_curves[0].isVisible()
    legend.item(1).setCheckState(QtCore.Qt.CheckState.Checked)
    assert panel.norm_curves[1].isVisible()


def test_f_and_its_derivatives_each_get_a_row_and_a_readable_range(qtbot, shown_panel):
    panel = shown_panel
    data = function_plot(parse(SEED))
    panel.show_function_plot(data)
    panel.set_theme(DARK)
    QtWidgets.QApplication.processEvents()
    curves = (data.f, data.df, data.d2f)
    views = data.view_ranges()
    assert len(panel.function_rows) == 3
    shown = [row.getViewBox().viewRange()[1] for row in panel.function_rows]
    for (low, high), view, values in zip(shown, views, curves, strict=True):
        assert (low, high) == pytest.approx((view.low, view.high))
        assert high < np.nanmax(values)  # the exp tail is clipped...
    for marks, values, view in zip(panel.clip_marks, curves, views, strict=True):
        xs, ys = marks.getData()  # ...and marked, inside the view, where it runs off
        above = np.asarray(data.x)[np.asarray(values) > view.high]
        assert len(xs) > 0 and set(np.round(xs, 9)) <= set(np.round(above, 9))
        assert np.all((ys > view.low) & (ys < view.high))
    assert shown[2][1] > 5 * shown[0][1]  # each row has its own y axis
    names = [label.text for label in panel.function_names]
    assert names == ["y", "dy/dx", "d2y/dx2"]
    assert panel.function_clip_note.isVisible()
    assert "d2y/dx2 up to 2.79e+07" in panel.function_clip_note.text()
    # Clip outliers off: every row shows its whole curve, nothing marked
    panel.clip_box.setChecked(False)
    QtWidgets.QApplication.processEvents()
    for row, values, marks in zip(panel.function_rows, curves, panel.clip_marks, strict=True):
        low, high = row.getViewBox().viewRange()[1]
        assert high >= np.nanmax(values) and low <= np.nanmin(values)
        assert len(marks.getData()[0]) == 0
    assert panel.function_clip_note.isHidden()
    panel.clip_box.setChecked(True)
    assert panel.function_rows[2].getViewBox().viewRange()[1] == pytest.approx(
        (views[2].low, views[2].high)
    )


def test_the_training_plots_count_passes_in_whole_numbers(qapp):
    """QA: a one-pass run's axis read 1.0 (and 0.5, 1.5 around it)."""
    from viewer.qt.drawing.plot_items import ReadableAxis
    from viewer.qt.panels.plots import PlotPanel

    panel = PlotPanel()
    for plot in (panel.loss_plot, panel.norm_plot):
        assert plot.getAxis("bottom").integer
    axis = ReadableAxis("bottom", integer=True)
    levels = axis.tickValues(0.5, 1.5, 300)
    assert [values for _, values in levels] == [[1.0]]
    assert axis.tickStrings([1.0], 1.0, 1.0) == ["1"]
    big = axis.tickValues(0, 300_000, 300)
    assert all(float(v).is_integer() for _, values in big for v in values)
    assert axis.tickStrings([300_000.0], 1.0, 100_000.0) == ["300,000"]


def test_a_script_started_during_a_plot_says_the_plot_waits_for_it(
    qtbot, window, wait_for_script, tmp_path
):
    """QA: the f(x) plot said 'Computing f, f' and f''…' until a script started meanwhile
    had ended."""
    window.raise_dock("plotPanel")
    assert window.editor_binding.run("y = sin(x) * exp(x)")
    binding = window.plot_binding
    assert binding.busy
    script = tmp_path / "slow.py"
    script.write_text(
        "import numpy as np\nfrom autodiff import Variable\nx = Variable(np.array(0.1))\n"
        "while True:\n    y = x * x\n"
    )
    assert window.open_path(script, confirm_scripts=False)
    run = window.document.script_run
    qtbot.waitUntil(lambda: run.running, timeout=10_000)
    message = window.plot_panel.function_message
    qtbot.waitUntil(lambda: "script is running" in message.text(), timeout=30_000)
    assert not binding.busy and "Computing" not in message.text()
    window.document.cancel_script()
    wait_for_script(window, timeout=30_000)


def _label_spans(axis):
    """The drawn tick labels of ``axis`` as ``(left, right, text)`` along it, each as wide as
    its text in the axis' font, sorted."""
    metrics = QtGui.QFontMetricsF(axis.tick_font)
    spans = []
    for rect, text in _drawn_labels(axis):
        width = metrics.horizontalAdvance(text)
        spans.append((rect.center().x() - width / 2, rect.center().x() + width / 2, text))
    return sorted(spans)


@pytest.mark.parametrize(
    ("low", "high", "integer"),
    [
        (0.5, 10.5, True),  # passes: 10, 3000, 150 000 of them
        (0.5, 3000.5, True),
        (0.5, 150_000.5, True),
        (0.5, 764.5, True),
        (390.0, 520.0, True),  # zoomed in on a long run
        (-564_325.0, 421_537.0, True),
        (0.5, 764.5, False),  # an f(x) row, a histogram
        (0.5, 5993.1, False),
        (-2.0, 3.0, False),
        (-0.0865, -0.0208, False),
        (-123_456.0, 987_654.0, False),
    ],
)
def test_tick_labels_never_overlap_at_any_width(qtbot, low, high, integer):
    """QA: the x axis read '400500' (two labels run together); now one level is labelled, its
    step chosen from the labels' width in the axis' font."""
    from viewer.qt.drawing.plot_items import ReadableAxis

    axis = ReadableAxis("bottom", integer=integer)
    plot = pg.PlotWidget(axisItems={"bottom": axis})
    plot.showGrid(x=True, y=True, alpha=0.2)
    qtbot.addWidget(plot)
    plot.show()
    qtbot.waitExposed(plot)
    for points in (9, 11, 13):  # the user's font may be larger than the tests' default
        font = QtGui.QFont(axis.font())
        font.setPointSize(points)
        axis.setStyle(tickFont=font)
        for width in range(150, 1601, 23):
            plot.resize(width, 160)
            plot.setXRange(low, high, padding=0)
            QtWidgets.QApplication.processEvents()
            spans = _label_spans(axis)
            # with room for a few labels, some label (a short axis in a large font may have none)
            assert spans or axis.width() < 10 * points, (points, width)
            for (_a0, a1, ta), (b0, _b1, tb) in itertools.pairwise(spans):
                assert a1 < b0, f"{ta!r} overlaps {tb!r} at {width} px, {points} pt"
            drawn = _drawn_labels(axis)
            for (a, ta), (b, tb) in itertools.combinations(drawn, 2):
                assert not a.intersects(b), f"{ta!r} overlaps {tb!r} at {width} px, {points} pt"


@pytest.mark.parametrize("n", [10, 3000, 150_000])
def test_the_training_plots_pass_numbers_never_overlap(qtbot, shown_panel, n):
    panel = shown_panel
    panel.set_current_tab("training")
    rng = np.random.default_rng(0)
    loss = np.exp(np.linspace(0.1, -2.6, n) + 0.25 * rng.standard_normal(n))
    norms = np.exp(rng.normal(-3.0, 0.7, size=(2, n)))
    panel.show_training(TrainingCurves(np.arange(n), loss, "loss", (1, 2), ("W", "b"), norms))
    for width in (200, 300, 420, 800, 1600):  # the panel keeps its own minimum width
        panel.resize(width, 330)
        QtWidgets.QApplication.processEvents()
        for plot in (panel.loss_plot, panel.norm_plot):
            spans = _label_spans(plot.getAxis("bottom"))
            assert len(spans) >= 2, (width, spans)
            for (_a0, a1, ta), (b0, _b1, tb) in itertools.pairwise(spans):
                assert a1 < b0, f"{ta!r} overlaps {tb!r} at {width} px"


# ----------------------------------------------------------------------------- the pass on screen
def _click_point(qtbot, plot, x, y):
    """A real left click on ``plot``'s viewport at the pixel of the point ``(x, y)`` (view
    coordinates)."""
    QtWidgets.QApplication.processEvents()  # the view's range is updated lazily
    scene_point = plot.getViewBox().mapViewToScene(QtCore.QPointF(x, y))
    qtbot.mouseClick(
        plot.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=plot.mapFromScene(scene_point)
    )


def _pass_marks(panel):
    """Where the mark of the pass on screen stands on each training plot, and the dot."""
    xs = [line.value() if line.isVisible() else None for line in panel.pass_lines]
    dot = panel.pass_dot.getData()
    return xs, (list(dot[0]), list(dot[1])) if dot[0] is not None else ([], [])


@pytest.fixture
def sampled_run(qtbot, window, wait_for_script):
    """linear_regression.py (500 passes) with the graphs of about 20 kept, the Training tab up."""
    from viewer.model.document.examples import find_example

    window.raise_dock("plotPanel")
    window.document.script_max_passes = 20
    _run_script(wait_for_script, window, find_example("linear_regression").path)
    result = window.document.script_result
    assert result.sampling and len(result.passes) == 500
    qtbot.waitUntil(lambda: window.plot_panel.training_data is not None, timeout=10_000)
    return window


def test_every_training_plot_marks_the_pass_on_screen(qtbot, sampled_run):
    from viewer.model.panels.plots import graph_pass

    window = sampled_run
    doc, panel = window.document, window.plot_panel
    result = doc.script_result
    assert len(panel.pass_lines) == 2  # the loss plot and the gradient norms' plot
    assert [line.getViewBox() for line in panel.pass_lines] == [
        panel.loss_plot.getViewBox(),
        panel.norm_plot.getViewBox(),
    ]
    last = graph_pass(result.graphs[-1])
    assert last == 499
    xs, (dot_x, dot_y) = _pass_marks(panel)
    assert xs == [500.0, 500.0] and dot_x == [500.0]  # counted from 1, as the graph list
    assert panel.pass_label.toPlainText() == "#500"
    loss_x, loss_y = panel.loss_curve.getData()
    assert dot_y == [pytest.approx(loss_y[loss_x == 500.0][0])]  # on the loss curve
    for index in (3, len(result.graphs) // 2):  # chosen in the Script panel's graph list
        window.script_panel.graphs.activated.emit(index)
        qtbot.waitUntil(lambda index=index: result.graph_index(doc.trace) == index)
        number = graph_pass(result.graphs[index]) + 1
        xs, (dot_x, _dot_y) = _pass_marks(panel)
        assert xs == [number, number] and dot_x == [number]
        assert panel.pass_label.toPlainText() == f"#{number:,}"
    panel.set_current_tab("function")  # the mark stays put while another tab is up
    window.script_panel.graphs.activated.emit(5)
    qtbot.waitUntil(lambda: result.graph_index(doc.trace) == 5)
    panel.set_current_tab("training")
    number = graph_pass(result.graphs[5]) + 1
    assert _pass_marks(panel)[0] == [number, number]


def test_a_click_on_a_point_opens_the_nearest_kept_pass_and_says_which(qtbot, sampled_run):
    from viewer.model.panels.plots import graph_pass

    window = sampled_run
    doc, panel = window.document, window.plot_panel
    result = doc.script_result
    kept = [graph_pass(g) for g in result.graphs]
    # a pass past the first, fully kept ones, whose graph the run dropped
    wanted = next(p for p in range(300, 0, -1) if p not in kept)
    nearest = min(kept, key=lambda p: (abs(p - wanted), p))
    assert nearest != wanted
    loss_x, loss_y = panel.loss_curve.getData()
    panel.loss_plot.setXRange(wanted - 3, wanted + 5, padding=0)  # a few pixels a pass
    QtWidgets.QApplication.processEvents()
    _click_point(qtbot, panel.loss_plot, wanted + 1, loss_y[loss_x == wanted + 1][0])
    qtbot.waitUntil(lambda: graph_pass(result.graphs[result.graph_index(doc.trace)]) == nearest)
    status = window.statusBar().currentMessage()
    assert status.startswith(f"Opened pass #{nearest + 1} (nearest kept to #{wanted + 1}: ")
    assert f"kept the graphs of {len(kept)} of its 500 passes" in status
    assert window.script_panel.selected_graph() == kept.index(nearest)  # the list follows
    assert doc.title.endswith(result.graphs[kept.index(nearest)].title)
    assert _pass_marks(panel)[0] == [nearest + 1, nearest + 1]

    # a kept pass, clicked on the gradient norms' plot: that very pass
    exact = kept[2]
    panel.norm_plot.setXRange(exact - 3, exact + 5, padding=0)
    QtWidgets.QApplication.processEvents()
    norm_x, norm_y = panel.norm_curves[0].getData()
    _click_point(qtbot, panel.norm_plot, exact + 1, norm_y[norm_x == exact + 1][0])
    qtbot.waitUntil(lambda: result.graph_index(doc.trace) == 2)
    assert window.statusBar().currentMessage() == f"Opened pass #{exact + 1}"
    assert _pass_marks(panel)[0] == [exact + 1, exact + 1]


def test_a_click_on_the_curves_of_a_saved_trace_says_every_pass_is_shown(qtbot, window):
    import autodiff.functions as F
    from autodiff import Parameter, trace

    with trace.record() as t:
        w = Parameter(np.array([1.0, 2.0]), name="w")
        for _ in range(4):
            w.cleargrad()
            loss = F.sum(w * w)
            loss.backward()
            w.data = w.data - 0.1 * w.grad.data
    window.raise_dock("plotPanel")
    window.document.load_trace(t, "four passes")
    panel = window.plot_panel
    panel.set_current_tab("training")
    qtbot.waitUntil(lambda: panel.training_data is not None)
    assert panel.training_data.n_steps == 4
    assert _pass_marks(panel)[0] == [None, None]  # one graph holds every pass: none is marked
    _click_point(qtbot, panel.loss_plot, 3, np.log10(panel.training_data.loss[2]))
    assert window.statusBar().currentMessage() == (
        "Backward #3 has no graph of its own to open: the graph shown holds every pass"
    )
    assert window.document.title.endswith("four passes")


def test_a_narrow_panel_keeps_most_of_its_width_for_the_training_plots(qtbot):
    """In a 290 px dock (a 1024 px window) the norm legend beside the plots takes at most
    40% of the width, so the curves keep room for their data, and its names keep their start;
    a wide panel gives the legend its full width."""
    panel = PlotPanel()
    qtbot.addWidget(panel)
    panel.set_current_tab("training")
    labels = tuple(f"b{i}.fc{j}.W (8, 8)" for i in range(3) for j in (1, 2))
    n = 20
    norms = np.linspace(1.0, 0.1, n)[None, :] * np.ones((len(labels), 1))
    loss = np.linspace(1.0, 0.05, n)
    ids = tuple(range(len(labels)))
    panel.show_training(TrainingCurves(np.arange(n), loss, "loss", ids, labels, norms))
    panel.resize(290, 300)
    panel.show()
    qtbot.waitExposed(panel)
    qtbot.waitUntil(lambda: panel.norm_legend.width() <= panel.width() * 2 // 5)
    assert panel.norm_plot.width() >= panel.width() // 2
    assert panel.norm_legend.textElideMode() == QtCore.Qt.TextElideMode.ElideRight
    full = panel.norm_legend.sizeHint().width()
    panel.resize(900, 300)
    qtbot.waitUntil(lambda: panel.norm_legend.width() == full)


def test_a_narrow_legend_keeps_the_part_of_each_name_that_tells_the_curves_apart(qtbot):
    # at 1024 x 700 torch_mlp.py's legend read "hidden..." five times: a model's parameters
    # share their first parts, so a name is cut from its start, shape first
    from viewer.qt.drawing.plot_items import SeriesLegend

    labels = [
        "hidden.0.weight (256, 784)",
        "hidden.0.bias (256,)",
        "hidden.2.weight (256, 256)",
        "hidden.2.bias (256,)",
        "out.weight (10, 256)",
    ]
    legend = SeriesLegend()
    qtbot.addWidget(legend)
    curves = [pg.PlotDataItem([0, 1], [0, 1]) for _ in labels]
    legend.set_series([(label, "#336699", c) for label, c in zip(labels, curves, strict=True)])
    metrics = legend.fontMetrics()
    legend.resize(44 + metrics.horizontalAdvance("…0.weight") + 8, 200)
    legend.show()
    qtbot.waitExposed(legend)
    shown = legend.shown()
    assert shown == ["…0.weight", "…0.bias", "…2.weight", "…2.bias", "out.weight"]
    assert legend.labels() == labels  # whole, and whole on hover, as typed
    hover = [
        QtGui.QTextDocumentFragment.fromHtml(legend.item(i).toolTip()).toPlainText()
        for i in range(len(labels))
    ]
    assert hover == labels
    legend.resize(600, 200)  # room for every whole label
    qtbot.waitUntil(lambda: legend.shown() == labels)
    # a row's tick still hides its curve once its text was refitted
    legend.item(1).setCheckState(QtCore.Qt.CheckState.Unchecked)
    assert not curves[1].isVisible() and curves[0].isVisible()


def test_a_legend_too_narrow_for_a_distinct_ending_cuts_the_distinct_one():
    from viewer.qt.drawing.plot_items import fitted_label

    labels = ["hidden.0.weight (256, 784)", "hidden.2.weight (256, 256)", "out.weight (10, 256)"]
    metrics = QtGui.QFontMetrics(QtGui.QFont())
    narrow = metrics.horizontalAdvance("…0.we")
    shown = [fitted_label(label, metrics, narrow, labels) for label in labels]
    assert shown[0].startswith("…0.") and shown[1].startswith("…2.")  # never both "…weight"
    assert all(metrics.horizontalAdvance(t) <= narrow for t in shown)
    assert fitted_label("out.weight (10, 256)", metrics, 1000, labels) == "out.weight (10, 256)"
    assert fitted_label("W (3, 2)", metrics, metrics.horizontalAdvance("W"), ["W (3, 2)"]) == "W"


def test_a_legend_name_with_markup_reads_as_typed_on_hover(qtbot):
    from viewer.qt.drawing.plot_items import SeriesLegend

    name = "<b>W</b><img src=x> (3, 2)"  # a parameter's name from the user's program
    legend = SeriesLegend()
    qtbot.addWidget(legend)
    legend.set_series([(name, "#336699", pg.PlotDataItem([0, 1], [0, 1]))])
    hover = QtGui.QTextDocumentFragment.fromHtml(legend.item(0).toolTip()).toPlainText()
    assert hover == name and legend.labels() == [name]


def test_a_name_of_thousands_of_parts_is_fitted_in_a_bounded_number_of_tries():
    # 50 such names took 97 s to lay out: each tried every one of its 2 500 endings
    from viewer.qt.drawing.plot_items import MAX_PARTS, fitted_label

    metrics = QtGui.QFontMetrics(QtGui.QFont())
    measured = []

    class Counting:
        def horizontalAdvance(self, text):
            measured.append(len(text))
            return metrics.horizontalAdvance(text)

        def elidedText(self, text, mode, width):
            return metrics.elidedText(text, mode, width)

    labels = [("a." * 2500) + f"{i}.w (3, 2)" for i in range(3)]
    shown = fitted_label(labels[0], Counting(), 120, labels)
    assert len(measured) <= MAX_PARTS + 2
    assert shown.startswith("\u2026") and shown.endswith(".0.w")
