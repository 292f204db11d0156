"""Layouts of a graph with module boxes, and how one changes when a box opens or closes.

:func:`layout_visible` lays a :class:`~viewer.model.scopes.tree.VisibleGraph` out from scratch.
:func:`relayout` moves from the layout of one collapse state to the next one with as little
movement as it can: when one box opens, its contents are laid out on their own and spliced in
where the box was (what lies below moves down by their height, what sits beside the box in its
row moves aside by their width); when one box closes, it takes the place of its contents and
the rows they leave empty close up. Any other change (a new depth, everything expanded) is
laid out afresh. Everything is numpy over the visible nodes and edges.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from autodiff.trace import TraceReader
from viewer.model.layout.arrays import ranges
from viewer.model.layout.clusters import Clusters
from viewer.model.layout.compute import WIDTH_SAMPLE, GraphLayout, variable_box_width
from viewer.model.layout.layered import layered_layout
from viewer.model.scene.frames import FRAME_PAD, FRAME_TITLE_HEIGHT, scope_frames
from viewer.model.scene.geometry import FUNCTION_SIZE, MODULE_SIZE, VARIABLE_SIZE
from viewer.model.scopes.tree import VisibleGraph

__all__ = ["MODULE_SIZE", "layout_visible", "relayout"]

_ROW = 1.0  # layer gap of layered_layout's default
_EPS = 1e-6


def _widths(vis: VisibleGraph, variable_width: float, module_width: float) -> NDArray[np.float64]:
    functions = vis.model.function_width
    return np.where(
        vis.is_module, module_width, np.where(vis.is_function, functions, variable_width)
    )


def layout_visible(trace: TraceReader, vis: VisibleGraph) -> GraphLayout:
    """A fresh layered layout of the visible graph."""
    plain_variables = vis.node_ids[~vis.is_function & ~vis.is_module][:WIDTH_SAMPLE]
    width = variable_box_width(trace.node(int(n)) for n in plain_variables)
    module_width = max(MODULE_SIZE[0], width)
    return _fresh(vis, width, module_width)


def _clusters(vis: VisibleGraph) -> Clusters | None:
    """The open scopes as the layout's clusters: each node in the frame it is drawn in."""
    owner = vis.model.frame_owners(vis)
    if not (owner > 0).any():
        return None
    half = np.where(
        vis.is_module,
        MODULE_SIZE[1],
        np.where(vis.is_function, FUNCTION_SIZE[1], VARIABLE_SIZE[1]),
    )
    return Clusters(owner, vis.model.parent, half / 2, FRAME_PAD, FRAME_TITLE_HEIGHT)


def _fresh(vis: VisibleGraph, width: float, module_width: float) -> GraphLayout:
    result = layered_layout(
        vis.n_nodes,
        vis.edges,
        node_width=_widths(vis, width, module_width),
        clusters=_clusters(vis),
    )
    has_edges = len(vis.edges) > 0
    return GraphLayout(
        node_ids=vis.node_ids,
        positions=np.asarray(result.positions, dtype=np.float64).reshape(-1, 2),
        edges=vis.edges,
        edge_slots=vis.edge_slots,
        edge_points=result.edge_points if has_edges else np.zeros((0, 2)),
        edge_offsets=np.asarray(result.edge_offsets if has_edges else [0], dtype=np.intp),
        layers=np.asarray(result.layers, dtype=np.intp),
        variable_width=width,
        module_width=module_width,
        function_width=vis.model.function_width,
    )


def relayout(old: GraphLayout, old_vis: VisibleGraph, vis: VisibleGraph) -> GraphLayout:
    """The layout of ``vis`` made from ``old`` (the layout of ``old_vis``)."""
    width, module_width = old.variable_width, old.module_width
    match = _match(old_vis.keys, vis.keys)  # new index -> old index, -1 for a new node
    kept = np.zeros(old_vis.n_nodes, dtype=bool)
    kept[match[match >= 0]] = True
    gone = np.flatnonzero(~kept)
    added = np.flatnonzero(match < 0)
    moved = None
    if len(gone) == 1 and old_vis.is_module[gone[0]] and len(added):
        moved = _opened(old, vis, match, int(gone[0]), added, width, module_width)
    elif len(added) == 1 and vis.is_module[added[0]] and len(gone):
        moved = _closed(old, vis, match, int(added[0]), gone, width, module_width)
    elif len(gone) == 0 and len(added) == 0:
        moved = _rebuilt(old, vis, match, old.positions[match], None, None, width, module_width)
    # the small move keeps the picture the user knows, unless it would draw a frame over
    # a node or a frame outside it
    if moved is not None and _frames_clear(moved, vis):
        return moved
    return _fresh(vis, width, module_width)


