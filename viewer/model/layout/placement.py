"""Phase 4 of :mod:`viewer.model.layout.layered`: x coordinates (Brandes-Koepf) and edge polylines.

Four vertical alignments with a median neighbour (two for huge graphs), each compacted,
combined by their balanced median, or the candidate with the fewest straight-edge crossings
when that is cheap to count.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from viewer.model.layout.arrays import inversions
from viewer.model.layout.layered_graph import LayeredGraph
from viewer.model.layout.progress import Ticker

_SELECT_LIMIT = 20_000  # straight-edge pieces up to which the x candidates are compared
_FOUR_ALIGNMENTS = 100_000  # nodes (virtual included) up to which x uses all four alignments


def assign_x(
    graph: LayeredGraph,
    pos: NDArray[np.int64],
    widths: NDArray[np.float64],
    node_gap: float,
    ticker: Ticker,
    pendants: NDArray[np.bool_] | None = None,
) -> NDArray[np.float64]:
    """x of every node (real and virtual) for the ordering ``pos``; a node aligns with one of
    the ``pendants`` (real nodes hanging off a hub) only where it has no other neighbour."""
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

    pendant = None
    if pendants is not None and pendants.any():
        pendant = np.concatenate([pendants, np.zeros(n_total - n, bool)])[perm]
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
        if pendant is not None:
            main = ~pendant[other]
            keep = main | (np.bincount(me[main], minlength=n_total) == 0)[me]
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
            c = straight_crossings(x[real], graph.layer[:n], graph.src, graph.dst)
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


def straight_crossings(
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
    return inversions(gap, rank, max(1, int(rank.max()).bit_length()))


def edge_polylines(
    graph: LayeredGraph,
    x: NDArray[np.float64],
    layer_gap: float,
    edge_to_unique: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Flat points and offsets of one polyline per given edge (parallel edges repeat)."""
    span = graph.layer[graph.dst] - graph.layer[graph.src]
    # an edge routed short goes through its trunk's first and last virtual nodes only
    kept = np.where(graph.routed_short, np.minimum(span, 3), span)
    count = kept[edge_to_unique] + 1
    offsets = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
    owner = np.repeat(edge_to_unique, count)
    j = np.arange(int(count.sum())) - np.repeat(offsets[:-1], count)
    step = np.where(graph.routed_short[owner] & (j == 2) & (kept[owner] == 3), span[owner] - 1, j)
    node = np.where(
        j == 0,
        graph.src[owner],
        np.where(j == kept[owner], graph.dst[owner], graph.chain[owner] + step - 1),
    )
    points = np.column_stack([x[node], graph.layer[node] * float(layer_gap)])
    return points, offsets
