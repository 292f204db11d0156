"""Playback icons drawn in the palette's text colour, so they read on light and dark themes
(the style's standard media icons are black whatever the palette)."""

from __future__ import annotations

from PySide6 import QtCore, QtGui

__all__ = ["MEDIA_ICONS", "media_icon"]

MEDIA_ICONS = ("start", "back", "play", "pause", "forward", "end")


def _triangle(path: QtGui.QPainterPath, x: float, width: float, left: bool) -> None:
    tip, base = (x, x + width) if left else (x + width, x)
    path.moveTo(base, 3)
    path.lineTo(tip, 8)
    path.lineTo(base, 13)
    path.closeSubpath()


def _shape(kind: str) -> QtGui.QPainterPath:
    """The icon on a 16 x 16 grid."""
    path = QtGui.QPainterPath()
    if kind == "play":
        path.moveTo(4, 2)
        path.lineTo(13, 8)
        path.lineTo(4, 14)
        path.closeSubpath()
    elif kind == "pause":
        path.addRect(QtCore.QRectF(4, 3, 3, 10))
        path.addRect(QtCore.QRectF(9, 3, 3, 10))
    elif kind == "start":
        path.addRect(QtCore.QRectF(2, 3, 2, 10))
        _triangle(path, 4, 5, left=True)
        _triangle(path, 9, 5, left=True)
    elif kind == "end":
        _triangle(path, 2, 5, left=False)
        _triangle(path, 7, 5, left=False)
        path.addRect(QtCore.QRectF(12, 3, 2, 10))
    elif kind == "back":
        _triangle(path, 4, 7, left=True)
        path.addRect(QtCore.QRectF(11, 3, 2, 10))
    elif kind == "forward":
        path.addRect(QtCore.QRectF(3, 3, 2, 10))
        _triangle(path, 5, 7, left=False)
    else:
        raise ValueError(f"unknown icon {kind!r}; known icons: {', '.join(MEDIA_ICONS)}")
    return path


def media_icon(kind: str, colour: QtGui.QColor | str, size: int = 32) -> QtGui.QIcon:
    """One of :data:`MEDIA_ICONS`, filled with ``colour``."""
    shape = _shape(kind)
    icon = QtGui.QIcon()
    for side, alpha in ((size, 255), (size // 2, 255)):
        for mode, a in ((QtGui.QIcon.Mode.Normal, alpha), (QtGui.QIcon.Mode.Disabled, 90)):
            pixmap = QtGui.QPixmap(side, side)
            pixmap.fill(QtCore.Qt.GlobalColor.transparent)
            painter = QtGui.QPainter(pixmap)
            painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
            painter.scale(side / 16, side / 16)
            c = QtGui.QColor(colour)
            c.setAlpha(a)
            painter.fillPath(shape, c)
            painter.end()
            icon.addPixmap(pixmap, mode)
    return icon
