"""The graph view: pan, zoom, fit, click to select, tooltips; drawn from the scene's arrays.

The view knows nothing of traces. It takes the model's :class:`SceneGeometry` once per graph
(where things are) and a :class:`Frame` once per step (what state each node is in, which
Function is current, the labels), and hit tests through callbacks its SceneBinding wires to
the model's scene. When the step moves, the view follows it: it pans to keep the current
Function and its nodes on screen at the zoom the user chose, zooming out only where they would
not fit (never past the zoom that draws their labels).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyqtgraph as pg
from numpy.typing import NDArray
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.scene.geometry import SceneGeometry
from viewer.model.scene.scene import Frame
from viewer.model.scene.text import READABLE_TEXT_PX, SMALLEST_TEXT_PX
from viewer.qt.drawing.plain_text import tooltip
from viewer.qt.drawing.themes import LIGHT, Theme
from viewer.qt.graph.edge_labels import EdgeLabelLayer
from viewer.qt.graph.items import (
    MAX_LABEL_LINES,
    EdgeLayer,
    LabelLayer,
    NodeLayer,
    OverlayLayer,
    polyline_path,
    style_of_key,
)
from viewer.qt.graph.scope_frames import FrameLayer

__all__ = ["FOLLOW_DURATION_MS", "GraphView", "bounds_rect", "empty_geometry", "follow_shift"]

# How long the view takes to pan to the current step, and how close (in pixels) the step's
# nodes may come to the edge of the view before it pans.
FOLLOW_DURATION_MS = 200
FOLLOW_MARGIN_PX = 24.0


def bounds_rect(geometry: SceneGeometry) -> QtCore.QRectF:
    """The geometry's bounds (x_min, y_min, x_max, y_max) as a QRectF."""
    x0, y0, x1, y1 = geometry.bounds()
    return QtCore.QRectF(x0, y0, x1 - x0, y1 - y0)


class _GraphViewBox(pg.ViewBox):
    clicked = QtCore.Signal(QtCore.QPointF)
    right_clicked = QtCore.Signal(QtCore.QPointF, QtCore.QPoint)  # data point, screen point

    def mouseClickEvent(self, ev) -> None:
        if ev.button() == QtCore.Qt.MouseButton.LeftButton:
            ev.accept()
            if not ev.double():  # the view's mouseDoubleClickEvent handles the second click
                self.clicked.emit(self.mapSceneToView(ev.scenePos()))
        elif ev.button() == QtCore.Qt.MouseButton.RightButton:
            ev.accept()
            screen = ev.screenPos()
            self.right_clicked.emit(
                self.mapSceneToView(ev.scenePos()), QtCore.QPoint(int(screen.x()), int(screen.y()))
            )
        else:
            super().mouseClickEvent(ev)


