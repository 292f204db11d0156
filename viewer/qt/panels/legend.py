"""The legend: every node state and every mark, drawn as the graph draws them.

:func:`legend_entries` resolves the model's tables (:mod:`viewer.model.panels.legend`) against a
theme, and the ``paint_*`` functions draw one swatch; the window's :class:`LegendWidget` and
the legend of an exported picture (:mod:`viewer.qt.graph.image_export`) both use them, so they show
the
same thing.
"""

from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.checks.problem_marks import problem_colour
from viewer.model.node_states import STATE_NAMES
from viewer.model.panels.legend import (
    FUNCTION_STATES,
    MARKS,
    VARIABLE_STATES,
    LegendMark,
    LegendState,
)
from viewer.model.scene.colours import error_colour, faded
from viewer.qt.drawing.themes import NodeStyle, Theme, readable_on
from viewer.qt.graph.items import DETACHED_KEY, style_of_key

__all__ = [
    "LegendEntry",
    "LegendWidget",
    "legend_entries",
    "paint_badge",
    "paint_mark",
    "paint_node",
]

SWATCH = QtCore.QSize(46, 22)  # the window legend's swatches, pixels


@dataclass(frozen=True)
class LegendEntry:
    """One row of the legend with what it takes to draw it in a theme.

    ``key``: 'variable:<state>', 'function:<state>' or 'mark:<kind>'. ``style``: the node
    drawn in the swatch (a mark's sample node). ``badges``: (text, colour) pills on it;
    ``ring``: the colour of an outline around it ('' for none), dashed for a flag.
    """

    key: str
    label: str
    meaning: str
    kind: str  # 'variable' | 'function' (the sample node's shape)
    style: NodeStyle
    badges: tuple[tuple[str, QtGui.QColor], ...] = ()
    ring: str = ""
    ring_dashed: bool = False


def _colour(rgba) -> QtGui.QColor:
    r, g, b, a = (int(c) for c in rgba)
    return QtGui.QColor(r, g, b, a)


def _state_entry(theme: Theme, entry: LegendState) -> LegendEntry:
    return LegendEntry(
        f"{entry.kind}:{entry.state}",
        entry.label,
        entry.meaning,
        entry.kind,
        theme.node_style(entry.kind, entry.state),
    )


def _mark_entry(theme: Theme, mark: LegendMark) -> LegendEntry:
    sample = theme.node_style("variable", "value")
    kind = "variable"
    error = _colour(theme.graph.error)
    badges: tuple[tuple[str, QtGui.QColor], ...] = ()
    ring, dashed = "", False
    if mark.overlay == "leak" or mark.overlay == "nonfinite" or mark.kind == "wrong_backward":
        if mark.overlay != "leak":
            kind, sample = "function", theme.node_style("function", "value")
        badges = tuple((b, error) for b in mark.badges)
        ring, dashed = error.name(), True
    elif mark.kind == "gradcheck":
        badges = tuple((b, _colour(error_colour(float(b)))) for b in mark.badges)
    elif mark.kind == "current":
        kind, sample, ring = "function", theme.node_style("function", "value"), theme.current
    elif mark.kind == "selection":
        ring = theme.selection
    elif mark.kind == "grad_carried":
        sample = theme.node_style("variable", "grad_carried")
    elif mark.kind == "detached":  # as the graph draws a node of it: greyed fill and border
        fill = QtGui.QColor(sample.fill)
        grey = faded(np.array([fill.getRgb()], dtype=np.uint8), theme.graph.background)[0]
        code = STATE_NAMES.index("value")
        greyed = style_of_key(theme, code + DETACHED_KEY, STATE_NAMES)
        sample = dataclasses.replace(greyed, fill=_colour(grey).name())
    elif mark.kind == "problem":  # a warning's colour, as problem_marks draws one
        amber = _colour(problem_colour("warning", theme.graph.error, theme.graph.edge))
        badges = tuple((b, amber) for b in mark.badges)
        ring, dashed = amber.name(), True
    elif mark.kind == "cut":  # the overlay the scene sets: a ring and badge in the edge colour
        edge = _colour(theme.graph.edge)
        badges = tuple((b, edge) for b in mark.badges)
        ring, dashed = edge.name(), True
    return LegendEntry(
        f"mark:{mark.kind}", mark.label, mark.meaning, kind, sample, badges, ring, dashed
    )


def legend_entries(theme: Theme) -> tuple[tuple[str, tuple[LegendEntry, ...]], ...]:
    """The legend's sections in ``theme``: ('Variables' | 'Functions' | 'Marks', entries)."""
    return (
        ("Variables", tuple(_state_entry(theme, e) for e in VARIABLE_STATES)),
        ("Functions", tuple(_state_entry(theme, e) for e in FUNCTION_STATES)),
        ("Marks", tuple(_mark_entry(theme, m) for m in MARKS)),
    )


