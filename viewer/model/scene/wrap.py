"""A tall, narrow graph wrapped into side-by-side columns, so it fits a view at a zoom whose
labels read.

The layered layout puts each generation one row below the last: a chain such as
``square(exp(square(x)))`` is one box wide and seven rows tall, and fitted into a view it is
drawn small while most of the view's width stays empty. :func:`wrap_rows` cuts the rows into
bands of consecutive rows and sets the bands side by side, left to right, like the columns of a
page; an edge that goes on into the next band leaves its band at the bottom, runs up the gap
to the right of it and comes in at the top of the next one. The number of bands is the one
that lets the graph be drawn biggest in a view of the given aspect; a graph that would not be
drawn at least :data:`MIN_GAIN` times bigger is left as it is.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import NDArray

from viewer.model.scene.geometry import SceneGeometry, arrow_heads

__all__ = ["MAX_BANDS", "MAX_WRAPPED_NODES", "MIN_GAIN", "wrap_rows"]

MAX_BANDS = 8
# Wrapping is for graphs whose labels could read once fitted; a bigger graph is read by
# zooming into it, and its rows stay in one column.
MAX_WRAPPED_NODES = 400
MIN_GAIN = 1.15
GAP = 1.0  # layout units between two bands: the lane an edge takes into the next band
# how far under a band's last row (over its first) an edge into the next band turns: inside
# the margin a fitted view keeps around the boxes
TURN = 0.12


def _bands_of(levels: NDArray[np.float64], n_bands: int) -> list[tuple[int, int]]:
    per = math.ceil(len(levels) / n_bands)
    return [(a, min(a + per, len(levels))) for a in range(0, len(levels), per)]


def _plan(
    geometry: SceneGeometry, levels: NDArray[np.float64], n_bands: int
) -> tuple[list[tuple[int, int]], NDArray[np.float64], NDArray[np.float64], float, float]:
    """The bands (row ranges), each band's x shift and y shift, and the wrapped graph's width
    and height (layout units)."""
    bands = _bands_of(levels, n_bands)
    half = geometry.half_sizes
    pos = geometry.positions
    row = _row_of(pos[:, 1], levels)
    pad_y = float(half[:, 1].max())
    dx = np.zeros(len(bands))
    dy = np.zeros(len(bands))
    cursor, height = 0.0, 0.0
    points = geometry.edge_points
    point_row = _row_of(points[:, 1], levels) if len(points) else np.zeros(0, np.intp)
    for b, (a, z) in enumerate(bands):
        inside = (row >= a) & (row < z)
        lo = float((pos[inside, 0] - half[inside, 0]).min())
        hi = float((pos[inside, 0] + half[inside, 0]).max())
        on = (point_row >= a) & (point_row < z)
        if on.any():
            lo = min(lo, float(points[on, 0].min()))
            hi = max(hi, float(points[on, 0].max()))
        dx[b] = cursor - lo
        dy[b] = levels[0] - levels[a]
        cursor += hi - lo + GAP
        # the band's rows, and the half row above and below that its edges in and out take
        height = max(height, float(levels[z - 1] - levels[a]) + 2 * (pad_y + TURN))
    return bands, dx, dy, cursor - GAP, height


def _row_of(y: NDArray[np.float64], levels: NDArray[np.float64]) -> NDArray[np.intp]:
    """The row nearest each y (rows at ``levels``, sorted)."""
    if len(levels) == 1:
        return np.zeros(len(y), np.intp)
    cuts = (levels[1:] + levels[:-1]) / 2
    return np.searchsorted(cuts, y).astype(np.intp)


def wrap_rows(
    geometry: SceneGeometry,
    edges: NDArray[np.intp],
    aspect: float,
    enough: float = math.inf,
) -> SceneGeometry | None:
    """``geometry`` with its rows wrapped into the number of side-by-side bands that draws it
    biggest in a view ``aspect`` (width / height) wide, or the fewest that draw it at the
    scale ``enough`` (the fitted height of one layout unit over the view's height: where its
    labels read, bigger is no better); None when one band is as good (within
    :data:`MIN_GAIN`) or already draws it at ``enough``, or the graph has module boxes (their
    boxes are laid out in place) or more than :data:`MAX_WRAPPED_NODES` nodes. ``edges``:
    (n, 2) node indexes, for the arrow heads."""
    n = geometry.n_nodes
    if n < 2 or n > MAX_WRAPPED_NODES or geometry.modules.any() or geometry.frames:
        return None  # a module's box or frame is drawn around one column's rows
    if not aspect > 0:
        return None
    levels = np.unique(np.round(geometry.positions[:, 1], 6))
    if len(levels) < 4:
        return None
    x0, y0, x1, y1 = geometry.bounds()

    def scale(width: float, height: float) -> float:
        return min(aspect / max(width, 1e-9), 1.0 / max(height, 1e-9))

    best, best_scale = 1, scale(x1 - x0, y1 - y0)
    plain = best_scale
    for n_bands in range(2, min(MAX_BANDS, len(levels) // 2) + 1):
        if best_scale >= enough:
            break
        if len(_bands_of(levels, n_bands)) != n_bands:
            continue
        *_, width, height = _plan(geometry, levels, n_bands)
        s = scale(width, height)
        if s > best_scale * 1.0001:
            best, best_scale = n_bands, s
    if best == 1 or best_scale < MIN_GAIN * plain:
        return None
    return _wrapped(geometry, edges, levels, best)


def _wrapped(
    geometry: SceneGeometry, edges: NDArray[np.intp], levels: NDArray[np.float64], n_bands: int
) -> SceneGeometry:
    bands, dx, dy, _, _ = _plan(geometry, levels, n_bands)
    band_of_row = np.zeros(len(levels), np.intp)
    for b, (a, z) in enumerate(bands):
        band_of_row[a:z] = b
    shift = np.stack([dx, dy], axis=1)
    pos = geometry.positions
    positions = pos + shift[band_of_row[_row_of(pos[:, 1], levels)]]
    pad_y = float(geometry.half_sizes[:, 1].max())
    # each band's right edge (wrapped), where the lane to the next band runs
    right = np.zeros(len(bands))
    rows = _row_of(pos[:, 1], levels)
    half = geometry.half_sizes
    for b, (a, z) in enumerate(bands):
        inside = (rows >= a) & (rows < z)
        right[b] = float((positions[inside, 0] + half[inside, 0]).max())
    points = geometry.edge_points
    offsets = geometry.edge_offsets
    paths = [points[offsets[e] : offsets[e + 1]] for e in range(geometry.n_edges)]
    lanes = _lanes(paths, levels, bands, band_of_row, pad_y)
    chunks = [
        _wrapped_path(path, levels, bands, band_of_row, shift, right, pad_y, lanes.get(e, {}))
        for e, path in enumerate(paths)
    ]
    lengths = np.fromiter((len(c) for c in chunks), dtype=np.intp, count=len(chunks))
    wrapped = dataclasses.replace(
        geometry,
        positions=positions,
        edge_points=np.concatenate(chunks) if chunks else np.zeros((0, 2)),
        edge_offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp),
        arrow_points=np.zeros((0, 2)),
    )
    wrapped.arrow_points = arrow_heads(wrapped, np.asarray(edges, np.intp).reshape(-1, 2))
    return wrapped


def _crossings(path: NDArray[np.float64], levels, bands, band_of_row, pad_y):
    """Where ``path`` crosses each band boundary: ``(boundary, x)`` in order, x its own
    (unwrapped) x where it leaves the band above."""
    if len(path) == 0:
        return []
    band = band_of_row[_row_of(path[:, 1], levels)]
    found = []
    for i in range(1, len(path)):
        p, q = path[i - 1], path[i]
        for b in range(int(band[i - 1]), int(band[i])):
            below = levels[bands[b][1] - 1] + pad_y + TURN
            t = 0.5 if q[1] == p[1] else float(np.clip((below - p[1]) / (q[1] - p[1]), 0, 1))
            found.append((b, float(p[0] + t * (q[0] - p[0]))))
    return found


def _lanes(paths, levels, bands, band_of_row, pad_y) -> dict[int, dict[int, tuple[int, int]]]:
    """Per edge, per boundary it crosses: ``(k, m)``, its lane among the m edges crossing
    there. Each edge gets a lane of its own (two inputs of one Function taken into the next
    band along one line read as one edge): the rightmost leaves shallowest by the nearest
    lane, so the lanes nest without crossing."""
    by_boundary: dict[int, list[tuple[float, int]]] = {}
    for e, path in enumerate(paths):
        for b, x in _crossings(path, levels, bands, band_of_row, pad_y):
            by_boundary.setdefault(b, []).append((x, e))
    lanes: dict[int, dict[int, tuple[int, int]]] = {}
    for b, crossing in by_boundary.items():
        crossing.sort(key=lambda c: (-c[0], c[1]))
        for k, (_, e) in enumerate(crossing):
            lanes.setdefault(e, {})[b] = (k, len(crossing))
    return lanes


def _wrapped_path(
    path: NDArray[np.float64],
    levels: NDArray[np.float64],
    bands: list[tuple[int, int]],
    band_of_row: NDArray[np.intp],
    shift: NDArray[np.float64],
    right: NDArray[np.float64],
    pad_y: float,
    lanes: dict[int, tuple[int, int]],
) -> NDArray[np.float64]:
    """An edge's polyline in the wrapped graph: each point moved with its band; where the
    edge passes from one band into the next, it leaves under the first band's last row, goes
    up its own lane (``lanes``: boundary -> (k, m)) right of that band and enters above the
    next band's first row."""
    if len(path) == 0:
        return path.copy()
    band = band_of_row[_row_of(path[:, 1], levels)]
    out = [path[0] + shift[band[0]]]
    for i in range(1, len(path)):
        p, q = path[i - 1], path[i]
        for b in range(int(band[i - 1]), int(band[i])):  # each band boundary crossed, in order
            k, m = lanes.get(b, (0, 1))
            step = TURN / max(m, 1)  # the m edges' turns share the half row under the band
            below = levels[bands[b][1] - 1] + pad_y + TURN * 0.5 + k * step
            above = levels[bands[b + 1][0]] - pad_y - TURN * 0.5 - k * step
            t = 0.5 if q[1] == p[1] else float(np.clip((below - p[1]) / (q[1] - p[1]), 0, 1))
            x = p[0] + t * (q[0] - p[0])
            lane = right[b] + GAP * (k + 1) / (m + 1)
            out += [
                np.array([x, below]) + shift[b],
                np.array([lane, below + shift[b][1]]),
                np.array([lane, above + shift[b + 1][1]]),
                np.array([x, above]) + shift[b + 1],
            ]
        out.append(q + shift[band[i]])
    return np.asarray(out, dtype=np.float64)
