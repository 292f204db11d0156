"""Nested clusters (module frames) in the layered layout: each cluster's nodes side by side in
every layer, and its frame clear of every node and frame outside it.

A cluster is drawn as the rectangle around its nodes and the clusters nested in it, padded,
with a title strip on top (:mod:`viewer.model.scene.frames`). Two phases of
:mod:`viewer.model.layout.layered` take clusters into account:

* **Ordering** (:func:`cluster_ranks`): after the crossing reduction, each layer is sorted by
  the cluster tree, every cluster's children (its own nodes and its sub-clusters) by their mean
  place in their layers, so a cluster's nodes are adjacent in every layer and two sibling
  clusters keep the same left-to-right order in all the layers they share. A virtual node
  is inside the frames around its edge's target whose top is above it, else those around
  its source whose bottom is below it, else the innermost one holding both ends.
* **Coordinates** (:func:`separate`): the x of the Brandes-Koepf placement are pushed apart,
  as little as needed (the mean of a push to the right and one to the left), so that in
  every layer a cluster's frame (its left and right sides, one pair for all its layers) lies
  between what is left and right of it, with its padding, and a frame's title strip or
  padding that reaches into a layer where it has no node keeps that layer's nodes out of it
  too. Each push is a longest path over a DAG of difference constraints (Kahn's order),
  linear in the nodes and the cluster boundaries between them.

Before both, **layering** (:func:`stacked_layers`, :func:`pulled_sources`): a cluster that
takes an input from a sibling is laid out below the whole of it, and a leaf that feeds only
its own cluster follows its consumer down.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from viewer.model.layout.arrays import ranges
from viewer.model.layout.layered_graph import LayeredGraph

__all__ = [
    "MAX_CLUSTERED",
    "MAX_DEPTH",
    "ClusterTree",
    "Clusters",
    "cluster_of_items",
    "cluster_ranks",
    "cluster_tree",
    "edge_point_cluster",
    "frame_extents",
    "pulled_sources",
    "separate",
    "stacked_layers",
]

# nodes (virtual included) up to which clusters are laid out; beyond, frames are drawn around
# wherever their nodes are (the constraints' Python loop would take seconds)
MAX_CLUSTERED = 40_000
# clusters nested deeper than this are not laid out as clusters either
MAX_DEPTH = 64


@dataclass(frozen=True)
class Clusters:
    """Per real node its innermost cluster (``of_node``, 0 for none: the root), the tree of
    clusters (``parent``; ``parent[0]`` is ignored), each real node's half height, and the
    frame's padding and title strip, in layout units."""

    of_node: NDArray[np.int64]
    parent: NDArray[np.int64]
    half_height: NDArray[np.float64]
    pad: float = 0.08
    title: float = 0.24

    def tree(self) -> ClusterTree | None:
        """The tree of the clusters; None when it nests deeper than ``MAX_DEPTH``."""
        return cluster_tree(self.parent)


def cluster_tree(parent: NDArray[np.int64]) -> ClusterTree | None:
    """The :class:`ClusterTree` of ``parent``; None when it nests deeper than ``MAX_DEPTH``
    (a hostile file can nest thousands deep: such frames are drawn around wherever their
    nodes are)."""
    parent = np.asarray(parent, dtype=np.int64).copy()
    k = len(parent)
    if k:
        parent[0] = 0
    depth = np.zeros(k, np.int64)
    cur = np.arange(k)
    for _ in range(MAX_DEPTH + 1):
        up = cur != 0
        if not up.any():
            return ClusterTree(parent, depth)
        cur = np.where(up, parent[cur], 0)
        depth += up
    return None


