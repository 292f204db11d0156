"""PNG, SVG and PDF export of the graph: the same arrays the view draws, painted at print
quality.

The on-screen view stamps pre-rendered pixmaps for speed; an export paints every node as a
vector shape instead (QSvgGenerator and QPdfWriter keep them as vectors), with every label
shown.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from PySide6 import QtCore, QtGui, QtSvg

from viewer.model.panels.legend import mark_for_badge
from viewer.model.scene.badges import place_badges
from viewer.model.scene.geometry import SceneGeometry
from viewer.model.scene.scene import Frame
from viewer.qt.drawing.themes import LIGHT, Theme
from viewer.qt.graph.items import (
    DETACHED_EDGE_ALPHA,
    DETACHED_KEY,
    style_of_key,
)
from viewer.qt.graph.scope_frames import (
    frame_colours,
    paint_frame_titles,
    paint_frames,
    titles_above,
)
from viewer.qt.graph.view import bounds_rect
from viewer.qt.panels.legend import LegendEntry, legend_entries, paint_badge, paint_mark, paint_node

__all__ = ["EXPORT_FORMATS", "export_graph", "paint_graph", "render_image"]

EXPORT_FORMATS = (".png", ".svg", ".pdf")
NODE_PIXELS = 150.0  # a node's width in the exported picture, when the picture is not too big
MAX_SIDE = 6000  # longest side of an exported PNG, pixels
MARGIN = 24.0
CAPTION_HEIGHT = 30.0
EXPORT_BADGE_HEIGHT = 19.0  # a flagged node's badge, pixels (its text is 12 px bold)


def _scale_for(geometry: SceneGeometry) -> float:
    bounds = bounds_rect(geometry)
    scale = NODE_PIXELS  # per layout column: boxes widened for long labels keep their text size
    longest = max(bounds.width(), bounds.height(), 1e-9)
    return min(scale, (MAX_SIDE - 2 * MARGIN) / longest)


def paint_graph(
    painter: QtGui.QPainter,
    geometry: SceneGeometry,
    frame: Frame | None,
    theme: Theme,
    scale: float,
    origin: QtCore.QPointF,
    selected: int = -1,
    overlays: tuple | None = None,
    placed: _Placed | None = None,
) -> None:
    """Paint the graph with layout point (x, y) at ``origin + scale * (x - left, y - top)``.

    ``overlays``: (node indexes, RGBA colours, badges) of flagged nodes, drawn as dashed rings
    with a badge; ``placed``: where they go, as :func:`_overlay_layout` put them at this
    scale with the origin at (0, 0) (else placed here)."""
    bounds = bounds_rect(geometry)
    n = geometry.n_nodes

    def to_px(x: float, y: float) -> QtCore.QPointF:
        return QtCore.QPointF(
            origin.x() + (x - bounds.left()) * scale, origin.y() + (y - bounds.top()) * scale
        )

    transform = QtGui.QTransform()
    transform.translate(origin.x(), origin.y())
    transform.scale(scale, scale)
    transform.translate(-bounds.left(), -bounds.top())

    painter.save()
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
    painter.setRenderHint(QtGui.QPainter.RenderHint.TextAntialiasing, True)

    # The open modules' frames behind everything, outermost first (their titles over the
    # edges, below).
    def frame_px(r: tuple[float, float, float, float]) -> QtCore.QRectF:
        return QtCore.QRectF(to_px(r[0], r[1]), to_px(r[2], r[3]))

    paint_frames(painter, geometry.frames, frame_px, frame_colours(theme), scale)

    # Edges and arrow heads, then the current step's edges over them.
    arrows = geometry.arrow_points.reshape(-1, 2)
    cut = geometry.detached_edges
    if cut is None or len(cut) != geometry.n_edges:
        cut = np.zeros(geometry.n_edges, dtype=bool)
    for detached in (False, True):
        chosen = np.flatnonzero(cut == detached)
        if len(chosen) == 0:
            continue
        colour = QtGui.QColor(theme.edge)
        pen = QtGui.QPen(colour, 1.4)
        if detached:  # history cut before the graph, as the window draws it
            colour.setAlpha(DETACHED_EDGE_ALPHA)
            pen = QtGui.QPen(colour, 1.4, QtCore.Qt.PenStyle.DashLine)
        painter.setPen(pen)
        painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        for e in chosen.tolist():
            pts = geometry.edge_points[geometry.edge_offsets[e] : geometry.edge_offsets[e + 1]]
            painter.drawPolyline(QtGui.QPolygonF([to_px(*p) for p in pts]))
        if len(arrows) >= 3 * geometry.n_edges:
            painter.setPen(QtCore.Qt.PenStyle.NoPen)
            painter.setBrush(colour)
            for e in chosen.tolist():
                tri = arrows[3 * e : 3 * e + 3]
                painter.drawPolygon(QtGui.QPolygonF([to_px(*p) for p in tri]))
    active = frame.active_edges if frame is not None else np.zeros(0, dtype=np.intp)
    active = [int(e) for e in active if 0 <= e < geometry.n_edges]
    if active:
        painter.setPen(QtGui.QPen(QtGui.QColor(theme.edge_active), 3.2))
        painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        for e in active:
            pts = geometry.edge_points[geometry.edge_offsets[e] : geometry.edge_offsets[e + 1]]
            painter.drawPolyline(QtGui.QPolygonF([to_px(*p) for p in pts]))
        if len(arrows) >= 3 * geometry.n_edges:
            painter.setPen(QtCore.Qt.PenStyle.NoPen)
            painter.setBrush(QtGui.QColor(theme.edge_active))
            for e in active:
                tri = arrows[3 * e : 3 * e + 3]
                painter.drawPolygon(QtGui.QPolygonF([to_px(*p) for p in tri]))

    # titles in their strips go over the edges and under the nodes; above their frames
    # (zoomed out), over the nodes, as in the window (FrameTitleLayer)
    above = titles_above(geometry.frames, scale)
    if not above:
        paint_frame_titles(painter, geometry.frames, frame_px, frame_colours(theme), scale)

    # Nodes, with their labels.
    names = tuple(frame.state_names) if frame is not None else ()
    codes = frame.state_codes if frame is not None else np.full(n, -1)
    fills = frame.fill if frame is not None else np.zeros((0, 4), np.uint8)
    labels = frame.labels if frame is not None and frame.labels is not None else None
    current = set(int(i) for i in frame.current_nodes) if frame is not None else set()
    font = QtGui.QFont(painter.font())
    h_px = min(geometry.variable_size[1], geometry.function_size[1]) * scale
    font.setPixelSize(int(np.clip(h_px / 4.6, 7, 14)))
    painter.setFont(font)
    show_text = geometry.variable_size[0] * scale >= 40
    detached_nodes = geometry.detached
    if detached_nodes is None or len(detached_nodes) != n:
        detached_nodes = np.zeros(n, dtype=bool)
    for i in range(n):
        f = bool(geometry.is_function[i])
        kind = "function" if f else "variable"
        code = int(codes[i]) if i < len(codes) else -1
        key = (1000 if f else 0) + code + (DETACHED_KEY if detached_nodes[i] else 0)
        style = style_of_key(theme, key, names) if code >= 0 else theme.node_style(kind, "")
        w, h = geometry.function_size if f else geometry.variable_size
        centre = to_px(*geometry.positions[i])
        rect = QtCore.QRectF(
            centre.x() - w * scale / 2, centre.y() - h * scale / 2, w * scale, h * scale
        )
        fill = QtGui.QColor(*(int(c) for c in fills[i])) if i < len(fills) else None
        paint_node(painter, rect, kind, style, fill)
        radius = rect.height() / 2.6
        for ring, colour, width, grow in (
            (i in current, theme.current, 3.0, 5.0),
            (i == selected, theme.selection, 2.5, 9.0),
        ):
            if ring:
                painter.setPen(QtGui.QPen(QtGui.QColor(colour), width))
                painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
                outer = rect.adjusted(-grow, -grow, grow, grow)
                if f:
                    painter.drawRect(outer)
                else:
                    painter.drawRoundedRect(outer, radius + grow, radius + grow)
        if show_text and labels is not None and i < len(labels):
            painter.setPen(QtGui.QColor(style.text))
            box = rect.adjusted(6, 2, -6, -2)
            painter.setFont(_fitted(font, labels[i], box))
            painter.drawText(box, QtCore.Qt.AlignmentFlag.AlignCenter, labels[i])
    if above:
        paint_frame_titles(painter, geometry.frames, frame_px, frame_colours(theme), scale)
    if overlays is not None:
        if placed is None:
            placed = _overlay_layout(geometry, overlays, transform)
        else:
            placed = _moved(placed, origin)
        _paint_overlays(painter, placed)
    painter.restore()


def _fitted(font: QtGui.QFont, text: str, box: QtCore.QRectF) -> QtGui.QFont:
    """``font``, made smaller (down to 6 px) until every line of ``text`` fits in ``box``."""
    metrics = QtGui.QFontMetricsF(font)
    lines = text.split("\n")
    wide = max((metrics.horizontalAdvance(line) for line in lines), default=0.0)
    tall = metrics.lineSpacing() * len(lines)
    shrink = min(1.0, box.width() / max(wide, 1e-9), box.height() / max(tall, 1e-9))
    if shrink >= 1.0:
        return font
    smaller = QtGui.QFont(font)
    smaller.setPixelSize(max(6, int(font.pixelSize() * shrink)))
    return smaller


def _node_boxes_px(geometry: SceneGeometry, transform: QtGui.QTransform) -> NDArray:
    """(n, 4) boxes (left, top, right, bottom) of every node as the picture draws them."""
    sizes = np.where(
        np.asarray(geometry.is_function, dtype=bool)[:, None],
        np.asarray(geometry.function_size, dtype=np.float64),
        np.asarray(geometry.variable_size, dtype=np.float64),
    )
    pos = np.asarray(geometry.positions, dtype=np.float64).reshape(-1, 2)
    scale = np.array([transform.m11(), transform.m22()])
    shift = np.array([transform.dx(), transform.dy()])
    return np.concatenate([(pos - sizes / 2) * scale + shift, (pos + sizes / 2) * scale + shift], 1)


def _badge_font() -> QtGui.QFont:
    font = QtGui.QFont()
    font.setPixelSize(12)
    font.setBold(True)
    return font


_Rings = list[tuple[QtCore.QRectF, QtGui.QColor, bool]]
_Pills = list[tuple[QtCore.QRectF, QtGui.QColor, str]]
_Placed = tuple[_Rings, _Pills]


def _moved(placed: _Placed, by: QtCore.QPointF) -> _Placed:
    """``placed`` moved by ``by`` (pixels)."""
    rings, pills = placed
    return (
        [(rect.translated(by), colour, square) for rect, colour, square in rings],
        [(rect.translated(by), colour, text) for rect, colour, text in pills],
    )


def _overlay_layout(
    geometry: SceneGeometry, overlays: tuple, transform: QtGui.QTransform
) -> _Placed:
    """Where the flagged nodes' rings and badges go in the picture (pixels): ``(rings,
    pills)``, a ring as (rectangle, colour, drawn square: a Function's), a pill as
    (rectangle, colour, text); a badge that shares its neighbour's pill has none."""
    nodes, colours, badges = overlays
    metrics = QtGui.QFontMetricsF(_badge_font())
    boxes = _node_boxes_px(geometry, transform)
    # a node flagged twice: nested rings; the badges go where the view puts them
    count: dict[int, int] = {}
    rings: list[tuple[QtCore.QRectF, QtGui.QColor, bool]] = []
    shown: list[tuple[int, QtGui.QColor, str, tuple[float, ...]]] = []
    for k, node in enumerate(np.asarray(nodes, dtype=np.intp)):
        if not 0 <= node < geometry.n_nodes:
            continue
        r, g, b, a = (int(v) for v in np.asarray(colours)[k])
        colour = QtGui.QColor(r, g, b, a)
        grow = 7 + 5 * count.get(int(node), 0)
        count[int(node)] = count.get(int(node), 0) + 1
        left, top, right, bottom = boxes[node]
        ring = QtCore.QRectF(left, top, right - left, bottom - top).adjusted(
            -grow, -grow, grow, grow
        )
        rings.append((ring, colour, bool(geometry.is_function[node])))
        badge = str(badges[k]) if k < len(badges) else ""
        if badge:
            shown.append((int(node), colour, badge, ring.getCoords()))
    if not shown:
        return rings, []
    texts = [badge for _, _, badge, _ in shown]
    places, drawn = place_badges(
        [ring for *_, ring in shown],
        boxes[[node for node, *_ in shown]],
        texts,
        [metrics.horizontalAdvance(text) + 12 for text in texts],
        boxes,
        EXPORT_BADGE_HEIGHT,
    )
    pills = [
        (QtCore.QRectF(left, top, right - left, bottom - top), colour, badge)
        for (_, colour, badge, _), (left, top, right, bottom), draw in zip(
            shown, places.tolist(), drawn.tolist(), strict=True
        )
        if draw  # else it shares the pill of its neighbour with the same text
    ]
    return rings, pills


def _overlay_overhang(
    geometry: SceneGeometry, overlays: tuple | None, scale: float
) -> tuple[tuple[float, float, float, float], _Placed | None]:
    """How far (pixels; left, top, right, bottom) the rings and badges reach past the graph's
    own bounds at ``scale``, beyond what MARGIN leaves: the picture grows by that much, so
    that a badge beside a node at the edge is not cut off. With it, where they go (the
    graph's corner at (0, 0)), placed once for sizing and painting; None without overlays."""
    if overlays is None or len(overlays[0]) == 0:
        return (0.0, 0.0, 0.0, 0.0), None
    bounds = bounds_rect(geometry)
    transform = QtGui.QTransform()
    transform.scale(scale, scale)
    transform.translate(-bounds.left(), -bounds.top())
    placed = _overlay_layout(geometry, overlays, transform)
    rings, pills = placed
    rects = [r for r, *_ in rings] + [r for r, *_ in pills]
    if not rects:
        return (0.0, 0.0, 0.0, 0.0), placed
    width, height = bounds.width() * scale, bounds.height() * scale
    keep = MARGIN - 4  # a ring or badge may come this close to the picture's edge
    overhang = (
        max(0.0, -min(r.left() for r in rects) - keep),
        max(0.0, -min(r.top() for r in rects) - keep),
        max(0.0, max(r.right() for r in rects) - width - keep),
        max(0.0, max(r.bottom() for r in rects) - height - keep),
    )
    return overhang, placed


def _paint_overlays(painter: QtGui.QPainter, placed: _Placed) -> None:
    rings, pills = placed
    painter.setBrush(QtCore.Qt.BrushStyle.NoBrush)
    for ring, colour, square in rings:
        painter.setPen(QtGui.QPen(colour, 2.5, QtCore.Qt.PenStyle.DashLine))
        if square:
            painter.drawRect(ring)
        else:
            painter.drawRoundedRect(ring, ring.height() / 2.4, ring.height() / 2.4)
    painter.setFont(_badge_font())
    for pill, colour, badge in pills:
        painter.setPen(QtCore.Qt.PenStyle.NoPen)
        painter.setBrush(colour)
        painter.drawRoundedRect(pill, 9, 9)
        painter.setPen(QtGui.QColor("#ffffff"))
        painter.drawText(pill, QtCore.Qt.AlignmentFlag.AlignCenter, badge)


LEGEND_HEIGHT = 34.0
CAPTION_PIXELS = 16
LEGEND_PIXELS = 12


def _font(pixels: int, bold: bool = False) -> QtGui.QFont:
    font = QtGui.QFont()
    font.setPixelSize(pixels)
    font.setBold(bold)
    return font


def _legend_rows(
    theme: Theme, overlays: tuple | None, geometry: SceneGeometry | None = None
) -> list[tuple[str, tuple[LegendEntry, ...]]]:
    """The legend of a picture, row by row with its title: the variable states, the Function
    states, and the marks of the flags in ``overlays`` (in order of appearance) and of a
    detached history in ``geometry``, from the same entries as the window's legend."""
    sections = dict(legend_entries(theme))
    rows = [("variables", sections["Variables"]), ("functions", sections["Functions"])]
    marks = {entry.key: entry for entry in sections["Marks"]}
    shown: dict[str, LegendEntry] = {}
    if overlays is not None:
        for badge in overlays[2]:
            mark = mark_for_badge(str(badge))
            if mark is None or mark.kind in shown:
                continue
            entry = marks[f"mark:{mark.kind}"]
            if mark.kind == "problem" and entry.badges:  # its sample says a kind on this picture
                entry = dataclasses.replace(entry, badges=((str(badge), entry.badges[0][1]),))
            shown[mark.kind] = entry
    if geometry is not None and geometry.detached is not None and geometry.detached.any():
        shown.setdefault("detached", marks["mark:detached"])
    if shown:
        rows.append(("marks", tuple(shown.values())))
    return rows


def _title_width(title: str) -> float:
    return QtGui.QFontMetricsF(_font(LEGEND_PIXELS, bold=True)).horizontalAdvance(title) + 14


def _entry_width(entry: LegendEntry) -> float:
    width = 34 + QtGui.QFontMetricsF(_font(LEGEND_PIXELS)).horizontalAdvance(entry.label) + 14
    bold = QtGui.QFontMetricsF(_font(LEGEND_PIXELS, bold=True))
    return width + sum(bold.horizontalAdvance(text) + 14 for text, _ in entry.badges)


def _legend_width(rows: list[tuple[str, tuple[LegendEntry, ...]]]) -> float:
    return max(
        (_title_width(title) + sum(_entry_width(e) for e in row) for title, row in rows),
        default=0.0,
    )


class _Picture(NamedTuple):
    """An export's measures, made once: its scale, its size, what the overlays reach past
    the graph (left, top, right, bottom) and where they go (see :func:`_overlay_overhang`)."""

    scale: float
    size: QtCore.QSizeF
    overhang: tuple[float, float, float, float]
    placed: _Placed | None


def _picture_size(
    geometry: SceneGeometry,
    caption: str | None,
    legend: bool,
    overlays: tuple | None = None,
    theme: Theme = LIGHT,
) -> _Picture:
    scale = _scale_for(geometry)
    bounds = bounds_rect(geometry)
    rows = _legend_rows(theme, overlays, geometry) if legend else []
    overhang, placed = _overlay_overhang(geometry, overlays, scale)
    out_left, out_top, out_right, out_bottom = overhang
    top = MARGIN + out_top + (CAPTION_HEIGHT if caption else 0.0)
    bottom = MARGIN + out_bottom + LEGEND_HEIGHT * len(rows)
    width = bounds.width() * scale + 2 * MARGIN + out_left + out_right
    if caption:
        caption_width = QtGui.QFontMetricsF(_font(CAPTION_PIXELS)).horizontalAdvance(caption)
        width = max(width, caption_width + 2 * MARGIN)
    if legend:
        width = max(width, _legend_width(rows) + 2 * MARGIN)
    height = bounds.height() * scale + top + bottom
    size = QtCore.QSizeF(max(width, 320.0), max(height, 120.0))
    return _Picture(scale, size, overhang, placed)


def _paint_legend(
    painter: QtGui.QPainter,
    theme: Theme,
    size: QtCore.QSizeF,
    overlays: tuple | None = None,
    geometry: SceneGeometry | None = None,
) -> None:
    """The legend's rows, centred, at the bottom of the picture: each entry is its swatch as
    the graph draws it (:func:`viewer.qt.panels.legend.paint_mark`), its badges, and its name."""
    painter.save()
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, True)
    rows = _legend_rows(theme, overlays, geometry)
    font, bold = _font(LEGEND_PIXELS), _font(LEGEND_PIXELS, bold=True)
    metrics = QtGui.QFontMetricsF(font)
    y = size.height() - MARGIN - LEGEND_HEIGHT * (len(rows) - 0.5)
    for title, row in rows:
        x = (size.width() - _title_width(title) - sum(_entry_width(e) for e in row)) / 2
        painter.setFont(bold)
        painter.setPen(QtGui.QColor(theme.text))
        painter.drawText(
            QtCore.QRectF(x, y - 10, _title_width(title), 20),
            QtCore.Qt.AlignmentFlag.AlignVCenter,
            title,
        )
        x += _title_width(title)
        for entry in row:
            grow = 4.0 if entry.ring else 0.0
            swatch = QtCore.QRectF(x - grow, y - 8 - grow, 28 + 2 * grow, 16 + 2 * grow)
            paint_mark(painter, swatch, entry)
            left = x + 34
            painter.setFont(bold)
            for text, colour in entry.badges:
                left += paint_badge(painter, left, y - 9, text, colour) + 4
            painter.setFont(font)
            painter.setPen(QtGui.QColor(theme.text))
            label = QtCore.QRectF(left, y - 10, metrics.horizontalAdvance(entry.label) + 4, 20)
            painter.drawText(label, QtCore.Qt.AlignmentFlag.AlignVCenter, entry.label)
            x += _entry_width(entry)
        y += LEGEND_HEIGHT
    painter.restore()


