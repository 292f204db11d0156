"""Which node or edge of a graph is at a point (layout units): the view's clicks and hovers."""

from __future__ import annotations

import math

import numpy as np

from viewer.model.scene.geometry import SceneGeometry

__all__ = ["edge_at", "node_at"]


def node_at(geometry: SceneGeometry, x: float, y: float) -> int:
    """Index of the node whose box contains (x, y), the nearest centre if several; -1."""
    g = geometry
    if g.n_nodes == 0:
        return -1
    d = np.abs(g.positions - np.array([x, y], dtype=np.float64))
    inside = np.all(d <= g.half_sizes, axis=1)
    if not inside.any():
        return -1
    candidates = np.flatnonzero(inside)
    dist = np.hypot(d[candidates, 0], d[candidates, 1])
    return int(candidates[np.argmin(dist)])


def edge_at(geometry: SceneGeometry, x: float, y: float, tolerance: float = 0.08) -> int:
    """Index of the edge passing within ``tolerance`` of (x, y), the nearest; -1."""
    g = geometry
    if g.n_edges == 0 or len(g.edge_points) < 2:
        return -1
    points = g.edge_points
    starts = points[:-1]
    ends = points[1:]
    segment_edge = np.searchsorted(g.edge_offsets, np.arange(len(points) - 1), side="right") - 1
    valid = np.ones(len(starts), dtype=bool)
    valid[g.edge_offsets[1:-1] - 1] = False  # no segment from one edge into the next
    valid[len(starts) :] = False
    p = np.array([x, y], dtype=np.float64)
    seg = ends - starts
    length2 = np.einsum("ij,ij->i", seg, seg)
    t = np.clip(np.einsum("ij,ij->i", p - starts, seg) / np.where(length2 > 0, length2, 1.0), 0, 1)
    nearest = starts + seg * t[:, None]
    dist = np.hypot(*(nearest - p).T)
    dist[~valid] = np.inf
    best = int(np.argmin(dist))
    if not math.isfinite(dist[best]) or dist[best] > tolerance:
        return -1
    return int(segment_edge[best])