class ClusterTree:
    """Depths and ancestors of a cluster tree given by its ``parent`` array (cluster 0 is the
    root): ``anc[c, d]`` is ``c``'s ancestor at depth ``d`` (0: the root; -1 below ``c``'s own
    depth)."""

    def __init__(self, parent: NDArray[np.int64], depth: NDArray[np.int64]) -> None:
        k = len(parent)
        self.parent = parent
        self.depth = depth
        self.max_depth = int(depth.max()) if k else 0
        anc = np.full((k, self.max_depth + 1), -1, np.int64)
        cur = np.arange(k)
        d = depth.copy()
        for _ in range(self.max_depth + 1):
            ok = d >= 0
            anc[np.flatnonzero(ok), d[ok]] = cur[ok]
            cur = np.where(d > 0, parent[cur], 0)
            d = d - 1
        self.anc = anc

    def lca(self, a: NDArray[np.int64], b: NDArray[np.int64]) -> NDArray[np.int64]:
        """The innermost common ancestor of each pair (a cluster is its own ancestor)."""
        same = (self.anc[a] == self.anc[b]) & (self.anc[a] >= 0)
        deepest = same.shape[1] - 1 - np.argmax(same[:, ::-1], axis=1)
        return self.anc[a, deepest]

    def common(self, group: NDArray[np.int64], c: NDArray[np.int64], n: int) -> NDArray[np.int64]:
        """Per group ``0..n-1``: the innermost ancestor common to the clusters ``c[j]`` of its
        members (``group[j]``); 0 (the root) for a group without members."""
        same = np.ones(n, bool)
        found = np.zeros(n, np.int64)
        for d in range(self.max_depth + 1):
            at = self.anc[c, d]
            lo = np.full(n, np.iinfo(np.int64).max)
            hi = np.full(n, -2, np.int64)
            np.minimum.at(lo, group, at)
            np.maximum.at(hi, group, at)
            same &= (lo == hi) & (hi >= 0)
            found = np.where(same, np.maximum(hi, 0), found)
        return found


def stacked_layers(
    layer: NDArray[np.int64],
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    of_node: NDArray[np.int64],
    tree: ClusterTree,
) -> NDArray[np.int64]:
    """Each node's layer, at least ``layer``'s, such that what flows from one cluster (or
    node) into a sibling cluster comes from above the whole of it: every node of a cluster
    below the deepest node of each sibling it takes an input from (a layer's weight is not
    laid beside the layer before it), a layer lower still for a cluster with clusters inside
    (its titles stack on its top: what feeds it stands right above its frame).

    One longest path (Kahn's order) over the edges and a gate per (sibling, cluster) pair:
    every node of the one before feeds the gate, the gate every node of the one after."""
    n = len(layer)
    k = len(tree.parent)
    cu, cv = of_node[src], of_node[dst]
    common = tree.lca(cu, cv)
    below = np.minimum(tree.depth[common] + 1, tree.max_depth)
    side_u = np.where(tree.depth[cu] > tree.depth[common], tree.anc[cu, below], -1)
    side_v = np.where(tree.depth[cv] > tree.depth[common], tree.anc[cv, below], -1)
    # gates: from a sibling cluster or a node (-1 - node), into a cluster or a node
    crossing = (side_u >= 0) | (side_v >= 0)
    origin = np.where(side_u >= 0, side_u, -1 - src)[crossing]
    target = np.where(side_v >= 0, side_v, -1 - dst)[crossing]
    pairs = np.unique(np.column_stack([origin, target]), axis=0) if len(origin) else origin
    edges_src = [src]
    edges_dst = [dst]
    lengths = [np.ones(len(src), np.int64)]
    if len(pairs):
        members = _members(of_node, tree)
        used = np.zeros(k, bool)
        used[of_node] = True
        nested = np.zeros(k, np.int64)  # how deep each cluster's own clusters go
        for d in range(tree.max_depth + 1):
            a = tree.anc[:, d]
            ok = used & (a >= 0)
            np.maximum.at(nested, a[ok], tree.depth[ok] - d)
        gate = n + np.arange(len(pairs))
        for column, into in ((0, False), (1, True)):
            side = pairs[:, column]
            nodes, owner = _expand(side, members)
            if into:
                extra = np.where(side >= 0, nested[np.maximum(side, 0)] > 0, 0)
                edges_src.append(gate[owner])
                edges_dst.append(nodes)
                lengths.append(1 + extra[owner].astype(np.int64))
            else:
                edges_src.append(nodes)
                edges_dst.append(gate[owner])
                lengths.append(np.zeros(len(nodes), np.int64))
    start = np.concatenate([layer, np.full(len(pairs), -np.inf)])
    found = _longest_path(
        start, np.concatenate(edges_src), np.concatenate(edges_dst), np.concatenate(lengths)
    )
    if found is None:  # (scope instances run one after another: their flow has no cycle)
        return layer
    return found[:n].astype(np.int64)


