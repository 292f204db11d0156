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

__all__ = [
    "FrameColours",
    "FrameLayer",
    "FrameTitleLayer",
    "frame_colours",
    "paint_frame_titles",
    "paint_frames",
]

TITLE_MAX_PX = 13  # the title's font, at most (pixels)
TITLE_MIN_PX = 7  # below this the strip is too thin to read: the title is left out
FILL_ALPHA = 14  # each frame tints what is behind it: nested frames come out darker
BORDER_ALPHA = 80


@dataclass(frozen=True)
class FrameColours:
    fill: QtGui.QColor
    border: QtGui.QColor
    title: QtGui.QColor
    background: QtGui.QColor  # the graph's, under every frame

    def plate(self, depth: int) -> QtGui.QColor:
        """The opaque colour inside a frame ``depth`` deep (its fill over its parents' over
        the background): a title's plate, which hides the edges running under the title."""
        cover = 1.0 - (1.0 - self.fill.alphaF()) ** max(depth, 1)
        return QtGui.QColor(
            *(
                round(b + (f - b) * cover)
                for f, b in zip(self.fill.getRgb()[:3], self.background.getRgb()[:3], strict=True)
            )
        )


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
    return FrameColours(fill, border, title, back)


def paint_frames(
    painter: QtGui.QPainter,
    frames: Sequence[ScopeFrame],
    to_device: Callable[[tuple[float, float, float, float]], QtCore.QRectF],
    colours: FrameColours,
    pixels_per_unit: float,
) -> None:
    """Paint the rectangles of ``frames`` (outermost first) on ``painter``, whose transform
    is the identity; ``to_device`` maps a frame's rect in layout units to pixels. Their titles
    go over the edges (:func:`paint_frame_titles`)."""
    painter.save()
    radius = float(np.clip(0.12 * pixels_per_unit, 2.0, 10.0))
    painter.setPen(QtGui.QPen(colours.border, 1.0))
    painter.setBrush(colours.fill)
    for frame in frames:
        painter.drawRoundedRect(to_device(frame.rect), radius, radius)
    painter.restore()


def paint_frame_titles(
    painter: QtGui.QPainter,
    frames: Sequence[ScopeFrame],
    to_device: Callable[[tuple[float, float, float, float]], QtCore.QRectF],
    colours: FrameColours,
    pixels_per_unit: float,
) -> int:
    """Paint the titles of ``frames`` as :func:`paint_frames` places them, each on a plate of
    its frame's colour, after the edges: an edge entering a frame runs under its title, which
    stays readable. Returns how many titles were drawn (none where the strip is too thin)."""
    titles = 0
    painter.save()
    font = QtGui.QFont(painter.font())
    for frame in frames:
        rect = to_device(frame.rect)
        strip = frame.title_height * pixels_per_unit
        px = int(min(TITLE_MAX_PX, strip * 0.85))
        if px < TITLE_MIN_PX:
            continue
        font.setPixelSize(px)
        painter.setFont(font)
        inner = QtCore.QRectF(rect.left() + 6, rect.top() + 1, rect.width() - 12, strip)
        metrics = QtGui.QFontMetrics(font)
        text = metrics.elidedText(
            frame.title, QtCore.Qt.TextElideMode.ElideRight, max(0, int(inner.width()))
        )
        plate = QtCore.QRectF(
            inner.left() - 2, inner.top() + 1, metrics.horizontalAdvance(text) + 4, strip - 2
        )
        painter.setPen(QtCore.Qt.PenStyle.NoPen)
        painter.setBrush(colours.plate(frame.depth))
        painter.drawRect(plate)
        painter.setPen(colours.title)
        painter.drawText(
            inner, QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter, text
        )
        titles += 1
    painter.restore()
    return titles


class _FramePart(pg.GraphicsObject):
    """One part of the open modules' frames, painted in device pixels (a one-pixel border and
    a crisp title at any zoom)."""

    def __init__(self, z: float) -> None:
        super().__init__()
        self._frames: tuple[ScopeFrame, ...] = ()
        self._bounds = QtCore.QRectF()
        self._colours = frame_colours(LIGHT)
        self.setAcceptedMouseButtons(QtCore.Qt.MouseButton.NoButton)
        self.setZValue(z)

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
        self._paint(painter, to_device, scale)
        painter.restore()

    def _paint(self, painter: QtGui.QPainter, to_device: Callable, scale: float) -> None:
        raise NotImplementedError


class FrameTitleLayer(_FramePart):
    """The frames' titles, over the edges and under the nodes (see
    :func:`paint_frame_titles`)."""

    def __init__(self) -> None:
        super().__init__(z=0.75)  # the edges are at 0 and 0.5, the nodes from 1
        self._painted_titles = 0

    @property
    def painted_titles(self) -> int:
        return self._painted_titles

    def _paint(self, painter: QtGui.QPainter, to_device: Callable, scale: float) -> None:
        self._painted_titles = paint_frame_titles(
            painter, self._frames, to_device, self._colours, scale
        )


class FrameLayer(_FramePart):
    """The open modules' frames, behind everything; their titles are its :attr:`titles`
    layer, which the view puts over the edges."""

    def __init__(self) -> None:
        super().__init__(z=-1)
        self.titles = FrameTitleLayer()

    def set_theme(self, theme: Theme) -> None:
        super().set_theme(theme)
        self.titles.set_theme(theme)

    def set_frames(self, frames: Sequence[ScopeFrame]) -> None:
        super().set_frames(frames)
        self.titles.set_frames(frames)

    @property
    def painted_titles(self) -> int:
        """How many titles the last paint drew."""
        return self.titles.painted_titles

    def _paint(self, painter: QtGui.QPainter, to_device: Callable, scale: float) -> None:
        paint_frames(painter, self._frames, to_device, self._colours, scale)
