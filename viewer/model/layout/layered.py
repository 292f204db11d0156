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

Very big graphs (beyond the ``_...`` limits here and in the phase modules) get less effort so
that time stays close to linear: fewer sweeps and transpositions and no crossing counts, long
edges leaving one node share a trunk of virtual nodes, two alignments instead of four, and the
simplex stops at a work budget (its layering is valid at every step). Deterministic (ties
broken by node index), no recursion, numpy-vectorised where the work is.

This module holds the entry points and the plumbing; the phases live in
:mod:`viewer.model.layout.layering` (1), :mod:`viewer.model.layout.layered_graph` (2),
:mod:`viewer.model.layout.ordering` (3) and :mod:`viewer.model.layout.placement` (4).
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from viewer.model.layout.clusters import (
    MAX_CLUSTERED,
    Clusters,
    cluster_of_items,
    cluster_ranks,
    pulled_sources,
    separate,
    stacked_layers,
)
from viewer.model.layout.layered_graph import LayeredGraph
from viewer.model.layout.layering import (
    checked_layers,
    components,
    hub_pendants,
    hubs,
    longest_path_layers,
    min_span_layers,
)
from viewer.model.layout.ordering import order_layers
from viewer.model.layout.placement import assign_x, edge_polylines
from viewer.model.layout.progress import LayoutCancelled, Progress, ShouldCancel, Ticker

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "Clusters",
    "Layout",
    "LayoutCancelled",
    "count_crossings",
    "layered_layout",
    "layers_at_least",
    "layout_graph",
]

_FULL_EFFORT = 15_000  # nodes (virtual included) up to which ordering runs at full effort
_TRUNKS_ABOVE = 150_000  # nodes (virtual included) above which long edges share trunks


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
    clusters: Clusters | None = None,
) -> Layout:
    """Lay out a DAG of ``n_nodes`` nodes top to bottom.

    ``edges``: (E, 2) ints, source -> target; duplicates (``x + x``) are laid out as one edge
    and kept in the output. ``node_width``: a scalar or one width per node; nodes in a layer are
    at least ``node_gap`` apart (virtual nodes have width 0 and keep ``node_gap / 2``).
    ``layers``: a layering to use instead of the minimum-span one; it must grow along every
    edge (for DeZero generations pass ``2 * generation + is_function``). ``sweeps``: barycenter
    passes (default: 24, fewer for very big graphs so the time stays near-linear).
    ``progress(fraction)`` is called between steps; ``should_cancel()`` is polled as often, and
    when it returns True :class:`LayoutCancelled` is raised. ``clusters``: nested frames
    drawn around groups of nodes (module scopes); their nodes stay together and the frames
    clear of each other (:mod:`viewer.model.layout.clusters`; up to ``MAX_CLUSTERED`` nodes,
    virtual ones included). Raises ValueError for a cycle, a self-loop or an endpoint out of
    range.
    """
    ticker = Ticker(progress, should_cancel)
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

    comp = components(n, src, dst)
    if layers is None:
        layer = min_span_layers(n, src, dst, comp, ticker)
    else:
        layer = checked_layers(n, src, dst, layers)
    tree = None
    if clusters is not None and len(clusters.parent) > 1 and n <= MAX_CLUSTERED:
        if len(clusters.of_node) != n or len(clusters.half_height) != n:
            raise ValueError(f"clusters must give a cluster and a half height for {n} nodes")
        tree = clusters.tree()
    if tree is not None and clusters is not None:
        of_node = np.asarray(clusters.of_node, dtype=np.int64)
        layer = pulled_sources(stacked_layers(layer, src, dst, of_node, tree), src, dst, of_node)
    ticker.tick(0.2)
    phase_done("layering")

    hub = hubs(n, src, dst, layer)
    extra = layer[dst] - layer[src] - 1
    trunk_length = np.zeros(n, np.int64)
    np.maximum.at(trunk_length, src[hub[src]], extra[hub[src]])
    plain_total = n + int(extra[~hub[src]].sum()) + int(trunk_length.sum())
    graph = LayeredGraph.build(n, layer, src, dst, comp, plain_total > _TRUNKS_ABOVE, hub)
    ticker.tick(0.25)
    n_total = graph.n_total
    effort = min(1.0, _FULL_EFFORT / n_total)
    if sweeps is None:
        sweeps = max(4, round(24 * effort))
    rounds = max(2, round(12 * effort))
    clustered = None
    if tree is not None and n_total <= MAX_CLUSTERED:
        item_cluster = cluster_of_items(graph, clusters, tree, layer_gap)
        ranks: list[NDArray[np.int64]] = []

        def regroup(p: NDArray[np.int64]) -> NDArray[np.int64]:
            new, cluster_rank = cluster_ranks(graph.layer, p, item_cluster, tree)
            ranks.append(cluster_rank)
            return new

        pos, crossings = order_layers(graph, sweeps, rounds, ticker, regroup, item_cluster)
        clustered = (tree, item_cluster, ranks[0])
    else:
        pos, crossings = order_layers(graph, sweeps, rounds, ticker)
    ticker.tick(0.8)
    phase_done("ordering")
    x = assign_x(graph, pos, widths, node_gap, ticker, hub_pendants(n, src, dst, hub))
    if clustered is not None and clusters is not None:
        tree, item_cluster, cluster_rank = clustered
        x = separate(
            graph, pos, x, widths, node_gap, layer_gap, clusters, tree, item_cluster, cluster_rank
        )
    ticker.tick(0.97)

    x = x - (x[:n] - widths / 2).min()
    positions = np.column_stack([x[:n], layer * float(layer_gap)])
    points, offsets = edge_polylines(graph, x, layer_gap, edge_to_unique)
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


def layers_at_least(n_nodes: int, edges: ArrayLike, minimum: ArrayLike) -> NDArray[np.int64]:
    """A layering for ``layered_layout(layers=...)`` that keeps each node in layer
    ``minimum[i]`` unless it must go lower to be below all its predecessors (then it goes one
    below the deepest). Raises ValueError for a cycle, a self-loop or an endpoint out of
    range."""
    n = int(n_nodes)
    start = np.asarray(minimum, dtype=np.int64).reshape(-1)
    if len(start) != n:
        raise ValueError(f"minimum has {len(start)} entries for {n} nodes")
    _, src, dst, _ = _unique_edges(n, edges)
    return longest_path_layers(n, src, dst, start)


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
