"""The frames of open modules: a light rounded rectangle behind a scope's nodes, titled with
its name and class ("b0 · Block"), nested frames inside their parent's. The view draws them
with :class:`FrameLayer`, the image export with :func:`paint_frames`; both from the scene's
``SceneGeometry.frames``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from viewer.model.scene.geometry import ScopeFrame
from viewer.qt.drawing.themes import LIGHT, Theme

__all__ = ["FrameColours", "FrameLayer", "frame_colours", "paint_frames"]

TITLE_MAX_PX = 13  # the title's font, at most (pixels)
TITLE_MIN_PX = 7  # below this the strip is too thin to read: the title is left out
FILL_ALPHA = 14  # each frame tints what is behind it: nested frames come out darker
BORDER_ALPHA = 80


@dataclass(frozen=True)
class FrameColours:
    fill: QtGui.QColor
    border: QtGui.QColor
    title: QtGui.QColor


def frame_colours(theme: Theme) -> FrameColours:
    """Frames in the theme's text colour, faint: a grey that darkens the light background and
    lightens the dark one; the title a little softer than the labels."""
    fill, border = QtGui.QColor(theme.text), QtGui.QColor(theme.text)
    fill.setAlpha(FILL_ALPHA)
    border.setAlpha(BORDER_ALPHA)
    text, back = QtGui.QColor(theme.text), QtGui.QColor(theme.graph_background)
    title = QtGui.QColor(
        *(
            round(0.78 * a + 0.22 * b)
            for a, b in zip(text.getRgb()[:3], back.getRgb()[:3], strict=True)
        )
    )
    return FrameColours(fill, border, title)


def paint_frames(
    painter: QtGui.QPainter,
    frames: Sequence[ScopeFrame],
    to_device: Callable[[tuple[float, float, float, float]], QtCore.QRectF],
    colours: FrameColours,
    pixels_per_unit: float,
) -> int:
    """Paint ``frames`` (outermost first) on ``painter``, whose transform is the identity;
    ``to_device`` maps a frame's rect in layout units to pixels. Returns how many titles were
    drawn."""
    titles = 0
    painter.save()
    font = QtGui.QFont(painter.font())
    for frame in frames:
        rect = to_device(frame.rect)
        radius = float(np.clip(0.12 * pixels_per_unit, 2.0, 10.0))
        painter.setPen(QtGui.QPen(colours.border, 1.0))
        painter.setBrush(colours.fill)
        painter.drawRoundedRect(rect, radius, radius)
        strip = frame.title_height * pixels_per_unit
        px = int(min(TITLE_MAX_PX, strip * 0.85))
        if px < TITLE_MIN_PX:
            continue
        font.setPixelSize(px)
        painter.setFont(font)
        painter.setPen(colours.title)
        inner = QtCore.QRectF(rect.left() + 6, rect.top() + 1, rect.width() - 12, strip)
        metrics = QtGui.QFontMetrics(font)
        text = metrics.elidedText(
            frame.title, QtCore.Qt.TextElideMode.ElideRight, max(0, int(inner.width()))
        )
        painter.drawText(
            inner, QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter, text
        )
        titles += 1
    painter.restore()
    return titles


class FrameLayer(pg.GraphicsObject):
    """The open modules' frames, behind the edges and the nodes, painted in device pixels
    (a one-pixel border and a crisp title at any zoom)."""

    def __init__(self) -> None:
        super().__init__()
        self._frames: tuple[ScopeFrame, ...] = ()
        self._bounds = QtCore.QRectF()
        self._colours = frame_colours(LIGHT)
        self._painted_titles = 0
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)
        self.setZValue(-1)

    def set_theme(self, theme: Theme) -> None:
        self._colours = frame_colours(theme)
        self.update()

    def set_frames(self, frames: Sequence[ScopeFrame]) -> None:
        self.prepareGeometryChange()
        self._frames = tuple(frames)
        bounds = QtCore.QRectF()
        for f in self._frames:
            x0, y0, x1, y1 = f.rect
            bounds = bounds.united(QtCore.QRectF(x0, y0, x1 - x0, y1 - y0))
        self._bounds = bounds
        self.update()

    @property
    def frames(self) -> tuple[ScopeFrame, ...]:
        return self._frames

    @property
    def colours(self) -> FrameColours:
        return self._colours

    @property
    def painted_titles(self) -> int:
        """How many titles the last paint drew."""
        return self._painted_titles

    def boundingRect(self) -> QtCore.QRectF:
        return self._bounds

    def paint(self, painter: QtGui.QPainter, *args: object) -> None:
        if not self._frames:
            return
        transform = painter.worldTransform()
        scale = float(np.hypot(transform.m11(), transform.m12()))

        def to_device(r: tuple[float, float, float, float]) -> QtCore.QRectF:
            return transform.mapRect(QtCore.QRectF(r[0], r[1], r[2] - r[0], r[3] - r[1]))

        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)
        self._painted_titles = paint_frames(painter, self._frames, to_device, self._colours, scale)
        painter.restore()
