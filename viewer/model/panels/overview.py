"""The overview (minimap) of the graph, as arrays: where the whole graph lands in a small
pixel box, and the graph rasterised there (node boxes and, when there are not too many, edges).

Everything is numpy over the scene's arrays, a fixed number of passes whatever the number of
nodes: a 100 000-node graph rasterises in milliseconds. The Qt side colours the masks and
draws the viewport rectangle and the current step's nodes on top.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["MAX_EDGE_SAMPLES", "OverviewMap", "overview_map", "overview_size", "rasterise"]

# Edges are drawn by sampling each segment about once per pixel; past this many samples (a
# huge graph seen in 200 pixels is a grey cloud anyway) they are left out.
MAX_EDGE_SAMPLES = 2_000_000


@dataclass(frozen=True)
class OverviewMap:
    """Layout units to pixels of the overview: ``px = (x - x0) * scale + left``; the graph's
    bounds are centred in a ``width`` x ``height`` box, a ``margin`` around them."""

    x0: float
    y0: float
    scale: float
    left: float
    top: float
    width: int
    height: int

    def to_pixels(self, x: NDArray | float, y: NDArray | float) -> tuple:
        return (
            np.subtract(x, self.x0) * self.scale + self.left,
            np.subtract(y, self.y0) * self.scale + self.top,
        )

    def to_layout(self, px: float, py: float) -> tuple[float, float]:
        scale = self.scale if self.scale > 0 else 1.0
        return ((px - self.left) / scale + self.x0, (py - self.top) / scale + self.y0)


def overview_size(
    bounds: tuple[float, float, float, float], longest: int = 200, shortest: int = 64
) -> tuple[int, int]:
    """The overview's pixel size for a graph: its longer side ``longest``, the other in the
    graph's proportion but at least ``shortest`` (a chain is not a 200 x 3 sliver)."""
    w = max(bounds[2] - bounds[0], 1e-9)
    h = max(bounds[3] - bounds[1], 1e-9)
    if w >= h:
        return longest, int(np.clip(round(longest * h / w), shortest, longest))
    return int(np.clip(round(longest * w / h), shortest, longest)), longest


def overview_map(
    bounds: tuple[float, float, float, float], width: int, height: int, margin: float = 4.0
) -> OverviewMap:
    """Fit ``bounds`` (x0, y0, x1, y1) in ``width`` x ``height`` pixels, one scale for both
    axes (the view keeps the aspect too), centred."""
    x0, y0, x1, y1 = bounds
    w = max(x1 - x0, 1e-9)
    h = max(y1 - y0, 1e-9)
    inner_w = max(width - 2 * margin, 1.0)
    inner_h = max(height - 2 * margin, 1.0)
    scale = min(inner_w / w, inner_h / h)
    left = (width - w * scale) / 2
    top = (height - h * scale) / 2
    return OverviewMap(float(x0), float(y0), float(scale), left, top, int(width), int(height))


def rasterise(
    omap: OverviewMap,
    positions: NDArray[np.floating],
    half_sizes: NDArray[np.floating],
    edge_points: NDArray[np.floating] | None = None,
    edge_offsets: NDArray[np.integer] | None = None,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """(nodes, edges): two ``(height, width)`` masks of the pixels the node boxes (each at
    least one pixel) and the edge polylines cover."""
    h, w = omap.height, omap.width
    nodes = np.zeros((h, w), dtype=bool)
    edges = np.zeros((h, w), dtype=bool)
    positions = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
    if len(positions) and w > 0 and h > 0:
        half = np.asarray(half_sizes, dtype=np.float64).reshape(-1, 2)
        left, top = omap.to_pixels(positions[:, 0] - half[:, 0], positions[:, 1] - half[:, 1])
        right, bottom = omap.to_pixels(positions[:, 0] + half[:, 0], positions[:, 1] + half[:, 1])
        c0 = np.clip(np.floor(left), 0, w - 1).astype(np.intp)
        r0 = np.clip(np.floor(top), 0, h - 1).astype(np.intp)
        c1 = np.clip(np.maximum(np.ceil(right), c0 + 1), 1, w).astype(np.intp)
        r1 = np.clip(np.maximum(np.ceil(bottom), r0 + 1), 1, h).astype(np.intp)
        # Boxes as a 2-D difference array: +1 at the top left, -1 past each side, +1 past the
        # far corner; the running sums along both axes count the boxes over each pixel.
        size = (h + 1) * (w + 1)
        corners = [
            np.bincount(r * (w + 1) + c, minlength=size)
            for r, c in ((r0, c0), (r0, c1), (r1, c0), (r1, c1))
        ]
        diff = (corners[0] - corners[1] - corners[2] + corners[3]).reshape(h + 1, w + 1)
        nodes = diff.cumsum(axis=0).cumsum(axis=1)[:h, :w] > 0
    if edge_points is not None and edge_offsets is not None and len(edge_points) > 1:
        edges = _edge_mask(omap, np.asarray(edge_points, float), np.asarray(edge_offsets))
    return nodes, edges


def _edge_mask(
    omap: OverviewMap, points: NDArray[np.float64], offsets: NDArray[np.integer]
) -> NDArray[np.bool_]:
    h, w = omap.height, omap.width
    mask = np.zeros((h, w), dtype=bool)
    px, py = omap.to_pixels(points[:, 0], points[:, 1])
    # segment i joins point i and i + 1, except across the end of a polyline
    joins = np.ones(len(points) - 1, dtype=bool)
    ends = np.asarray(offsets[1:-1], dtype=np.intp) - 1
    joins[ends[(ends >= 0) & (ends < len(joins))]] = False
    start = np.flatnonzero(joins)
    if len(start) == 0:
        return mask
    dx, dy = px[start + 1] - px[start], py[start + 1] - py[start]
    samples = np.ceil(np.hypot(dx, dy)).astype(np.int64) + 1
    total = int(samples.sum())
    if total > MAX_EDGE_SAMPLES:
        return mask
    seg = np.repeat(np.arange(len(start)), samples)
    first = np.concatenate([[0], np.cumsum(samples)[:-1]])
    t = (np.arange(total) - first[seg]) / np.maximum(samples[seg] - 1, 1)
    cols = np.floor(px[start][seg] + t * dx[seg]).astype(np.intp)
    rows = np.floor(py[start][seg] + t * dy[seg]).astype(np.intp)
    inside = (cols >= 0) & (cols < w) & (rows >= 0) & (rows < h)
    mask[rows[inside], cols[inside]] = True
    return mask