def _paint_picture(
    painter: QtGui.QPainter,
    geometry: SceneGeometry,
    frame: Frame | None,
    theme: Theme,
    caption: str | None,
    legend: bool,
    picture: _Picture,
    selected: int,
    overlays: tuple | None = None,
) -> None:
    scale, size = picture.scale, picture.size
    background = QtGui.QColor(theme.graph_background)
    painter.fillRect(QtCore.QRectF(QtCore.QPointF(0, 0), size), background)
    out_left, out_top, out_right, _ = picture.overhang
    top = MARGIN + out_top + (CAPTION_HEIGHT if caption else 0.0)
    bounds = bounds_rect(geometry)
    # centred with what its badges reach past it on either side
    left = (size.width() - bounds.width() * scale - out_left - out_right) / 2 + out_left
    if caption:
        painter.setFont(_font(CAPTION_PIXELS))
        painter.setPen(QtGui.QColor(theme.text))
        painter.drawText(
            QtCore.QRectF(MARGIN, MARGIN * 0.6, size.width() - 2 * MARGIN, CAPTION_HEIGHT),
            QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignVCenter,
            caption,
        )
    paint_graph(
        painter,
        geometry,
        frame,
        theme,
        scale,
        QtCore.QPointF(left, top),
        selected,
        overlays,
        picture.placed,
    )
    if legend:
        _paint_legend(painter, theme, size, overlays, geometry)


