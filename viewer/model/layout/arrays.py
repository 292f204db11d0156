"""Two vectorised operations on index arrays that the layout's phases (and the scope relayout)
share: :func:`ranges` expands (start, count) pairs, :func:`inversions` counts pairs out of
order within groups (crossings, once segments are sorted by one end)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["inversions", "ranges"]


def ranges(starts: NDArray[np.int64], counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """Concatenation of ``arange(s, s + c)`` for each (s, c)."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(counts)
    return np.repeat(starts - ends + counts, counts) + np.arange(total)


def inversions(group: NDArray[np.int64], value: NDArray[np.int64], bits: int) -> int:
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
