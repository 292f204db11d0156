"""Plot pieces that keep the plot panel readable (pyqtgraph).

* :class:`ReadableAxis`: an axis whose labels never overlap, at any length: one labelled level,
  its step chosen from the labels' measured size; log-mode ticks from
  :func:`viewer.model.panels.plot_scales.log_ticks` (pyqtgraph labels every 2..9 of a decade
  on a short axis, and they overlap).
* :class:`SeriesLegend`: a legend beside a plot instead of over its data; unticking a row
  hides its curve.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.panels.plot_scales import log_tick_labels, log_ticks, nice_step
from viewer.qt.drawing.plain_text import tooltip

__all__ = ["ReadableAxis", "SeriesLegend", "fitted_label"]


class ReadableAxis(pg.AxisItem):
    """An axis whose tick labels never overlap, whatever its length.

    One level of ticks is labelled and the finer ones are drawn without labels (pyqtgraph would
    label two or three levels when it guesses there is room, and on a short axis, or with long
    labels, they run together: ``400500``). On a linear axis the labelled step is the finest
    round one (1, 2 or 5 times a power of ten) whose labels, written as they will be drawn and
    measured in the axis' font, keep apart (:meth:`label_room`), and no finer than pyqtgraph's
    second level, so that a long axis keeps its usual density. A log axis takes its ticks from
    :func:`viewer.model.panels.plot_scales.log_ticks`. ``integer``: an axis of counts (backward
    passes), ticked at whole numbers and labelled without a decimal point."""

    def __init__(self, orientation: str, *args: Any, integer: bool = False, **kwargs: Any):
        super().__init__(orientation, *args, **kwargs)
        self.integer = integer
        if self.style["tickFont"] is None:  # the labels are measured in the font they are drawn in
            self.setStyle(tickFont=QtGui.QFont(self.font()))

    @property
    def tick_font(self) -> QtGui.QFont:
        """The font the tick labels are drawn and measured in."""
        return self.style["tickFont"] or self.font()

    def tickStrings(self, values, scale, spacing):
        if spacing is None:  # a level drawn without labels (see tickValues)
            return [""] * len(values)
        if self.integer and not self.logMode:
            return [f"{round(v * scale):,d}" for v in values]
        return super().tickStrings(values, scale, spacing)

    def label_spacing(self) -> float:
        """The pixels one label needs along a log axis (its height, or a short label's width
        sideways)."""
        metrics = QtGui.QFontMetricsF(self.tick_font)
        if self.orientation in ("left", "right"):
            return 1.5 * metrics.height()
        return metrics.horizontalAdvance("0.0005") + 12.0

    def label_room(self, strings: Sequence[str]) -> float:
        """The pixels from one tick to the next that the labels ``strings`` (of neighbouring
        ticks, in order) need to keep apart. Labels are centred on their ticks: sideways two
        neighbours need half of each width and a gap of a quarter of their mean width (at least
        a digit and a half); upright, a line and a half."""
        metrics = QtGui.QFontMetricsF(self.tick_font)
        if self.orientation in ("left", "right"):
            return 1.5 * metrics.height()
        widths = [metrics.horizontalAdvance(s) for s in strings]
        gap = 1.5 * metrics.horizontalAdvance("0")
        return max(
            (m + max(m / 4, gap) for m in ((a + b) / 2 for a, b in pairwise(widths))),
            default=0.0,
        )

    def labelled_step(self, low: float, high: float, size: float, start: float = 0.0) -> float:
        """The step of the labelled ticks from ``low`` to ``high`` (the axis' scaled units)
        drawn ``size`` pixels long: the finest round step, at least ``start``, whose labels
        keep apart (:meth:`label_room`). A label that would stick out past an end of the axis
        is not drawn (pyqtgraph drops it), so it does not count."""
        low, high = sorted((low, high))
        per_pixel = (high - low) / size
        metrics = QtGui.QFontMetricsF(self.tick_font)
        step = nice_step(
            max(start, per_pixel * 2.5 * metrics.horizontalAdvance("0"), self.integer * 1.0)
        )
        hide = self.style["hideOverlappingLabels"]
        overhang = 2.0 + (0 if hide is True else 15 if hide is False else int(hide))
        for _ in range(100):
            first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
            ks = range(first, min(last, first + 500) + 1)
            strings = self.tickStrings(
                [k * step / self.scale for k in ks],
                self.autoSIPrefixScale * self.scale,
                step / self.scale,
            )
            if self.orientation in ("top", "bottom"):
                drawn = []
                for k, text in zip(ks, strings, strict=True):
                    x, half = (k * step - low) / per_pixel, metrics.horizontalAdvance(text) / 2
                    if x - half >= -overhang and x + half <= size + overhang:
                        drawn.append(text)
                strings = drawn
            if step / per_pixel >= self.label_room(strings):
                break
            step = nice_step(step * 1.5)
        return step

    def tickSpacing(self, minVal, maxVal, size):
        """One labelled level (:meth:`labelled_step`) and pyqtgraph's finer levels that divide
        it, for ticks without labels."""
        levels = super().tickSpacing(minVal, maxVal, size)
        if self.logMode or not levels or not abs(maxVal - minVal) > 0 or not size > 0:
            return levels
        if self.integer:  # no tick between two passes
            levels = [(s, o) for s, o in levels if s >= 1.0] or [(1.0, 0)]
        second = levels[min(1, len(levels) - 1)][0]
        step = self.labelled_step(minVal, maxVal, size, start=second)
        finer = [(s, 0) for s, _offset in levels if s < step and _divides(s, step)]
        return [(step, 0), *finer]

    def tickValues(self, minVal, maxVal, size):
        """pyqtgraph's, with every level but the first marked as drawn without labels."""
        levels = super().tickValues(minVal, maxVal, size)
        if self.logMode or not levels:
            return levels
        return [levels[0], *((None, values) for _spacing, values in levels[1:])]

    def logTickValues(self, minVal, maxVal, size, stdTicks):
        labelled, minor = log_ticks(minVal, maxVal, size, self.label_spacing())
        levels: list[tuple[float | None, list[float]]] = [(1.0, labelled)]
        if minor:
            levels.append((None, minor))
        return levels

    def logTickStrings(self, values, scale, spacing):
        if spacing is None:  # the minor level: ticks without labels
            return [""] * len(values)
        shift = np.log10(scale) if scale and scale > 0 else 0.0
        return log_tick_labels([v + shift for v in values])


def _divides(fine: float, coarse: float) -> bool:
    ratio = coarse / fine
    return abs(ratio - round(ratio)) < 1e-6


_FULL_LABEL = QtCore.Qt.ItemDataRole.UserRole  # a legend row's whole label
_ROW_DECORATION = 44  # px of a legend row before its text: check box, swatch, gaps
# the most parts of a dotted name a legend row tries endings of (a module path is a few)
MAX_PARTS = 16


def fitted_label(
    label: str, metrics: QtGui.QFontMetrics, width: int, others: Sequence[str] = ()
) -> str:
    """``label`` ("hidden.0.weight (256, 784)") as it reads best in ``width`` px, told apart
    from the ``others`` beside it: whole; else without its shape ("hidden.0.weight"); else its
    dotted name from a later part on, as long as no other name ends the same ("…0.weight",
    not "…weight" beside "hidden.2.weight"), since a model's parameters share their first
    parts (cut at the end, five of torch_mlp.py's read "hidden…"); else the shortest such
    part cut at its end ("…0.wei…")."""
    if metrics.horizontalAdvance(label) <= width:
        return label
    name = _name_of(label)
    if name != label and metrics.horizontalAdvance(name) <= width:
        return name
    names = [_name_of(o) for o in others if o != label]
    parts = name.split(".")
    if len(parts) > MAX_PARTS:  # a hostile name of thousands of parts: its start is one
        parts = [".".join(parts[: -MAX_PARTS + 1]), *parts[-MAX_PARTS + 1 :]]
    shortest = name
    for k in range(1, len(parts)):
        rest = ".".join(parts[k:])
        if any(n == rest or n.endswith("." + rest) for n in names):
            break  # a shorter ending would not tell this curve apart either
        shortest = "\u2026" + rest
        if metrics.horizontalAdvance(shortest) <= width:
            return shortest
    return metrics.elidedText(shortest, QtCore.Qt.TextElideMode.ElideRight, max(width, 0))


def _name_of(label: str) -> str:
    """A legend label without its shape: "W (3, 2)" -> "W"."""
    if label.endswith(")") and " (" in label:
        return label[: label.rindex(" (")]
    return label


class SeriesLegend(QtWidgets.QListWidget):
    """A legend beside a plot rather than over its data: one checkable row per curve (colour
    swatch, label); unticking a row hides its curve."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("seriesLegend")
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        # a narrow legend shortens each name where it tells the least (see fitted_label): the
        # shape first, then the start of a dotted path; what is still too wide is cut at its end
        self.setTextElideMode(QtCore.Qt.TextElideMode.ElideRight)
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(
            QtWidgets.QSizePolicy.Policy.Maximum, QtWidgets.QSizePolicy.Policy.Expanding
        )
        self.setToolTip("Untick a curve to hide it")
        self._curves: list[Any] = []
        self._fitted_to = -1  # the text width the rows' texts were fitted to
        self.itemChanged.connect(self._on_item_changed)

    def set_series(self, series: Sequence[tuple[str, str, Any]]) -> None:
        """``(label, colour, curve)`` per curve, replacing the old ones."""
        blocked = self.blockSignals(True)
        self.clear()
        self._curves = [curve for _label, _colour, curve in series]
        for label, colour, _curve in series:
            swatch = QtGui.QPixmap(12, 12)
            swatch.fill(QtGui.QColor(colour))
            item = QtWidgets.QListWidgetItem(QtGui.QIcon(swatch), label)
            item.setData(_FULL_LABEL, label)
            item.setToolTip(tooltip(label))  # a name from the user's program: as typed
            item.setFlags(item.flags() | QtCore.Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(QtCore.Qt.CheckState.Checked)
            self.addItem(item)
        self.blockSignals(blocked)
        self._fitted_to = -1
        self._fit_texts()
        self.updateGeometry()

    def labels(self) -> list[str]:
        """The curves' whole labels (a row may show a shorter form: :meth:`shown`)."""
        return [self.item(i).data(_FULL_LABEL) for i in range(self.count())]

    def shown(self) -> list[str]:
        """The rows' texts as the legend's width lets them be read."""
        return [self.item(i).text() for i in range(self.count())]

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_texts()

    def _fit_texts(self) -> None:
        """Each row's text in the width a row has for it (its check box and swatch aside)."""
        width = self.viewport().width() - _ROW_DECORATION
        if width == self._fitted_to or not self.count():
            return
        self._fitted_to = width
        metrics = self.fontMetrics()
        labels = self.labels()
        blocked = self.blockSignals(True)  # (a text set is no tick changed)
        for i, label in enumerate(labels):
            self.item(i).setText(fitted_label(label, metrics, width, labels))
        self.blockSignals(blocked)

    def sizeHint(self) -> QtCore.QSize:
        metrics = self.fontMetrics()
        widest = max((metrics.horizontalAdvance(t) for t in self.labels()), default=60)
        # check box + swatch + text + frame, at most a readable share of a narrow panel
        return QtCore.QSize(min(widest + 64, 190), 120)

    def _on_item_changed(self, item: QtWidgets.QListWidgetItem) -> None:
        row = self.row(item)
        if 0 <= row < len(self._curves):
            self._curves[row].setVisible(item.checkState() == QtCore.Qt.CheckState.Checked)
