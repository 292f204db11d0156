"""The plot panel (pyqtgraph): f, df/dx and d2f/dx2 of an expression along one leaf; a training
run's loss and gradient norms per ``backward()``; the histograms of the selected node.

A pure view: it draws the arrays of :mod:`viewer.model.panels.plots` (``FunctionPlot``,
``TrainingCurves``, ``NodeHistograms``) and shows a message where a plot does not apply. What
to compute and when is decided by :class:`viewer.qt.panels.plots_binding.PlotBinding`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.qt.drawing.plain_text import holding
from viewer.qt.drawing.plot_items import ReadableAxis, SeriesLegend
from viewer.qt.drawing.themes import LIGHT, Theme

__all__ = ["HISTOGRAM_COLOURS", "TABS", "PlotPanel", "plot_histogram"]

TABS = ("function", "training", "histogram")
AXIS_WIDTH = 62  # px, the left axes of plots stacked over one x axis (labels and ticks)
LEGEND_MIN_WIDTH = 90  # px, the norm legend's narrowest: tick box, swatch, a few letters
CURVE_COLOURS = ("#1c7ed6", "#e8590c", "#2f9e44")  # f, df/dx, d2f/dx2
HISTOGRAM_COLOURS = ("#f0a640", "#5aa5c8")  # value, gradient
SERIES_COLOURS = (
    "#1c7ed6",
    "#e8590c",
    "#2f9e44",
    "#ae3ec9",
    "#f59f00",
    "#0ca678",
    "#d6336c",
    "#495057",
)


def _axes(counts: bool = False) -> dict[str, ReadableAxis]:
    """``counts``: the bottom axis counts backward passes (whole numbers)."""
    return {"left": ReadableAxis("left"), "bottom": ReadableAxis("bottom", integer=counts)}


def _plot_widget(parent: QtWidgets.QWidget, name: str, counts: bool = False) -> pg.PlotWidget:
    plot = pg.PlotWidget(parent, axisItems=_axes(counts))
    plot.setObjectName(name)
    plot.setMenuEnabled(False)
    plot.showGrid(x=True, y=True, alpha=0.2)
    plot.setMinimumHeight(64)  # two of them stack: the window still fits 560 px tall
    return plot


def _message_label(parent: QtWidgets.QWidget, name: str) -> QtWidgets.QLabel:
    label = QtWidgets.QLabel(parent)
    label.setObjectName(name)
    label.setWordWrap(True)
    label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def plot_histogram(
    plot: pg.PlotWidget | pg.PlotItem,
    edges: Any,
    counts: Any,
    colour: str,
    fill_alpha: str,
    **options: Any,
) -> pg.PlotDataItem:
    """Draw ``counts`` over the bins ``edges`` as filled steps in ``colour`` (the fill with the
    hex alpha ``fill_alpha``); ``options`` go to ``plot.plot`` (a legend ``name``)."""
    return plot.plot(
        np.asarray(edges, dtype=float),
        np.asarray(counts, dtype=float),
        stepMode="center",
        fillLevel=0,
        brush=pg.mkBrush(colour + fill_alpha),
        pen=pg.mkPen(colour),
        **options,
    )


def _column(page: QtWidgets.QWidget, message: QtWidgets.QLabel, *plots: QtWidgets.QWidget) -> None:
    """Lay ``page`` out as ``message`` above ``plots``, the plots sharing the height."""
    col = QtWidgets.QVBoxLayout(page)
    col.setContentsMargins(4, 4, 4, 4)
    col.addWidget(message)
    for plot in plots:
        col.addWidget(plot, 1)


class _ScrollingPage(QtWidgets.QScrollArea):
    """A tab's page that scrolls when its dock is shorter than the page's least height (a
    message, its controls and stacked plots: 172 px), instead of making the right column,
    and with it a short window, taller than asked (1280 x 560 became 572 high)."""

    # what it needs at least: the controls' row and a line of text above a plot's edge
    MIN_HEIGHT = 64

    def __init__(self, page: QtWidgets.QWidget, parent: QtWidgets.QWidget) -> None:
        super().__init__(parent)
        holding(self, page)

    def minimumSizeHint(self) -> QtCore.QSize:
        # as narrow as the page (its width is the column's to decide, and a scroll bar shows
        # only in a dock shorter than any a window needs at 560 px), as short as MIN_HEIGHT;
        # QAbstractScrollArea's own is room for its scroll bars' buttons
        page = self.widget()
        width = page.minimumSizeHint().width() if page is not None else 0
        return QtCore.QSize(width, self.MIN_HEIGHT)

    def sizeHint(self) -> QtCore.QSize:
        page = self.widget()
        return page.sizeHint() if page is not None else super().sizeHint()


class PlotPanel(QtWidgets.QWidget):
    leaf_chosen = QtCore.Signal(str)
    tab_changed = QtCore.Signal(str)  # one of TABS
    pass_clicked = QtCore.Signal(int)  # the pass (from 0) of the training point nearest a click

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("plotPanelContents")
        self.tabs = QtWidgets.QTabWidget(self)
        self.tabs.setObjectName("plotTabs")
        self.tabs.setDocumentMode(True)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tabs)
        self._theme = LIGHT

        # ------------------------------------------------------------ f, df/dx, d2f/dx2
        # One row per curve, x linked, each with its own y axis: f, f' and f'' can differ by
        # orders of magnitude, and on one axis the largest flattens the others into a line.
        page = QtWidgets.QWidget(self.tabs)
        self.leaf_combo = QtWidgets.QComboBox(page)
        self.leaf_combo.setObjectName("plotLeafCombo")
        self.leaf_combo.setToolTip("The leaf to plot against; the other leaves keep their values")
        self.clip_box = QtWidgets.QCheckBox("Clip outliers", page)
        self.clip_box.setObjectName("plotClipBox")
        self.clip_box.setChecked(True)
        self.clip_box.setToolTip(
            "Show each curve in its own robust range: a tail that runs off by orders of "
            "magnitude is cut at the edge and marked with triangles. Untick for the full range."
        )
        self.function_message = _message_label(page, "plotFunctionMessage")
        self.function_values = _message_label(page, "plotFunctionValues")
        self.function_clip_note = _message_label(page, "plotFunctionClipNote")
        self.function_plot = pg.GraphicsLayoutWidget(page)
        self.function_plot.setObjectName("functionPlot")
        self.function_plot.setMinimumHeight(96)  # the window still fits 560 px tall
        self.function_plot.ci.layout.setSpacing(0)
        self.function_plot.ci.setContentsMargins(2, 2, 2, 2)
        self.function_rows: list[pg.PlotItem] = []
        self.curves: list[pg.PlotDataItem] = []
        self.marker_lines: list[pg.InfiniteLine] = []
        self.markers: list[pg.ScatterPlotItem] = []
        self.clip_marks: list[pg.ScatterPlotItem] = []
        self.function_names: list[pg.LabelItem] = []  # beside each row, level: rows are short
        for k, (colour, name) in enumerate(
            zip(CURVE_COLOURS, ("f", "df/dx", "d2f/dx2"), strict=True)
        ):
            self.function_names.append(
                self.function_plot.addLabel(name, row=k, col=0, color=colour, size="9pt")
            )
            row = self.function_plot.addPlot(row=k, col=1, axisItems=_axes())
            row.setMenuEnabled(False)
            row.showGrid(x=True, y=True, alpha=0.2)
            row.getAxis("left").setWidth(AXIS_WIDTH)
            if k:
                row.setXLink(self.function_rows[0])
            if k < 2:  # the x values once, under the last row
                row.getAxis("bottom").setStyle(showValues=False)
            self.function_rows.append(row)
            self.curves.append(row.plot([], [], pen=pg.mkPen(colour, width=2), name=name))
            line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#868e96"))
            row.addItem(line)
            self.marker_lines.append(line)
            marker = pg.ScatterPlotItem(size=9, pen=pg.mkPen("#ffffff", width=1.2))
            row.addItem(marker)
            self.markers.append(marker)
            clip = pg.ScatterPlotItem(size=9, pen=None, brush=pg.mkBrush(colour))
            row.addItem(clip)
            self.clip_marks.append(clip)
        self.marker_line = self.marker_lines[0]
        self.function_ranges: tuple[Any, ...] = ()
        row = QtWidgets.QHBoxLayout()
        row.addWidget(QtWidgets.QLabel("Plot against:", page))
        row.addWidget(self.leaf_combo, 1)
        row.addWidget(self.clip_box)
        col = QtWidgets.QVBoxLayout(page)
        col.setContentsMargins(4, 4, 4, 4)
        col.addLayout(row)
        col.addWidget(self.function_message)
        col.addWidget(self.function_values)
        col.addWidget(self.function_plot, 1)
        col.addWidget(self.function_clip_note)
        self.tabs.addTab(_ScrollingPage(page, self.tabs), "f(x)")
        self.leaf_combo.activated.connect(
            lambda index: self.leaf_chosen.emit(self.leaf_combo.itemText(index))
        )
        self.clip_box.toggled.connect(lambda _on: self._apply_function_ranges())
        self.function_data: Any = None

        # ------------------------------------------------------------ training
        page = QtWidgets.QWidget(self.tabs)
        self.training_message = _message_label(page, "plotTrainingMessage")
        self.loss_plot = _plot_widget(page, "lossPlot", counts=True)
        self.loss_plot.setLabel("bottom", "backward #")
        self.loss_curve = self.loss_plot.plot([], [], pen=pg.mkPen(CURVE_COLOURS[0], width=2))
        self.norm_plot = _plot_widget(page, "gradNormPlot", counts=True)
        self.norm_plot.setLabel("bottom", "backward #")
        self.norm_plot.setLabel("left", "grad norm")
        for plot in (self.loss_plot, self.norm_plot):  # one width: the x-linked axes align
            plot.getAxis("left").setWidth(AXIS_WIDTH)
        self.norm_plot.setXLink(self.loss_plot)
        self.norm_curves: list[pg.PlotDataItem] = []
        self.norm_legend = SeriesLegend(page)
        self.norm_legend.setObjectName("gradNormLegend")
        # The legend beside the norm plot, in a column the loss plot shares: both plots keep
        # the same width, so the x-linked axes show the same calls (pyqtgraph links by pixel).
        grid = QtWidgets.QGridLayout(page)
        grid.setContentsMargins(4, 4, 4, 4)
        grid.setHorizontalSpacing(4)
        grid.addWidget(self.training_message, 0, 0, 1, 2)
        grid.addWidget(self.loss_plot, 1, 0)
        grid.addWidget(self.norm_plot, 2, 0)
        grid.addWidget(self.norm_legend, 2, 1)
        grid.setColumnStretch(0, 1)
        grid.setRowStretch(1, 1)
        grid.setRowStretch(2, 1)
        self.tabs.addTab(_ScrollingPage(page, self.tabs), "Training")
        self.training_data: Any = None
        # The pass whose graph is on screen: a line across each training plot (so every curve
        # is marked at it), numbered on the loss plot, and a dot on the loss curve.
        self.shown_pass: int | None = None
        self.pass_lines: list[pg.InfiniteLine] = []
        for plot in (self.loss_plot, self.norm_plot):
            # pyqtgraph's own label anchors: the number goes to the side with room
            label = "#{value:,.0f}" if plot is self.loss_plot else None
            line = pg.InfiniteLine(
                angle=90, movable=False, label=label, labelOpts={"position": 0.8}
            )
            line.setZValue(-5)  # behind the curves
            line.hide()
            plot.addItem(line, ignoreBounds=True)
            self.pass_lines.append(line)
            plot.setToolTip(
                "Click a point to open that pass's graph (in a long run, the nearest pass "
                "whose graph was kept)"
            )
            plot.scene().sigMouseClicked.connect(
                lambda event, plot=plot: self._on_training_click(plot, event)
            )
        self.pass_label: pg.InfLineLabel = self.pass_lines[0].label
        self.pass_dot = pg.PlotDataItem([], [], pen=None, symbol="o", symbolSize=10)
        self.loss_plot.addItem(self.pass_dot)
        self._style_pass_marks(self._theme)

        # ------------------------------------------------------------ histograms
        page = QtWidgets.QWidget(self.tabs)
        self.histogram_message = _message_label(page, "plotHistogramMessage")
        self.value_histogram = _plot_widget(page, "valueHistogram")
        self.grad_histogram = _plot_widget(page, "gradHistogram")
        _column(page, self.histogram_message, self.value_histogram, self.grad_histogram)
        self.tabs.addTab(_ScrollingPage(page, self.tabs), "Histogram")
        self.histogram_data: Any = None

        self.tabs.currentChanged.connect(lambda i: self.tab_changed.emit(TABS[i]))
        self.show_function_message("")
        self.show_training_message("")
        self.show_histogram_message("")

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        # The norm legend beside the plots takes at most 40% of a narrow panel: at its full
        # 190 px in a 290 px dock the two plots kept under 30 px for their data.
        self.norm_legend.setMaximumWidth(max(LEGEND_MIN_WIDTH, self.width() * 2 // 5))

    # ---------------------------------------------------------------- tabs, theme
    @property
    def current_tab(self) -> str:
        return TABS[self.tabs.currentIndex()]

    def set_current_tab(self, name: str) -> None:
        self.tabs.setCurrentIndex(TABS.index(name))

    def set_theme(self, theme: Theme) -> None:
        self._theme = theme
        for canvas in (self.function_plot, *self._plots()):
            canvas.setBackground(theme.base)
        for item in self._plot_items():
            for side in ("left", "bottom"):
                axis = item.getAxis(side)
                axis.setPen(pg.mkPen(theme.mid))
                axis.setTextPen(pg.mkPen(theme.text))
        for line in self.marker_lines:
            line.setPen(pg.mkPen(theme.mid, style=QtCore.Qt.PenStyle.DashLine))
        self._style_pass_marks(theme)
        if self.function_data is not None:
            self._label_function_rows(self.function_data.labels)

    def _style_pass_marks(self, theme: Theme) -> None:
        for line in self.pass_lines:
            line.setPen(pg.mkPen(theme.text, width=1.5, style=QtCore.Qt.PenStyle.DashLine))
        self.pass_label.setColor(theme.text)
        self.pass_dot.setSymbolPen(pg.mkPen(theme.text, width=1.5))
        self.pass_dot.setSymbolBrush(pg.mkBrush(theme.base))

    def _plots(self) -> tuple[pg.PlotWidget, ...]:
        return (self.loss_plot, self.norm_plot, self.value_histogram, self.grad_histogram)

    def _plot_items(self) -> list[pg.PlotItem]:
        return [*self.function_rows, *(p.getPlotItem() for p in self._plots())]

    # ---------------------------------------------------------------- f, df/dx, d2f/dx2
    def set_leaves(self, names: Sequence[str], current: str | None) -> None:
        """The leaves to choose from (``current`` selected)."""
        blocked = self.leaf_combo.blockSignals(True)
        self.leaf_combo.clear()
        self.leaf_combo.addItems(list(names))
        if current is not None and current in names:
            self.leaf_combo.setCurrentIndex(list(names).index(current))
        self.leaf_combo.setEnabled(len(names) > 1)
        self.leaf_combo.blockSignals(blocked)

    def show_function_message(self, text: str) -> None:
        """Why there is no plot (or what is being computed); the old curves are cleared."""
        self.function_data = None
        self.function_ranges = ()
        for curve, marker, clip, line in zip(
            self.curves, self.markers, self.clip_marks, self.marker_lines, strict=True
        ):
            curve.setData([], [])
            marker.setData([], [])
            clip.setData([], [])
            line.hide()
        self.function_values.hide()
        self.function_clip_note.hide()
        self.function_plot.setVisible(False)
        self.function_message.setText(
            text or "Type an expression of one scalar leaf (y = tanh(x) * x**2) to plot it."
        )
        self.function_message.setVisible(True)

    def show_function_progress(self, text: str) -> None:
        """A computation is under way: say so above the (previous) curves."""
        self.function_message.setText(text)
        self.function_message.setVisible(True)

    def show_function_plot(self, data: Any) -> None:
        """A :class:`viewer.model.panels.plots.FunctionPlot`: each curve in its own row."""
        self.function_data = data
        self.function_ranges = data.view_ranges()
        names = data.labels
        x = np.asarray(data.x, dtype=float)
        x0 = data.x0
        for curve, marker, line, values, value, colour in zip(
            self.curves,
            self.markers,
            self.marker_lines,
            (data.f, data.df, data.d2f),
            (data.f0, data.df0, data.d2f0),
            CURVE_COLOURS,
            strict=True,
        ):
            curve.setData(x, np.asarray(values, dtype=float))
            finite = np.isfinite(value)
            marker.setData([{"pos": (x0, value), "brush": pg.mkBrush(colour)}] if finite else [])
            line.setPos(x0)
            line.show()
        for curve, name in zip(self.curves, names, strict=True):
            curve.opts["name"] = name
        self._label_function_rows(names)
        self.function_rows[-1].setLabel("bottom", data.leaf)
        self.function_rows[0].setXRange(float(x[0]), float(x[-1]), padding=0.02)
        pairs = (
            (f"at {data.leaf}", x0, ":"),
            (names[0], data.f0, ","),
            (names[1], data.df0, ","),
            (names[2], data.d2f0, ""),
        )
        # each "name = value" wraps as one piece (it broke "d2y/" from "dx2")
        self.function_values.setText(
            "  ".join(_unbroken(f"{name} = {_fmt(v)}{after}") for name, v, after in pairs)
            + f"   ({data.n_points}\u00a0points)"
        )
        self.function_values.show()
        if not np.isfinite(np.asarray(data.f, dtype=float)).any():
            self.function_message.setText(
                f"{names[0]} is not finite anywhere between {_fmt(data.x[0])} and "
                f"{_fmt(data.x[-1])}: nothing to draw (see Jump to First NaN/Inf)."
            )
            self.function_message.setVisible(True)
        else:
            self.function_message.setVisible(False)
        self.function_plot.setVisible(True)
        self._apply_function_ranges()

    def _label_function_rows(self, names: Sequence[str]) -> None:
        for label, name, colour in zip(self.function_names, names, CURVE_COLOURS, strict=True):
            label.setText(name, color=colour, size="9pt")

    def _apply_function_ranges(self) -> None:
        """Each row in its curve's robust range (outliers marked at the edge), or, with Clip
        outliers unticked, in the curve's full range."""
        data = self.function_data
        if data is None:
            return
        clip = self.clip_box.isChecked()
        x = np.asarray(data.x, dtype=float)
        clipped = []
        for row, marks, values, view, name in zip(
            self.function_rows,
            self.clip_marks,
            (data.f, data.df, data.d2f),
            self.function_ranges,
            data.labels,
            strict=True,
        ):
            if not clip:
                marks.setData([], [])
                row.enableAutoRange(axis=pg.ViewBox.YAxis)
                continue
            row.setYRange(view.low, view.high, padding=0)
            below, above = (_thinned(mask) for mask in view.outside(values))
            inset = 0.04 * (view.high - view.low)  # the whole triangle inside the view
            marks.setData(
                np.concatenate([x[above], x[below]]),
                np.concatenate(
                    [
                        np.full(above.sum(), view.high - inset),
                        np.full(below.sum(), view.low + inset),
                    ]
                ),
                symbol=["t1"] * int(above.sum()) + ["t"] * int(below.sum()),
            )
            parts = []
            if view.clipped_high:
                parts.append(f"up to {view.data_high:.3g}")
            if view.clipped_low:
                parts.append(f"down to {view.data_low:.3g}")
            if parts:
                clipped.append(f"{name} {' and '.join(parts)}")
        if clipped:
            self.function_clip_note.setText(f"▲▼ clipped: {'; '.join(clipped)}")
            self.function_clip_note.setToolTip(
                "Each curve is shown in its own robust range; the triangles mark where it "
                "runs past the edge. Untick Clip outliers for the full range."
            )
        self.function_clip_note.setVisible(bool(clipped))

    # ---------------------------------------------------------------- training
    def show_training_message(self, text: str) -> None:
        self.training_data = None
        self.loss_curve.setData([], [])
        self._clear_norms()
        self._draw_shown_pass()
        self.loss_plot.setVisible(False)
        self.norm_plot.setVisible(False)
        self.norm_legend.setVisible(False)
        self.training_message.setText(
            text
            or "Run a training script (linear_regression.py, sine_regression.py) to see its "
            "loss and gradient norms per backward() call."
        )
        self.training_message.setVisible(True)

    def _clear_norms(self) -> None:
        for curve in self.norm_curves:
            self.norm_plot.removeItem(curve)
        self.norm_curves = []
        self.norm_legend.set_series([])

    def show_training(self, data: Any) -> None:
        """A :class:`viewer.model.panels.plots.TrainingCurves`."""
        self.training_data = data
        steps = np.asarray(data.steps, dtype=float) + 1  # backward #1.., as the graph list
        symbol = "o" if len(steps) <= 30 else None
        self.loss_curve.setData(steps, np.asarray(data.loss, dtype=float), symbol=symbol)
        self.loss_plot.setLabel("left", data.loss_label)
        self._clear_norms()
        for k, label in enumerate(data.labels):
            colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
            curve = self.norm_plot.plot(
                steps,
                np.asarray(data.grad_norms[k], dtype=float),
                pen=pg.mkPen(colour, width=1.5),
                symbol=symbol,
                symbolBrush=colour,
                symbolSize=5,
                name=label,
            )
            self.norm_curves.append(curve)
        self.norm_legend.set_series(
            [
                (label, SERIES_COLOURS[k % len(SERIES_COLOURS)], curve)
                for k, (label, curve) in enumerate(zip(data.labels, self.norm_curves, strict=True))
            ]
        )
        notes = list(data.notes)
        if data.n_steps == 1:
            notes.append("one backward() call: a training loop calls it once per step")
        self.training_message.setText("; ".join(notes))
        self.training_message.setVisible(bool(notes))
        # Losses and norms span decades: a log axis when every value allows one.
        self.loss_plot.setLogMode(y=_positive(data.loss) and len(steps) > 1)
        self.norm_plot.setLogMode(y=_positive(data.grad_norms) and len(steps) > 1)
        self.loss_plot.setVisible(True)
        self.norm_plot.setVisible(bool(data.labels))
        self.norm_legend.setVisible(bool(data.labels))
        self.loss_plot.enableAutoRange()
        self.norm_plot.enableAutoRange()
        self._draw_shown_pass()

    def show_pass(self, number: int | None) -> None:
        """Mark pass ``number`` (from 0; None: no pass) as the one whose graph is on screen."""
        self.shown_pass = number
        self._draw_shown_pass()

    def _draw_shown_pass(self) -> None:
        data, number = self.training_data, self.shown_pass
        if data is None or number is None:
            for line in self.pass_lines:
                line.hide()
            self.pass_dot.setData([], [])
            return
        x = float(number + 1)  # backward #1.., as the graph list
        for line in self.pass_lines:
            line.show()  # first: the label follows the line's position only while shown
            line.setPos(x)
        steps = np.asarray(data.steps)
        j = int(np.searchsorted(steps, number))
        loss = float(data.loss[j]) if j < len(steps) and steps[j] == number else math.nan
        if math.isfinite(loss):
            self.pass_dot.setData([x], [loss])
        else:
            self.pass_dot.setData([], [])

    def _on_training_click(self, plot: pg.PlotWidget, event: Any) -> None:
        """A left click in a training plot's data area: the pass of the nearest point."""
        data = self.training_data
        if (
            data is None
            or not len(data.steps)
            or event.button() != QtCore.Qt.MouseButton.LeftButton
        ):
            return
        view = plot.getViewBox()
        where = event.scenePos()
        if not view.sceneBoundingRect().contains(where):
            return
        x = view.mapSceneToView(where).x() - 1  # the plot counts passes from 1
        steps = np.asarray(data.steps)
        j = int(np.clip(np.searchsorted(steps, x), 1, len(steps) - 1)) if len(steps) > 1 else 0
        if j and abs(steps[j - 1] - x) <= abs(steps[j] - x):
            j -= 1
        event.accept()
        self.pass_clicked.emit(int(steps[j]))

    # ---------------------------------------------------------------- histograms
    def show_histogram_message(self, text: str) -> None:
        self.histogram_data = None
        for plot in (self.value_histogram, self.grad_histogram):
            plot.clear()
            plot.setVisible(False)
        self.histogram_message.setText(
            text or "Select a variable in the graph to see how its value and gradient spread."
        )
        self.histogram_message.setVisible(True)

    def show_histograms(self, data: Any) -> None:
        """A :class:`viewer.model.panels.plots.NodeHistograms`."""
        self.histogram_data = data
        shown = 0
        for plot, histogram, colour, what in (
            (self.value_histogram, data.value, HISTOGRAM_COLOURS[0], "value"),
            (self.grad_histogram, data.grad, HISTOGRAM_COLOURS[1], "gradient"),
        ):
            plot.clear()
            if histogram is None:
                plot.setVisible(False)
                continue
            plot_histogram(plot, histogram.edges, histogram.counts, colour, "99")
            extra = []
            if histogram.nan:
                extra.append(f"{histogram.nan} NaN")
            if histogram.inf:
                extra.append(f"{histogram.inf} Inf")
            title = f"{what} of {data.label}: {histogram.n} finite element(s)"
            if extra:
                title += f", {', '.join(extra)} not drawn"
            if histogram.live:
                title += " (the live object now)"
            plot.setTitle(title, color=self._theme.text, size="9pt")
            plot.setVisible(True)
            plot.enableAutoRange()
            shown += 1
        self.histogram_message.setText(data.message)
        self.histogram_message.setVisible(bool(data.message) or not shown)
        if not shown and not data.message:
            self.histogram_message.setText(f"{data.label}: nothing to draw at this step")


def _thinned(mask: np.ndarray, stride: int = 3) -> np.ndarray:
    """Every ``stride``-th point of each run of True (its first included), so that the marks of
    an out-of-range stretch stay apart instead of merging into a bar."""
    out = np.zeros_like(mask)
    run = 0
    for i, inside in enumerate(mask):
        run = run + 1 if inside else 0
        out[i] = inside and (run - 1) % stride == 0
    return out


def _positive(values: Any) -> bool:
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return finite.size > 0 and bool(np.all(finite > 0))


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _unbroken(text: str) -> str:
    """``text`` that a word-wrapped label never breaks: no-break spaces, and a word joiner
    after each slash (a line may break after "/")."""
    return text.replace(" ", "\u00a0").replace("/", "/\u2060")