class GraphView(pg.GraphicsView):
    """The autodiff graph, top (inputs) to bottom (outputs)."""

    node_clicked = QtCore.Signal(int)
    view_changed = QtCore.Signal()  # the visible part of the graph moved: pan, zoom, resize
    overlays_changed = QtCore.Signal()  # other nodes flagged (set_overlays)
    # a double-click, or Enter on the selected node: the node index (a module box opens)
    node_activated = QtCore.Signal(int)
    # a right-click: the node index under it (-1: none) and where, on the screen
    context_requested = QtCore.Signal(int, QtCore.QPoint)
    # a double-click inside an open module's frame, on no node: the module's path
    frame_activated = QtCore.Signal(str)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("graphView")
        self._box = _GraphViewBox(lockAspect=True, invertY=True, enableMenu=False)
        self.setCentralItem(self._box)
        self._frames = FrameLayer()  # behind everything: the open modules
        self._box.addItem(self._frames)
        self._box.addItem(self._frames.titles)  # their titles: over the edges
        self._edges = EdgeLayer()
        self._edges.setZValue(0)
        self._box.addItem(self._edges)
        self._detached_edges = EdgeLayer(detached=True)
        self._detached_edges.setZValue(0)
        self._box.addItem(self._detached_edges)
        self._active_edges = EdgeLayer(active=True)
        self._active_edges.setZValue(0.5)
        self._box.addItem(self._active_edges)
        self._nodes = NodeLayer(self._box)
        self._labels = LabelLayer(self._nodes)
        self._box.addItem(self._labels)
        self._overlays = OverlayLayer()
        self._box.addItem(self._overlays)
        self._edge_labels = EdgeLabelLayer()
        self._box.addItem(self._edge_labels)
        self._geometry = empty_geometry()
        self._frame: Frame | None = None
        self._selected = -1
        # where the last right-click was (layout units): its menu is about the frame there
        self.context_point: tuple[float, float] | None = None
        self._theme: Theme = LIGHT
        self._node_at: Callable[[float, float], int] | None = None
        self._tooltip_at: Callable[[float, float], str | None] | None = None
        self._box.clicked.connect(self._on_clicked)
        self._box.right_clicked.connect(self._on_right_clicked)
        self.setFocusPolicy(QtCore.Qt.FocusPolicy.StrongFocus)
        self._box.sigTransformChanged.connect(self._on_zoom)
        self._box.sigResized.connect(self._on_zoom)
        # the range is set at once, the transform only at the next paint
        self._box.sigRangeChanged.connect(self._on_range)
        self._follow = True
        self._follow_animated = True
        self._fitted = False  # the view shows the graph as fit() left it
        # a drag or the wheel (a click that selects a node leaves the view as it was)
        self._box.sigRangeChangedManually.connect(self._on_moved_by_hand)
        self._pan = QtCore.QVariantAnimation(self)  # from one view rect to another
        self._pan.setDuration(FOLLOW_DURATION_MS)
        self._pan.setEasingCurve(QtCore.QEasingCurve.Type.OutCubic)
        self._pan.valueChanged.connect(self._pan_to)
        self.setMouseTracking(True)
        self.set_theme(LIGHT)

    # ----------------------------------------------------------------- configuration
    @property
    def view_box(self) -> pg.ViewBox:
        return self._box

    @property
    def frame_layer(self) -> FrameLayer:
        """The frames of the open modules, as drawn."""
        return self._frames

    @property
    def geometry_data(self) -> SceneGeometry:
        return self._geometry

    @property
    def frame(self) -> Frame | None:
        return self._frame

    @property
    def theme(self) -> Theme:
        return self._theme

    def set_theme(self, theme: Theme) -> None:
        self._theme = theme
        self.setBackground(theme.graph_background)
        self._edges.set_theme(theme)
        self._active_edges.set_theme(theme)
        self._detached_edges.set_theme(theme)
        self._nodes.set_theme(theme)
        self._frames.set_theme(theme)
        self._edge_labels.set_theme(theme)
        self._labels.set_name_colours(theme.text, theme.graph_background)
        if self._frame is not None:
            self._send_labels(self._frame)

    def set_hit_test(
        self,
        node_at: Callable[[float, float], int] | None,
        tooltip_at: Callable[[float, float], str | None] | None = None,
    ) -> None:
        """``node_at(x, y)`` -> node index or -1; ``tooltip_at(x, y)`` -> text or None."""
        self._node_at = node_at
        self._tooltip_at = tooltip_at

    # ----------------------------------------------------------------- content
    def set_graph(
        self, geometry: SceneGeometry, fit: bool = True, label_lines: int | None = None
    ) -> None:
        """Show a new graph (positions, edges); call :meth:`set_frame` for its states.

        ``label_lines``: the most lines any label of this graph will have at any step (the
        label font is sized for it, once per graph); by default the most a label can have."""
        self._pan.stop()
        self._geometry = geometry
        self._frame = None
        self._selected = -1
        self._active_edges.set_edges(QtGui.QPainterPath(), QtGui.QPainterPath(), 0)
        self._edge_labels.set_labels(np.zeros((0, 2)), [])
        self._frames.set_frames(geometry.frames)
        detached = geometry.detached_edges
        if detached is None or len(detached) != geometry.n_edges or not detached.any():
            self._edges.set_edges(
                polyline_path(geometry.edge_points, geometry.edge_offsets),
                _triangles_path(geometry.arrow_points),
                geometry.n_edges,
            )
            self._detached_edges.set_edges(QtGui.QPainterPath(), QtGui.QPainterPath(), 0)
        else:
            kept = np.flatnonzero(~detached)
            cut = np.flatnonzero(detached)
            self._edges.set_edges(*self._edge_paths(kept), len(kept))
            self._detached_edges.set_edges(*self._edge_paths(cut), len(cut))
        self._nodes.set_nodes(
            geometry.positions,
            geometry.is_function,
            geometry.variable_size,
            geometry.function_size,
            geometry.is_module,
            geometry.module_size,
            geometry.detached,
        )
        if label_lines is None:
            label_lines = MAX_LABEL_LINES if not geometry.is_function.all() else 1
        self._labels.set_geometry(
            geometry.positions, geometry.half_sizes.reshape(-1, 2), label_lines, geometry.modules
        )
        # module boxes keep their names zoomed out; not those of a detached history, which
        # would draw as loud as the graph's own
        named = geometry.modules
        if geometry.detached is not None and len(geometry.detached) == len(named):
            named = named & ~geometry.detached
        self._labels.set_named(named)
        self._overlays.set_geometry(
            geometry.positions, geometry.half_sizes.reshape(-1, 2), geometry.is_function
        )
        if fit:
            self.fit()
        self._on_zoom()

    def set_named_nodes(self, named: NDArray[np.bool_]) -> None:
        """The nodes whose name is drawn at any zoom, also zoomed out past labels: by default
        the module boxes (``geometry.modules``); call after :meth:`set_graph`."""
        self._labels.set_named(named)

    def set_frame(self, frame: Frame) -> None:
        """Show one step: node states, the current Function and its edges, labels; and, when
        the step moved, pan to keep its nodes in view (see :meth:`set_follow`)."""
        moved = self._frame is None or self._frame.step != frame.step
        self._frame = frame
        self._nodes.set_states(frame.state_codes, frame.state_names, frame.fill)
        self._nodes.set_overlays(frame.current_nodes, self._selected)
        path, arrows = self._active_paths(frame.active_edges)
        self._active_edges.set_edges(path, arrows, len(frame.active_edges))
        self._send_labels(frame)
        if moved and self._follow:
            self.follow(frame.current_nodes, frame.current_function)

    def set_overlays(
        self, nodes: NDArray[np.integer], colours: NDArray[np.uint8], badges: Sequence[str]
    ) -> None:
        """Flag ``nodes`` (leaks, NaN/Inf, gradient-check errors): RGBA colour and badge each."""
        self._overlays.set_overlays(nodes, colours, badges)
        self.overlays_changed.emit()

    @property
    def overlay_count(self) -> int:
        return self._overlays.count

    def flagged(self) -> tuple[NDArray[np.intp], float]:
        """The flagged nodes (indexes, as many as are drawn) and how far (device pixels) their
        rings and badges may reach out of their boxes."""
        return self._overlays.nodes, self._overlays.reach_px

    def set_selection(self, node: int) -> None:
        self._selected = int(node)
        current = self._frame.current_nodes if self._frame is not None else np.zeros(0, int)
        self._nodes.set_overlays(current, self._selected)

    @property
    def selection(self) -> int:
        return self._selected

    def set_hovered(self, node: int) -> None:
        """Ring ``node`` (an index, -1: none): the node a name under the pointer elsewhere
        (the Explain section's links) stands for."""
        self._nodes.set_hovered(node)

    @property
    def hovered(self) -> int:
        return self._nodes.hovered

    def set_edge_labels(self, points: NDArray[np.floating], texts: Sequence[str]) -> None:
        """Label edges: ``texts[i]`` centred on ``points[i]`` (layout units); none clears."""
        self._edge_labels.set_labels(points, texts)

    @property
    def edge_labels(self) -> list[str]:
        """The edge labels drawn now."""
        return self._edge_labels.texts

    def _active_paths(self, edges: NDArray[np.intp]) -> tuple[QtGui.QPainterPath, ...]:
        return self._edge_paths(edges)

    @property
    def detached_edge_count(self) -> int:
        """How many edges are drawn as cut-off history (faint, dashed)."""
        return self._detached_edges.n_edges

    def _edge_paths(self, edges: NDArray[np.intp]) -> tuple[QtGui.QPainterPath, ...]:
        """The polylines and arrow heads of ``edges`` (edge indexes of the geometry)."""
        geo = self._geometry
        edges = np.asarray(edges, dtype=np.intp).reshape(-1)
        edges = edges[(edges >= 0) & (edges < geo.n_edges)]
        if len(edges) == 0:
            return QtGui.QPainterPath(), QtGui.QPainterPath()
        chunks = [geo.edge_points[geo.edge_offsets[e] : geo.edge_offsets[e + 1]] for e in edges]
        offsets = np.concatenate([[0], np.cumsum([len(c) for c in chunks])])
        arrows = QtGui.QPainterPath()
        if len(geo.arrow_points) >= 3 * geo.n_edges:
            tri = np.concatenate([geo.arrow_points[3 * e : 3 * e + 3] for e in edges])
            arrows = _triangles_path(tri)
        return polyline_path(np.concatenate(chunks), offsets), arrows

    def _send_labels(self, frame: Frame) -> None:
        if frame.labels is None:
            return
        keys = self._nodes.style_keys(frame.state_codes)
        colours: dict[int, QtGui.QColor] = {}
        for key in np.unique(keys):
            style = style_of_key(self._theme, int(key), frame.state_names)
            colours[int(key)] = QtGui.QColor(style.text)
        self._labels.set_labels(frame.labels, keys, colours)

    # ----------------------------------------------------------------- navigation
    def fit(self) -> None:
        self._pan.stop()
        self._box.setRange(rect=bounds_rect(self._geometry), padding=0.04)
        self._fitted = True

    @property
    def is_fitted(self) -> bool:
        """Whether the view still shows the graph as :meth:`fit` left it (no zoom, pan,
        follow or centring since)."""
        return self._fitted

    def viewport_size(self) -> tuple[int, int]:
        """The view's width and height in pixels."""
        size = self.viewport().size()
        return size.width(), size.height()

    def zoom_by(self, factor: float) -> None:
        """factor > 1 zooms in."""
        self._pan.stop()
        self._fitted = False
        self._box.scaleBy((1 / factor, 1 / factor))

    def label_detail(self) -> int:
        """The labels' level of detail at the current zoom: 0 none, 1 names, 2 full."""
        return self._labels.detail_at(self._range_pixels_per_unit())

    def _range_pixels_per_unit(self) -> float:
        """Pixels per layout unit of the range set now: :meth:`pixels_per_unit` follows the
        transform, which is updated only at the next paint."""
        view = self._box.viewRect()
        width = self._box.boundingRect().width()
        return width / view.width() if view.width() > 0 and width > 0 else 0.0

    def readable_pixels_per_unit(self) -> float:
        """The zoom at which this graph's full labels are READABLE_TEXT_PX tall (a hair over,
        so the font's rounding down never lands under it)."""
        return self._labels.pixels_per_unit_for_text(READABLE_TEXT_PX) * 1.02

    def center_on(self, node: int) -> None:
        """Centre ``node``, zoomed in (to READABLE_TEXT_PX labels) if its label is not drawn
        at the current zoom; else at the current zoom."""
        if 0 <= node < self._geometry.n_nodes:
            x, y = self._geometry.positions[node]
            self._pan.stop()
            self._fitted = False
            rect = self._box.viewRect()
            ppu = self._range_pixels_per_unit()
            readable = self.readable_pixels_per_unit()
            if self.label_detail() < 2 and readable > ppu > 0:
                rect = QtCore.QRectF(
                    0, 0, rect.width() * ppu / readable, rect.height() * ppu / readable
                )
            rect.moveCenter(QtCore.QPointF(float(x), float(y)))
            self._set_view_rect(rect)

    def center_at(self, x: float, y: float) -> None:
        """Pan (never zoom) so the point (x, y) in layout units is in the middle."""
        self._pan.stop()
        self._fitted = False
        rect = self._box.viewRect()
        rect.moveCenter(QtCore.QPointF(float(x), float(y)))
        self._box.setRange(rect=rect, padding=0)

    def _set_view_rect(self, rect: QtCore.QRectF) -> None:
        """Show ``rect`` (layout units): a pan when it has the size in view now, else a zoom."""
        now = self._box.viewRect()
        same = abs(rect.width() - now.width()) <= 1e-9 * max(now.width(), 1e-12) and abs(
            rect.height() - now.height()
        ) <= 1e-9 * max(now.height(), 1e-12)
        if same:
            self._box.translateBy(
                x=rect.center().x() - now.center().x(), y=rect.center().y() - now.center().y()
            )
        else:
            self._box.setRange(rect=rect, padding=0)

    def visible_rect(self) -> QtCore.QRectF:
        """The part of the graph in view, in layout units."""
        return self._box.viewRect()

    # ----------------------------------------------------------------- following the step
    def set_follow(self, enabled: bool, animated: bool | None = None) -> None:
        """Pan to the current step's nodes when a step change leaves them out of view (on by
        default); ``animated`` False jumps instead of gliding."""
        self._follow = bool(enabled)
        if animated is not None:
            self._follow_animated = bool(animated)
        if not self._follow:
            self._pan.stop()

    @property
    def follows_step(self) -> bool:
        return self._follow

    @property
    def is_panning(self) -> bool:
        """Whether a follow animation is running."""
        return self._pan.state() == QtCore.QAbstractAnimation.State.Running

    def follow(self, nodes: NDArray[np.integer], focus: int = -1) -> bool:
        """Bring ``nodes`` into view if they are out of it or near its edge. The view pans at
        the zoom it has; it zooms out only where they do not fit but would at a zoom that still
        draws full labels (never further). ``focus`` (a node) is kept in view when they do not
        fit even so. True if the view moves."""
        geo = self._geometry
        nodes = np.asarray(nodes, dtype=np.intp).reshape(-1)
        nodes = nodes[(nodes >= 0) & (nodes < geo.n_nodes)]
        view = self._box.viewRect()
        ppu = self._range_pixels_per_unit()
        if len(nodes) == 0 or view.width() <= 0 or view.height() <= 0 or ppu <= 0:
            return False
        half = geo.half_sizes[nodes]
        lo = (geo.positions[nodes] - half).min(axis=0)
        hi = (geo.positions[nodes] + half).max(axis=0)
        target = self._follow_zoom(ppu, hi - lo, view.width() * ppu, view.height() * ppu)
        if target != ppu:
            scaled = QtCore.QRectF(0, 0, view.width() * ppu / target, view.height() * ppu / target)
            scaled.moveCenter(view.center())
            view = scaled
        focus_at = geo.positions[focus] if 0 <= focus < geo.n_nodes else (lo + hi) / 2
        pixel = 1.0 / target
        shift = follow_shift(
            (lo[0], lo[1], hi[0], hi[1]),
            (view.left(), view.top(), view.right(), view.bottom()),
            FOLLOW_MARGIN_PX * pixel,
            (float(focus_at[0]), float(focus_at[1])),
            geo.bounds(),
        )
        if target == ppu and max(abs(shift[0]), abs(shift[1])) < pixel:
            return False
        end = view.translated(*shift)
        self._pan.stop()
        self._fitted = False
        if self._follow_animated and self.isVisible() and FOLLOW_DURATION_MS > 0:
            self._pan.setStartValue(self._box.viewRect())
            self._pan.setEndValue(end)
            self._pan.start()
        else:
            self._pan_to(end)
        return True

    def _follow_zoom(
        self, ppu: float, size: NDArray[np.floating], width_px: float, height_px: float
    ) -> float:
        """The zoom the follow shows a box of ``size`` (layout units) at, from ``ppu`` in a
        view ``width_px`` x ``height_px``: ``ppu`` itself unless the box does not fit (then
        the zoom that fits it, but not below the smallest that draws full labels). Never a
        zoom in: the user zoomed out to see more of the graph (turning the follow on zoomed
        a view without labels in to READABLE_TEXT_PX's, 3.6 times for sine_regression.py)."""
        target = ppu
        room = np.array([width_px, height_px]) - 2 * FOLLOW_MARGIN_PX
        fits = float(np.min(room / np.maximum(np.asarray(size, dtype=np.float64), 1e-9)))
        if fits < target:
            # a little over the threshold: the painted zoom can differ from the range's by a
            # pixel of the view's frame, and the labels must not fall under it
            smallest = self._labels.pixels_per_unit_for_text(SMALLEST_TEXT_PX) * 1.02
            target = max(fits, smallest) if smallest < target else target
        return target

    def _pan_to(self, rect: QtCore.QRectF) -> None:
        try:
            self._set_view_rect(rect)
        except RuntimeError:  # the view box was deleted under a running pan (window closed)
            self._pan.stop()

    def mousePressEvent(self, event: QtGui.QMouseEvent) -> None:
        self._pan.stop()  # the user's drag wins over the follow
        super().mousePressEvent(event)

    def wheelEvent(self, event: QtGui.QWheelEvent) -> None:
        self._pan.stop()
        super().wheelEvent(event)

    def pixels_per_unit(self) -> float:
        return self._nodes.pixels_per_unit

    def _on_zoom(self, *args: object) -> None:
        px = self._box.viewPixelSize()[0]
        if px > 0 and np.isfinite(px):
            self._nodes.set_pixels_per_unit(1.0 / px)
        self.view_changed.emit()

    def _on_moved_by_hand(self, *args: object) -> None:
        self._fitted = False

    def _on_range(self, *args: object) -> None:
        self.view_changed.emit()

    # ----------------------------------------------------------------- interaction
    def _on_clicked(self, point: QtCore.QPointF) -> None:
        node = self._node_at(point.x(), point.y()) if self._node_at is not None else -1
        self.node_clicked.emit(int(node))

    def mouseDoubleClickEvent(self, event: QtGui.QMouseEvent) -> None:
        super().mouseDoubleClickEvent(event)
        if event.button() != QtCore.Qt.MouseButton.LeftButton or self._node_at is None:
            return
        point = self._box.mapSceneToView(self.mapToScene(event.position().toPoint()))
        node = self._node_at(point.x(), point.y())
        if node >= 0:
            self.node_activated.emit(int(node))
            return
        path = self.frame_at(point.x(), point.y())
        if path:
            self.frame_activated.emit(path)

    def frame_at(self, x: float, y: float) -> str:
        """The path of the innermost open module whose frame holds the point (layout units;
        '' for none)."""
        best, depth = "", -1
        for frame in self.geometry_data.frames:
            x0, y0, x1, y1 = frame.rect
            if x0 <= x <= x1 and y0 <= y <= y1 and frame.depth > depth:
                best, depth = frame.path, frame.depth
        return best

    def _on_right_clicked(self, point: QtCore.QPointF, screen: QtCore.QPoint) -> None:
        # (where: a right-click on no node is about the frame there, see frame_at)
        self.context_point = (point.x(), point.y())
        node = self._node_at(point.x(), point.y()) if self._node_at is not None else -1
        self.context_requested.emit(int(node), screen)

    def keyPressEvent(self, event: QtGui.QKeyEvent) -> None:
        enter = event.key() in (QtCore.Qt.Key.Key_Return, QtCore.Qt.Key.Key_Enter)
        plain = event.modifiers() == QtCore.Qt.KeyboardModifier.NoModifier
        if enter and plain and self._selected >= 0:
            self.node_activated.emit(self._selected)
            event.accept()
            return
        super().keyPressEvent(event)

    def viewportEvent(self, event: QtCore.QEvent) -> bool:
        if event.type() == QtCore.QEvent.Type.ToolTip and self._tooltip_at is not None:
            help_event = event
            scene_pos = self.mapToScene(help_event.pos())
            data = self._box.mapSceneToView(scene_pos)
            text = self._tooltip_at(data.x(), data.y())
            if text:
                QtWidgets.QToolTip.showText(help_event.globalPos(), tooltip(text), self)
            else:
                QtWidgets.QToolTip.hideText()
                event.ignore()
            return True
        return super().viewportEvent(event)


