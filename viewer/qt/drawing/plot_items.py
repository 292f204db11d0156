"""Plot pieces that keep the plot panel readable (pyqtgraph).

* :class:`ReadableAxis`: an axis whose labels stay a label apart: log-mode ticks from
  :func:`viewer.model.panels.plot_scales.log_ticks` (pyqtgraph labels every 2..9 of a decade on a
  short axis, and they overlap), and on a short linear axis a coarser labelled step.
* :class:`SeriesLegend`: a legend beside a plot instead of over its data; unticking a row
  hides its curve.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.panels.plot_scales import log_tick_labels, log_ticks, nice_step

__all__ = ["ReadableAxis", "SeriesLegend"]


class ReadableAxis(pg.AxisItem):
    """An axis whose log-mode ticks never overlap: :func:`viewer.model.panels.plot_scales.log_ticks`
    picks labelled ticks at least a label apart (pyqtgraph labels every 2..9 of a decade on a
    short axis) and unlabelled minor ticks between them. ``integer``: an axis of counts
    (backward passes), ticked at whole numbers and labelled without a decimal point."""

    def __init__(self, orientation: str, *args: Any, integer: bool = False, **kwargs: Any):
        super().__init__(orientation, *args, **kwargs)
        self.integer = integer

    def tickStrings(self, values, scale, spacing):
        if self.integer and not self.logMode:
            return [f"{round(v * scale):,d}" for v in values]
        return super().tickStrings(values, scale, spacing)

    def label_spacing(self) -> float:
        """The pixels one label needs along the axis (its height, or its width sideways)."""
        metrics = QtGui.QFontMetricsF(self.style["tickFont"] or self.font())
        if self.orientation in ("left", "right"):
            return 1.5 * metrics.height()
        return metrics.horizontalAdvance("0.0005") + 12.0

    def tickSpacing(self, minVal, maxVal, size):
        """pyqtgraph's levels, with the labelled one at least a label apart (a short axis,
        such as one of the f(x) rows, would get labels that touch)."""
        levels = super().tickSpacing(minVal, maxVal, size)
        span = abs(maxVal - minVal)
        if self.logMode or not levels or not span > 0 or not size > 0:
            return levels
        per_pixel = span / size
        need = self.label_spacing() * per_pixel
        if self.integer:  # no tick between two passes
            need = max(need, 1.0)
            levels = [(s, o) for s, o in levels if s >= 1.0] or [(1.0, 0)]
        if levels[0][0] >= need:
            return levels
        spacing = nice_step(need)
        return [(spacing, 0), *((s, o) for s, o in levels if s < spacing)]

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


class SeriesLegend(QtWidgets.QListWidget):
    """A legend beside a plot rather than over its data: one checkable row per curve (colour
    swatch, label); unticking a row hides its curve."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("seriesLegend")
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.setTextElideMode(QtCore.Qt.TextElideMode.ElideMiddle)
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(
            QtWidgets.QSizePolicy.Policy.Maximum, QtWidgets.QSizePolicy.Policy.Expanding
        )
        self.setToolTip("Untick a curve to hide it")
        self._curves: list[Any] = []
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
            item.setToolTip(label)
            item.setFlags(item.flags() | QtCore.Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(QtCore.Qt.CheckState.Checked)
            self.addItem(item)
        self.blockSignals(blocked)
        self.updateGeometry()

    def labels(self) -> list[str]:
        return [self.item(i).text() for i in range(self.count())]

    def sizeHint(self) -> QtCore.QSize:
        metrics = self.fontMetrics()
        widest = max((metrics.horizontalAdvance(t) for t in self.labels()), default=60)
        # check box + swatch + text + frame, at most a readable share of a narrow panel
        return QtCore.QSize(min(widest + 64, 190), 120)

    def _on_item_changed(self, item: QtWidgets.QListWidgetItem) -> None:
        row = self.row(item)
        if 0 <= row < len(self._curves):
            self._curves[row].setVisible(item.checkState() == QtCore.Qt.CheckState.Checked)
