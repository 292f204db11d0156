"""The graphics items of the graph view: edges, nodes and labels, each drawn from arrays.

Nothing here creates one QGraphicsItem per node. Edges are one QPainterPath built from numpy
arrays; nodes are one pyqtgraph ScatterPlotItem per (kind, state) group, which draws every
spot of the group from one cached pixmap; labels are painted only for the nodes inside the
visible rectangle and only when a node is large enough on screen to read them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from numpy.typing import NDArray
from PySide6 import QtCore, QtGui

from viewer.model.scene import Scene
from viewer.qt.palettes import NodeStyle, Theme

__all__ = ["EdgeLayer", "LabelLayer", "NodeLayer", "OverlayLayer", "polyline_path"]

# Never paint more labels than this in one frame, whatever the zoom.
MAX_LABELS = 1500
# A step that changes at most this many nodes repaints only their boxes, not the whole view.
PARTIAL_REPAINT_LIMIT = 256


def polyline_path(points: NDArray[np.floating], offsets: NDArray[np.integer]) -> QtGui.QPainterPath:
    """One QPainterPath holding every polyline; polyline i is points[offsets[i]:offsets[i+1]]."""
    if len(points) == 0:
        return QtGui.QPainterPath()
    connect = np.ones(len(points), dtype=np.int32)
    ends = np.asarray(offsets[1:], dtype=np.int64) - 1
    connect[ends[ends >= 0]] = 0
    pts = np.asarray(points, dtype=np.float64)
    return pg.functions.arrayToQPath(pts[:, 0], pts[:, 1], connect)


def _symbol(width: float, height: float, rounded: bool) -> QtGui.QPainterPath:
    """A symbol one unit wide (pyqtgraph scales it by the spot size in pixels)."""
    ratio = height / width if width > 0 else 0.45
    rect = QtCore.QRectF(-0.5, -ratio / 2, 1.0, ratio)
    path = QtGui.QPainterPath()
    if rounded:
        radius = ratio / 2.2
        path.addRoundedRect(rect, radius, radius)
    else:
        path.addRect(rect)
    return path


def _pen(style: NodeStyle) -> QtGui.QPen:
    return style.pen(cosmetic=True)


class EdgeLayer(pg.GraphicsObject):
    """Edges as one path (and arrow heads as another), drawn in one colour.

    The base edges change only with the graph, never per step, so they are repainted from a
    device pixmap cache; the current step's edges live in a second, small EdgeLayer on top.
    """

    def __init__(self, active: bool = False) -> None:
        super().__init__()
        self._active = active
        self._path = QtGui.QPainterPath()
        self._arrows = QtGui.QPainterPath()
        self._bounds = QtCore.QRectF()
        self._pen = pg.mkPen("#888888", width=1.0)
        self._brush = QtGui.QBrush(QtGui.QColor("#888888"))
        self._n_edges = 0
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)
        if not active:
            self.setCacheMode(self.CacheMode.DeviceCoordinateCache)

    def set_theme(self, theme: Theme) -> None:
        colour = theme.edge_active if self._active else theme.edge
        # A fractional width sends every segment through Qt's stroker: 15x slower than 1.0.
        self._pen = pg.mkPen(colour, width=3.0 if self._active else 1.0)
        self._brush = QtGui.QBrush(QtGui.QColor(colour))
        self.update()

    def set_edges(self, path: QtGui.QPainterPath, arrows: QtGui.QPainterPath, n_edges: int) -> None:
        self.prepareGeometryChange()
        self._path = path
        self._arrows = arrows
        self._n_edges = n_edges
        self._bounds = path.boundingRect().united(arrows.boundingRect())
        self.update()

    def boundingRect(self) -> QtCore.QRectF:
        return self._bounds

    def paint(self, painter: QtGui.QPainter, *args: object) -> None:
        if self._path.isEmpty():
            return
        # Antialiased strokes cost ~2x more; a big graph seen whole does not need them.
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, self._n_edges < 3000)
        painter.setPen(self._pen)
        painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        painter.drawPath(self._path)
        if not self._arrows.isEmpty() and (self._active or _pixels_per_unit(painter) > 12.0):
            painter.setPen(QtCore.Qt.PenStyle.NoPen)
            painter.setBrush(self._brush)
            painter.drawPath(self._arrows)


def _pixels_per_unit(painter: QtGui.QPainter) -> float:
    t = painter.worldTransform()
    return float(np.hypot(t.m11(), t.m12()))


class _Spots(pg.ScatterPlotItem):
    """A ScatterPlotItem that leaves clicks and hovers to the view (the scene hit-tests), and
    that can repaint only the spots that changed (``dirty``) instead of the whole graph."""

    dirty: list[QtCore.QRectF] | None = None

    def invalidate(self) -> None:
        self.picture = None
        rects, self.dirty = self.dirty, None
        if rects is None:
            self.update()
        else:
            for rect in rects:
                self.update(rect)

    def mouseClickEvent(self, ev) -> None:
        ev.ignore()

    def hoverEvent(self, ev) -> None:
        pass


class NodeLayer:
    """All nodes in one pixel-mode ScatterPlotItem, plus two small overlays (current, selected).

    Each spot is stamped from a pixmap pyqtgraph renders once per (symbol, size, pen, brush),
    so a repaint costs one ``drawPixmapFragments`` call. A step writes the style of the nodes
    whose state changed straight into the item's record array, re-rendering nothing else.
    Spot sizes follow the zoom so nodes keep their size in layout units.
    """

    def __init__(self, view_box: pg.ViewBox) -> None:
        self._view_box = view_box
        self._item = self._make_item(z=1)
        self._current = self._make_item(z=2)
        self._ring = self._make_item(z=3)
        self._positions = np.zeros((0, 2))
        self._is_function = np.zeros(0, dtype=bool)
        self._keys = np.zeros(0, dtype=np.int32)
        self._state_names: tuple[str, ...] = ()
        self._sizes = {False: (1.0, 0.45), True: (1.0, 0.45)}
        self._pixels_per_unit = 1.0
        self._theme: Theme | None = None
        self._styles: dict[int, tuple[QtGui.QPainterPath, QtGui.QPen, QtGui.QBrush]] = {}
        self._selected = -1
        self._current_nodes = np.zeros(0, dtype=np.intp)
        self._rings: dict[tuple, tuple[QtGui.QPainterPath, QtGui.QPen]] = {}
        self._no_brush = QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush)

    def _make_item(self, z: float) -> pg.ScatterPlotItem:
        item = _Spots(pxMode=True, hoverable=False)
        item.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)
        item.setZValue(z)
        self._view_box.addItem(item)
        return item

    def set_theme(self, theme: Theme) -> None:
        self._theme = theme
        self._styles.clear()
        if len(self._positions):
            self._send_all()
        self._send_overlays()

    def set_nodes(
        self,
        positions: NDArray[np.floating],
        is_function: NDArray[np.bool_],
        variable_size: tuple[float, float],
        function_size: tuple[float, float],
    ) -> None:
        self._positions = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
        self._is_function = np.asarray(is_function, dtype=bool)
        self._sizes = {False: variable_size, True: function_size}
        self._keys = np.full(len(self._positions), -1, dtype=np.int32)
        self._styles.clear()
        self._selected = -1
        self._current_nodes = np.zeros(0, dtype=np.intp)
        self._item.setData([])
        self._current.setData([])
        self._ring.setData([])

    def style_keys(self, codes: NDArray[np.integer]) -> NDArray[np.int32]:
        """The style key of each node: 1000 * is_function + state code."""
        return self._is_function.astype(np.int32) * 1000 + np.asarray(codes, dtype=np.int32)

    def set_states(self, codes: NDArray[np.integer], state_names: Sequence[str]) -> None:
        """Restyle the nodes whose state changed (all of them the first time)."""
        names = tuple(state_names)
        keys = self.style_keys(codes)
        if names != self._state_names or len(self._item.data) != len(self._positions):
            self._state_names = names
            self._styles.clear()
            self._keys = keys
            self._send_all()
            return
        changed = np.flatnonzero(keys != self._keys)
        if len(changed) == 0:
            return
        self._keys = keys
        if len(changed) <= PARTIAL_REPAINT_LIMIT:
            self._item.dirty = self.node_rects(changed)
        self._write_styles(changed)

    def node_rects(self, nodes: NDArray[np.intp]) -> list[QtCore.QRectF]:
        """The boxes of ``nodes`` in layout units, with room for borders and rings."""
        pad = 12.0 / max(self._pixels_per_unit, 1e-9)
        rects = []
        for node in nodes:
            w, h = self._sizes[bool(self._is_function[node])]
            x, y = self._positions[node]
            rects.append(QtCore.QRectF(x - w / 2 - pad, y - h / 2 - pad, w + 2 * pad, h + 2 * pad))
        return rects

    def _write_styles(self, nodes: NDArray[np.intp]) -> None:
        """Write the style objects of ``nodes`` into the item's record array, one numpy
        assignment per style (no per-node Python loop), and re-stamp only those spots."""
        data = self._item.data
        keys = self._keys[nodes]
        for key in np.unique(keys):
            idx = nodes[keys == key]
            symbol, pen, brush = self._style_objects(int(key))
            data["symbol"][idx] = symbol
            data["pen"][idx] = pen
            data["brush"][idx] = brush
        data["sourceRect"][nodes] = 0
        self._item.updateSpots()

    def _style_objects(self, key: int) -> tuple[QtGui.QPainterPath, QtGui.QPen, QtGui.QBrush]:
        # The same objects for the same key let pyqtgraph's atlas reuse one rendered pixmap.
        cached = self._styles.get(key)
        if cached is None:
            style = self._style(key)
            is_function = key >= 1000
            w, h = self._sizes[is_function]
            cached = (_symbol(w, h, rounded=not is_function), _pen(style), pg.mkBrush(style.fill))
            self._styles[key] = cached
        return cached

    def _style(self, key: int) -> NodeStyle:
        assert self._theme is not None
        kind = "function" if key >= 1000 else "variable"
        code = key % 1000
        state = self._state_names[code] if 0 <= code < len(self._state_names) else "default"
        return self._theme.node_style(kind, state)

    def _spot_sizes(self) -> NDArray[np.float64]:
        widths = np.where(self._is_function, self._sizes[True][0], self._sizes[False][0])
        return np.maximum(1.0, widths * self._pixels_per_unit)

    def _send_all(self) -> None:
        if self._theme is None or len(self._positions) == 0:
            self._item.setData([])
            return
        self._item.setData(pos=self._positions, size=self._spot_sizes())
        self._write_styles(np.arange(len(self._positions)))

    def set_pixels_per_unit(self, value: float) -> None:
        if value <= 0 or abs(value - self._pixels_per_unit) <= 1e-3 * self._pixels_per_unit:
            return
        self._pixels_per_unit = value
        if len(self._item.data):
            self._item.setSize(self._spot_sizes())
        self._send_overlays()

    @property
    def pixels_per_unit(self) -> float:
        return self._pixels_per_unit

    def set_overlays(self, current_nodes: NDArray[np.integer], selected: int) -> None:
        self._current_nodes = np.asarray(current_nodes, dtype=np.intp).reshape(-1)
        self._selected = int(selected)
        self._send_overlays()

    def _send_overlays(self) -> None:
        if self._theme is None:
            return
        n = len(self._positions)
        current = self._current_nodes[(self._current_nodes >= 0) & (self._current_nodes < n)]
        self._send_ring(self._current, current, self._theme.current, 3.0, 4.0)
        sel = np.array([self._selected] if 0 <= self._selected < n else [], dtype=np.intp)
        self._send_ring(self._ring, sel, self._theme.selection, 2.5, 8.0)

    def _send_ring(self, item, nodes, colour: str, width: float, margin: float) -> None:
        """Outline ``nodes`` ``margin`` pixels outside their border."""
        if len(nodes) == 0:
            item.setData([])
            return
        symbols, pens, sizes = [], [], []
        for node in nodes:
            f = bool(self._is_function[node])
            w, h = self._sizes[f]
            w_px = round(max(1.0, w * self._pixels_per_unit) + 2 * margin, 1)
            h_px = round(max(1.0, h * self._pixels_per_unit) + 2 * margin, 1)
            # The same objects for the same ring: pyqtgraph's atlas is keyed on identity.
            key = (f, w_px, h_px, colour, width)
            cached = self._rings.get(key)
            if cached is None:
                if len(self._rings) > 64:
                    self._rings.clear()
                cached = (_symbol(w_px, h_px, rounded=not f), pg.mkPen(colour, width=width))
                self._rings[key] = cached
            symbols.append(cached[0])
            pens.append(cached[1])
            sizes.append(w_px)
        item.setData(
            pos=self._positions[nodes],
            symbol=symbols,
            size=sizes,
            pen=pens,
            brush=self._no_brush,
        )


class LabelLayer(pg.GraphicsObject):
    """Text for the visible nodes, painted in device pixels so it stays crisp at any zoom."""

    def __init__(self, nodes: NodeLayer) -> None:
        super().__init__()
        self._nodes = nodes
        self._labels: list[str] = []
        self._positions = np.zeros((0, 2))
        self._half = np.zeros((0, 2))
        self._style_keys = np.zeros(0, dtype=np.int32)
        self._text_colours: dict[int, QtGui.QColor] = {}
        self._bounds = QtCore.QRectF()
        self._font = QtGui.QFont()
        self._elided: dict[tuple[str, int, int, int], str] = {}
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)
        # Makes option.exposedRect the area being repainted, not the whole graph.
        self.setFlag(self.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(4)

    def set_geometry(
        self, positions: NDArray[np.floating], half_sizes: NDArray[np.floating]
    ) -> None:
        self.prepareGeometryChange()
        self._positions = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
        self._half = np.asarray(half_sizes, dtype=np.float64).reshape(-1, 2)
        if len(self._positions):
            lo = (self._positions - self._half).min(axis=0)
            hi = (self._positions + self._half).max(axis=0)
            self._bounds = QtCore.QRectF(lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1])
        else:
            self._bounds = QtCore.QRectF()
        self.update()

    def set_labels(
        self,
        labels: Sequence[str],
        style_keys: NDArray[np.integer],
        text_colours: dict[int, QtGui.QColor],
    ) -> None:
        """Labels per node; node i's text colour is ``text_colours[style_keys[i]]``.

        Only the labels whose text changed are repainted (a node whose state changed is
        repainted anyway: Qt redraws every item under a dirty box)."""
        old = self._labels
        self._labels = list(labels)
        self._style_keys = np.asarray(style_keys, dtype=np.int32)
        self._text_colours = dict(text_colours)
        if self._detail(self._nodes.pixels_per_unit) == 0:
            return
        if len(old) != len(self._labels):
            self.update()
            return
        changed = [
            i
            for i, (a, b) in enumerate(zip(old, self._labels, strict=True))
            if a is not b and a != b
        ]
        if len(changed) > PARTIAL_REPAINT_LIMIT:
            self.update()
            return
        for rect in self._nodes.node_rects(np.asarray(changed, dtype=np.intp)):
            self.update(rect)

    def _detail(self, pixels_per_unit: float) -> int:
        return Scene.label_detail(pixels_per_unit, len(self._positions))

    def boundingRect(self) -> QtCore.QRectF:
        return self._bounds

    def paint(self, painter: QtGui.QPainter, option, *args: object) -> None:
        n = min(len(self._labels), len(self._positions))
        if n == 0:
            return
        scale = _pixels_per_unit(painter)
        detail = self._detail(scale)
        if detail == 0:
            return
        exposed = option.exposedRect if option is not None else self._bounds
        view_box = self.getViewBox()
        if view_box is not None:
            exposed = exposed.intersected(self.mapRectFromView(view_box.viewRect()))
        pos, half = self._positions[:n], self._half[:n]
        inside = (
            (pos[:, 0] + half[:, 0] >= exposed.left())
            & (pos[:, 0] - half[:, 0] <= exposed.right())
            & (pos[:, 1] + half[:, 1] >= exposed.top())
            & (pos[:, 1] - half[:, 1] <= exposed.bottom())
        )
        visible = np.flatnonzero(inside)[:MAX_LABELS]
        if len(visible) == 0:
            return
        transform = painter.worldTransform()
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        font = QtGui.QFont(self._font)
        node_h = float(half[:, 1].min() * 2 * scale)
        labels = [self._labels[i] for i in visible]
        most = max(label.count("\n") + 1 for label in labels)
        wanted = min(most, 4) if detail >= 2 else 1
        px = int(np.clip(node_h / (wanted * 1.3 + 0.4), 8, 14))
        font.setPixelSize(px)
        painter.setFont(font)
        metrics = QtGui.QFontMetrics(font)
        lines_fit = max(1, min(wanted, int((node_h - 2) // metrics.lineSpacing())))
        flags = QtCore.Qt.AlignmentFlag.AlignCenter
        elide = QtCore.Qt.TextElideMode.ElideRight
        black = QtGui.QColor("#000000")
        for i, label in zip(visible, labels, strict=True):
            x, y = pos[i]
            hw, hh = half[i]
            rect = transform.mapRect(QtCore.QRectF(x - hw, y - hh, 2 * hw, 2 * hh))
            inner = rect.adjusted(4, 1, -4, -1)
            width = max(1, int(inner.width()))
            key = (label, width, px, lines_fit)
            text = self._elided.get(key)
            if text is None:
                lines = label.split("\n")[:lines_fit]
                text = "\n".join(metrics.elidedText(line, elide, width) for line in lines)
                if len(self._elided) > 20_000:
                    self._elided.clear()
                self._elided[key] = text
            style = int(self._style_keys[i]) if i < len(self._style_keys) else -1
            painter.setPen(self._text_colours.get(style, black))
            painter.drawText(inner, flags, text)
        painter.restore()


class OverlayLayer(pg.GraphicsObject):
    """Marks on flagged nodes (leaks, the first NaN/Inf, gradient-check errors): a ring in the
    overlay's colour and, when the node is big enough, its badge. There are few of them, so
    they are painted one by one, in device pixels."""

    MAX_SHOWN = 2000

    def __init__(self) -> None:
        super().__init__()
        self._positions = np.zeros((0, 2))
        self._half = np.zeros((0, 2))
        self._is_function = np.zeros(0, dtype=bool)
        self._nodes = np.zeros(0, dtype=np.intp)
        self._colours: list[QtGui.QColor] = []
        self._badges: list[str] = []
        self._bounds = QtCore.QRectF()
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)
        self.setZValue(5)

    def set_geometry(
        self,
        positions: NDArray[np.floating],
        half_sizes: NDArray[np.floating],
        is_function: NDArray[np.bool_],
    ) -> None:
        self._positions = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
        self._half = np.asarray(half_sizes, dtype=np.float64).reshape(-1, 2)
        self._is_function = np.asarray(is_function, dtype=bool)
        self.set_overlays(np.zeros(0, dtype=np.intp), np.zeros((0, 4), np.uint8), [])

    def set_overlays(
        self, nodes: NDArray[np.integer], colours: NDArray[np.uint8], badges: Sequence[str]
    ) -> None:
        """``nodes`` (indexes) with an RGBA colour and a badge each."""
        self.prepareGeometryChange()
        nodes = np.asarray(nodes, dtype=np.intp).reshape(-1)
        keep = (nodes >= 0) & (nodes < len(self._positions))
        self._nodes = nodes[keep][: self.MAX_SHOWN]
        rgba = np.asarray(colours, dtype=np.uint8).reshape(-1, 4)[keep][: self.MAX_SHOWN]
        self._colours = [QtGui.QColor(int(r), int(g), int(b), int(a)) for r, g, b, a in rgba]
        self._badges = [b for b, k in zip(badges, keep, strict=False) if k][: self.MAX_SHOWN]
        if len(self._nodes):
            pos, half = self._positions[self._nodes], self._half[self._nodes]
            lo, hi = (pos - 2 * half).min(axis=0), (pos + 2 * half).max(axis=0)
            self._bounds = QtCore.QRectF(lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1])
        else:
            self._bounds = QtCore.QRectF()
        self.update()

    @property
    def count(self) -> int:
        return len(self._nodes)

    def boundingRect(self) -> QtCore.QRectF:
        return self._bounds

    def paint(self, painter: QtGui.QPainter, *args: object) -> None:
        if len(self._nodes) == 0:
            return
        transform = painter.worldTransform()
        scale = _pixels_per_unit(painter)
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        font = QtGui.QFont()
        font.setPixelSize(11)
        font.setBold(True)
        painter.setFont(font)
        metrics = QtGui.QFontMetricsF(font)
        show_badges = scale * float(self._half[:, 0].min() * 2) >= 30
        # A node flagged several times (a leak that is also gradient-checked): rings nest and
        # badges line up leftwards instead of hiding each other.
        seen: dict[int, tuple[int, float, float]] = {}  # node -> (rings, badge right, top)
        for node, colour, badge in zip(self._nodes, self._colours, self._badges, strict=False):
            x, y = self._positions[node]
            hw, hh = self._half[node]
            rect = transform.mapRect(QtCore.QRectF(x - hw, y - hh, 2 * hw, 2 * hh))
            count, right, top = seen.get(int(node), (0, math.nan, math.nan))
            grow = max(3.0, 6.0 - rect.height() / 2) + 4.0 * count
            ring = rect.adjusted(-grow, -grow, grow, grow)
            pen = QtGui.QPen(colour, 2.5, QtCore.Qt.PenStyle.DashLine)
            painter.setPen(pen)
            painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
            if self._is_function[node]:
                painter.drawRect(ring)
            else:
                radius = ring.height() / 2.4
                painter.drawRoundedRect(ring, radius, radius)
            width = metrics.horizontalAdvance(badge) + 10 if badge else 0.0
            if count == 0:
                right, top = ring.right() + width * 0.4, ring.top() - 9
            seen[int(node)] = (count + 1, right - width - 3, top)
            if show_badges and badge:
                pill = QtCore.QRectF(right - width, top, width, 17)
                painter.setPen(QtCore.Qt.PenStyle.NoPen)
                painter.setBrush(colour)
                painter.drawRoundedRect(pill, 8, 8)
                painter.setPen(QtGui.QColor("#ffffff"))
                painter.drawText(pill, QtCore.Qt.AlignmentFlag.AlignCenter, badge)
        painter.restore()