def _members(of_node: NDArray[np.int64], tree: ClusterTree) -> tuple[NDArray, NDArray]:
    """Every cluster's nodes, its sub-clusters' included: (CSR offsets by cluster, nodes)."""
    k = len(tree.parent)
    clusters, nodes = [], []
    for d in range(1, tree.max_depth + 1):
        a = tree.anc[of_node, d]
        ok = np.flatnonzero(a >= 0)
        clusters.append(a[ok])
        nodes.append(ok)
    c = np.concatenate(clusters) if clusters else np.zeros(0, np.int64)
    v = np.concatenate(nodes) if nodes else np.zeros(0, np.int64)
    order = np.argsort(c, kind="stable")
    return np.concatenate([[0], np.cumsum(np.bincount(c, minlength=k))]), v[order]


def _expand(side: NDArray[np.int64], members: tuple[NDArray, NDArray]) -> tuple[NDArray, NDArray]:
    """The nodes of each entry of ``side`` (a cluster's members, or the node ``-1 - side``),
    and the entry each comes from."""
    offsets, nodes = members
    is_cluster = side >= 0
    c = np.maximum(side, 0)
    count = np.where(is_cluster, offsets[c + 1] - offsets[c], 1)
    owner = np.repeat(np.arange(len(side)), count)
    at = ranges(np.where(is_cluster, offsets[c], 0), np.where(is_cluster, count, 0))
    out = np.empty(int(count.sum()), np.int64)
    mine = is_cluster[owner]
    out[mine] = nodes[at]
    out[~mine] = -1 - side[owner[~mine]]
    return out, owner


def pulled_sources(
    layer: NDArray[np.int64],
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    of_node: NDArray[np.int64],
) -> NDArray[np.int64]:
    """``layer`` with each source (a node without inputs: a parameter, a target) moved down to
    just above its first consumer when every consumer is in its own cluster: stacking moved
    the consumers down and left it far above them (a long edge that keeps rows apart). A source
    feeding another cluster stays where it is: it must be above that cluster's frame."""
    n = len(layer)
    has_input = np.zeros(n, bool)
    has_input[dst] = True
    apart = np.zeros(n, bool)
    np.logical_or.at(apart, src, of_node[src] != of_node[dst])
    first = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(first, src, layer[dst])
    pull = ~has_input & ~apart & (first < np.iinfo(np.int64).max)
    return np.where(pull, np.maximum(layer, first - 1), layer)


