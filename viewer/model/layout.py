"""Layered (Sugiyama-style) layout of computation graphs, in numpy.

Inputs at the top, outputs at the bottom; ``y = layer * layer_gap`` grows downward. Four phases:

1. **Layering**: minimum total edge span (the network simplex of Gansner et al., as dot does),
   so a fresh parameter or constant sits just above the function that consumes it instead of
   at the top with a long edge, while an input shared by many layers stays above its first use.
   It starts from a longest-path layering improved by vectorised single-node moves, so few
   pivots remain; ``layers=`` replaces this phase with the caller's layering.
2. **Virtual nodes** on every edge that spans more than one layer, so long edges are routed
   around nodes and take part in crossing reduction.
3. **Ordering**: barycenter sweeps down and up (vectorised per layer; a node without
   neighbours on the side being swept keeps its slot; a layer is re-sorted only when it or its
   reference layer changed), the ordering with the fewest crossings is kept, then odd-even
   adjacent transpositions (vectorised over every other layer). Weakly connected components
   never interleave.
4. **Coordinates**: Brandes-Koepf style: four vertical alignments with a median neighbour,
   preferring a long edge, then a neighbour that continues a chain over a leaf (a parameter);
   each compacted, combined by their balanced median. A chain is a vertical line and long edges
   have vertical middles. When cheap, the candidate with the fewest crossings of straight
   node-to-node segments is chosen instead of the balanced one.

Very big graphs (beyond the ``_...`` limits below) get less effort so that time stays close to
linear: fewer sweeps and transpositions and no crossing counts, long edges leaving one node
share a trunk of virtual nodes, two alignments instead of four, and the simplex stops at a
work budget (its layering is valid at every step). Deterministic (ties broken by node index),
no recursion, numpy-vectorised where the work is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "Layout",
    "LayoutCancelled",
    "count_crossings",
    "layered_layout",
    "layout_graph",
]

Progress = Callable[[float], None]
ShouldCancel = Callable[[], bool]

_SELECT_LIMIT = 20_000  # straight-edge pieces up to which the x candidates are compared
_FULL_EFFORT = 15_000  # nodes (virtual included) up to which ordering runs at full effort
_TRUNKS_ABOVE = 150_000  # nodes (virtual included) above which long edges share trunks
_FOUR_ALIGNMENTS = 100_000  # nodes (virtual included) up to which x uses all four alignments
_SIMPLEX_WORK = 500  # per node: renumbering budget of the network simplex (huge graphs only)


class LayoutCancelled(Exception):
    """The layout was stopped because ``should_cancel()`` returned True."""


@dataclass
class Layout:
    """A layered layout of ``n`` nodes and the edges it was given.

    ``positions[i]`` is the centre of node ``i``; ``layers[i]`` its layer (0 at the top).
    Edge ``e`` (row ``e`` of ``edges``, duplicates included) is drawn along the polyline
    ``edge_points[edge_offsets[e]:edge_offsets[e + 1]]``, from its source's centre through one
    point per layer it crosses to its target's centre. Parallel edges share a polyline.
    """

    positions: NDArray[np.float64]
    layers: NDArray[np.int64]
    edges: NDArray[np.int64]
    edge_points: NDArray[np.float64]
    edge_offsets: NDArray[np.int64]
    order: NDArray[np.int64]  # rank of each node within its layer, virtual nodes included
    n_virtual: int = 0
    layer_crossings: int = 0  # crossings of the routed drawing; -1: too big to count cheaply
    stats: dict[str, float] = field(default_factory=dict)  # CPU seconds per phase

    @property
    def n_nodes(self) -> int:
        return len(self.positions)

    @property
    def n_layers(self) -> int:
        return int(self.layers.max()) + 1 if len(self.layers) else 0

    @property
    def edge_paths(self) -> list[NDArray[np.float64]]:
        """One (k, 2) polyline per edge, in the order of :attr:`edges`."""
        return np.split(self.edge_points, self.edge_offsets[1:-1]) if len(self.edges) else []

    def edge_path(self, e: int) -> NDArray[np.float64]:
        """The polyline of edge ``e``."""
        return self.edge_points[self.edge_offsets[e] : self.edge_offsets[e + 1]]

    def bounds(self, node_width: ArrayLike = 0.0) -> tuple[float, float, float, float]:
        """(x_min, y_min, x_max, y_max) of the node centres widened by ``node_width / 2``."""
        if self.n_nodes == 0:
            return (0.0, 0.0, 0.0, 0.0)
        half = np.broadcast_to(np.asarray(node_width, dtype=np.float64), (self.n_nodes,)) / 2
        x, y = self.positions[:, 0], self.positions[:, 1]
        return (float((x - half).min()), float(y.min()), float((x + half).max()), float(y.max()))


# =============================================================================================
# Public entry points
# =============================================================================================
def layered_layout(
    n_nodes: int,
    edges: ArrayLike,
    *,
    node_width: ArrayLike = 1.0,
    layer_gap: float = 1.0,
    node_gap: float = 0.5,
    layers: ArrayLike | None = None,
    sweeps: int | None = None,
    progress: Progress | None = None,
    should_cancel: ShouldCancel | None = None,
) -> Layout:
    """Lay out a DAG of ``n_nodes`` nodes top to bottom.

    ``edges``: (E, 2) ints, source -> target; duplicates (``x + x``) are laid out as one edge
    and kept in the output. ``node_width``: a scalar or one width per node; nodes in a layer are
    at least ``node_gap`` apart (virtual nodes have width 0 and keep ``node_gap / 2``).
    ``layers``: a layering to use instead of the minimum-span one; it must grow along every
    edge (for DeZero generations pass ``2 * generation + is_function``). ``sweeps``: barycenter
    passes (default: 24, fewer for very big graphs so the time stays near-linear).
    ``progress(fraction)`` is called between steps; ``should_cancel()`` is polled as often, and
    when it returns True :class:`LayoutCancelled` is raised. Raises ValueError for a cycle, a
    self-loop or an endpoint out of range.
    """
    ticker = _Ticker(progress, should_cancel)
    n = int(n_nodes)
    if n < 0:
        raise ValueError(f"n_nodes must be >= 0, got {n}")
    all_edges, src, dst, edge_to_unique = _unique_edges(n, edges)
    widths = np.asarray(node_width, dtype=np.float64).reshape(-1)
    if widths.size not in (1, n):
        raise ValueError(f"node_width has {widths.size} entries for {n} nodes")
    widths = np.broadcast_to(widths, (n,)).copy()
    if n == 0:
        ticker.tick(1.0)
        return _empty_layout(all_edges)
    clock = [time.process_time()]
    stats: dict[str, float] = {}

    def phase_done(name: str) -> None:
        now = time.process_time()
        stats[f"{name}_s"] = now - clock[0]
        clock[0] = now

    comp = _components(n, src, dst)
    if layers is None:
        layer = _min_span_layers(n, src, dst, comp, ticker)
    else:
        layer = _checked_layers(n, src, dst, layers)
    ticker.tick(0.2)
    phase_done("layering")

    plain_total = n + int((layer[dst] - layer[src] - 1).sum())
    graph = _LayeredGraph.build(n, layer, src, dst, comp, plain_total > _TRUNKS_ABOVE)
    ticker.tick(0.25)
    n_total = graph.n_total
    effort = min(1.0, _FULL_EFFORT / n_total)
    if sweeps is None:
        sweeps = max(4, round(24 * effort))
    pos, crossings = _order(graph, sweeps, max(2, round(12 * effort)), ticker)
    ticker.tick(0.8)
    phase_done("ordering")
    x = _assign_x(graph, pos, widths, node_gap, ticker)
    ticker.tick(0.97)

    x = x - (x[:n] - widths / 2).min()
    positions = np.column_stack([x[:n], layer * float(layer_gap)])
    points, offsets = _edge_polylines(graph, x, layer_gap, edge_to_unique)
    phase_done("coordinates")
    ticker.tick(1.0)
    return Layout(
        positions=positions,
        layers=layer,
        edges=all_edges,
        edge_points=points,
        edge_offsets=offsets,
        order=pos,
        n_virtual=n_total - n,
        layer_crossings=int(crossings),
        stats=stats,
    )


def layout_graph(
    g: nx.DiGraph | nx.MultiDiGraph,
    *,
    width_attr: str | None = None,
    **kwargs: Any,
) -> tuple[list[Hashable], Layout]:
    """Lay out a networkx DiGraph or MultiDiGraph; returns (node keys in ``g.nodes`` order,
    layout). Edge ``e`` of the layout is the ``e``-th edge of ``g.edges()`` (each parallel
    edge of a MultiDiGraph is there). ``width_attr``: node attribute holding the node's width
    (nodes without it get ``node_width``). Other keyword arguments go to
    :func:`layered_layout`."""
    keys = list(g.nodes)
    index = {k: i for i, k in enumerate(keys)}
    edges = np.array([(index[u], index[v]) for u, v in g.edges()], dtype=np.int64).reshape(-1, 2)
    if width_attr is not None:
        default = kwargs.pop("node_width", 1.0)
        kwargs["node_width"] = np.array(
            [float(g.nodes[k].get(width_attr, default)) for k in keys], dtype=np.float64
        )
    return keys, layered_layout(len(keys), edges, **kwargs)


def count_crossings(positions: ArrayLike, edges: ArrayLike) -> int:
    """Crossings between straight segments joining node centres (``positions`` (n, 2)).

    Two segments cross when each one's ends lie strictly on opposite sides of the other; a pair
    sharing an endpoint never counts, nor does a touch; a duplicate edge counts once per copy.
    This is the measure of the reference benchmark (``shared/bench/gen_dag.py``).
    """
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(e) < 2:
        return 0
    top_y = np.minimum(p[e[:, 0], 1], p[e[:, 1], 1])
    by_top = np.argsort(top_y, kind="stable")
    e, top_y = e[by_top], top_y[by_top]
    bottom_y = np.maximum(p[e[:, 0], 1], p[e[:, 1], 1])
    start, end = p[e[:, 0]], p[e[:, 1]]
    along = end - start
    tiny = 1e-9
    total = 0
    for i in range(len(e) - 1):
        # only segments that begin above this one's lower end can reach it
        stop = int(np.searchsorted(top_y, bottom_y[i] - tiny, side="left"))
        if stop <= i + 1:
            continue
        rest = slice(i + 1, stop)
        apart = ~((e[rest] == e[i, 0]) | (e[rest] == e[i, 1])).any(axis=1)
        sides_of_rest = _cross(along[i], start[rest] - start[i]) * _cross(
            along[i], end[rest] - start[i]
        )
        sides_of_this = _cross(along[rest], start[i] - start[rest]) * _cross(
            along[rest], end[i] - start[rest]
        )
        total += int(np.count_nonzero((sides_of_rest < -tiny) & (sides_of_this < -tiny) & apart))
    return total


def _cross(u: NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
    """z of the cross product of 2-vectors (broadcasting over leading axes)."""
    return u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]


# =============================================================================================
# Plumbing
# =============================================================================================
class _Ticker:
    """Reports progress and polls for cancellation."""

    def __init__(self, progress: Progress | None, should_cancel: ShouldCancel | None) -> None:
        self.progress, self.should_cancel = progress, should_cancel

    def tick(self, fraction: float | None = None) -> None:
        if self.should_cancel is not None and self.should_cancel():
            raise LayoutCancelled("layout cancelled")
        if fraction is not None and self.progress is not None:
            self.progress(float(min(max(fraction, 0.0), 1.0)))


def _empty_layout(all_edges: NDArray[np.int64]) -> Layout:
    return Layout(
        positions=np.zeros((0, 2)),
        layers=np.zeros(0, np.int64),
        edges=all_edges,
        edge_points=np.zeros((0, 2)),
        edge_offsets=np.zeros(1, np.int64),
        order=np.zeros(0, np.int64),
    )


def _unique_edges(
    n: int, edges: ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """(edges as given, unique sources, unique targets, unique index of each given edge)."""
    e = np.asarray(edges, dtype=np.int64)
    e = e.reshape(-1, 2) if e.size else np.zeros((0, 2), np.int64)
    if len(e):
        bad = np.flatnonzero((e < 0).any(1) | (e >= n).any(1))
        if len(bad):
            raise ValueError(
                f"edge {int(bad[0])} = {tuple(e[bad[0]].tolist())} has an endpoint outside "
                f"0..{n - 1}; edges must index the {n} nodes"
            )
        loops = np.flatnonzero(e[:, 0] == e[:, 1])
        if len(loops):
            raise ValueError(
                f"edge {int(loops[0])} is a self-loop on node {int(e[loops[0], 0])}; "
                "a computation graph is acyclic"
            )
    key = e[:, 0] * max(n, 1) + e[:, 1]
    uniq, inverse = np.unique(key, return_inverse=True)
    return e, uniq // max(n, 1), uniq % max(n, 1), inverse.reshape(-1).astype(np.int64)


def _components(n: int, src: NDArray[np.int64], dst: NDArray[np.int64]) -> NDArray[np.int64]:
    """Weakly connected component of each node, labelled by its smallest node index."""
    label = np.arange(n)
    while True:
        la, lb = label[src], label[dst]
        differ = la != lb
        if not differ.any():
            return label
        np.minimum.at(label, np.maximum(la, lb)[differ], np.minimum(la, lb)[differ])
        while True:  # pointer jumping: every label becomes a root
            jumped = label[label]
            if np.array_equal(jumped, label):
                break
            label = jumped


def _checked_layers(
    n: int, src: NDArray[np.int64], dst: NDArray[np.int64], layers: ArrayLike
) -> NDArray[np.int64]:
    layer = np.asarray(layers, dtype=np.int64).reshape(-1)
    if len(layer) != n:
        raise ValueError(f"layers has {len(layer)} entries for {n} nodes")
    bad = np.flatnonzero(layer[dst] <= layer[src])
    if len(bad):
        u, v = int(src[bad[0]]), int(dst[bad[0]])
        raise ValueError(
            f"layers must grow along every edge, but edge {u}->{v} goes from layer "
            f"{int(layer[u])} to {int(layer[v])} (for DeZero generations pass "
            "2 * generation + is_function)"
        )
    return layer - layer.min()


# =============================================================================================
# Phase 1: layering
# =============================================================================================
def _longest_path_layers(
    n: int, src: NDArray[np.int64], dst: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Each node one layer below its deepest predecessor (Kahn's order, no recursion)."""
    order = np.argsort(src, kind="stable")
    succ = dst[order].tolist()
    ptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n))]).tolist()
    indeg = np.bincount(dst, minlength=n).tolist()
    layer = [0] * n
    stack = [v for v in range(n - 1, -1, -1) if indeg[v] == 0]
    done = 0
    while stack:
        v = stack.pop()
        done += 1
        below = layer[v] + 1
        for i in range(ptr[v], ptr[v + 1]):
            w = succ[i]
            if layer[w] < below:
                layer[w] = below
            indeg[w] -= 1
            if indeg[w] == 0:
                stack.append(w)
    if done < n:
        stuck = next(v for v in range(n) if indeg[v] > 0)
        raise ValueError(f"the edges contain a cycle (through node {stuck}); a DAG is needed")
    return np.array(layer, dtype=np.int64)


