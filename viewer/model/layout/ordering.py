"""Phase 3 of :mod:`viewer.model.layout.layered`: the ordering in layers.

Barycenter sweeps down and up over a :class:`LayeredGraph` (virtual nodes included), the
ordering with the fewest crossings kept, then odd-even adjacent transpositions; crossings
between adjacent layers are counted here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from viewer.model.layout.arrays import inversions, ranges
from viewer.model.layout.layered_graph import LayeredGraph
from viewer.model.layout.progress import Ticker


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


def order_layers(
    graph: LayeredGraph,
    sweeps: int,
    transpose_rounds: int,
    ticker: Ticker,
    regroup: Callable[[NDArray[np.int64]], NDArray[np.int64]] | None = None,
    groups: NDArray[np.int64] | None = None,
) -> tuple[NDArray[np.int64], int]:
    """Rank of every node within its layer (real and virtual), and its layer crossings.

    ``regroup`` (ranks -> ranks, by node) re-sorts the layers once the sweeps are done (the
    clusters of :mod:`viewer.model.layout.clusters`); the transpositions after it then swap
    only neighbours of one of the ``groups`` (a node's cluster), which keeps it."""
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
    if regroup is not None:
        pos = regroup(pos[new_id])[perm]
        best = counter.count(pos) if counter.cheap else -1
        if groups is not None:
            pair = comp_rank * (int(groups.max()) + 1) + groups[perm]
            comp_rank = np.unique(pair, return_inverse=True)[1].reshape(-1)
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
            right = left + 1 + ranges(np.zeros(m, np.int64), after)
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
        return inversions(self.gap[o], pos[self.bottom][o], self.bits)


def _transpose(
    order: NDArray[np.int64],
    pos: NDArray[np.int64],
    lay: NDArray[np.int64],
    start: NDArray[np.int64],
    ups: _Sides,
    downs: _Sides,
    comp_rank: NDArray[np.int64],
    ticker: Ticker,
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
    k = ranges(np.zeros(len(v), np.int64), combos)
    dwp = dw[pair]
    pa = pos[side.other[side.ptr[v][pair] + k // dwp]]
    pb = pos[side.other[side.ptr[w][pair] + k % dwp]]
    return np.bincount(pair, weights=np.sign(pa - pb), minlength=len(v)).astype(np.int64)