def frame_extents(
    y: NDArray[np.float64], clusters: Clusters, tree: ClusterTree
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The top and bottom of each cluster's frame when its real nodes are at heights ``y``:
    around their boxes and the frames nested in it, padded, with the title strip on top
    (as :mod:`viewer.model.scene.frames` draws them); inf and -inf for a cluster without
    nodes."""
    k = len(tree.parent)
    top = np.full(k, np.inf)
    bottom = np.full(k, -np.inf)
    np.minimum.at(top, clusters.of_node, y - clusters.half_height)
    np.maximum.at(bottom, clusters.of_node, y + clusters.half_height)
    for c in np.argsort(-tree.depth, kind="stable").tolist():  # innermost first
        if c == 0 or not np.isfinite(top[c]):
            continue
        top[c] -= clusters.pad + clusters.title
        bottom[c] += clusters.pad
        p = tree.parent[c]
        top[p] = min(top[p], top[c])
        bottom[p] = max(bottom[p], bottom[c])
    return top, bottom


def cluster_of_items(
    graph: LayeredGraph, clusters: Clusters, tree: ClusterTree, layer_gap: float
) -> NDArray[np.int64]:
    """The cluster of every node, real and virtual. A virtual node of an edge is inside the
    frames around the edge's target whose top is above it (the edge enters a frame at its top
    and runs down inside it), else inside those around its source whose bottom is below it,
    else in the innermost cluster holding both ends; a node on several edges (a
    shared trunk), in the innermost cluster common to what each of them says."""
    n, n_total = graph.n, graph.n_total
    cl = np.zeros(n_total, np.int64)
    cl[:n] = clusters.of_node
    if n_total == n:
        return cl
    layer = graph.layer
    top, bottom = frame_extents(layer[:n] * layer_gap, clusters, tree)
    span = layer[graph.dst] - layer[graph.src]
    long = np.flatnonzero(span > 1)
    counts = span[long] - 1
    ids = ranges(graph.chain[long], counts)
    cu = np.repeat(cl[graph.src[long]], counts)
    cv = np.repeat(cl[graph.dst[long]], counts)
    chosen = edge_point_cluster(tree, cu, cv, layer[ids] * layer_gap, top, bottom)
    cl[n:] = tree.common(ids, chosen, n_total)[n:]
    return cl


def edge_point_cluster(
    tree: ClusterTree,
    cu: NDArray[np.int64],
    cv: NDArray[np.int64],
    y: NDArray[np.float64],
    top: NDArray[np.float64],
    bottom: NDArray[np.float64],
) -> NDArray[np.int64]:
    """The cluster of each point at height ``y`` on an edge from cluster ``cu`` to ``cv``: the
    innermost frame around the target whose ``top`` is above it (the edge enters a frame at
    its top and runs down inside it), else the innermost around the source whose ``bottom``
    is below it, else the innermost around both ends. The layout places its virtual nodes by
    this rule, and the scene's frames take in the edges' bends by it."""
    common = tree.lca(cu, cv)
    deep = tree.depth[common]
    chosen = np.full(len(y), -1, np.int64)
    for side, edge, sign in ((cv, top, 1.0), (cu, bottom, -1.0)):
        for d in range(tree.max_depth, 0, -1):  # the innermost frame first
            a = tree.anc[side, d]
            ok = (chosen < 0) & (d > deep) & (a >= 0)
            ok &= sign * edge[np.maximum(a, 0)] < sign * y  # a top above, a bottom below
            chosen[ok] = a[ok]
    return np.where(chosen >= 0, chosen, common)


def cluster_ranks(
    layer: NDArray[np.int64], pos: NDArray[np.int64], cl: NDArray[np.int64], tree: ClusterTree
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The ordering ``pos`` (rank in layer of every node) sorted by the cluster tree, and each
    cluster's place among its siblings (smaller: to the left in every layer)."""
    n_total = len(layer)
    k = len(tree.parent)
    size = np.bincount(layer)
    q = (pos + 0.5) / size[layer]
    # a cluster's key: the mean place of every node inside it
    total = np.zeros(k)
    count = np.zeros(k)
    for d in range(1, tree.max_depth + 1):
        a = tree.anc[cl, d]
        ok = a >= 0
        total += np.bincount(a[ok], weights=q[ok], minlength=k)
        count += np.bincount(a[ok], minlength=k)
    key = np.where(count > 0, total / np.maximum(count, 1), 0.0)
    # one (key, id) pair per depth: the ancestor's down to the node's cluster, then the node's
    # own (its place, an id past the clusters'), then zeros
    depth = tree.depth[cl]
    columns: list[NDArray] = []
    for d in range(1, tree.max_depth + 2):
        a = tree.anc[cl, d] if d <= tree.max_depth else np.full(n_total, -1)
        mine = d == depth + 1
        columns.append(np.where(a >= 0, key[np.maximum(a, 0)], np.where(mine, q, 0.0)))
        columns.append(np.where(a >= 0, a, np.where(mine, k + np.arange(n_total), 0)))
    order = np.lexsort(columns[::-1]) if columns else np.arange(n_total)
    rank = np.empty(n_total, np.int64)
    rank[order] = np.arange(n_total)
    by_layer = np.lexsort((rank, layer))
    start = np.concatenate([[0], np.cumsum(size)])
    new_pos = np.empty(n_total, np.int64)
    new_pos[by_layer] = np.arange(n_total) - start[layer[by_layer]]
    # clusters in sibling order: by their key, then id (the sort above used the same pairs)
    cluster_rank = np.empty(k, np.int64)
    cluster_rank[np.lexsort((np.arange(k), key))] = np.arange(k)
    return new_pos, cluster_rank