def _frames_clear(layout: GraphLayout, vis: VisibleGraph) -> bool:
    """Whether no frame of the open scopes overlaps a node or a frame outside it (True for
    scopes too many or nested too deep to lay out as frames: nothing better is at hand)."""
    clusters = _clusters(vis)
    tree = None if clusters is None else clusters.tree()
    if clusters is None or tree is None:
        return True
    half = np.column_stack([_widths(vis, layout.variable_width, layout.module_width) / 2,
                            clusters.half_height])  # fmt: skip
    frames = scope_frames(layout.positions, half, vis)
    if not frames or len(frames) * (len(frames) + vis.n_nodes) > _MAX_CHECKED_PAIRS:
        return True
    ids = np.array([f.scope_id for f in frames])
    rects = np.array([f.rect for f in frames])
    depth = np.minimum(tree.depth[ids], tree.max_depth)

    # holds[f, c]: frame f is cluster c or around it
    def holds(inner: NDArray[np.int64]) -> NDArray[np.bool_]:
        return ids[:, None] == tree.anc[inner][:, depth].T

    lo, hi = layout.positions - half, layout.positions + half
    nodes = np.column_stack([lo, hi])
    if (_overlaps(rects, nodes) & ~holds(clusters.of_node)).any():
        return False
    nested = holds(ids)
    return not (_overlaps(rects, rects) & ~nested & ~nested.T).any()


_MAX_CHECKED_PAIRS = 20_000_000  # (frame, node or frame) pairs the check compares at most


def _overlaps(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.bool_]:
    """[i, j]: rectangles a[i] and b[j] (x0, y0, x1, y1) share more than an edge."""
    return (
        (a[:, None, 0] < b[None, :, 2])
        & (b[None, :, 0] < a[:, None, 2])
        & (a[:, None, 1] < b[None, :, 3])
        & (b[None, :, 1] < a[:, None, 3])
    )


def _match(old_keys: NDArray[np.int64], new_keys: NDArray[np.int64]) -> NDArray[np.intp]:
    order = np.argsort(old_keys, kind="stable")
    ordered = old_keys[order]
    if len(ordered) == 0:
        return np.full(len(new_keys), -1, dtype=np.intp)
    at = np.minimum(np.searchsorted(ordered, new_keys), len(ordered) - 1)
    return np.where(ordered[at] == new_keys, order[at], -1).astype(np.intp)


def _opened(
    old: GraphLayout,
    vis: VisibleGraph,
    match: NDArray[np.intp],
    box: int,
    added: NDArray[np.intp],
    width: float,
    module_width: float,
) -> GraphLayout:
    """Box ``box`` (an old index) opened into the ``added`` nodes (new indexes)."""
    xm, ym = old.positions[box]
    local = np.full(vis.n_nodes, -1, dtype=np.intp)
    local[added] = np.arange(len(added))
    u, v = vis.edges[:, 0], vis.edges[:, 1]
    inner = (local[u] >= 0) & (local[v] >= 0)
    widths = _widths(vis, width, module_width)[added]
    part = layered_layout(
        len(added), np.column_stack([local[u[inner]], local[v[inner]]]), node_width=widths
    )
    px = part.positions[:, 0]
    left, right = float((px - widths / 2).min()), float((px + widths / 2).max())
    centre = (left + right) / 2
    height = float(part.positions[:, 1].max()) if len(added) else 0.0
    aside = max(0.0, (right - left) / 2 - module_width / 2)

    def move(points: NDArray[np.float64]) -> NDArray[np.float64]:
        x, y = points[:, 0], points[:, 1]
        row = np.abs(y - ym) <= _EPS
        x = x + np.where(row & (x > xm), aside, 0.0) - np.where(row & (x < xm), aside, 0.0)
        y = y + np.where(y > ym + _EPS, height, 0.0)
        return np.column_stack([x, y])

    positions = np.zeros((vis.n_nodes, 2))
    stay = match >= 0
    positions[stay] = move(old.positions[match[stay]])
    offset = np.array([xm - centre, ym])
    positions[added] = part.positions + offset
    inner_edges = np.flatnonzero(inner)
    # an edge between the contents and the rest that spans rows runs down a channel on the
    # contents' right instead of straight through them
    channel = xm - centre + right + 0.35
    inner_points = (inner_edges, part, offset, channel, local >= 0)
    return _rebuilt(old, vis, match, positions, move, inner_points, width, module_width)