def follow_shift(
    nodes: tuple[float, float, float, float],
    view: tuple[float, float, float, float],
    margin: float,
    focus: tuple[float, float],
    graph: tuple[float, float, float, float] | None = None,
) -> tuple[float, float]:
    """How far to pan (dx, dy) so the box ``nodes`` (x0, y0, x1, y1) sits inside ``view``
    (x0, y0, x1, y1) at least ``margin`` from its edges; (0, 0) if it already does.

    On an axis where the box is out, it is centred, so the next steps along the way stay on
    screen without panning again; a box too big to fit stands for the point ``focus``. With
    the ``graph``'s bounds, the margin counts only on a side where the graph goes on past the
    view, and the pan stops where the graph would start to leave the view (or, in a view wider
    than the graph, where the view would show past it): a graph seen whole never moves."""
    shift = []
    for axis in (0, 1):
        lo, hi = nodes[axis], nodes[axis + 2]
        v0, v1 = view[axis], view[axis + 2]
        m = min(margin, 0.15 * (v1 - v0))
        if hi - lo > (v1 - v0) - 2 * m:
            lo = hi = focus[axis]
        m_lo = m if graph is None or graph[axis] < v0 else 0.0
        m_hi = m if graph is None or graph[axis + 2] > v1 else 0.0
        if lo >= v0 + m_lo and hi <= v1 - m_hi:
            shift.append(0.0)
            continue
        d = (lo + hi) / 2 - (v0 + v1) / 2
        if graph is not None:
            a, b = graph[axis] - m - v0, graph[axis + 2] + m - v1
            d = min(max(d, min(a, b)), max(a, b))
        shift.append(float(d))
    return shift[0], shift[1]


def _triangles_path(points: NDArray[np.floating]) -> QtGui.QPainterPath:
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    n = len(points) // 3
    if n == 0:
        return QtGui.QPainterPath()
    offsets = np.arange(0, 3 * n + 1, 3)
    return polyline_path(points[: 3 * n], offsets)


def empty_geometry() -> SceneGeometry:
    return SceneGeometry(
        positions=np.zeros((0, 2)),
        is_function=np.zeros(0, dtype=bool),
        edge_points=np.zeros((0, 2)),
        edge_offsets=np.zeros(1, dtype=np.intp),
        arrow_points=np.zeros((0, 2)),
    )