def separate(
    graph: LayeredGraph,
    pos: NDArray[np.int64],
    x: NDArray[np.float64],
    widths: NDArray[np.float64],
    node_gap: float,
    layer_gap: float,
    clusters: Clusters,
    tree: ClusterTree,
    cl: NDArray[np.int64],
    cluster_rank: NDArray[np.int64],
) -> NDArray[np.float64]:
    """``x`` (every node's, real and virtual) pushed right until no frame overlaps a node or a
    frame outside it (see the module docstring); ``x`` as it is if the constraints have no
    order (an ordering that is not cluster-consistent)."""
    n, n_total = graph.n, graph.n_total
    k = len(tree.parent)
    pad = clusters.pad
    width = np.concatenate([widths, np.zeros(n_total - n)])
    virtual = np.arange(n_total) >= n
    # the layers each frame reaches into
    half = clusters.half_height
    top, bottom = frame_extents(graph.layer[:n] * layer_gap, clusters, tree)
    h = int(graph.layer.max()) + 1
    band = np.zeros(h)
    np.maximum.at(band, graph.layer[:n], half)
    # per cluster, the layers holding one of its nodes (or a sub-cluster's)
    present = np.zeros((k, h), bool)
    for d in range(1, tree.max_depth + 1):
        a = tree.anc[cl, d]
        ok = a >= 0
        present[a[ok], graph.layer[ok]] = True
    phantoms: list[tuple[int, int]] = []  # (cluster, layer): a frame without a node there
    centres = np.arange(h) * layer_gap
    for c in range(1, k):
        if not np.isfinite(top[c]):
            continue
        reached = (centres + band > top[c]) & (centres - band < bottom[c]) & ~present[c]
        phantoms += [(c, int(layer)) for layer in np.flatnonzero(reached)]
    # the sequence of each layer, phantoms placed after the last node that precedes their
    # cluster (at the level where the two part)
    rows: list[list[int]] = [[] for _ in range(h)]
    for i in np.lexsort((pos, graph.layer)).tolist():
        rows[int(graph.layer[i])].append(i)
    item_cl = list(cl.tolist())
    item_w = list(width.tolist())
    item_virtual = list(virtual.tolist())
    for j, (c, layer) in enumerate(phantoms):
        row = rows[layer]
        at = 0
        if row:
            rel = _relation(np.asarray([item_cl[i] for i in row]), c, tree, cluster_rank)
            before = np.flatnonzero(rel < 0)
            at = int(before[-1]) + 1 if len(before) else 0
        row.insert(at, n_total + j)
        item_cl.append(c)
        item_w.append(0.0)
        item_virtual.append(True)
    n_items = n_total + len(phantoms)
    left_of = n_items  # variable L_c: n_items + c; R_c: n_items + k + c
    right_of = n_items + k
    anc = tree.anc
    depth = tree.depth.tolist()
    src: list[int] = []
    dst: list[int] = []
    gap: list[float] = []

    def path(c: int) -> list[int]:
        return [int(a) for a in anc[c, 1 : depth[c] + 1]]

    paths = {c: path(c) for c in set(item_cl)}
    half_gap = node_gap / 2

    def constrain(a: int, b: int, space: float) -> None:
        src.append(a)
        dst.append(b)
        gap.append(space)

    # L_c and R_c are frame c's left and right sides: a node is ``pad`` inside the frame that
    # holds it, a frame ``pad`` inside its parent's, and what is beside a frame half a node
    # gap from it
    for row in rows:
        prev = -1
        prev_path: list[int] = []
        for i in [*row, -1]:
            here = paths[item_cl[i]] if i >= 0 else []
            common = 0
            while common < min(len(prev_path), len(here)) and prev_path[common] == here[common]:
                common += 1
            leaving, entering = prev_path[common:], here[common:]
            at = prev  # the left end of what comes next: the previous node, or a frame's side
            if prev >= 0 and leaving:
                constrain(prev, right_of + leaving[-1], item_w[prev] / 2 + pad)
                for inner, outer in zip(leaving[::-1], leaving[-2::-1], strict=False):
                    constrain(right_of + inner, right_of + outer, pad)
                at = right_of + leaving[0]
            if entering:
                if at >= 0:
                    near = item_w[at] / 2 if at == prev else 0.0
                    constrain(at, left_of + entering[0], near + half_gap)
                for outer, inner in itertools.pairwise(entering):
                    constrain(left_of + outer, left_of + inner, pad)
                if i >= 0:
                    constrain(left_of + entering[-1], i, pad + item_w[i] / 2)
            elif i >= 0 and at >= 0:
                if at == prev:  # two nodes of one frame: assign_x's own separation
                    both = 0.5 if (item_virtual[prev] or item_virtual[i]) else 1.0
                    constrain(prev, i, item_w[prev] / 2 + item_w[i] / 2 + node_gap * both)
                else:  # out of a frame, to a node beside it
                    constrain(at, i, half_gap + item_w[i] / 2)
            prev, prev_path = i, here
    # pushed right from where assign_x put them, and pushed left: the mean of the two keeps
    # every constraint (they are linear) and moves nothing one way only (a run of frames
    # would otherwise drift right, each a little more than the one before)
    free = np.full(n_items - n_total + 2 * k, -np.inf)
    tail, head, space = np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(gap)
    right = _longest_path(np.concatenate([x, free]), tail, head, space)
    left = _longest_path(np.concatenate([-x, free]), head, tail, space)
    if right is None or left is None:
        return x
    with np.errstate(invalid="ignore"):  # (a side no constraint reaches: -inf twice, NaN)
        value = (right - left) / 2
    return _straightened(graph, value, tail, head, space)[:n_total]


