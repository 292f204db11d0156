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
    "TitlePlate",
    "frame_colours",
    "paint_frame_titles",
    "paint_frames",
    "title_plates",
    "titles_above",
]

TITLE_MAX_PX = 13  # the title's font, at most (pixels)
TITLE_MIN_PX = 7  # below this the strip is too thin to read: the title stands above the frame
ABOVE_PX = 9  # a title above its frame, zoomed out (pixels)
ABOVE_MIN_WIDTH_PX = 28  # a frame narrower than this on screen has no title zoomed out
STRIP_Z = 0.75  # titles in their strips: over the edges (0 and 0.5), under the nodes (from 1)
ABOVE_Z = 4.5  # titles above their frames, zoomed out: over the nodes and their names (4)
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


@dataclass(frozen=True)
class TitlePlate:
    """Where a frame's title is drawn, in device pixels: its text (elided to fit), the text's
    font size and box, and the plate under it. ``above`` is a title zoomed out past its strip:
    a small one standing on the frame's top edge, outside it."""

    frame: ScopeFrame
    text: str
    px: int
    text_rect: QtCore.QRectF
    plate: QtCore.QRectF
    above: bool


def title_plates(
    frames: Sequence[ScopeFrame],
    to_device: Callable[[tuple[float, float, float, float]], QtCore.QRectF],
    pixels_per_unit: float,
    font: QtGui.QFont,
) -> list[TitlePlate]:
    """The titles of ``frames`` (outermost first) as they are drawn at a zoom.

    Where the frame's title strip is tall enough, the title fills it (up to TITLE_MAX_PX).
    Zoomed out past that, the title stands on the frame's top edge in ABOVE_PX text, as long
    as the frame is wide enough for a few letters of it and it covers no title placed before
    (outer frames first): the modules stay named when the nodes are too small for labels."""
    plates: list[TitlePlate] = []
    placed: list[QtCore.QRectF] = []
    font = QtGui.QFont(font)
    metrics_of: dict[int, QtGui.QFontMetrics] = {}  # (the frames share one or two sizes)
    for frame in frames:
        rect = to_device(frame.rect)
        strip = frame.title_height * pixels_per_unit
        px = _strip_text_px(frame, pixels_per_unit)
        above = px < TITLE_MIN_PX
        if above:
            px = ABOVE_PX
            if rect.width() < ABOVE_MIN_WIDTH_PX:
                continue
        metrics = metrics_of.get(px)
        if metrics is None:
            font.setPixelSize(px)
            metrics = metrics_of[px] = QtGui.QFontMetrics(font)
        if above:
            height = metrics.height() + 2
            inner = QtCore.QRectF(rect.left() + 4, rect.top() - height, rect.width() - 8, height)
        else:
            inner = QtCore.QRectF(rect.left() + 6, rect.top() + 1, rect.width() - 12, strip)
        placed_at = _title_at(frame.title, metrics, inner, above, placed if above else ())
        if placed_at is None and above:
            # no room on its edge beside its parent's title (a first child, as wide as its
            # parent: "0 · Linear" under "hidden · Sequential" had no title): just inside its
            # own frame, over the top of what it holds, where it reads as its frame's
            inside = QtCore.QRectF(inner.left(), rect.top() + 1, inner.width(), inner.height())
            placed_at = _title_at(frame.title, metrics, inside, above, placed)
        if placed_at is None:
            continue
        text, inner, plate = placed_at
        if above:
            placed.append(plate)
        plates.append(TitlePlate(frame, text, px, inner, plate, above))
    return plates