def _promote(
    n: int, src: NDArray[np.int64], dst: NDArray[np.int64], layer: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Move single nodes as far as it shortens their edges: a node with more out- than
    in-edges down to just above its first successor, one with more in-edges up."""
    outdeg, indeg = np.bincount(src, minlength=n), np.bincount(dst, minlength=n)
    down, up = outdeg >= indeg, indeg > outdeg
    big = np.iinfo(np.int64).max // 4
    for _ in range(64):
        limit = np.full(n, big)
        np.minimum.at(limit, src, layer[dst] - 1)
        move = down & (limit < big) & (limit > layer)
        layer = np.where(move, limit, layer)
        moved = move.any()
        limit = np.full(n, -big)
        np.maximum.at(limit, dst, layer[src] + 1)
        move = up & (limit > -big) & (limit < layer)
        layer = np.where(move, limit, layer)
        if not (moved or move.any()):
            break
    return layer


def _feasible_tree(
    n: int, src: NDArray[np.int64], dst: NDArray[np.int64], rank: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Shift groups of nodes (keeping every edge valid) until tight edges (span 1) connect all
    nodes; node 0 must reach every node."""
    tight = rank[dst] - rank[src] == 1
    label = _components(n, src[tight], dst[tight])
    absorbed = np.zeros(n, bool)
    absorbed[label[0]] = True
    in_tree = absorbed[label]
    while not in_tree.all():
        crossing = np.flatnonzero(in_tree[src] != in_tree[dst])
        slack = rank[dst[crossing]] - rank[src[crossing]] - 1
        k = int(np.argmin(slack))
        delta = int(slack[k])
        if in_tree[dst[crossing[k]]]:  # edge into the tree: lift the tree
            rank = rank - delta * in_tree
            closed = crossing[(slack == delta) & in_tree[dst[crossing]]]
        else:
            rank = rank + delta * in_tree
            closed = crossing[(slack == delta) & in_tree[src[crossing]]]
        outside = np.where(in_tree[src[closed]], dst[closed], src[closed])
        absorbed[label[outside]] = True
        in_tree = absorbed[label]
    return rank


class _NetworkSimplex:
    """Minimum total edge span over a feasible tight spanning tree rooted at node 0.

    The tree is kept as parent pointers plus a postorder array: ``low[v]..lim[v]`` are the
    postorder numbers of v's subtree, so membership tests and subtree sums are vectorised. The
    cut value of the tree edge above v is +-(sum over v's subtree of out-weight minus
    in-weight), the sign telling whether v is the edge's tail.
    """

    def __init__(
        self,
        n: int,
        src: NDArray[np.int64],
        dst: NDArray[np.int64],
        weight: NDArray[np.int64],
        rank: NDArray[np.int64],
    ) -> None:
        self.n, self.src, self.dst, self.rank = n, src, dst, rank.copy()
        self.balance = np.bincount(src, weights=weight, minlength=n) - np.bincount(
            dst, weights=weight, minlength=n
        )
        self.balance = np.rint(self.balance).astype(np.int64)
        m = len(src)
        ends = np.concatenate([src, dst])
        by_node = np.argsort(ends, kind="stable")
        self.incident = np.concatenate([np.arange(m), np.arange(m)])[by_node]
        self.incident_ptr = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=n))])
        self.srcl, self.dstl = src.tolist(), dst.tolist()
        self.work = 0  # nodes renumbered by the pivots so far
        self._build_tree()

    def _build_tree(self) -> None:
        """A spanning tree of tight edges, by depth-first search from node 0, numbered in
        postorder: a node finishes after ``pre + size - depth - 1`` others."""
        n = self.n
        tight = np.flatnonzero(self.rank[self.dst] - self.rank[self.src] == 1)
        ends = np.concatenate([self.src[tight], self.dst[tight]])
        others = np.concatenate([self.dst[tight], self.src[tight]])
        by_end = np.argsort(ends, kind="stable")
        ptr = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=n))]).tolist()
        neighbour = others[by_end].tolist()
        via = np.concatenate([tight, tight])[by_end].tolist()
        parent, pedge, depth = [-1] * n, [-1] * n, [0] * n
        seen = [False] * n
        seen[0] = True
        stack, preorder = [0], []
        while stack:
            v = stack.pop()
            preorder.append(v)
            below = depth[v] + 1
            for i in range(ptr[v], ptr[v + 1]):
                u = neighbour[i]
                if not seen[u]:
                    seen[u] = True
                    parent[u], pedge[u], depth[u] = v, via[i], below
                    stack.append(u)
        size = [1] * n
        for v in reversed(preorder[1:]):
            size[parent[v]] += size[v]
        pre = np.empty(n, np.int64)
        pre[preorder] = np.arange(n)
        self.size = np.array(size, dtype=np.int64)
        self.low = pre - np.array(depth, dtype=np.int64)
        self.lim = self.low + self.size - 1
        self.at = np.empty(n, np.int64)
        self.at[self.lim] = np.arange(n)
        self.parent, self.pedge = parent, pedge
        pe = np.array(pedge, dtype=np.int64)
        self.tail_child = np.zeros(n, bool)
        self.tail_child[1:] = self.src[pe[1:]] == np.arange(1, n)
        self._update_cuts()

    def _update_cuts(self) -> None:
        prefix = np.concatenate([[0], np.cumsum(self.balance[self.at])])
        subtree = prefix[self.lim + 1] - prefix[self.low]
        self.cut = np.where(self.tail_child, subtree, -subtree)
        self.cut[0] = np.iinfo(np.int64).max

    def solve(self, max_pivots: int, max_work: int, ticker: _Ticker) -> NDArray[np.int64]:
        """Pivot until optimal, or until ``max_pivots`` pivots or ``max_work`` renumbered
        nodes (the layering is valid at every step; the budget only bounds the time)."""
        for pivot in range(max_pivots):
            if self.work > max_work:
                break
            c = int(np.argmin(self.cut))
            if self.cut[c] >= 0:
                break
            self._pivot(c)
            if pivot % 128 == 127:
                ticker.tick()
        return self.rank

    def _pivot(self, c: int) -> None:
        """Replace the tree edge above ``c`` (negative cut value) by the tightest edge going
        the other way across the cut and shift c's subtree to make that edge tight. Only the
        subtree of the lowest common ancestor of the old and new attachment points is
        renumbered."""
        src, dst, rank, n = self.src, self.dst, self.rank, self.n
        low, lim, at, size_of = self.low, self.lim, self.at, self.size
        lo, hi = int(low[c]), int(lim[c])
        size = hi - lo + 1
        side = at[lo : hi + 1] if 2 * size <= n else np.concatenate([at[:lo], at[hi + 1 :]])
        starts = self.incident_ptr[side]
        edges = self.incident[_ranges(starts, self.incident_ptr[side + 1] - starts)]
        ls, ld = lim[src[edges]], lim[dst[edges]]
        s_in, d_in = (ls >= lo) & (ls <= hi), (ld >= lo) & (ld <= hi)
        tail_side = bool(self.tail_child[c])
        cand = edges[~s_in & d_in] if tail_side else edges[s_in & ~d_in]
        slack = rank[dst[cand]] - rank[src[cand]] - 1
        k = int(np.argmin(slack))
        g, delta = int(cand[k]), int(slack[k])
        if delta:
            rank[at[lo : hi + 1]] += -delta if tail_side else delta
        x, y = (self.dstl[g], self.srcl[g]) if tail_side else (self.srcl[g], self.dstl[g])
        parent, pedge = self.parent, self.pedge
        p = parent[c]
        path = [x]  # from the new attachment point x up to c
        while path[-1] != c:
            path.append(parent[path[-1]])
        ly = int(lim[y])
        w = p  # lowest common ancestor of p and y
        while not low[w] <= ly <= lim[w]:
            w = parent[w]
        w_lo, w_hi = int(low[w]), int(lim[w])
        self.work += w_hi - w_lo + 1

        # postorder of the re-rooted subtree: what hung below each path node, then the path
        nodes = np.array(path, dtype=np.int64)
        below, above = nodes[:-1], nodes[1:]
        begin = np.empty(2 * len(below) + 1, np.int64)
        end = np.empty_like(begin)
        begin[0], end[0] = low[x], lim[x]
        begin[1::2], end[1::2] = low[above], low[below]
        begin[2::2], end[2::2] = lim[below] + 1, lim[above]
        new_sub = np.concatenate([at[_ranges(begin, end - begin)], nodes[::-1]])

        window = at[w_lo : w_hi + 1]
        wl, wm = low[window], lim[window]
        lp = lim[p]
        above_p = (wl <= lp) & (wm >= lp)
        above_y = (wl <= ly) & (wm >= ly)
        path_sizes = size - size_of[below]
        size_of[window[above_y & ~above_p]] += size
        size_of[window[above_p & ~above_y]] -= size
        size_of[x] = size
        size_of[above] = path_sizes
        rest = np.concatenate([window[: lo - w_lo], window[hi - w_lo + 1 :]])
        at_y = ly - w_lo - (size if ly > hi else 0)
        window = np.concatenate([rest[:at_y], new_sub, rest[at_y:]])
        at[w_lo : w_hi + 1] = window
        lim[window] = np.arange(w_lo, w_hi + 1)
        low[window] = lim[window] - size_of[window] + 1

        prev, prev_edge = y, g
        for v in path:
            old_edge = pedge[v]
            parent[v], pedge[v] = prev, prev_edge
            self.tail_child[v] = self.srcl[prev_edge] == v
            prev, prev_edge = v, old_edge
        prefix = np.concatenate([[0], np.cumsum(self.balance[window])])
        subtree = prefix[lim[window] - w_lo + 1] - prefix[low[window] - w_lo]
        self.cut[window] = np.where(self.tail_child[window], subtree, -subtree)
        self.cut[0] = np.iinfo(np.int64).max