def _closed(
    old: GraphLayout,
    vis: VisibleGraph,
    match: NDArray[np.intp],
    box: int,
    gone: NDArray[np.intp],
    width: float,
    module_width: float,
) -> GraphLayout:
    """The ``gone`` nodes (old indexes) closed into box ``box`` (a new index)."""
    there = old.positions[gone]
    top, bottom = float(there[:, 1].min()), float(there[:, 1].max())
    positions = np.zeros((vis.n_nodes, 2))
    stay = match >= 0
    positions[stay] = old.positions[match[stay]]
    positions[box] = ((there[:, 0].min() + there[:, 0].max()) / 2, top)
    # the rows the contents leave empty close up (of nodes and of the edges that stay)
    reused = _old_edges(old, vis, match)
    ok = reused >= 0
    counts = old.edge_offsets[reused[ok] + 1] - old.edge_offsets[reused[ok]]
    kept_points = old.edge_points[ranges(old.edge_offsets[reused[ok]], counts)]
    rows = np.round(np.concatenate([positions[:, 1], kept_points[:, 1]]) / _ROW).astype(np.int64)
    lo, hi = round(top / _ROW), round(bottom / _ROW)
    empty = np.setdiff1d(np.arange(lo + 1, hi + 1), rows)

    def move(points: NDArray[np.float64]) -> NDArray[np.float64]:
        below = np.searchsorted(empty, np.round(points[:, 1] / _ROW).astype(np.int64))
        return np.column_stack([points[:, 0], points[:, 1] - below * _ROW])

    positions = move(positions) if len(empty) else positions
    return _rebuilt(
        old, vis, match, positions, move if len(empty) else None, None, width, module_width
    )


def _old_edges(old: GraphLayout, vis: VisibleGraph, match: NDArray[np.intp]) -> NDArray[np.intp]:
    """Per new edge: the old edge joining the same two kept nodes, -1 if none."""
    n_old = max(len(old.positions), 1)
    old_key = old.edges[:, 0].astype(np.int64) * n_old + old.edges[:, 1]
    order = np.argsort(old_key, kind="stable")
    ordered = old_key[order]
    mu, mv = match[vis.edges[:, 0]], match[vis.edges[:, 1]]
    both = (mu >= 0) & (mv >= 0)
    key = mu.astype(np.int64) * n_old + mv
    out = np.full(len(vis.edges), -1, dtype=np.intp)
    if len(ordered) == 0 or not both.any():
        return out
    at = np.minimum(np.searchsorted(ordered, key), len(ordered) - 1)
    hit = both & (ordered[at] == key)
    out[hit] = order[at[hit]]
    return out


def _rebuilt(
    old: GraphLayout,
    vis: VisibleGraph,
    match: NDArray[np.intp],
    positions: NDArray[np.float64],
    move,
    inner,
    width: float,
    module_width: float,
) -> GraphLayout:
    """A layout of ``vis`` at ``positions``: an edge that was there keeps its old polyline
    (through ``move``), the edges inside an opened box take the box's own layout (``inner``),
    any other edge is a straight line."""
    n_edges = len(vis.edges)
    reused = _old_edges(old, vis, match)
    counts = np.full(n_edges, 2, dtype=np.int64)
    ok = np.flatnonzero(reused >= 0)
    old_off = np.asarray(old.edge_offsets, dtype=np.int64)
    counts[ok] = old_off[reused[ok] + 1] - old_off[reused[ok]]
    local_edges = np.zeros(0, dtype=np.intp)
    routed = np.zeros(0, dtype=np.intp)
    if inner is not None:
        local_edges, part, offset, channel, is_new = inner
        part_off = np.asarray(part.edge_offsets, dtype=np.int64)
        counts[local_edges] = part_off[1:] - part_off[:-1]
        u, v = vis.edges[:, 0], vis.edges[:, 1]
        crossing = (is_new[u] != is_new[v]) & (reused < 0)
        long = np.abs(positions[v, 1] - positions[u, 1]) > 1.5 * _ROW
        routed = np.flatnonzero(crossing & long)
        counts[routed] = 4
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.intp)
    points = np.zeros((int(offsets[-1]), 2))
    if len(ok):
        source = old.edge_points[ranges(old_off[reused[ok]], counts[ok])]
        points[ranges(offsets[ok], counts[ok])] = move(source) if move is not None else source
    if len(local_edges):
        points[ranges(offsets[local_edges], counts[local_edges])] = part.edge_points + offset
    if len(routed):
        start, end = positions[vis.edges[routed, 0]], positions[vis.edges[routed, 1]]
        at = offsets[routed]
        points[at] = start
        points[at + 1] = np.column_stack([np.full(len(routed), channel), start[:, 1] + 0.5])
        points[at + 2] = np.column_stack([np.full(len(routed), channel), end[:, 1] - 0.5])
        points[at + 3] = end
    straight = np.ones(n_edges, dtype=bool)
    straight[ok] = False
    straight[local_edges] = False
    straight[routed] = False
    s = np.flatnonzero(straight)
    if len(s):
        points[offsets[s]] = positions[vis.edges[s, 0]]
        points[offsets[s] + 1] = positions[vis.edges[s, 1]]
    if len(ok):  # a kept edge's ends follow its nodes exactly
        points[offsets[ok]] = positions[vis.edges[ok, 0]]
        points[offsets[ok] + counts[ok] - 1] = positions[vis.edges[ok, 1]]
    return GraphLayout(
        node_ids=vis.node_ids,
        positions=positions,
        edges=vis.edges,
        edge_slots=vis.edge_slots,
        edge_points=points,
        edge_offsets=offsets,
        layers=np.round(positions[:, 1] / _ROW).astype(np.intp),
        variable_width=width,
        module_width=module_width,
        function_width=vis.model.function_width,
    )