def render_image(
    geometry: SceneGeometry,
    frame: Frame | None,
    theme: Theme = LIGHT,
    caption: str | None = None,
    selected: int = -1,
    legend: bool = True,
    overlays: tuple | None = None,
) -> QtGui.QImage:
    picture = _picture_size(geometry, caption, legend, overlays, theme)
    size = picture.size
    image = QtGui.QImage(
        int(np.ceil(size.width())),
        int(np.ceil(size.height())),
        QtGui.QImage.Format.Format_ARGB32_Premultiplied,
    )
    image.fill(QtGui.QColor(theme.graph_background))
    painter = QtGui.QPainter(image)
    try:
        _paint_picture(
            painter, geometry, frame, theme, caption, legend, picture, selected, overlays
        )
    finally:
        painter.end()
    return image


def export_graph(
    path: str | Path,
    geometry: SceneGeometry,
    frame: Frame | None,
    theme: Theme = LIGHT,
    caption: str | None = None,
    selected: int = -1,
    legend: bool = True,
    overlays: tuple | None = None,
) -> Path:
    """Write the graph to ``path`` (.png, .svg or .pdf); raises ValueError/OSError for people."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise ValueError(
            f"cannot export to {path.name!r}: the file name must end in "
            f"{' or '.join(EXPORT_FORMATS)}"
        )
    if not path.parent.exists():
        raise OSError(f"cannot write {path}: the folder {path.parent} does not exist")
    if suffix == ".png":
        image = render_image(geometry, frame, theme, caption, selected, legend, overlays)
        if not image.save(str(path), "PNG"):
            raise OSError(f"could not write {path} (is the folder writable?)")
        return path
    picture = _picture_size(geometry, caption, legend, overlays, theme)
    size = picture.size
    if suffix == ".pdf":
        device = _pdf_writer(path, size, caption)
    else:
        device = _svg_generator(path, size, caption)
    painter = QtGui.QPainter()
    if not painter.begin(device):
        raise OSError(f"could not write {path} (is the folder writable?)")
    try:
        _paint_picture(
            painter, geometry, frame, theme, caption, legend, picture, selected, overlays
        )
    finally:
        painter.end()
    if not path.exists() or path.stat().st_size == 0:
        raise OSError(f"could not write {path}")
    return path


def _svg_generator(path: Path, size: QtCore.QSizeF, caption: str | None) -> QtSvg.QSvgGenerator:
    generator = QtSvg.QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(QtCore.QSize(int(np.ceil(size.width())), int(np.ceil(size.height()))))
    generator.setViewBox(QtCore.QRectF(QtCore.QPointF(0, 0), size))
    generator.setTitle(caption or "autodiff graph")
    generator.setDescription("exported by autodiff-viewer")
    return generator


def _pdf_writer(path: Path, size: QtCore.QSizeF, caption: str | None) -> QtGui.QPdfWriter:
    writer = QtGui.QPdfWriter(str(path))
    # one page the picture's size, at 72 dpi: a picture pixel is a PDF point
    writer.setResolution(72)
    page = QtGui.QPageSize(size, QtGui.QPageSize.Unit.Point, "graph")
    writer.setPageLayout(
        QtGui.QPageLayout(page, QtGui.QPageLayout.Orientation.Portrait, QtCore.QMarginsF())
    )
    writer.setTitle(caption or "autodiff graph")
    writer.setCreator("autodiff-viewer")
    return writer
