"""Where the graph is drawn: node boxes, edge polylines (parallel edges bowed apart) and
arrow heads, in layout units."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "FUNCTION_SIZE",
    "MODULE_SIZE",
    "VARIABLE_SIZE",
    "SceneGeometry",
    "ScopeFrame",
    "arrow_heads",
    "separate_parallel_edges",
]

VARIABLE_SIZE = (1.0, 0.45)  # width, height in layout units (one layout column is 1.0 wide)
FUNCTION_SIZE = (0.9, 0.4)
MODULE_SIZE = (1.8, 0.6)  # a collapsed scope's box (viewer.model.scopes.relayout lays them out)


@dataclass(frozen=True)
class ScopeFrame:
    """A module drawn open: a rounded rectangle behind its nodes, titled ``b0 · Block``.

    ``rect`` is (x_min, y_min, x_max, y_max) in layout units; its top ``title_height`` is the
    title's strip. ``depth`` is the scope's (1: a top scope): an open scope's ancestors are
    all open, so a frame of depth d lies inside d - 1 others."""

    scope_id: int
    path: str
    title: str
    depth: int
    rect: tuple[float, float, float, float]
    title_height: float


@dataclass
class SceneGeometry:
    """Where things are, in layout units; fixed for a graph (the view renders it once)."""

    positions: NDArray[np.float64]
    is_function: NDArray[np.bool_]
    edge_points: NDArray[np.float64]
    edge_offsets: NDArray[np.intp]
    arrow_points: NDArray[np.float64]  # three points (a closed triangle) per edge
    variable_size: tuple[float, float] = VARIABLE_SIZE
    function_size: tuple[float, float] = FUNCTION_SIZE
    # module boxes (collapsed scopes, folded repeats); None: the graph has none
    is_module: NDArray[np.bool_] | None = None
    module_size: tuple[float, float] = MODULE_SIZE
    # history the program cut before this graph (unchain_backward), drawn greyed: per node,
    # and per edge (an edge with a detached end); None: the graph has none
    detached: NDArray[np.bool_] | None = None
    detached_edges: NDArray[np.bool_] | None = None
    # the frames of the scopes drawn open, outermost first (a frame after its parent)
    frames: tuple[ScopeFrame, ...] = ()

    @property
    def modules(self) -> NDArray[np.bool_]:
        """(n,) which nodes are module boxes (all False without scopes)."""
        if self.is_module is None or len(self.is_module) != len(self.positions):
            return np.zeros(len(self.positions), dtype=bool)
        return self.is_module

    @property
    def n_nodes(self) -> int:
        return len(self.positions)

    @property
    def n_edges(self) -> int:
        return max(0, len(self.edge_offsets) - 1)

    @property
    def half_sizes(self) -> NDArray[np.float64]:
        """(n, 2): half width and half height of each node's box."""
        var = np.asarray(self.variable_size) / 2
        fun = np.asarray(self.function_size) / 2
        half = np.where(self.is_function[:, None], fun, var)
        if self.is_module is not None and self.is_module.any():
            half = np.where(self.modules[:, None], np.asarray(self.module_size) / 2, half)
        return half

    def bounds(self) -> tuple[float, float, float, float]:
        """(x_min, y_min, x_max, y_max) around every node box; for fit-to-view."""
        if self.n_nodes == 0:
            return (-1.0, -1.0, 1.0, 1.0)
        half = self.half_sizes
        lo = (self.positions - half).min(axis=0)
        hi = (self.positions + half).max(axis=0)
        for frame in self.frames:
            lo = np.minimum(lo, frame.rect[:2])
            hi = np.maximum(hi, frame.rect[2:])
        return (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1]))


def separate_parallel_edges(
    edges: NDArray[np.intp], points: NDArray[np.float64], offsets: NDArray[np.intp]
) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Spread edges that join the same two nodes (``x + x``) so each slot has its own line:
    each is bowed sideways, the endpoints stay at the node centres."""
    points = points.reshape(-1, 2)
    offsets = np.asarray(offsets, dtype=np.intp)
    if len(edges) < 2:
        return points.copy(), offsets
    _, group, counts = np.unique(edges, axis=0, return_inverse=True, return_counts=True)
    group = group.reshape(-1)
    parallel = np.flatnonzero(counts[group] > 1)
    if len(parallel) == 0:
        return points.copy(), offsets
    chunks = [points[offsets[e] : offsets[e + 1]] for e in range(len(edges))]
    rank: dict[int, int] = {}
    spread = 0.3
    for e in parallel:
        g = int(group[e])
        k = rank.get(g, 0)
        rank[g] = k + 1
        shift = (k - (counts[g] - 1) / 2) * spread
        path = chunks[e]
        if len(path) < 2:
            continue
        direction = path[-1] - path[0]
        norm = float(np.hypot(*direction)) or 1.0
        normal = np.array([-direction[1], direction[0]]) / norm
        if len(path) == 2:
            path = np.vstack([path[0], (path[0] + path[1]) / 2, path[1]])
        t = np.linspace(0.0, 1.0, len(path))
        chunks[e] = path + np.sin(np.pi * t)[:, None] * normal * shift
    lengths = np.fromiter((len(c) for c in chunks), dtype=np.intp, count=len(chunks))
    new_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    return np.concatenate(chunks) if chunks else np.zeros((0, 2)), new_offsets


def arrow_heads(geometry: SceneGeometry, edges: NDArray[np.intp]) -> NDArray[np.float64]:
    """A small triangle per edge, its tip where the last segment enters the target's box."""
    n_edges = geometry.n_edges
    if n_edges == 0:
        return np.zeros((0, 2))
    points = geometry.edge_points
    offsets = geometry.edge_offsets
    targets = np.asarray(edges[:, 1], dtype=np.intp)
    end = geometry.positions[targets]
    has_segment = (offsets[1:] - offsets[:-1]) >= 2
    previous = np.where(
        has_segment[:, None],
        points[np.maximum(offsets[1:] - 2, 0)],
        end - np.array([0.0, 1.0]),
    )
    direction = end - previous
    norm = np.hypot(direction[:, 0], direction[:, 1])
    direction = direction / np.where(norm > 0, norm, 1.0)[:, None]
    direction[norm == 0] = (0.0, 1.0)
    half = geometry.half_sizes[targets]
    with np.errstate(divide="ignore"):
        ax, ay = np.abs(direction[:, 0]), np.abs(direction[:, 1])
        scale = np.minimum(half[:, 0] / ax, half[:, 1] / ay)
    tips = end - direction * scale[:, None]
    size = 0.09
    normal = np.stack([-direction[:, 1], direction[:, 0]], axis=1)
    base = tips - direction * size * 1.6
    triangles = np.stack([tips, base + normal * size, base - normal * size], axis=1)
    return triangles.reshape(-1, 2)