def _straightened(
    graph: LayeredGraph,
    value: NDArray[np.float64],
    tail: NDArray[np.int64],
    head: NDArray[np.int64],
    space: NDArray[np.float64],
) -> NDArray[np.float64]:
    """``value`` with each long edge's virtual nodes on one vertical where the constraints
    allow it: pushed apart layer by layer, a long edge zig-zags around the nodes beside it
    (right of a weight's transpose in one layer, back in the next). Each chain goes to the x
    nearest its nodes' mean that every one of them may take, the rest held where it is
    (one node per layer in a chain: no constraint joins two of them); a chain with no such x
    stays as it is."""
    n, n_total = graph.n, graph.n_total
    if n_total - n < 2:
        return value
    lo = np.full(len(value), -np.inf)
    hi = np.full(len(value), np.inf)
    np.fmax.at(lo, head, value[tail] + space)  # (fmax: a NaN side bounds nothing)
    np.fmin.at(hi, tail, value[head] - space)
    ids = np.arange(n, n_total)
    # a chain goes on where a virtual node's segment comes down from the one before it
    goes_on = (graph.top[: len(ids)] == ids - 1) & (ids - 1 >= n)
    starts = np.flatnonzero(~goes_on)
    if len(starts) == len(ids):  # no chain longer than one node
        return value
    floor = np.maximum.reduceat(lo[ids], starts)
    ceiling = np.minimum.reduceat(hi[ids], starts)
    sizes = np.diff(np.append(starts, len(ids)))
    mean = np.add.reduceat(value[ids], starts) / sizes
    at = np.clip(mean, floor, np.maximum(floor, ceiling))
    moved = np.repeat((sizes > 1) & (floor <= ceiling + 1e-9), sizes)
    out = value.copy()
    out[ids[moved]] = np.repeat(at, sizes)[moved]
    return out


def _relation(
    item_cl: NDArray[np.int64], c: int, tree: ClusterTree, cluster_rank: NDArray[np.int64]
) -> NDArray[np.int64]:
    """For nodes of clusters ``item_cl`` and cluster ``c`` (which holds none of them): -1 where
    the node's side precedes ``c`` among the children of their common ancestor, +1 where it
    follows, 0 for a node of that ancestor itself (free to go either side)."""
    cs = np.full(len(item_cl), c)
    common = tree.lca(item_cl, cs)
    below = tree.depth[common] + 1
    mine = np.where(
        tree.depth[item_cl] >= below, tree.anc[item_cl, np.minimum(below, tree.max_depth)], -1
    )
    theirs = tree.anc[cs, np.minimum(below, tree.max_depth)]
    rel = np.where(cluster_rank[np.maximum(mine, 0)] < cluster_rank[theirs], -1, 1)
    return np.where(mine < 0, 0, rel)


def _longest_path(
    lower: NDArray[np.float64],
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    gap: NDArray[np.float64],
) -> NDArray[np.float64] | None:
    """The smallest values at least ``lower`` with ``value[dst] >= value[src] + gap`` for every
    constraint; None when the constraints have a cycle."""
    m = len(lower)
    order = np.argsort(src, kind="stable")
    src, dst, gap = src[order], dst[order], gap[order]
    starts = np.searchsorted(src, np.arange(m + 1)).tolist()
    indegree = np.bincount(dst, minlength=m).tolist()
    value = lower.tolist()
    dst_list, gap_list = dst.tolist(), gap.tolist()
    ready = deque(v for v in range(m) if indegree[v] == 0)
    done = 0
    while ready:
        u = ready.popleft()
        done += 1
        here = value[u]
        for e in range(starts[u], starts[u + 1]):
            v = dst_list[e]
            reach = here + gap_list[e]
            if reach > value[v]:
                value[v] = reach
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    if done != m:
        return None
    return np.asarray(value)