def _ranges(starts: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """Concatenation of ``arange(s, s + c)`` for each (s, c)."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(counts)
    return np.repeat(starts - ends + counts, counts) + np.arange(total)


def _min_span_layers(
    n: int,
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    comp: NDArray[np.int64],
    ticker: _Ticker,
) -> NDArray[np.int64]:
    layer = _promote(n, src, dst, _longest_path_layers(n, src, dst))
    ticker.tick(0.05)
    if len(src) == 0:
        return np.zeros(n, np.int64)
    # a virtual root (node 0 below) tied to one top node of each component by weight-0 edges
    roots = np.flatnonzero(comp == np.arange(n))
    big = np.iinfo(np.int64).max
    top = np.full(n, big)
    np.minimum.at(top, comp, layer)
    first_top = np.full(n, -1)
    at_top = np.flatnonzero(layer == top[comp])[::-1]
    first_top[comp[at_top]] = at_top
    s = np.concatenate([np.zeros(len(roots), np.int64), src + 1])
    d = np.concatenate([first_top[roots] + 1, dst + 1])
    w = np.concatenate([np.zeros(len(roots), np.int64), np.ones(len(src), np.int64)])
    rank = np.concatenate([[layer.min() - 1], layer])
    rank = _feasible_tree(n + 1, s, d, rank)
    ticker.tick(0.08)
    simplex = _NetworkSimplex(n + 1, s, d, w, rank)
    rank = simplex.solve(10 * n + 100, _SIMPLEX_WORK * n + 1_000_000, ticker)[1:]
    top = np.full(n, big)
    np.minimum.at(top, comp, rank)
    return rank - top[comp]


# =============================================================================================
# Phase 2: virtual nodes
# =============================================================================================
@dataclass
class _LayeredGraph:
    """Real nodes 0..n-1, then virtual nodes; ``top -> bottom`` segments join adjacent layers.

    Unique edge ``e`` passes through virtual nodes ``chain[e]``, ``chain[e] + 1``, ... (one
    per layer strictly between its ends). With shared trunks, the edges leaving one node share
    a single chain of virtual nodes that runs down to the deepest of them.
    """

    n: int
    layer: NDArray[np.int64]
    comp: NDArray[np.int64]
    top: NDArray[np.int64]
    bottom: NDArray[np.int64]
    src: NDArray[np.int64]
    dst: NDArray[np.int64]
    chain: NDArray[np.int64]

    @property
    def n_total(self) -> int:
        return len(self.layer)

    @classmethod
    def build(
        cls,
        n: int,
        layer: NDArray[np.int64],
        src: NDArray[np.int64],
        dst: NDArray[np.int64],
        comp: NDArray[np.int64],
        shared_trunks: bool,
    ) -> _LayeredGraph:
        span = layer[dst] - layer[src]
        if shared_trunks:
            head = np.arange(n)
            length = np.zeros(n, np.int64)
            np.maximum.at(length, src, span - 1)
            chain_of_edge = src
        else:
            head, length, chain_of_edge = src, span - 1, np.arange(len(src))
        first = n + np.cumsum(length) - length
        owner = np.repeat(np.arange(len(length)), length)
        ids = np.arange(n, n + int(length.sum()))
        step = ids - first[owner]
        chain = first[chain_of_edge]
        # segments: down each chain, then from the chain's last node (or the source) to the target
        top = np.concatenate([np.where(step == 0, head[owner], ids - 1), chain + span - 2])
        top[len(ids) :][span == 1] = src[span == 1]
        return cls(
            n=n,
            layer=np.concatenate([layer, layer[head][owner] + 1 + step]),
            comp=np.concatenate([comp, comp[head][owner]]),
            top=top,
            bottom=np.concatenate([ids, dst]),
            src=src,
            dst=dst,
            chain=chain,
        )


# =============================================================================================
# Phase 3: ordering
# =============================================================================================
class _Sides:
    """The segments seen from one end (``me``) with the other end (``other``), grouped by
    the layer of ``me``: per-layer views for barycenters, CSR lists for transpositions."""

    def __init__(
        self, me: NDArray[np.int64], other: NDArray[np.int64], lay: NDArray[np.int64], h: int
    ) -> None:
        n_total = len(lay)
        by_me = np.lexsort((other, me))
        self.me, self.other = me[by_me], other[by_me]
        self.count = np.bincount(me, minlength=n_total)
        self.ptr = np.concatenate([[0], np.cumsum(self.count)])
        self.movable = self.count > 0
        inv_count = np.where(self.movable, 1.0 / np.maximum(self.count, 1), 0.0)
        starts = np.searchsorted(lay, np.arange(h + 1)).tolist()
        split = np.searchsorted(lay[self.me], np.arange(h + 1)).tolist()
        movable = [self.movable[starts[i] : starts[i + 1]] for i in range(h)]
        self.layers = [
            (
                self.me[split[i] : split[i + 1]] - starts[i],
                self.other[split[i] : split[i + 1]],
                inv_count[starts[i] : starts[i + 1]],
                None if movable[i].all() else movable[i],  # by local id, where some are not
            )
            for i in range(h)
        ]


def _order(
    graph: _LayeredGraph, sweeps: int, transpose_rounds: int, ticker: _Ticker
) -> tuple[NDArray[np.int64], int]:
    """Rank of every node within its layer (real and virtual), and its layer crossings."""
    n_total = graph.n_total
    # relabel so ids run through the layers, each layer by component then node index
    perm = np.lexsort((np.arange(n_total), graph.comp, graph.layer))
    new_id = np.empty(n_total, np.int64)
    new_id[perm] = np.arange(n_total)
    lay = graph.layer[perm]
    h = int(lay[-1]) + 1
    start = np.searchsorted(lay, np.arange(h + 1))
    comp_rank = np.unique(graph.comp[perm], return_inverse=True)[1].reshape(-1)
    top, bottom = new_id[graph.top], new_id[graph.bottom]
    ups, downs = _Sides(bottom, top, lay, h), _Sides(top, bottom, lay, h)

    width = int(np.diff(start).max())
    comp_key = comp_rank * float(width + 1)
    pos = np.arange(n_total) - start[lay]
    order = pos.copy()  # during the sweeps: local ids, slot by slot
    counter = _CrossingCounter(top, bottom, lay, start)
    best: int | None = None
    best_pos = pos.copy()
    starts = start.tolist()
    aranges = [np.arange(k) for k in range(width + 1)]
    mixed = (comp_rank[start[:-1]] != comp_rank[start[1:] - 1]).tolist()  # several components
    spans = [(starts[i], starts[i + 1], pos[starts[i] : starts[i + 1]]) for i in range(h)]
    # a layer is re-sorted only when it or its reference layer changed since its last sort
    version = [0] * h
    stamps: tuple[list[Any], list[Any]] = ([None] * h, [None] * h)
    quiet = 0
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        side, stamp = (ups, stamps[0]) if downward else (downs, stamps[1])
        changed = False
        for i in range(1, h) if downward else range(h - 2, -1, -1):
            s, e, pos_here = spans[i]
            ref = i - 1 if downward else i + 1
            if e - s == 1 or stamp[i] == (version[ref], version[i]):
                continue
            me_local, other, inv_count, movable = side.layers[i]
            key = np.bincount(me_local, weights=pos[other], minlength=e - s) * inv_count
            if mixed[i]:
                key += comp_key[s:e]
            cur = order[s:e]
            if movable is not None:  # nodes without neighbours on this side keep their slots
                mask = movable[cur]
                moving = cur[mask]
                new = cur.copy()
                new[mask] = moving[key[moving].argsort(kind="stable")]
            else:
                new = cur[key[cur].argsort(kind="stable")]
            if new.tobytes() != cur.tobytes():
                order[s:e] = new
                pos_here[new] = aranges[e - s]
                version[i] += 1
                changed = True
            stamp[i] = (version[ref], version[i])
        ticker.tick(0.25 + 0.45 * (sweep + 1) / max(sweeps, 1))
        quiet = 0 if changed else quiet + 1
        if quiet == 2:  # neither direction moves anything any more
            break
        if counter.cheap and (changed or best is None):
            crossings = counter.count(pos)
            if best is None or crossings < best:
                best, best_pos = crossings, pos.copy()
            if best == 0:
                break
    if not counter.cheap:  # counting would cost more than it saves: keep the last ordering
        best, best_pos = -1, pos
    elif best is None:
        best = counter.count(pos)
    pos = best_pos
    order[start[lay] + pos] = np.arange(n_total)
    removed = _transpose(order, pos, lay, start, ups, downs, comp_rank, ticker, transpose_rounds)
    best = best - removed if best >= 0 else -1
    return pos[new_id], best


class _CrossingCounter:
    """Crossings between adjacent layers for an ordering. Up to ``pair_limit`` segment pairs
    sharing a layer gap, they are listed once and each count is a few vector operations;
    beyond, every count sorts the segments and counts inversions."""

    def __init__(
        self,
        top: NDArray[np.int64],
        bottom: NDArray[np.int64],
        lay: NDArray[np.int64],
        start: NDArray[np.int64],
        pair_limit: int = 1_500_000,
    ) -> None:
        gap = lay[top]
        o = np.argsort(gap, kind="stable")
        self.top, self.bottom, self.gap = top[o], bottom[o], gap[o]
        self.global_base = start[lay]
        self.n_total = len(lay)
        self.bits = max(1, int(np.diff(start).max()).bit_length())
        sizes = np.bincount(self.gap, minlength=len(start))
        self.cheap = int((sizes * (sizes - 1) // 2).sum()) <= pair_limit
        if self.cheap:
            m = len(o)
            end = np.cumsum(sizes)[self.gap]
            after = end - np.arange(m) - 1
            left = np.repeat(np.arange(m), after)
            right = left + 1 + _ranges(np.zeros(m, np.int64), after)
            small = np.int32 if self.n_total < 2**31 else np.int64
            self.pairs = tuple(
                a.astype(small)
                for a in (self.top[left], self.top[right], self.bottom[left], self.bottom[right])
            )

    def count(self, pos: NDArray[np.int64]) -> int:
        if len(self.top) < 2:
            return 0
        if self.cheap:
            ta, tb, ba, bb = self.pairs
            return int(np.count_nonzero((pos[ta] - pos[tb]) * (pos[ba] - pos[bb]) < 0))
        key = (self.global_base + pos)[self.top] * self.n_total + pos[self.bottom]
        o = np.argsort(key)
        return _inversions(self.gap[o], pos[self.bottom][o], self.bits)


def _inversions(group: NDArray[np.int64], value: NDArray[np.int64], bits: int) -> int:
    """Pairs i < j of the same group with value[i] > value[j]; ``group`` sorted, values are
    ``bits``-bit ints. One pass per bit, most significant first: count the ones before each
    zero within a group, then split every group stably by that bit."""
    m = len(value)
    if m < 2:
        return 0
    total = 0
    idx = np.arange(m)
    value = value.copy()
    g = group.copy()
    for b in range(bits - 1, -1, -1):
        bit = (value >> b) & 1
        is_head = np.empty(m, bool)
        is_head[0] = True
        np.not_equal(g[1:], g[:-1], out=is_head[1:])
        heads = np.flatnonzero(is_head)
        which = np.cumsum(is_head) - 1
        head = heads[which]
        ones_incl = np.cumsum(bit)
        ones_before = ones_incl - bit
        ones_before -= ones_before[heads][which]
        zero = bit == 0
        total += int(ones_before[zero].sum())
        size = np.diff(np.append(heads, m))[which]
        ones_in = ones_incl[head + size - 1] - ones_incl[head] + bit[head]
        dest = np.where(zero, idx - ones_before, head + size - ones_in + ones_before)
        new_value = np.empty(m, value.dtype)
        new_value[dest] = value
        new_g = np.empty(m, np.int64)
        new_g[dest] = g * 2 + bit
        value, g = new_value, new_g
    return total


def _transpose(
    order: NDArray[np.int64],
    pos: NDArray[np.int64],
    lay: NDArray[np.int64],
    start: NDArray[np.int64],
    ups: _Sides,
    downs: _Sides,
    comp_rank: NDArray[np.int64],
    ticker: _Ticker,
    rounds: int,
) -> int:
    """Swap neighbours in a layer while that removes crossings: odd-even transposition,
    vectorised over every other layer at once (a swap's gain then depends on fixed layers).
    Returns the number of crossings removed."""
    n_total = len(lay)
    slot = np.arange(n_total - 1)
    same = lay[slot] == lay[slot + 1]
    local = slot - start[lay[slot]]
    phases = [slot[same & (lay[slot] % 2 == p) & (local % 2 == q)] for p in (0, 1) for q in (0, 1)]
    removed = 0
    for _ in range(rounds):
        swapped = 0
        for slots in phases:
            if not len(slots):
                continue
            v, w = order[slots], order[slots + 1]
            gain = _pair_crossings(v, w, ups, pos) + _pair_crossings(v, w, downs, pos)
            do = (gain > 0) & (comp_rank[v] == comp_rank[w])
            if do.any():
                s, vs, ws = slots[do], v[do], w[do]
                order[s], order[s + 1] = ws, vs
                pos[vs] += 1
                pos[ws] -= 1
                swapped += int(do.sum())
                removed += int(gain[do].sum())
        ticker.tick()
        if not swapped:
            break
    return removed


def _pair_crossings(
    v: NDArray[np.int64], w: NDArray[np.int64], side: _Sides, pos: NDArray[np.int64]
) -> NDArray[np.int64]:
    """For each adjacent pair (v left of w): crossings among their segments on ``side`` now,
    minus after swapping them."""
    dv, dw = side.count[v], side.count[w]
    combos = dv * dw
    total = int(combos.sum())
    if total == 0:
        return np.zeros(len(v), np.int64)
    pair = np.repeat(np.arange(len(v)), combos)
    k = _ranges(np.zeros(len(v), np.int64), combos)
    dwp = dw[pair]
    pa = pos[side.other[side.ptr[v][pair] + k // dwp]]
    pb = pos[side.other[side.ptr[w][pair] + k % dwp]]
    return np.bincount(pair, weights=np.sign(pa - pb), minlength=len(v)).astype(np.int64)


# =============================================================================================
# Phase 4: x coordinates
# =============================================================================================
def _assign_x(
    graph: _LayeredGraph,
    pos: NDArray[np.int64],
    widths: NDArray[np.float64],
    node_gap: float,
    ticker: _Ticker,
) -> NDArray[np.float64]:
    """x of every node (real and virtual) for the ordering ``pos``."""
    n, n_total = graph.n, graph.n_total
    # relabel by (layer, position): a node's left neighbour is the previous id
    perm = np.lexsort((pos, graph.layer))
    new_id = np.empty(n_total, np.int64)
    new_id[perm] = np.arange(n_total)
    lay = graph.layer[perm]
    h = int(lay[-1]) + 1
    start = np.searchsorted(lay, np.arange(h + 1))
    virtual = perm >= n
    width = np.where(virtual, 0.0, np.concatenate([widths, np.zeros(n_total - n)])[perm])
    top, bottom = new_id[graph.top], new_id[graph.bottom]

    has_left = np.zeros(n_total, bool)
    has_left[1:] = lay[1:] == lay[:-1]
    gap = np.where(virtual | np.roll(virtual, 1), node_gap / 2, node_gap)
    sep = np.where(has_left, (width + np.roll(width, 1)) / 2 + gap, 0.0)  # from left neighbour

    by_bottom = np.lexsort((top, bottom))
    marked = np.empty(len(top), bool)
    inner = virtual[top] & virtual[bottom]
    marked[by_bottom] = _type1_conflicts(top[by_bottom], inner[by_bottom])
    by_top = np.lexsort((bottom, top))
    candidates = []
    sides = ((bottom, top, by_bottom), (top, bottom, by_top))
    for me, other, o in sides if n_total <= _FOUR_ALIGNMENTS else sides[:1]:
        me, other, mark = me[o], other[o], marked[o]
        # a node with a long edge on the reference side aligns with it: long edges run straight
        to_virtual = virtual[other]
        keep = to_virtual | (np.bincount(me[to_virtual], minlength=n_total) == 0)[me]
        me, other, mark = me[keep], other[keep], mark[keep]
        # then with a neighbour that continues a chain (not a leaf such as a parameter)
        onward = np.bincount(me, minlength=n_total)[other] > 0
        keep = onward | (np.bincount(me[onward], minlength=n_total) == 0)[me]
        me, other, mark = me[keep], other[keep], mark[keep]
        for rightward in (False, True):
            root = _align(me, other, mark, lay, start, rightward)
            candidates.append(_compact(root, sep, has_left, rightward))
            ticker.tick()
    xs = np.array(candidates)
    spans = xs.max(1) - xs.min(1)
    narrowest = int(np.argmin(spans))
    for i in range(len(xs)):
        if i % 2 == 0:
            xs[i] += xs[narrowest].min() - xs[i].min()
        else:
            xs[i] += xs[narrowest].max() - xs[i].max()
    ranked = np.sort(xs, axis=0)
    middle = len(xs) // 2
    balanced = (ranked[middle - 1] + ranked[middle]) / 2
    choice = balanced
    real = new_id[:n]
    pieces = int((graph.layer[graph.dst] - graph.layer[graph.src]).sum())
    if pieces <= _SELECT_LIMIT:
        best = None
        for x in [balanced, *xs]:
            c = _straight_crossings(x[real], graph.layer[:n], graph.src, graph.dst)
            if best is None or c < best:
                best, choice = c, x
    return choice[new_id]


def _type1_conflicts(top: NDArray[np.int64], inner: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """Segments that cross an inner segment (virtual to virtual): they are never aligned, so
    long edges get vertical middles. Segments sorted by (bottom, top), ids in (layer, position)
    order; a virtual node has one segment above it, so no bottom is shared by an inner and
    another segment, and an inner segment left of (right of) one crosses it iff its top is
    right of (left of) the other's top."""
    if not inner.any():
        return np.zeros(len(top), bool)
    inner_top = np.where(inner, top, -1)
    left_max = np.maximum.accumulate(np.concatenate([[-1], inner_top[:-1]]))
    inner_top = np.where(inner, top, np.iinfo(np.int64).max)[::-1]
    right_min = np.minimum.accumulate(np.concatenate([[np.iinfo(np.int64).max], inner_top[:-1]]))
    return ~inner & ((left_max > top) | (right_min[::-1] < top))


def _align(
    me: NDArray[np.int64],
    other: NDArray[np.int64],
    marked: NDArray[np.bool_],
    lay: NDArray[np.int64],
    start: NDArray[np.int64],
    rightward: bool,
) -> NDArray[np.int64]:
    """Block root of every node: each node joins its median neighbour in the reference layer
    unless that would cross an alignment made before it in the scan (left to right, or right to
    left). Segments come sorted by (me, other). Vectorised: in scan order a node is aligned iff
    its median lies beyond every median aligned before it, a running maximum per layer; a
    second median (even degree) is tried where it fits between the alignments made."""
    n_total = len(lay)
    if len(other) == 0:
        return np.arange(n_total)
    count = np.bincount(me, minlength=n_total)
    ptr = np.concatenate([[0], np.cumsum(count)])[:-1]
    has = count > 0
    lo_i = np.where(has, ptr + (count - 1) // 2, 0)
    hi_i = np.where(has, ptr + count // 2, 0)
    first_i, second_i = (hi_i, lo_i) if rightward else (lo_i, hi_i)
    first, second = other[first_i], other[second_i]
    ok1 = has & ~marked[first_i]
    ok2 = has & (count % 2 == 0) & ~marked[second_i]

    scan = np.arange(n_total)
    if rightward:  # scan each layer right to left, compare mirrored positions
        scan = start[lay] + start[lay + 1] - 1 - scan
        local = start[lay + 1] - 1 - np.arange(n_total)
    else:
        local = np.arange(n_total) - start[lay]
    big = float(n_total + 2)
    layer_off = lay[scan] * big

    # pass 1: the first acceptable median
    cand = np.where(ok1, first, np.where(ok2, second, -1))[scan]
    val = np.where(cand >= 0, local[np.maximum(cand, 0)], -1) + layer_off
    prev = np.maximum.accumulate(np.concatenate([[-big], val[:-1]]))
    accept = (cand >= 0) & (val > np.maximum(prev, layer_off - 1))
    chosen = np.where(accept, cand, -1)

    # pass 2: the other median, where it fits strictly between accepted neighbours
    alt = np.where(ok1 & ok2, second, -1)[scan]
    try_alt = ~accept & (alt >= 0)
    if try_alt.any():
        acc = np.where(accept, val, -np.inf)
        before = np.maximum.accumulate(np.concatenate([[-big], acc[:-1]]))
        before = np.maximum(before, layer_off - 1)
        acc = np.where(accept, val, np.inf)[::-1]
        after = np.minimum.accumulate(np.concatenate([[np.inf], acc[:-1]]))[::-1]
        after = np.minimum(after, layer_off + big - 1)
        alt_val = np.where(alt >= 0, local[np.maximum(alt, 0)], -1) + layer_off
        fits = try_alt & (alt_val > before) & (alt_val < after)
        prev_fit = np.maximum.accumulate(
            np.concatenate([[-big], np.where(fits, alt_val, -np.inf)[:-1]])
        )
        fits &= alt_val > prev_fit
        chosen = np.where(fits, alt, chosen)

    link = np.arange(n_total)
    aligned = chosen >= 0
    link[scan[aligned]] = chosen[aligned]
    root = link
    while True:
        jumped = root[root]
        if np.array_equal(jumped, root):
            return root
        root = jumped


def _compact(
    root: NDArray[np.int64],
    sep: NDArray[np.float64],
    has_left: NDArray[np.bool_],
    rightward: bool,
) -> NDArray[np.float64]:
    """Smallest coordinates (largest, for ``rightward``) that keep blocks vertical and
    neighbours ``sep`` apart: the longest path through the "left of" relation between blocks,
    in Kahn's order (one pass over the constraints, no recursion)."""
    n_total = len(root)
    right = np.flatnonzero(has_left)
    left = right - 1
    if rightward:
        left, right = right, left
    tail, head, dist = root[left], root[right], sep[np.maximum(left, right)]
    by_tail = np.argsort(tail, kind="stable")
    heads, dists = head[by_tail].tolist(), dist[by_tail].tolist()
    ptr = np.concatenate([[0], np.cumsum(np.bincount(tail, minlength=n_total))]).tolist()
    indeg = np.bincount(head, minlength=n_total).tolist()
    x = [0.0] * n_total
    stack = [int(r) for r in np.flatnonzero(root == np.arange(n_total))[::-1] if indeg[r] == 0]
    while stack:
        u = stack.pop()
        xu = x[u]
        for i in range(ptr[u], ptr[u + 1]):
            v = heads[i]
            if xu + dists[i] > x[v]:
                x[v] = xu + dists[i]
            indeg[v] -= 1
            if not indeg[v]:
                stack.append(v)
    block = np.array(x)[root]
    return -block if rightward else block


def _straight_crossings(
    x: NDArray[np.float64], layer: NDArray[np.int64], src: NDArray[np.int64], dst: NDArray[np.int64]
) -> int:
    """:func:`count_crossings` for a layered drawing, fast: each straight edge is cut where it
    passes a layer, and two pieces between the same layers cross iff their order flips."""
    span = layer[dst] - layer[src]
    total = int(span.sum())
    if total < 2:
        return 0
    owner = np.repeat(np.arange(len(src)), span)
    j = np.arange(total) - np.repeat(np.cumsum(span) - span, span)
    xs, xd = x[src][owner], x[dst][owner]
    s = span[owner].astype(np.float64)
    x_top = np.where(j == 0, xs, xs + (xd - xs) * (j / s))
    x_bot = np.where(j + 1 == s, xd, xs + (xd - xs) * ((j + 1) / s))
    gap = layer[src][owner] + j
    shift = gap * (4.0 * (np.abs(x).max() + 1.0))  # keeps gaps apart in one float key
    o = np.lexsort((x_bot, x_top + shift))
    gap, bottom = gap[o], (x_bot + shift)[o]
    by_bottom = np.argsort(bottom, kind="stable")
    sorted_bottom = bottom[by_bottom]
    dense = np.cumsum(np.concatenate([[0], sorted_bottom[1:] != sorted_bottom[:-1]]))
    rank = np.empty(total, np.int64)
    rank[by_bottom] = dense
    rank -= np.minimum.reduceat(rank, np.flatnonzero(np.diff(gap, prepend=-1)))[
        np.cumsum(np.diff(gap, prepend=-1) != 0) - 1
    ]
    return _inversions(gap, rank, max(1, int(rank.max()).bit_length()))


def _edge_polylines(
    graph: _LayeredGraph,
    x: NDArray[np.float64],
    layer_gap: float,
    edge_to_unique: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Flat points and offsets of one polyline per given edge (parallel edges repeat)."""
    span = graph.layer[graph.dst] - graph.layer[graph.src]
    count = span[edge_to_unique] + 1
    offsets = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
    owner = np.repeat(edge_to_unique, count)
    j = np.arange(int(count.sum())) - np.repeat(offsets[:-1], count)
    node = np.where(
        j == 0,
        graph.src[owner],
        np.where(j == span[owner], graph.dst[owner], graph.chain[owner] + j - 1),
    )
    points = np.column_stack([x[node], graph.layer[node] * float(layer_gap)])
    return points, offsets
