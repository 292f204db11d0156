"""Labels on the edges of the current backward step: the gradient each edge carries (View >
Label the Step's Edges with Gradients). The texts and where they sit come from the model
(:func:`viewer.model.panels.explain_view.step_edge_labels`); this layer only paints them, in
device pixels so they stay readable at any zoom, on a pill of the theme's base colour."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from numpy.typing import NDArray
from PySide6 import QtCore, QtGui

from viewer.qt.drawing.themes import LIGHT, Theme

__all__ = ["EdgeLabelLayer"]

FONT_PX = 12
PAD_PX = 4.0


class EdgeLabelLayer(pg.GraphicsObject):
    def __init__(self) -> None:
        super().__init__()
        self._points = np.zeros((0, 2))
        self._texts: list[str] = []
        self._theme = LIGHT
        self._bounds: QtCore.QRectF | None = None
        self._reach_px = 0.0
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)
        self.setZValue(4)

    @property
    def texts(self) -> list[str]:
        return list(self._texts)

    @property
    def points(self) -> NDArray[np.float64]:
        return self._points.copy()

    def set_theme(self, theme: Theme) -> None:
        self._theme = theme
        self.update()

    def set_labels(self, points: NDArray[np.floating], texts: Sequence[str]) -> None:
        """One label per point (layout units): ``texts[i]`` centred on ``points[i]``."""
        self.prepareGeometryChange()
        self._points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        self._texts = list(texts)[: len(self._points)]
        metrics = QtGui.QFontMetricsF(self._font())
        widest = max((metrics.horizontalAdvance(t) for t in self._texts), default=0.0)
        self._reach_px = widest / 2 + 2 * PAD_PX
        self._bounds = None
        self.update()

    @staticmethod
    def _font() -> QtGui.QFont:
        font = QtGui.QFont()
        font.setPixelSize(FONT_PX)
        font.setBold(True)
        return font

    def viewTransformChanged(self) -> None:
        # The pills are sized in pixels: their extent in layout units changes with the zoom.
        self.prepareGeometryChange()
        self._bounds = None
        super().viewTransformChanged()

    def boundingRect(self) -> QtCore.QRectF:
        if not self._texts:
            return QtCore.QRectF()
        if self._bounds is None:
            lo, hi = self._points.min(axis=0), self._points.max(axis=0)
            px, py = self.pixelVectors()
            dx = (px.length() if px is not None else 0.0) * self._reach_px
            dy = (py.length() if py is not None else 0.0) * (FONT_PX + 2 * PAD_PX)
            self._bounds = QtCore.QRectF(
                lo[0] - dx, lo[1] - dy, hi[0] - lo[0] + 2 * dx, hi[1] - lo[1] + 2 * dy
            )
        return self._bounds

    def paint(self, painter: QtGui.QPainter, *args: object) -> None:
        if not self._texts:
            return
        transform = painter.worldTransform()
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        font = self._font()
        painter.setFont(font)
        metrics = QtGui.QFontMetricsF(font)
        background = QtGui.QColor(self._theme.base)
        background.setAlpha(235)
        border = QtGui.QPen(QtGui.QColor(self._theme.edge_active), 1.2)
        text_colour = QtGui.QColor(self._theme.text)
        placed: list[QtCore.QRectF] = []
        for (x, y), text in zip(self._points, self._texts, strict=False):
            at = transform.map(QtCore.QPointF(float(x), float(y)))
            width = metrics.horizontalAdvance(text) + 2 * PAD_PX
            height = metrics.height() + PAD_PX
            pill = QtCore.QRectF(at.x() - width / 2, at.y() - height / 2, width, height)
            # edges into one Function meet: their midpoints can be side by side; a label
            # that would cover another moves down a row
            for _ in range(len(placed)):
                if not any(pill.intersects(other) for other in placed):
                    break
                pill.translate(0, height + 2)
            placed.append(pill)
            painter.setPen(border)
            painter.setBrush(background)
            painter.drawRoundedRect(pill, height / 2, height / 2)
            painter.setPen(text_colour)
            painter.drawText(pill, QtCore.Qt.AlignmentFlag.AlignCenter, text)
        painter.restore()
