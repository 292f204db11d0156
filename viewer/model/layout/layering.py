"""Phase 1 of :mod:`viewer.model.layout.layered`: layers of minimum total edge span.

The network simplex of Gansner et al. (as dot does), started from a longest-path layering
improved by vectorised single-node moves so that few pivots remain; for huge graphs it stops at
a work budget (its layering is valid at every step). ``layers=`` given by the caller is checked
here instead.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from viewer.model.layout.arrays import ranges
from viewer.model.layout.progress import Ticker

_SIMPLEX_WORK = 500  # per node: renumbering budget of the network simplex (huge graphs only)


def components(n: int, src: NDArray[np.int64], dst: NDArray[np.int64]) -> NDArray[np.int64]:
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


def checked_layers(
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


def longest_path_layers(
    n: int,
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    start: NDArray[np.int64] | None = None,
) -> NDArray[np.int64]:
    """Each node one layer below its deepest predecessor, or in layer ``start[i]`` (default 0)
    when that is deeper (Kahn's order, no recursion)."""
    order = np.argsort(src, kind="stable")
    succ = dst[order].tolist()
    ptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n))]).tolist()
    indeg = np.bincount(dst, minlength=n).tolist()
    layer = [0] * n if start is None else [int(s) for s in start]
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
    label = components(n, src[tight], dst[tight])
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

    def solve(self, max_pivots: int, max_work: int, ticker: Ticker) -> NDArray[np.int64]:
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
        edges = self.incident[ranges(starts, self.incident_ptr[side + 1] - starts)]
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
        new_sub = np.concatenate([at[ranges(begin, end - begin)], nodes[::-1]])

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


HUB_CONSUMERS = 16
HUB_VIRTUAL = 20_000


def hubs(
    n: int, src: NDArray[np.int64], dst: NDArray[np.int64], layer: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """The hubs of a layering: nodes with at least HUB_CONSUMERS consumers whose edges, and
    the consumers' own out-edges, span more than max(HUB_VIRTUAL, n) layers in all (a weight
    used at every step of a long loop). Without help, they cost O(n^2) virtual nodes."""
    degree = np.bincount(src, minlength=n)
    if len(src) == 0 or degree.max() < HUB_CONSUMERS:
        return np.zeros(n, bool)
    extra = layer[dst] - layer[src] - 1
    onward = np.bincount(src, weights=extra, minlength=n)  # each node's own out-edges
    reach = np.bincount(src, weights=extra + onward[dst], minlength=n)
    return (degree >= HUB_CONSUMERS) & (reach > max(HUB_VIRTUAL, n))


def hub_pendants(
    n: int, src: NDArray[np.int64], dst: NDArray[np.int64], hub: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """What hangs off a hub: a node fed only by hubs and by leaves of its own (``x * c``),
    and a node whose one input is such a node (its output). Placement keeps a chain's
    alignment through the chain's own nodes, not through these."""
    if not hub.any():
        return np.zeros(n, bool)
    first, _ = _fed_by_hubs(n, src, dst, hub)
    indeg = np.bincount(dst, minlength=n)
    after = np.zeros(n, bool)
    after[dst[first[src]]] = True
    return first | (after & (indeg == 1))


def _fed_by_hubs(
    n: int, src: NDArray[np.int64], dst: NDArray[np.int64], hub: NDArray[np.bool_]
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """The nodes (not hubs) fed only by hubs and by leaves of their own (``x * c``), and
    those own leaves: a leaf with one consumer."""
    indeg, outdeg = np.bincount(dst, minlength=n), np.bincount(src, minlength=n)
    own_leaf = (indeg == 0) & (outdeg == 1)
    fed = np.zeros(n, bool)
    fed[dst[hub[src]]] = True
    other_input = np.zeros(n, bool)
    other_input[dst[~(hub[src] | own_leaf[src])]] = True
    return fed & ~other_input & ~hub, own_leaf


def _sink_hub_consumers(
    n: int,
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    layer: NDArray[np.int64],
    hub: NDArray[np.bool_],
) -> NDArray[np.int64]:
    """Move each node fed only by hubs and by leaves of its own (a constant) down to just
    above its first successor, its leaves with it: the long edges are then the hub's. The
    simplex would get there too, but not within its work budget on a loop of thousands of
    steps."""
    fed, own_leaf = _fed_by_hubs(n, src, dst, hub)
    big = np.iinfo(np.int64).max // 4
    limit = np.full(n, big)
    np.minimum.at(limit, src, layer[dst] - 1)
    move = fed & (limit < big) & (limit > layer)
    layer = np.where(move, limit, layer)
    leaf_edge = own_leaf[src] & move[dst]
    layer[src[leaf_edge]] = layer[dst[leaf_edge]] - 1
    return layer


def min_span_layers(
    n: int,
    src: NDArray[np.int64],
    dst: NDArray[np.int64],
    comp: NDArray[np.int64],
    ticker: Ticker,
) -> NDArray[np.int64]:
    layer = _promote(n, src, dst, longest_path_layers(n, src, dst))
    ticker.tick(0.05)
    if len(src) == 0:
        return np.zeros(n, np.int64)
    # a hub's edges weigh half the others: what it feeds sinks to where it is used, and the
    # long edges are the hub's, which then share one trunk (layered_graph)
    hub = hubs(n, src, dst, layer)
    if hub.any():
        layer = _sink_hub_consumers(n, src, dst, layer, hub)
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
    weight = np.where(hub[src], 1, 2) if hub.any() else np.ones(len(src), np.int64)
    w = np.concatenate([np.zeros(len(roots), np.int64), weight.astype(np.int64)])
    rank = np.concatenate([[layer.min() - 1], layer])
    rank = _feasible_tree(n + 1, s, d, rank)
    ticker.tick(0.08)
    simplex = _NetworkSimplex(n + 1, s, d, w, rank)
    rank = simplex.solve(10 * n + 100, _SIMPLEX_WORK * n + 1_000_000, ticker)[1:]
    top = np.full(n, big)
    np.minimum.at(top, comp, rank)
    return rank - top[comp]
