"""The overview (minimap): the whole graph in the bottom right corner of the graph view, with
the part the view shows outlined and the current step's nodes marked; a click or a drag in it
centres the view there.

The graph is rasterised once per graph, size and theme (:mod:`viewer.model.panels.overview`, numpy)
into a QImage; a pan, a zoom or a step repaints that image and a few marks on top.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.panels.overview import OverviewMap, overview_map, overview_size, rasterise
from viewer.model.scene.geometry import SceneGeometry
from viewer.qt.drawing.themes import LIGHT, Theme

__all__ = ["Overview"]

_MARGIN = 8  # pixels between the overview and the view's edges
_LONGEST = 200  # the overview's longer side in pixels (less in a small view)
_FADED = 0.3  # its opacity while it lies over the current step's nodes


def _rgba(colour: str | QtGui.QColor, alpha: int = 255) -> NDArray[np.uint8]:
    c = QtGui.QColor(colour)
    return np.array([c.red(), c.green(), c.blue(), alpha], dtype=np.uint8)


class Overview(QtWidgets.QWidget):
    """A small map of the graph over ``host``'s bottom right corner, shown while part of the
    graph is out of view (and the View menu's toggle is on)."""

    centre_requested = QtCore.Signal(float, float)  # a point in layout units

    def __init__(self, host: QtWidgets.QWidget) -> None:
        super().__init__(host)
        self.setObjectName("overview")
        self.setToolTip("The whole graph: click or drag to move the view there")
        self.setCursor(QtCore.Qt.CursorShape.PointingHandCursor)
        self._host = host
        self._theme: Theme = LIGHT
        self._geometry: SceneGeometry | None = None
        self._bounds = (-1.0, -1.0, 1.0, 1.0)
        self._map: OverviewMap | None = None
        self._image: QtGui.QImage | None = None
        self._pixels: NDArray[np.uint8] | None = None  # the buffer the image reads
        self._masks: tuple[NDArray[np.bool_], NDArray[np.bool_]] | None = None
        self._view_rect = QtCore.QRectF()
        self._active = np.zeros((0, 2))
        self._selected: NDArray[np.float64] | None = None
        self._enabled = True
        self._whole = False  # the view shows the whole graph
        self._covering = False  # it hides the current step's nodes
        self._fade = QtWidgets.QGraphicsOpacityEffect(self)
        self._fade.setOpacity(1.0)
        self.setGraphicsEffect(self._fade)
        host.installEventFilter(self)
        self.hide()

    # ---------------------------------------------------------------- content
    def set_graph(self, geometry: SceneGeometry) -> None:
        if geometry is self._geometry:
            return
        self._geometry = geometry
        self._bounds = geometry.bounds()
        self._whole = self._shows_whole_graph()
        self._active = np.zeros((0, 2))
        self._selected = None
        self._image = None
        self._masks = None
        self._place()

    def set_theme(self, theme: Theme) -> None:
        self._theme = theme
        self._image = None
        self.update()

    def set_view_rect(self, rect: QtCore.QRectF) -> None:
        """The part of the graph the view shows, in layout units. While that is all of it,
        the overview has nothing to add and steps aside."""
        self._view_rect = QtCore.QRectF(rect)
        whole = self._shows_whole_graph()
        if whole != self._whole:
            self._whole = whole
            self._place()
        self.update()

    def _shows_whole_graph(self) -> bool:
        r = self._view_rect
        if r.isEmpty():
            return False
        x0, y0, x1, y1 = self._bounds
        return r.left() <= x0 and r.top() <= y0 and r.right() >= x1 and r.bottom() >= y1

    def set_active(self, nodes: NDArray[np.integer]) -> None:
        """The current step's nodes (indexes), marked on the map."""
        geo = self._geometry
        nodes = np.asarray(nodes, dtype=np.intp).reshape(-1)
        if geo is None:
            self._active = np.zeros((0, 2))
        else:
            nodes = nodes[(nodes >= 0) & (nodes < geo.n_nodes)]
            self._active = geo.positions[nodes]
        self.update()

    def set_selected(self, node: int) -> None:
        geo = self._geometry
        ok = geo is not None and 0 <= node < geo.n_nodes
        self._selected = geo.positions[node].copy() if ok else None
        self.update()

    def set_covering(self, on: bool) -> None:
        """Whether the overview lies over the current step's nodes: it then fades, so they
        show through, until the mouse comes over it."""
        self._covering = bool(on)
        self._update_fade()

    @property
    def opacity(self) -> float:
        return self._fade.opacity()

    def _update_fade(self) -> None:
        faded = self._covering and not self.underMouse()
        self._fade.setOpacity(_FADED if faded else 1.0)

    def enterEvent(self, event: QtCore.QEvent) -> None:
        self._fade.setOpacity(1.0)
        super().enterEvent(event)

    def leaveEvent(self, event: QtCore.QEvent) -> None:
        self._update_fade()
        super().leaveEvent(event)

    def set_shown(self, on: bool) -> None:
        """The View menu's toggle: shown while part of the graph is out of view, or never."""
        self._enabled = bool(on)
        self._place()

    @property
    def shown(self) -> bool:
        return self._enabled

    @property
    def map(self) -> OverviewMap | None:
        """Layout units to this widget's pixels (None before a graph is shown)."""
        return self._map

    # ---------------------------------------------------------------- drawing
    def _place(self) -> None:
        geo = self._geometry
        host = self._host.rect()
        if (
            not self._enabled
            or geo is None
            or geo.n_nodes == 0
            or self._whole
            or host.width() < 160
        ):
            self.hide()
            return
        longest = int(min(_LONGEST, host.width() * 0.28, host.height() * 0.4))
        w, h = overview_size(self._bounds, max(longest, 60), min(56, max(longest, 60)))
        if (w, h) != (self.width(), self.height()):
            self.resize(w, h)
            self._image = None
        self.move(host.right() - w - _MARGIN + 1, host.bottom() - h - _MARGIN + 1)
        self.show()
        self.raise_()
        self.update()

    def _render(self) -> None:
        geo = self._geometry
        w, h = self.width(), self.height()
        self._map = overview_map(self._bounds, w, h)
        if geo is None:
            return
        if self._masks is None or self._masks[0].shape != (h, w):
            # the graph's pixels, kept while only the theme changes
            self._masks = rasterise(
                self._map, geo.positions, geo.half_sizes, geo.edge_points, geo.edge_offsets
            )
        nodes, edges = self._masks
        theme = self._theme
        pixels = np.empty((h, w, 4), dtype=np.uint8)
        pixels[:] = _rgba(theme.graph_background, 225)
        pixels[edges] = _rgba(theme.mid, 255)
        pixels[nodes] = _rgba(theme.edge, 255)
        self._pixels = np.ascontiguousarray(pixels)
        self._image = QtGui.QImage(
            self._pixels.data, w, h, 4 * w, QtGui.QImage.Format.Format_RGBA8888
        )

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:
        if self._image is None or self._image.size() != self.size():
            self._render()
        if self._image is None or self._map is None:
            return
        painter = QtGui.QPainter(self)
        painter.drawImage(0, 0, self._image)
        theme = self._theme
        omap = self._map
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        if len(self._active):
            xs, ys = omap.to_pixels(self._active[:, 0], self._active[:, 1])
            painter.setPen(QtCore.Qt.PenStyle.NoPen)
            painter.setBrush(QtGui.QColor(theme.current))
            for x, y in zip(xs, ys, strict=True):
                painter.drawEllipse(QtCore.QPointF(float(x), float(y)), 3.0, 3.0)
        if self._selected is not None:
            x, y = omap.to_pixels(self._selected[0], self._selected[1])
            painter.setPen(QtGui.QPen(QtGui.QColor(theme.selection), 1.5))
            painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
            painter.drawEllipse(QtCore.QPointF(float(x), float(y)), 4.5, 4.5)
        rect = self.viewport_pixels()
        if rect is not None:
            colour = QtGui.QColor(theme.selection)
            fill = QtGui.QColor(colour)
            fill.setAlpha(40)
            painter.setPen(QtGui.QPen(colour, 1.5))
            painter.setBrush(fill)
            painter.drawRect(rect.intersected(QtCore.QRectF(self.rect()).adjusted(1, 1, -1, -1)))
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, False)
        painter.setPen(QtGui.QPen(QtGui.QColor(theme.edge), 1))
        painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        painter.end()

    def viewport_pixels(self) -> QtCore.QRectF | None:
        """The view's rectangle in this widget's pixels (None without a map or a view)."""
        omap = self._map
        r = self._view_rect
        if omap is None or r.isEmpty():
            return None
        x0, y0 = omap.to_pixels(r.left(), r.top())
        x1, y1 = omap.to_pixels(r.right(), r.bottom())
        return QtCore.QRectF(QtCore.QPointF(x0, y0), QtCore.QPointF(x1, y1)).normalized()

    # ---------------------------------------------------------------- events
    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        host = getattr(self, "_host", None)  # None while the window is being torn down
        if host is not None and watched is host and event.type() == QtCore.QEvent.Type.Resize:
            self._place()
        return super().eventFilter(watched, event)

    def mousePressEvent(self, event: QtGui.QMouseEvent) -> None:
        if event.button() == QtCore.Qt.MouseButton.LeftButton:
            self._centre_at(event.position())
            event.accept()
        else:
            super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QtGui.QMouseEvent) -> None:
        if event.buttons() & QtCore.Qt.MouseButton.LeftButton:
            self._centre_at(event.position())
            event.accept()
        else:
            super().mouseMoveEvent(event)

    def _centre_at(self, point: QtCore.QPointF) -> None:
        if self._map is None:
            self._render()
        if self._map is not None:
            x, y = self._map.to_layout(point.x(), point.y())
            self.centre_requested.emit(float(x), float(y))

    def wheelEvent(self, event: QtGui.QWheelEvent) -> None:
        event.accept()  # a wheel over the map must not zoom the view under it