def _title_at(
    title: str,
    metrics: QtGui.QFontMetrics,
    inner: QtCore.QRectF,
    above: bool,
    placed: Sequence[QtCore.QRectF],
) -> tuple[str, QtCore.QRectF, QtCore.QRectF] | None:
    """A title's text (elided to ``inner``'s width), its text box and its plate. A title
    ``above`` its frame that would cover one ``placed`` before (its parent's, standing on
    nearly the same edge: a first child's) moves right past it, on what is left of the
    frame's width, if it fits there whole. None where no letter of it fits (a bare "…" above
    a frame), or moved, where not all of it does."""
    for moved in range(4):  # past one or two titles at most (a parent's, a grandparent's)
        text = metrics.elidedText(
            title, QtCore.Qt.TextElideMode.ElideRight, max(0, int(inner.width()))
        )
        if not text or (above and text == "\N{HORIZONTAL ELLIPSIS}"):
            return None
        if moved and text != title:
            return None  # beside another title only whole ("0 …" read as nothing)
        width = metrics.horizontalAdvance(text) + 4
        plate = QtCore.QRectF(inner.left() - 2, inner.top() + 1, width, inner.height() - 2)
        covered = [other for other in placed if plate.intersects(other)]
        if not covered:
            return text, inner, plate
        left = max(other.right() for other in covered) + 6
        inner = QtCore.QRectF(left, inner.top(), inner.right() - left, inner.height())
    return None


def _strip_text_px(frame: ScopeFrame, pixels_per_unit: float) -> int:
    """The text size a frame's title strip holds at a zoom (below TITLE_MIN_PX: too thin)."""
    return int(min(TITLE_MAX_PX, frame.title_height * pixels_per_unit * 0.85))


def titles_above(frames: Sequence[ScopeFrame], pixels_per_unit: float) -> bool:
    """Whether some of ``frames`` have their titles above them at this zoom (drawn over the
    nodes, then, as the nodes' names are)."""
    return any(_strip_text_px(f, pixels_per_unit) < TITLE_MIN_PX for f in frames)


def paint_frame_titles(
    painter: QtGui.QPainter,
    frames: Sequence[ScopeFrame],
    to_device: Callable[[tuple[float, float, float, float]], QtCore.QRectF],
    colours: FrameColours,
    pixels_per_unit: float,
) -> int:
    """Paint the titles of ``frames`` as :func:`title_plates` places them, each on a plate of
    the colour around it, after the edges: an edge entering a frame runs under its title,
    which stays readable. Returns how many titles were drawn."""
    plates = title_plates(frames, to_device, pixels_per_unit, painter.font())
    painter.save()
    font = QtGui.QFont(painter.font())
    for t in plates:
        font.setPixelSize(t.px)
        painter.setFont(font)
        # inside its frame, the frame's colour; above it, the colour of what is around it
        depth = t.frame.depth - 1 if t.above else t.frame.depth
        painter.setBrush(colours.plate(depth) if depth > 0 else colours.background)
        painter.setPen(QtGui.QPen(colours.border, 1.0) if t.above else QtCore.Qt.PenStyle.NoPen)
        painter.drawRect(t.plate)
        painter.setPen(colours.title)
        painter.drawText(
            t.text_rect,
            QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter,
            t.text,
        )
    painter.restore()
    return len(plates)


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
        super().__init__(z=STRIP_Z)
        self._painted_titles = 0
        self._padded: QtCore.QRectF | None = None

    def set_frames(self, frames: Sequence[ScopeFrame]) -> None:
        self._padded = None
        super().set_frames(frames)

    def boundingRect(self) -> QtCore.QRectF:
        """The frames, and room above each for a title standing on its top edge (sized in
        pixels: its reach in layout units changes with the zoom)."""
        if self._padded is None:
            _, py = self.pixelVectors()
            dy = (py.length() if py is not None else 0.0) * (ABOVE_PX + 8)
            self._padded = self._bounds.adjusted(0.0, -dy, 0.0, dy)
        return self._padded

    def viewTransformChanged(self) -> None:
        self.prepareGeometryChange()
        self._padded = None
        # Zoomed out, the titles stand above their frames in small text over what is there,
        # as the nodes' names do (LabelsItem, z 4): they go over the nodes then.
        _, py = self.pixelVectors()
        units = py.length() if py is not None else 0.0
        above = units > 0 and titles_above(self._frames, 1.0 / units)
        self.setZValue(ABOVE_Z if above else STRIP_Z)
        super().viewTransformChanged()

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
