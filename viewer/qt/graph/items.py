"""The graphics items of the graph view: edges, nodes and labels, each drawn from arrays.

Nothing here creates one QGraphicsItem per node. Edges are one QPainterPath built from numpy
arrays; nodes are one pyqtgraph ScatterPlotItem, which stamps every spot of a style from one
cached pixmap; labels are painted only for the nodes inside the visible rectangle and only
when a node is large enough on screen to read them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from numpy.typing import NDArray
from pyqtgraph.Qt.internals import PrimitiveArray
from PySide6 import QtCore, QtGui

from viewer.model.scene.badges import badge_reach, place_badges
from viewer.model.scene.colours import faded
from viewer.model.scene.text import box_px_for_text, label_detail, label_text_px
from viewer.qt.drawing.themes import NodeStyle, Theme, readable_on

__all__ = [
    "EdgeLayer",
    "LabelLayer",
    "NodeLayer",
    "OverlayLayer",
    "kind_of_key",
    "polyline_path",
    "style_of_key",
]

# Never paint more labels than this in one frame, whatever the zoom.
MAX_LABELS = 1500
# A step that changes at most this many nodes repaints only their boxes, not the whole view.
PARTIAL_REPAINT_LIMIT = 256
# The most lines a label has (Scene.label: name, shape, value, gradient).
MAX_LABEL_LINES = 4
# Zoomed out past labels (label_detail 0), a node still named at any zoom (a module box) or
# one whose box is still this tall on screen shows its name, at most this wide, in a pill.
READABLE_BOX_PX = 12.0
NAME_FONT_PX = 11
NAME_MAX_PX = 160
NAME_MIN_PX = 48  # a name's pill is never cut narrower (a few characters and the ellipsis)
PILL_GAP_PX = 8  # a name's pill at its whole length keeps this far from another box
BADGE_HEIGHT = 17.0  # a flagged node's badge (pixels; its text is 11 px bold)


_SHAPE_LINE = re.compile(r"\d+(x\d+)*")


def fitting_lines(label: str, n: int) -> list[str]:
    """The lines of ``label`` (name, shape, value, gradient) to draw when only ``n`` fit: the
    name, then the last lines, so the shape goes first and the value and the gradient stay
    (the tooltip and the inspector have it all)."""
    lines = label.split("\n")
    if len(lines) <= n:
        return lines
    if n <= 1:
        return lines[:1]
    if _SHAPE_LINE.fullmatch(lines[0]):  # no name: the label starts with the shape
        return lines[-n:]
    return [lines[0], *lines[-(n - 1) :]]


def polyline_path(points: NDArray[np.floating], offsets: NDArray[np.integer]) -> QtGui.QPainterPath:
    """One QPainterPath holding every polyline; polyline i is points[offsets[i]:offsets[i+1]]."""
    if len(points) == 0:
        return QtGui.QPainterPath()
    connect = np.ones(len(points), dtype=np.int32)
    ends = np.asarray(offsets[1:], dtype=np.int64) - 1
    connect[ends[ends >= 0]] = 0
    pts = np.asarray(points, dtype=np.float64)
    return pg.functions.arrayToQPath(pts[:, 0], pts[:, 1], connect)


# Node kinds as the layers number them: the style key is 1000 * kind + state code.
VARIABLE, FUNCTION, MODULE = 0, 1, 2
_KIND_NAMES = ("variable", "function", "module")


DETACHED_KEY = 500  # added to a style key for a node of cut-off history (drawn faded)
DETACHED_TEXT_TONE = 0.3  # how far its text goes toward its fill (contrast stays >= 4.5)


def kind_of_key(key: int) -> str:
    """'variable', 'function' or 'module' for a style key (1000 * kind + state code, plus
    DETACHED_KEY for a detached node)."""
    return _KIND_NAMES[min(max(int(key) // 1000, 0), 2)]


def style_of_key(theme: Theme, key: int, state_names: Sequence[str]) -> NodeStyle:
    """The theme's style for a style key: its kind and state's, faded toward the graph's
    background for a detached node (history unchain_backward cut before the graph)."""
    code = int(key) % 1000
    detached = code >= DETACHED_KEY
    code -= DETACHED_KEY if detached else 0
    state = state_names[code] if 0 <= code < len(state_names) else "default"
    kind = kind_of_key(key)
    style = theme.node_style(kind, state)
    if not detached:
        return style
    # the text: black or white, whichever reads on the greyed fill, toned toward it (the
    # state's own text colour, faded, would be dark on dark in the dark theme)
    fills = {
        "variable": theme.graph.variable_fill,
        "function": theme.graph.function_fill,
        "module": theme.graph.module_fill,
    }[kind]
    row = fills[code] if 0 <= code < len(fills) else fills[0]
    fill = QtGui.QColor(
        *(int(c) for c in faded(np.asarray([row], np.uint8), theme.graph.background)[0][:3])
    )
    return dataclasses.replace(
        style,
        border=_toward(style.border, theme.graph_background, 0.6),
        text=_toward(readable_on(fill).name(), fill.name(), DETACHED_TEXT_TONE),
    )


def _toward(colour: str, background: str, share: float) -> str:
    """``colour`` moved ``share`` of the way to ``background`` (both '#rrggbb')."""
    a, b = QtGui.QColor(colour), QtGui.QColor(background)
    mixed = [
        round((1 - share) * x + share * y)
        for x, y in zip(a.getRgb()[:3], b.getRgb()[:3], strict=True)
    ]
    return QtGui.QColor(*mixed).name()


def _symbol(width: float, height: float, rounded: bool, module: bool = False) -> QtGui.QPainterPath:
    """A symbol one unit wide (pyqtgraph scales it by the spot size in pixels): a pill for a
    variable, a rectangle for a Function, a box with small rounded corners for a module."""
    ratio = height / width if width > 0 else 0.45
    rect = QtCore.QRectF(-0.5, -ratio / 2, 1.0, ratio)
    path = QtGui.QPainterPath()
    if module:
        radius = ratio / 5
        path.addRoundedRect(rect, radius, radius)
    elif rounded:
        radius = ratio / 2.2
        path.addRoundedRect(rect, radius, radius)
    else:
        path.addRect(rect)
    return path


def _pen(style: NodeStyle) -> QtGui.QPen:
    return style.pen(cosmetic=True)


DETACHED_EDGE_ALPHA = 110  # the edges of history cut before the graph


class EdgeLayer(pg.GraphicsObject):
    """Edges as one path (and arrow heads as another), drawn in one colour.

    The base edges change only with the graph, never per step, so they are repainted from a
    device pixmap cache; the current step's edges live in a second, small EdgeLayer on top.
    The current step's thick edges are filled as an outline rather than stroked (see
    :func:`_fill_stroke`).
    """

    def __init__(self, active: bool = False, detached: bool = False) -> None:
        super().__init__()
        self._active = active
        self._detached = detached  # history cut before the graph: faint and dashed
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
        colour = QtGui.QColor(theme.edge_active if self._active else theme.edge)
        if self._detached:
            colour.setAlpha(DETACHED_EDGE_ALPHA)
        # A fractional width sends every segment through Qt's stroker: 15x slower than 1.0.
        self._pen = pg.mkPen(colour, width=3.0 if self._active else 1.0)
        if self._detached:
            self._pen.setStyle(QtCore.Qt.PenStyle.DashLine)
        self._brush = QtGui.QBrush(colour)
        self.update()

    def set_edges(self, path: QtGui.QPainterPath, arrows: QtGui.QPainterPath, n_edges: int) -> None:
        self.prepareGeometryChange()
        if self.cacheMode() != self.CacheMode.NoCache:
            # A new graph at the same zoom (a module opened in place) kept showing the old
            # edges from the device cache, update() or not: drop the cache with the edges.
            self.setCacheMode(self.CacheMode.NoCache)
            self.setCacheMode(self.CacheMode.DeviceCoordinateCache)
        self._path = path
        self._arrows = arrows
        self._n_edges = n_edges
        self._bounds = path.boundingRect().united(arrows.boundingRect())
        self.update()

    @property
    def n_edges(self) -> int:
        return self._n_edges

    def boundingRect(self) -> QtCore.QRectF:
        return self._bounds

    def paint(self, painter: QtGui.QPainter, *args: object) -> None:
        if self._path.isEmpty():
            return
        # Antialiased strokes cost ~2x more; a big graph seen whole does not need them.
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, self._n_edges < 3000)
        if self._pen.widthF() > 1.0:
            _fill_stroke(painter, self._path, self._pen)
        else:
            painter.setPen(self._pen)
            painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
            painter.drawPath(self._path)
        if not self._arrows.isEmpty() and (self._active or _pixels_per_unit(painter) > 12.0):
            painter.setPen(QtCore.Qt.PenStyle.NoPen)
            painter.setBrush(self._brush)
            painter.drawPath(self._arrows)


def _fill_stroke(painter: QtGui.QPainter, path: QtGui.QPainterPath, pen: QtGui.QPen) -> None:
    """Draw ``path`` with a ``pen`` wider than a pixel as the fill of its outline.

    Qt's raster engine strokes a wide antialiased line a shade differently under a partial
    repaint's clip region than it does whole, which leaves seams where a repainted box cuts
    the line; the fill of a given outline comes out the same whatever the clip."""
    transform = painter.worldTransform() if pen.isCosmetic() else QtGui.QTransform()
    outline = QtGui.QPainterPathStroker(pen).createStroke(transform.map(path))
    painter.save()
    if pen.isCosmetic():
        painter.resetTransform()
    painter.setPen(QtCore.Qt.PenStyle.NoPen)
    painter.setBrush(pen.brush())
    painter.drawPath(outline)
    painter.restore()


def _pixels_per_unit(painter: QtGui.QPainter) -> float:
    t = painter.worldTransform()
    return float(np.hypot(t.m11(), t.m12()))


class _PixelFragments(PrimitiveArray):
    """pyqtgraph's pixmap fragments, each moved to start on a whole pixel before it is drawn.

    A spot whose pixmap starts on a half pixel (an odd-sized pixmap at a whole-pixel centre,
    as at fit) lands a pixel apart in a partial repaint (under a clip region) and in a full
    one: a box redrawn by a partial repaint then shows a sliver of its border beside where a
    full repaint puts it. On whole pixels both agree."""

    def drawargs(self):
        frags = self.ndarray()
        if len(frags):
            half = frags[:, 4:6] * frags[:, 6:8] / 2  # source size times scale, halved
            frags[:, 0:2] = np.floor(frags[:, 0:2] - half + 0.5) + half
        return super().drawargs()


class _Spots(pg.ScatterPlotItem):
    """A ScatterPlotItem that leaves clicks and hovers to the view (the scene hit-tests), and
    that can repaint only the spots that changed (``dirty``) instead of the whole graph."""

    dirty: list[QtCore.QRectF] | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._pixmapFragments = _PixelFragments(QtGui.QPainter.PixmapFragment, 10)

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
    """All nodes in one pixel-mode ScatterPlotItem, plus small overlays (current, selected, and
    the node a link elsewhere points at, e.g. a name in the Explain section under the mouse).

    A node's fill is the frame's (``Frame.fill``, the model's palette); its border (colour,
    width, pattern) is the theme's style for its kind and state. Each spot is stamped from a
    pixmap pyqtgraph renders once per (symbol, size, pen, brush), so a repaint costs one
    ``drawPixmapFragments`` call. A step writes the style of the nodes whose state or fill
    changed straight into the item's record array, re-rendering nothing else. Spot sizes
    follow the zoom so nodes keep their size in layout units.
    """

    def __init__(self, view_box: pg.ViewBox) -> None:
        self._view_box = view_box
        self._item = self._make_item(z=1)
        self._current = self._make_item(z=2)
        self._ring = self._make_item(z=3)
        self._hover = self._make_item(z=3.5)
        self._positions = np.zeros((0, 2))
        self._is_function = np.zeros(0, dtype=bool)
        self._kind = np.zeros(0, dtype=np.int32)  # VARIABLE, FUNCTION or MODULE per node
        self._detached = np.zeros(0, dtype=bool)  # cut-off history, drawn faded
        self._keys = np.zeros(0, dtype=np.int64)
        self._fill: NDArray[np.uint8] | None = None
        self._state_names: tuple[str, ...] = ()
        self._sizes = {VARIABLE: (1.0, 0.45), FUNCTION: (1.0, 0.45), MODULE: (1.8, 0.6)}
        self._pixels_per_unit = 1.0
        self._theme: Theme | None = None
        self._styles: dict[int, tuple[QtGui.QPainterPath, QtGui.QPen, QtGui.QBrush]] = {}
        self._selected = -1
        self._hovered = -1
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
        is_module: NDArray[np.bool_] | None = None,
        module_size: tuple[float, float] = (1.8, 0.6),
        detached: NDArray[np.bool_] | None = None,
    ) -> None:
        self._positions = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
        self._is_function = np.asarray(is_function, dtype=bool)
        self._kind = self._is_function.astype(np.int32)
        if is_module is not None and len(is_module) == len(self._kind):
            self._kind[np.asarray(is_module, dtype=bool)] = MODULE
        self._detached = np.zeros(len(self._kind), dtype=bool)
        if detached is not None and len(detached) == len(self._kind):
            self._detached = np.asarray(detached, dtype=bool)
        self._sizes = {VARIABLE: variable_size, FUNCTION: function_size, MODULE: module_size}
        self._keys = np.full(len(self._positions), -1, dtype=np.int64)
        self._fill = None
        self._styles.clear()
        self._selected = -1
        self._hovered = -1
        self._current_nodes = np.zeros(0, dtype=np.intp)
        self._item.setData([])
        self._current.setData([])
        self._ring.setData([])
        self._hover.setData([])

    def style_keys(self, codes: NDArray[np.integer]) -> NDArray[np.int32]:
        """The style key of each node: 1000 * kind (variable 0, function 1, module 2) + state
        code, + DETACHED_KEY for a detached node (see :func:`style_of_key`)."""
        keys = self._kind * 1000 + np.asarray(codes, dtype=np.int32)
        if self._detached.any() and len(self._detached) == len(keys):
            keys = keys + DETACHED_KEY * self._detached
        return keys

    def spot_keys(self, codes: NDArray[np.integer], fill: NDArray[np.uint8]) -> NDArray[np.int64]:
        """The key of each node's spot: its style key (the border) in the high 32 bits, its
        RGBA fill packed in the low 32."""
        rgba = np.ascontiguousarray(fill, dtype=np.uint8).reshape(-1, 4).view(np.uint32)
        return (self.style_keys(codes).astype(np.int64) << 32) | rgba.reshape(-1)

    def set_states(
        self, codes: NDArray[np.integer], state_names: Sequence[str], fill: NDArray[np.uint8]
    ) -> None:
        """Restyle the nodes whose state or fill (``(n, 4)`` RGBA) changed (all of them the
        first time)."""
        names = tuple(state_names)
        keys = self.spot_keys(codes, fill)
        fill = np.asarray(fill, dtype=np.uint8).reshape(-1, 4)
        if names != self._state_names or len(self._item.data) != len(self._positions):
            self._state_names = names
            self._styles.clear()
            self._keys = keys
            self._fill = fill
            self._send_all()
            return
        changed = np.flatnonzero(keys != self._keys)
        if len(changed) == 0:
            return
        self._keys = keys
        self._fill = fill
        if len(changed) <= PARTIAL_REPAINT_LIMIT:
            self._item.dirty = self.node_rects(changed)
        self._write_styles(changed)

    def node_rects(self, nodes: NDArray[np.intp]) -> list[QtCore.QRectF]:
        """The boxes of ``nodes`` in layout units, with room for borders and rings."""
        pad = 12.0 / max(self._pixels_per_unit, 1e-9)
        rects = []
        for node in nodes:
            w, h = self._sizes[int(self._kind[node])]
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
            fill = self._fill[idx[0]] if self._fill is not None else None
            symbol, pen, brush = self._style_objects(int(key), fill)
            data["symbol"][idx] = symbol
            data["pen"][idx] = pen
            data["brush"][idx] = brush
        data["sourceRect"][nodes] = 0
        self._item.updateSpots()

    def _style_objects(
        self, key: int, fill: NDArray[np.uint8] | None
    ) -> tuple[QtGui.QPainterPath, QtGui.QPen, QtGui.QBrush]:
        """Symbol, pen and brush of a spot key; the brush is ``fill``, or before any frame
        (key -1) the theme's default fill."""
        # The same objects for the same key let pyqtgraph's atlas reuse one rendered pixmap.
        cached = self._styles.get(key)
        if cached is None:
            style_key = key >> 32
            style = self._style(style_key)
            kind = min(max(style_key // 1000, 0), MODULE)
            w, h = self._sizes[kind]
            colour = style.fill if fill is None else tuple(int(c) for c in fill)
            symbol = _symbol(w, h, rounded=kind != FUNCTION, module=kind == MODULE)
            cached = (symbol, _pen(style), pg.mkBrush(colour))
            self._styles[key] = cached
        return cached

    def _style(self, key: int) -> NodeStyle:
        assert self._theme is not None
        return style_of_key(self._theme, key, self._state_names)

    def _spot_sizes(self) -> NDArray[np.float64]:
        widths = np.array([self._sizes[k][0] for k in (VARIABLE, FUNCTION, MODULE)])[self._kind]
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

    def set_hovered(self, node: int) -> None:
        """Ring ``node`` (an index; -1: none) as the one a pointer elsewhere stands for."""
        self._hovered = int(node)
        self._send_overlays()

    @property
    def hovered(self) -> int:
        return self._hovered

    def _send_overlays(self) -> None:
        if self._theme is None:
            return
        n = len(self._positions)
        current = self._current_nodes[(self._current_nodes >= 0) & (self._current_nodes < n)]
        self._send_ring(self._current, current, self._theme.current, 3.0, 4.0)
        sel = np.array([self._selected] if 0 <= self._selected < n else [], dtype=np.intp)
        self._send_ring(self._ring, sel, self._theme.selection, 2.5, 8.0)
        hov = np.array([self._hovered] if 0 <= self._hovered < n else [], dtype=np.intp)
        # dashed: the selection's ring may share its colour
        self._send_ring(self._hover, hov, self._theme.highlight, 3.0, 12.0, dashed=True)

    def _send_ring(
        self, item, nodes, colour: str, width: float, margin: float, dashed: bool = False
    ) -> None:
        """Outline ``nodes`` ``margin`` pixels outside their border."""
        if len(nodes) == 0:
            item.setData([])
            return
        symbols, pens, sizes = [], [], []
        for node in nodes:
            kind = int(self._kind[node])
            f = kind == FUNCTION
            w, h = self._sizes[kind]
            w_px = round(max(1.0, w * self._pixels_per_unit) + 2 * margin, 1)
            h_px = round(max(1.0, h * self._pixels_per_unit) + 2 * margin, 1)
            # The same objects for the same ring: pyqtgraph's atlas is keyed on identity.
            key = (kind, w_px, h_px, colour, width, dashed)
            cached = self._rings.get(key)
            if cached is None:
                if len(self._rings) > 64:
                    self._rings.clear()
                symbol = _symbol(w_px, h_px, rounded=not f, module=kind == MODULE)
                style = QtCore.Qt.PenStyle.DashLine if dashed else QtCore.Qt.PenStyle.SolidLine
                cached = (symbol, pg.mkPen(colour, width=width, style=style))
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
        self._max_lines = MAX_LABEL_LINES
        self._tall = np.zeros(0, dtype=bool)
        self._painted_pixel_size = 0
        self._named = np.zeros(0, dtype=bool)
        self._name_pad_px = 0.0  # how far a name's pill may reach out of its box
        self._padded: QtCore.QRectF | None = None
        self._name_text = QtGui.QColor("#1d1f23")
        self._name_back = QtGui.QColor(251, 251, 252, 215)
        self._painted_names = 0
        # (a name, its pill's most pixels) -> (elided, width in pixels)
        self._names: dict[tuple[str, int], tuple[str, int]] = {}
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)
        # Makes option.exposedRect the area being repainted, not the whole graph.
        self.setFlag(self.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(4)

    def set_geometry(
        self,
        positions: NDArray[np.floating],
        half_sizes: NDArray[np.floating],
        max_lines: int = MAX_LABEL_LINES,
        tall: NDArray[np.bool_] | None = None,
    ) -> None:
        """Node boxes, and the most lines any label of this graph will have at any step: the
        font is sized for that once per graph, so text keeps its size through playback.
        ``tall``: the boxes (modules) whose labels get as many lines as their height holds."""
        self.prepareGeometryChange()
        self._tall = np.zeros(0, dtype=bool) if tall is None else np.asarray(tall, dtype=bool)
        self._positions = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
        self._half = np.asarray(half_sizes, dtype=np.float64).reshape(-1, 2)
        self._max_lines = int(np.clip(max_lines, 1, MAX_LABEL_LINES))
        if len(self._positions):
            lo = (self._positions - self._half).min(axis=0)
            hi = (self._positions + self._half).max(axis=0)
            self._bounds = QtCore.QRectF(lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1])
        else:
            self._bounds = QtCore.QRectF()
        self._named = np.zeros(len(self._positions), dtype=bool)
        self._name_pad_px = 0.0
        self._padded = None
        self.update()

    def set_named(self, named: NDArray[np.bool_]) -> None:
        """The nodes whose name is drawn at any zoom (the module boxes)."""
        named = np.asarray(named, dtype=bool).reshape(-1)
        mask = np.zeros(len(self._positions), dtype=bool)
        mask[: min(len(named), len(mask))] = named[: len(mask)]
        self.prepareGeometryChange()
        self._named = mask
        self._name_pad_px = NAME_MAX_PX / 2 + 6 if mask.any() else 0.0
        self._padded = None
        self.update()

    def set_name_colours(self, text: QtGui.QColor | str, background: QtGui.QColor | str) -> None:
        """The colours of the names drawn zoomed out: the theme's text on its graph
        background (the pill may reach past the node, onto the background)."""
        self._name_text = QtGui.QColor(text)
        back = QtGui.QColor(background)
        back.setAlpha(215)
        self._name_back = back
        self.update()

    @property
    def painted_names(self) -> int:
        """How many names the last zoomed-out paint drew."""
        return self._painted_names

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
            named = np.flatnonzero(self._named)
            if len(old) != len(self._labels) or any(old[i] != self._labels[i] for i in named):
                self.update()
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
        return self.detail_at(pixels_per_unit)

    def _box_height(self) -> float:
        """The smallest box's height in layout units: the label font is sized for it."""
        return float(self._half[:, 1].min() * 2) if len(self._half) else 0.0

    def detail_at(self, pixels_per_unit: float) -> int:
        """The level of detail at a zoom (0 none, 1 names, 2 full labels): decided by the size
        the labels' text would have on screen (``label_detail``), never by the graph's size."""
        return label_detail(self._box_height() * pixels_per_unit, self._max_lines)

    def pixels_per_unit_for_text(self, text_px: float) -> float:
        """The zoom at which this graph's full labels get ``text_px`` text (0 without nodes)."""
        height = self._box_height()
        return box_px_for_text(text_px, self._max_lines) / height if height > 0 else 0.0

    def boundingRect(self) -> QtCore.QRectF:
        if self._name_pad_px <= 0:
            return self._bounds
        if self._padded is None:
            px, py = self.pixelVectors()
            dx = (px.length() if px is not None else 0.0) * self._name_pad_px
            dy = (py.length() if py is not None else 0.0) * NAME_FONT_PX
            self._padded = self._bounds.adjusted(-dx, -dy, dx, dy)
        return self._padded

    def viewTransformChanged(self) -> None:
        # Names are sized in pixels: their reach in layout units changes with the zoom.
        if self._name_pad_px > 0:
            self.prepareGeometryChange()
            self._padded = None
        super().viewTransformChanged()

    def font_pixel_size(self, pixels_per_unit: float) -> int:
        """The label font's pixel size at a zoom: a function of the zoom and of the graph alone
        (the smallest box, the most lines a label of the graph will have), never of the labels
        on screen, so a partial repaint draws with the same font as a full one."""
        if len(self._half) == 0:
            return 0
        detail = self._detail(pixels_per_unit)
        wanted = self._max_lines if detail >= 2 else 1
        return int(np.clip(label_text_px(self._box_height() * pixels_per_unit, wanted), 8, 14))

    @property
    def painted_pixel_size(self) -> int:
        """The font pixel size of the last paint that drew labels (0 before any)."""
        return self._painted_pixel_size

    def paint(self, painter: QtGui.QPainter, option, *args: object) -> None:
        n = min(len(self._labels), len(self._positions))
        if n == 0:
            return
        scale = _pixels_per_unit(painter)
        detail = self._detail(scale)
        if detail == 0:
            self._paint_names(painter, option, n, scale)
            return
        pos, half = self._positions[:n], self._half[:n]
        # Which labels are drawn at all is decided on the whole visible rectangle, then cut to
        # the exposed part: a partial repaint draws exactly what a full one draws there.
        shown = self._bounds
        view_box = self.getViewBox()
        if view_box is not None:
            shown = shown.intersected(self.mapRectFromView(view_box.viewRect()))
        visible = np.flatnonzero(_overlapping(pos, half, shown))[:MAX_LABELS]
        if option is not None:
            visible = visible[_overlapping(pos[visible], half[visible], option.exposedRect)]
        if len(visible) == 0:
            return
        transform = painter.worldTransform()
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        font = QtGui.QFont(self._font)
        px = self.font_pixel_size(scale)
        font.setPixelSize(px)
        painter.setFont(font)
        self._painted_pixel_size = px
        metrics = QtGui.QFontMetrics(font)
        wanted = self._max_lines if detail >= 2 else 1
        node_h = float(self._half[:, 1].min() * 2 * scale)
        lines_fit = max(1, min(wanted, int((node_h - 2) // metrics.lineSpacing())))
        flags = QtCore.Qt.AlignmentFlag.AlignCenter
        elide = QtCore.Qt.TextElideMode.ElideRight
        black = QtGui.QColor("#000000")
        for i in visible:
            label = self._labels[i]
            x, y = pos[i]
            hw, hh = half[i]
            rect = transform.mapRect(QtCore.QRectF(x - hw, y - hh, 2 * hw, 2 * hh))
            inner = rect.adjusted(4, 1, -4, -1)
            width = max(1, int(inner.width()))
            fit = lines_fit
            if i < len(self._tall) and self._tall[i]:  # a module's taller box holds more lines
                fit = max(1, min(wanted, int((2 * hh * scale - 2) // metrics.lineSpacing())))
            key = (label, width, px, fit)
            text = self._elided.get(key)
            if text is None:
                lines = fitting_lines(label, fit)
                text = "\n".join(
                    cut_name(line, metrics, width)
                    if k == 0
                    else metrics.elidedText(line, elide, width)
                    for k, line in enumerate(lines)
                )
                if len(self._elided) > 20_000:
                    self._elided.clear()
                self._elided[key] = text
            style = int(self._style_keys[i]) if i < len(self._style_keys) else -1
            painter.setPen(self._text_colours.get(style, black))
            painter.drawText(inner, flags, text)
        painter.restore()

    def _paint_names(self, painter: QtGui.QPainter, option, n: int, scale: float) -> None:
        """Zoomed out past labels: the names of the nodes named at any zoom and of the boxes
        still tall enough to read, each on a pill of the background, centred on its node; a
        name that would cover one already placed (modules first, then in node order) is left
        out, so a crowded view stays readable."""
        self._painted_names = 0
        candidates = np.flatnonzero(
            self._named[:n] | (self._half[:n, 1] * 2 * scale >= READABLE_BOX_PX)
        )
        if len(candidates) == 0:
            return
        pos, half = self._positions[candidates], self._half[candidates]
        reach = np.maximum(half, np.array([self._name_pad_px, NAME_FONT_PX]) / max(scale, 1e-9))
        shown = self.boundingRect()
        view_box = self.getViewBox()
        if view_box is not None:
            shown = shown.intersected(self.mapRectFromView(view_box.viewRect()))
        keep = np.flatnonzero(_overlapping(pos, reach, shown))
        keep = keep[np.argsort(~self._named[candidates[keep]], kind="stable")][:MAX_LABELS]
        if len(keep) == 0:
            return
        font = QtGui.QFont(self._font)
        font.setPixelSize(NAME_FONT_PX)
        metrics = QtGui.QFontMetrics(font)
        transform = painter.worldTransform()
        # Which names are drawn is decided on the whole view, then cut to the exposed part:
        # a partial repaint draws what a full one draws there.
        nodes = candidates[keep].tolist()
        box_px = half[keep] * 2 * scale  # (width, height) on screen
        pills = _place_pills(
            [self._name_text_of(node, metrics) for node in nodes],
            [
                self._name_text_of(node, metrics, short_cap(width))
                for node, width in zip(nodes, box_px[:, 0].tolist(), strict=True)
            ],
            _map_points(transform, pos[keep]),
            metrics.height() + 2,
            box_px,
        )
        if option is not None:
            exposed = transform.mapRect(option.exposedRect)
            pills = [(text, pill) for text, pill in pills if pill.intersects(exposed)]
        if not pills:
            return
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        painter.setFont(font)
        for text, pill in pills:
            radius = pill.height() / 2
            painter.setPen(QtCore.Qt.PenStyle.NoPen)
            painter.setBrush(self._name_back)
            painter.drawRoundedRect(pill, radius, radius)
            painter.setPen(self._name_text)
            painter.drawText(pill, QtCore.Qt.AlignmentFlag.AlignCenter, text)
        self._painted_names = len(pills)
        painter.restore()

    def _name_text_of(
        self, node: int, metrics: QtGui.QFontMetrics, cap: int = NAME_MAX_PX
    ) -> tuple[str, int]:
        """The first line of a node's label, elided to a pill ``cap`` pixels wide ('' for
        none), and its width in pixels."""
        name = self._labels[node].split("\n", 1)[0] if node < len(self._labels) else ""
        named = self._names.get((name, cap))
        if named is None:
            text = cut_name(name, metrics, cap - 8)
            named = (text, metrics.horizontalAdvance(text))
            if len(self._names) > 20_000:
                self._names.clear()
            self._names[(name, cap)] = named
        return named


def short_cap(box_px: float) -> int:
    """The widest pill (pixels, a multiple of 8) of a name cut to fit over its own box,
    ``box_px`` wide on screen (never under NAME_MIN_PX): what a name gets when at its whole
    length it would cover another box."""
    return int(min(NAME_MAX_PX, max(NAME_MIN_PX, box_px + 8)) // 8 * 8)


# a dotted name (a parameter's ``block.downsample.1.weight``, a module path's attribute)
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+")


def cut_name(name: str, metrics: QtGui.QFontMetrics, width: int) -> str:
    """A label's first line cut to ``width`` pixels. A dotted name that does not fit keeps its
    last two parts whole (``1.weight``, what tells ``block.downsample.0.weight`` from
    ``block.downsample.1.weight`` and ``...1.bias``) and as much of its start as fits
    (``block.d…1.weight``), else its last part (``…weight``); other text, and a name whose
    last part alone does not fit, is cut at the end."""
    if metrics.horizontalAdvance(name) <= width or not _DOTTED.fullmatch(name):
        return metrics.elidedText(name, QtCore.Qt.TextElideMode.ElideRight, width)
    parts = name.split(".")
    tail = "…" + ".".join(parts[-2:])
    room = width - metrics.horizontalAdvance(tail)
    if room < 0:  # the last part alone (``…weight``), what tells a weight from its bias
        last = "…" + parts[-1]
        if metrics.horizontalAdvance(last) <= width:
            return last
        return metrics.elidedText(name, QtCore.Qt.TextElideMode.ElideRight, width)
    head = ".".join(parts[:-2]) + "."
    keep = 0
    while keep < len(head) and metrics.horizontalAdvance(head[: keep + 1]) <= room:
        keep += 1
    return head[:keep] + tail


def _map_points(transform: QtGui.QTransform, points: NDArray[np.floating]) -> NDArray[np.float64]:
    """``transform`` (affine) applied to (n, 2) points at once."""
    t = transform
    x, y = points[:, 0], points[:, 1]
    return np.stack([t.m11() * x + t.m21() * y + t.dx(), t.m12() * x + t.m22() * y + t.dy()], 1)


def _place_pills(
    texts: Sequence[tuple[str, int]],
    short: Sequence[tuple[str, int]],
    centres: NDArray[np.float64],
    height: int,
    boxes: NDArray[np.float64] | None = None,
) -> list[tuple[str, QtCore.QRectF]]:
    """Pills (device pixels) for ``texts`` (text, width) at ``centres``, in order. A pill that
    would cover another node's box (``boxes``: each one's width and height on screen, centred
    on its centre) takes its ``short`` text instead, cut to its own box (``block.bn1.weight``
    over a batch norm's weight hid the bias box beside it); one that would overlap a pill
    placed before is left out. Looked up in a grid of NAME_MAX_PX-wide cells."""
    placed: list[tuple[str, QtCore.QRectF]] = []
    cells: dict[tuple[int, int], list[QtCore.QRectF]] = {}
    others: dict[tuple[int, int], list[tuple[int, QtCore.QRectF]]] = {}

    def spans(rect: QtCore.QRectF) -> list[tuple[int, int]]:
        cols = range(int(rect.left() // NAME_MAX_PX), int(rect.right() // NAME_MAX_PX) + 1)
        rows = range(int(rect.top() // height), int(rect.bottom() // height) + 1)
        return [(c, r) for c in cols for r in rows]

    points = centres.tolist()
    if boxes is not None:
        for k, ((x, y), (w, h)) in enumerate(zip(points, boxes.tolist(), strict=True)):
            if h < READABLE_BOX_PX:  # zoomed far out: a name tells more than a speck it hides
                continue
            # with a margin: a pill that fills the gap to a box leaves its name no room
            box = QtCore.QRectF(x - w / 2 - PILL_GAP_PX, y - h / 2, w + 2 * PILL_GAP_PX, h)
            if len(spans(box)) <= 64:  # (a box larger than the view: nothing to hide)
                for cell in spans(box):
                    others.setdefault(cell, []).append((k, box))

    def pill_of(text_width: int, x: float, y: float) -> QtCore.QRectF:
        width = text_width + 8
        return QtCore.QRectF(x - width / 2, y - height / 2, width, height)

    def covers_a_box(k: int, pill: QtCore.QRectF) -> bool:
        return any(
            j != k and pill.intersects(box)
            for cell in spans(pill)
            for j, box in others.get(cell, ())
        )

    for k, ((text, text_width), (x, y)) in enumerate(zip(texts, points, strict=True)):
        if not text:
            continue
        pill = pill_of(text_width, x, y)
        if others and covers_a_box(k, pill):
            text, text_width = short[k]
            pill = pill_of(text_width, x, y)
        near = [cells.get(cell, ()) for cell in spans(pill)]
        if any(pill.intersects(other) for group in near for other in group):
            continue
        for cell in spans(pill):
            cells.setdefault(cell, []).append(pill)
        placed.append((text, pill))
    return placed


def _transform_key(t: QtGui.QTransform) -> tuple[float, ...]:
    return (t.m11(), t.m12(), t.m21(), t.m22(), t.dx(), t.dy())


def _overlapping(
    positions: NDArray[np.floating], half: NDArray[np.floating], rect: QtCore.QRectF
) -> NDArray[np.bool_]:
    """Which boxes (centre, half size) overlap ``rect``."""
    return (
        (positions[:, 0] + half[:, 0] >= rect.left())
        & (positions[:, 0] - half[:, 0] <= rect.right())
        & (positions[:, 1] + half[:, 1] >= rect.top())
        & (positions[:, 1] - half[:, 1] <= rect.bottom())
    )


class OverlayLayer(pg.GraphicsObject):
    """Marks on flagged nodes (leaks, the first NaN/Inf, gradient-check errors): a ring in the
    overlay's colour and, when the node is big enough, its badge. There are few of them, so
    they are painted one by one, in device pixels (rings as filled outlines, see
    :func:`_fill_stroke`)."""

    MAX_SHOWN = 2000

    def __init__(self) -> None:
        super().__init__()
        self._positions = np.zeros((0, 2))
        self._half = np.zeros((0, 2))
        self._is_function = np.zeros(0, dtype=bool)
        self._nodes = np.zeros(0, dtype=np.intp)
        self._colours: list[QtGui.QColor] = []
        self._badges: list[str] = []
        self._boxes = QtCore.QRectF()
        self._pad_px = 0.0
        self._bounds: QtCore.QRectF | None = None
        self._painted_badges: list[tuple[str, QtCore.QRectF]] = []
        self._version = 0  # counts the changes of nodes and overlays (the places' cache key)
        self._placed: tuple[tuple, tuple[NDArray, NDArray]] | None = None
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
            lo, hi = (pos - half).min(axis=0), (pos + half).max(axis=0)
            self._boxes = QtCore.QRectF(lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1])
        else:
            self._boxes = QtCore.QRectF()
        self._pad_px = self._reach(self._font())
        self._bounds = None
        self._version += 1
        self.update()

    @property
    def count(self) -> int:
        return len(self._nodes)

    @property
    def nodes(self) -> NDArray[np.intp]:
        """The flagged nodes drawn (indexes; a node flagged twice is here twice)."""
        return self._nodes

    @property
    def reach_px(self) -> float:
        """How far (device pixels) rings and badges may reach out of their node's box."""
        return self._pad_px

    @staticmethod
    def _font() -> QtGui.QFont:
        font = QtGui.QFont()
        font.setPixelSize(11)
        font.setBold(True)
        return font

    def _reach(self, font: QtGui.QFont) -> float:
        """How far (device pixels) rings and badges reach out of their node's box: the rings
        nest 4 px apart and a badge may go a little way round its ring
        (:func:`~viewer.model.scene.badges.badge_reach`)."""
        metrics = QtGui.QFontMetricsF(font)
        rings: dict[int, int] = {}
        for node in self._nodes:
            rings[int(node)] = rings.get(int(node), 0) + 1
        most = max(rings.values(), default=0)
        widths = [self._pill_width(metrics, b) for b in self._badges]
        return 6.0 + 4.0 * most + badge_reach(widths, BADGE_HEIGHT)

    @staticmethod
    def _pill_width(metrics: QtGui.QFontMetricsF, badge: str) -> float:
        return metrics.horizontalAdvance(badge) + 10 if badge else 0.0

    def viewTransformChanged(self) -> None:
        # The marks are sized in pixels: their extent in layout units changes with the zoom.
        self.prepareGeometryChange()
        self._bounds = None
        super().viewTransformChanged()

    def boundingRect(self) -> QtCore.QRectF:
        if len(self._nodes) == 0:
            return QtCore.QRectF()
        if self._bounds is None:
            px, py = self.pixelVectors()
            dx = (px.length() if px is not None else 0.0) * self._pad_px
            dy = (py.length() if py is not None else 0.0) * self._pad_px
            self._bounds = self._boxes.adjusted(-dx, -dy, dx, dy)
        return self._bounds

    @property
    def painted_badges(self) -> list[tuple[str, QtCore.QRectF]]:
        """The badges the last paint drew: (text, pill in device pixels)."""
        return list(self._painted_badges)

    def node_boxes_px(self, nodes: NDArray[np.intp], transform: QtGui.QTransform) -> NDArray:
        """(k, 4) boxes (left, top, right, bottom) of ``nodes`` in device pixels."""
        pos, half = self._positions[nodes], self._half[nodes]
        a, b = _map_points(transform, pos - half), _map_points(transform, pos + half)
        return np.concatenate([np.minimum(a, b), np.maximum(a, b)], axis=1)

    def paint(self, painter: QtGui.QPainter, *args: object) -> None:
        self._painted_badges = []
        if len(self._nodes) == 0:
            return
        transform = painter.worldTransform()
        scale = _pixels_per_unit(painter)
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        font = self._font()
        painter.setFont(font)
        metrics = QtGui.QFontMetricsF(font)
        # A node flagged several times (a leak that is also gradient-checked): rings nest.
        count: dict[int, int] = {}
        rings: list[QtCore.QRectF] = []
        for node, colour in zip(self._nodes, self._colours, strict=False):
            x, y = self._positions[node]
            hw, hh = self._half[node]
            rect = transform.mapRect(QtCore.QRectF(x - hw, y - hh, 2 * hw, 2 * hh))
            grow = max(3.0, 6.0 - rect.height() / 2) + 4.0 * count.get(int(node), 0)
            count[int(node)] = count.get(int(node), 0) + 1
            ring = rect.adjusted(-grow, -grow, grow, grow)
            rings.append(ring)
            path = QtGui.QPainterPath()
            if self._is_function[node]:
                path.addRect(ring)
            else:
                radius = ring.height() / 2.4
                path.addRoundedRect(ring, radius, radius)
            _fill_stroke(painter, path, QtGui.QPen(colour, 2.5, QtCore.Qt.PenStyle.DashLine))
        if scale * float(self._half[:, 0].min() * 2) >= 30:
            self._paint_badges(painter, transform, metrics, rings)
        painter.restore()

    def _paint_badges(
        self,
        painter: QtGui.QPainter,
        transform: QtGui.QTransform,
        metrics: QtGui.QFontMetricsF,
        rings: Sequence[QtCore.QRectF],
    ) -> None:
        """The badges of the rings on screen, where :func:`place_badges` puts them: clear of
        each other and of the boxes (and their text) of the nodes on screen, two neighbours'
        badges with the same text drawn once when there is no room for both."""
        screen = QtCore.QRectF(painter.viewport())
        reach = self._pad_px
        near = screen.adjusted(-reach, -reach, reach, reach)
        shown = [
            k
            for k, ring in enumerate(rings)
            if k < len(self._badges) and self._badges[k] and ring.intersects(near)
        ]
        if not shown:
            return
        # a step of playback repaints with the same view: the places stay
        key = (_transform_key(transform), near.getCoords(), self._version)
        if self._placed is None or self._placed[0] != key:
            inverse, _ = transform.inverted()
            area = inverse.mapRect(near.adjusted(-reach, -reach, reach, reach))
            around = np.flatnonzero(_overlapping(self._positions, self._half, area))
            texts = [self._badges[k] for k in shown]
            self._placed = (
                key,
                place_badges(
                    [rings[k].getCoords() for k in shown],
                    self.node_boxes_px(self._nodes[shown], transform),
                    texts,
                    [self._pill_width(metrics, text) for text in texts],
                    self.node_boxes_px(around, transform),
                    BADGE_HEIGHT,
                ),
            )
        pills, drawn = self._placed[1]
        radius = BADGE_HEIGHT / 2 - 0.5
        for k, (left, top, right, bottom), draw in zip(
            shown, pills.tolist(), drawn.tolist(), strict=True
        ):
            if not draw:
                continue  # it shares the pill of its neighbour with the same text
            pill = QtCore.QRectF(left, top, right - left, bottom - top)
            colour = self._colours[k]
            painter.setPen(QtCore.Qt.PenStyle.NoPen)
            painter.setBrush(colour)
            painter.drawRoundedRect(pill, radius, radius)
            painter.setPen(readable_on(QtGui.QColor(colour)))
            painter.drawText(pill, QtCore.Qt.AlignmentFlag.AlignCenter, self._badges[k])
            self._painted_badges.append((self._badges[k], pill))
