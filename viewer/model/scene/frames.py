"""The frames of the scopes drawn open: where a module's nodes begin and end once it is
expanded. Each is the rectangle around its nodes and the frames nested in it, padded, with a
strip on top for its title, so nested frames nest."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from viewer.model.layout.arrays import ranges
from viewer.model.layout.clusters import cluster_tree, edge_point_cluster
from viewer.model.scene.geometry import ScopeFrame
from viewer.model.scopes.tree import ScopeModel, VisibleGraph

__all__ = ["FRAME_PAD", "FRAME_TITLE_HEIGHT", "frame_title", "scope_frames"]

FRAME_PAD = 0.08  # layout units between a frame and what it holds
FRAME_TITLE_HEIGHT = 0.24  # the title's strip, above the pad


def frame_title(name: str, cls: str) -> str:
    """'b0 · Block'; the name alone when there is no class or it is the class ('MLP')."""
    return f"{name} \N{MIDDLE DOT} {cls}" if cls and cls != name else name


def scope_frames(
    positions: NDArray[np.float64],
    half_sizes: NDArray[np.float64],
    vis: VisibleGraph,
    edge_points: NDArray[np.float64] | None = None,
    edge_offsets: NDArray[np.int64] | None = None,
) -> tuple[ScopeFrame, ...]:
    """A frame per open scope that holds a node of ``vis`` (laid out at ``positions``, boxes
    ``half_sizes``), outermost first. With the edges' polylines (``edge_points`` and
    ``edge_offsets``, one polyline per edge of ``vis``), a frame also takes in the bends of
    the edges that run inside it (as the layout placed them: see ``_bends``)."""
    model = vis.model
    owner = model.frame_owners(vis)
    held = owner > 0
    if not held.any():
        return ()
    lo = np.full((len(model.rows), 2), np.inf)
    hi = np.full((len(model.rows), 2), -np.inf)
    np.minimum.at(lo, owner[held], (positions - half_sizes)[held])
    np.maximum.at(hi, owner[held], (positions + half_sizes)[held])
    frames = _frames(model, lo.copy(), hi.copy())
    if edge_points is None or edge_offsets is None or not frames:
        return frames
    at, points = _bends(vis, owner, frames, edge_points, edge_offsets)
    if not len(at):
        return frames
    np.minimum.at(lo, at, points)
    np.maximum.at(hi, at, points)
    return _frames(model, lo, hi)


def _bends(
    vis: VisibleGraph,
    owner: NDArray[np.int64],
    frames: tuple[ScopeFrame, ...],
    edge_points: NDArray[np.float64],
    edge_offsets: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The inner points of the edges' polylines that a frame must hold, and the scope of
    each: a point of an edge is inside the frames around its target that begin above it (it
    enters a frame at its top), else those around its source that end below it, else the
    innermost one around both ends, as :func:`viewer.model.layout.clusters.cluster_of_items`
    places the layout's virtual nodes."""
    tree = cluster_tree(vis.model.parent)
    offsets = np.asarray(edge_offsets, dtype=np.int64)
    count = offsets[1:] - offsets[:-1]
    inner = np.maximum(count - 2, 0)
    if tree is None or not inner.any() or len(count) != len(vis.edges):
        return np.zeros(0, np.int64), np.zeros((0, 2))
    edge = np.repeat(np.arange(len(count)), inner)
    k = ranges(offsets[:-1] + 1, inner)
    points = np.asarray(edge_points, dtype=np.float64)[k]
    top = np.full(len(tree.parent), np.inf)
    bottom = np.full(len(tree.parent), -np.inf)
    for f in frames:
        top[f.scope_id], bottom[f.scope_id] = f.rect[1], f.rect[3]
    cu, cv = owner[vis.edges[edge, 0]], owner[vis.edges[edge, 1]]
    chosen = edge_point_cluster(tree, cu, cv, points[:, 1], top, bottom)
    keep = chosen > 0
    return chosen[keep], points[keep]


def _frames(
    model: ScopeModel, lo: NDArray[np.float64], hi: NDArray[np.float64]
) -> tuple[ScopeFrame, ...]:
    """The frames of the open scopes around what each holds (``lo``, ``hi``: per scope, the
    corners of its own nodes' boxes), padded, titled, nested."""
    drawn = np.flatnonzero(model.drawn_open())
    frames: list[ScopeFrame] = []
    # innermost first, so each frame is final before its parent takes it in
    for s in drawn[np.argsort(-model.depth[drawn], kind="stable")].tolist():
        if not np.isfinite(lo[s, 0]):
            continue  # nothing of it is shown (its nodes all outside this graph)
        x0 = lo[s, 0] - FRAME_PAD
        y0 = lo[s, 1] - FRAME_PAD - FRAME_TITLE_HEIGHT
        x1, y1 = hi[s, 0] + FRAME_PAD, hi[s, 1] + FRAME_PAD
        row = model.rows[s]
        frames.append(
            ScopeFrame(
                scope_id=s,
                path=row.path,
                title=frame_title(row.name, row.cls),
                depth=int(model.depth[s]),
                rect=(float(x0), float(y0), float(x1), float(y1)),
                title_height=FRAME_TITLE_HEIGHT,
            )
        )
        p = int(model.parent[s])
        if p > 0:
            lo[p] = np.minimum(lo[p], (x0, y0))
            hi[p] = np.maximum(hi[p], (x1, y1))
    frames.sort(key=lambda f: (f.depth, f.scope_id))
    return tuple(frames)