def paint_node(
    painter: QtGui.QPainter,
    rect: QtCore.QRectF,
    kind: str,
    style: NodeStyle,
    fill: QtGui.QColor | None = None,
) -> None:
    """A node's box as the graph draws it: a rounded box for a variable, a box for a
    Function; border colour, width and pattern from ``style``, the fill too unless ``fill``
    (a frame's colour for the node) is given."""
    painter.setPen(style.pen())
    painter.setBrush(fill if fill is not None else QtGui.QColor(style.fill))
    if kind == "function":
        painter.drawRect(rect)
    else:
        radius = rect.height() / 2.6
        painter.drawRoundedRect(rect, radius, radius)


def paint_badge(
    painter: QtGui.QPainter, left: float, top: float, text: str, colour: QtGui.QColor
) -> float:
    """A badge pill with its left edge at ``left``, in the painter's font; returns its width."""
    width = QtGui.QFontMetricsF(painter.font()).horizontalAdvance(text) + 10
    height = QtGui.QFontMetricsF(painter.font()).height() + 3
    pill = QtCore.QRectF(left, top, width, height)
    painter.setPen(QtCore.Qt.PenStyle.NoPen)
    painter.setBrush(colour)
    painter.drawRoundedRect(pill, height / 2, height / 2)
    painter.setPen(readable_on(QtGui.QColor(colour)))
    painter.drawText(pill, QtCore.Qt.AlignmentFlag.AlignCenter, text)
    return width


def paint_mark(painter: QtGui.QPainter, rect: QtCore.QRectF, entry: LegendEntry) -> None:
    """``entry``'s sample node in ``rect`` (inset for its outline), with its outline; its
    badges are painted separately (:func:`paint_badge`), beside it."""
    node = rect.adjusted(4, 4, -4, -4) if entry.ring else rect
    paint_node(painter, node, entry.kind, entry.style)
    if entry.ring:
        pen = QtGui.QPen(QtGui.QColor(entry.ring), 2.0)
        if entry.ring_dashed:
            pen.setStyle(QtCore.Qt.PenStyle.DashLine)
        painter.setPen(pen)
        painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        outer = rect.adjusted(1, 1, -1, -1)
        if entry.kind == "function":
            painter.drawRect(outer)
        else:
            painter.drawRoundedRect(outer, outer.height() / 2.4, outer.height() / 2.4)


def _pixmap(size: QtCore.QSize, theme: Theme, ratio: float) -> QtGui.QPixmap:
    pixmap = QtGui.QPixmap(size * ratio)
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(QtGui.QColor(theme.graph_background))
    return pixmap


def _swatch(entry: LegendEntry, theme: Theme, ratio: float) -> QtGui.QPixmap:
    """The entry's node (and outline) on the graph's background."""
    pixmap = _pixmap(SWATCH, theme, ratio)
    painter = QtGui.QPainter(pixmap)
    try:
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        paint_mark(painter, QtCore.QRectF(3, 2, SWATCH.width() - 6, SWATCH.height() - 4), entry)
    finally:
        painter.end()
    return pixmap


def _badges(
    entry: LegendEntry, theme: Theme, ratio: float, width: float | None = None
) -> QtGui.QPixmap:
    """The entry's badges as the graph draws them, side by side; with ``width`` (pixels), in
    as many rows as it takes to keep each row within it (a badge wider than it has a row of
    its own)."""
    font = QtGui.QFont()
    font.setPixelSize(11)
    font.setBold(True)
    metrics = QtGui.QFontMetricsF(font)
    widths = [metrics.horizontalAdvance(text) + 14 for text, _ in entry.badges]
    rows: list[list[int]] = [[]]
    used = 1.0
    for i, w in enumerate(widths):
        if rows[-1] and width is not None and used + w > width:
            rows.append([])
            used = 1.0
        rows[-1].append(i)
        used += w + 4
    row_height = metrics.height() + 6
    widest = max(sum(widths[i] + 4 for i in row) for row in rows)
    size = QtCore.QSize(int(widest) + 2, int(row_height * len(rows)))
    pixmap = _pixmap(size, theme, ratio)
    pixmap.fill(QtCore.Qt.GlobalColor.transparent)
    painter = QtGui.QPainter(pixmap)
    try:
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        painter.setFont(font)
        for r, row in enumerate(rows):
            left = 1.0
            for i in row:
                text, colour = entry.badges[i]
                left += paint_badge(painter, left, 1.0 + r * row_height, text, colour) + 4
    finally:
        painter.end()
    return pixmap


class _BadgeRow(QtWidgets.QLabel):
    """A row's badges, wrapped to the width the legend gives it: as one fixed picture they
    would set the legend's narrowest width, and a narrow dock would clip every description
    beside them."""

    def __init__(self, entry: LegendEntry, parent: QtWidgets.QWidget) -> None:
        super().__init__(parent)
        self._entry = entry
        self._theme: Theme | None = None
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(0)

    def set_theme(self, entry: LegendEntry, theme: Theme) -> None:
        self._entry, self._theme = entry, theme
        self._draw()

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._draw()

    def _draw(self) -> None:
        if self._theme is None:
            return
        ratio = self.devicePixelRatioF() or 1.0
        pixmap = _badges(self._entry, self._theme, ratio, max(self.width(), 1))
        self.setPixmap(pixmap)
        self.setFixedHeight(round(pixmap.height() / pixmap.devicePixelRatio()))


