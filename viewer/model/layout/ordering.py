"""Phases 2 and 3 of :mod:`viewer.model.layout.layered`: virtual nodes and the ordering in layers.

Virtual nodes go on every edge that spans more than one layer (for huge graphs the long edges
leaving one node share a trunk). The ordering is barycenter sweeps down and up, the one with
the fewest crossings kept, then odd-even adjacent transpositions; crossings between adjacent
layers are counted here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from viewer.model.layout.layering import concat_ranges

if TYPE_CHECKING:
    from viewer.model.layout.layered import _Ticker


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
            right = left + 1 + concat_ranges(np.zeros(m, np.int64), after)
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
    k = concat_ranges(np.zeros(len(v), np.int64), combos)
    dwp = dw[pair]
    pa = pos[side.other[side.ptr[v][pair] + k // dwp]]
    pb = pos[side.other[side.ptr[w][pair] + k % dwp]]
    return np.bincount(pair, weights=np.sign(pa - pb), minlength=len(v)).astype(np.int64)