class LegendWidget(QtWidgets.QScrollArea):
    """The window's legend: a row per state (variables, then Functions) and per mark, each
    drawn as the graph draws it (node, border, outline, badges), with its name and what it
    means. :meth:`set_theme` redraws it."""

    def __init__(self, theme: Theme, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("legend")
        self.setWidgetResizable(True)
        self.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._swatches: dict[str, QtWidgets.QLabel] = {}
        self._badge_labels: dict[str, _BadgeRow] = {}
        self._texts: dict[str, QtWidgets.QLabel] = {}
        self._headers: list[QtWidgets.QLabel] = []
        self._images: dict[str, QtGui.QImage] = {}
        body = QtWidgets.QWidget(self)
        body.setObjectName("legendBody")
        grid = QtWidgets.QGridLayout(body)
        # room for the vertical scroll bar: the wrapped descriptions are laid out for the
        # viewport's width before the bar appears, and would run under it
        bar = self.style().pixelMetric(QtWidgets.QStyle.PixelMetric.PM_ScrollBarExtent)
        grid.setContentsMargins(8, 6, 8 + bar, 8)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(4)
        top = QtCore.Qt.AlignmentFlag.AlignTop
        row = 0
        for title, entries in legend_entries(theme):
            header = QtWidgets.QLabel(title, body)
            header.setObjectName(f"legendHeader{title}")
            bold = header.font()
            bold.setBold(True)
            header.setFont(bold)
            grid.addWidget(header, row, 0, 1, 2)
            self._headers.append(header)
            row += 1
            for entry in entries:
                swatch = QtWidgets.QLabel(body)
                swatch.setObjectName(f"legendSwatch:{entry.key}")
                swatch.setFixedSize(SWATCH)
                cell = QtWidgets.QWidget(body)
                column = QtWidgets.QVBoxLayout(cell)
                column.setContentsMargins(0, 0, 0, 0)
                column.setSpacing(1)
                if entry.badges:
                    badges = _BadgeRow(entry, cell)
                    badges.setObjectName(f"legendBadges:{entry.key}")
                    column.addWidget(badges)
                    self._badge_labels[entry.key] = badges
                text = QtWidgets.QLabel(cell)
                text.setObjectName(f"legendText:{entry.key}")
                text.setWordWrap(True)
                text.setTextFormat(QtCore.Qt.TextFormat.RichText)
                text.setToolTip(entry.meaning)
                column.addWidget(text)
                grid.addWidget(swatch, row, 0, top)
                grid.addWidget(cell, row, 1, top)
                self._swatches[entry.key] = swatch
                self._texts[entry.key] = text
                row += 1
        grid.setColumnStretch(1, 1)
        grid.setRowStretch(row, 1)
        self.setWidget(body)
        self.set_theme(theme)

    def set_theme(self, theme: Theme) -> None:
        """Redraw every swatch, badge and text in ``theme``'s colours."""
        self._theme = theme
        ratio = self.devicePixelRatioF() or 1.0
        muted = _mix(theme.text, theme.window, 0.38)
        for _title, entries in legend_entries(theme):
            for entry in entries:
                pixmap = _swatch(entry, theme, ratio)
                self._images[entry.key] = pixmap.toImage()
                self._swatches[entry.key].setPixmap(pixmap)
                if entry.key in self._badge_labels:
                    self._badge_labels[entry.key].set_theme(entry, theme)
                self._texts[entry.key].setText(
                    f'<span style="color:{theme.text}">{html.escape(entry.label)}</span><br>'
                    f'<span style="color:{muted}; font-size:small">'
                    f"{html.escape(entry.meaning)}</span>"
                )
        for header in self._headers:
            header.setStyleSheet(f"color: {theme.text};")
        self.widget().setStyleSheet(f"QWidget#legendBody {{ background: {theme.base}; }}")

    @property
    def theme(self) -> Theme:
        return self._theme

    @property
    def keys(self) -> tuple[str, ...]:
        """'variable:<state>', 'function:<state>' and 'mark:<kind>' of every row, in order."""
        return tuple(self._swatches)

    def label_text(self, key: str) -> str:
        """The row's name and meaning as shown (rich text)."""
        return self._texts[key].text()

    def swatch_image(self, key: str) -> QtGui.QImage:
        """The row's swatch as drawn in the current theme."""
        return self._images[key]

    def badge_texts(self, key: str) -> tuple[str, ...]:
        """The badges the row shows ('cycle', 'NaN', ...; none for an outline or a state)."""
        for _title, entries in legend_entries(self._theme):
            for entry in entries:
                if entry.key == key:
                    return tuple(text for text, _ in entry.badges)
        raise KeyError(key)


def _mix(a: str, b: str, t: float) -> str:
    ca, cb = QtGui.QColor(a), QtGui.QColor(b)
    mixed = QtGui.QColor(
        round(ca.red() + (cb.red() - ca.red()) * t),
        round(ca.green() + (cb.green() - ca.green()) * t),
        round(ca.blue() + (cb.blue() - ca.blue()) * t),
    )
    return mixed.name()
