"""Where the badges of flagged nodes go on screen, so that none hides another or a node's text.

A badge (a leak's ``held``, a problem's ``dead-relu``) is a pill of a fixed size in device
pixels, while the nodes scale with the zoom: zoomed out, the badges of two adjacent nodes (a
ReLU and its output) would sit on top of each other and on the boxes between them.
:func:`place_badges` tries a few spots around a badge's node, in a fixed order (the top right
corner first, where a badge has always been looked for), and takes the first one that overlaps
no badge placed before it and no node's box (a box holds its node's text). When every spot is
taken and a badge with the same text was placed next to it (the ReLU and its output, both
``dead-relu``), the two share that one badge; otherwise it climbs a few places above its
corner, and only when those are taken too does it go back to the corner, over what is there.

Everything here is in device pixels, as (left, top, right, bottom) rows: the view measures the
text and maps the boxes; this module only decides. No Qt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["GAP", "STACK", "badge_reach", "place_badges", "spots"]

#: Pixels kept between a badge and what it must not touch.
GAP = 2.0
#: How many places above its corner a badge may climb when the spots around its node are taken
#: (further up, it would read as the badge of the node above).
STACK = 3
# How many of spots()' places are around the node (the rest climb above it).
_AROUND = 6
# The share of a corner badge's width that reaches past its ring's side (the pill sits on
# the ring's corner, the way the nesting rings' badges always did).
_OUTSIDE = 0.4


def spots(
    ring: tuple[float, float, float, float],
    box: tuple[float, float, float, float],
    width: float,
    height: float,
) -> list[tuple[float, float, float, float]]:
    """The places a ``width`` x ``height`` badge may take around a node (its ``box``, its
    ``ring`` drawn around it), best first: on the ring's top right and top left corners, beside
    the box on the right and on the left, on the bottom corners, then climbing above the top
    right corner. Each keeps ``GAP`` away from the box."""
    left, _, right, _ = ring
    b_top, b_bottom = box[1], box[3]
    middle = (b_top + b_bottom) / 2 - height / 2
    above = b_top - GAP - height
    corner_right = right - (1 - _OUTSIDE) * width
    corner_left = left - _OUTSIDE * width
    xy = [
        (corner_right, above),
        (corner_left, above),
        (max(right, box[2]) + GAP, middle),
        (min(left, box[0]) - GAP - width, middle),
        (corner_right, b_bottom + GAP),
        (corner_left, b_bottom + GAP),
    ]
    xy += [(corner_right, above - k * (height + GAP)) for k in range(1, STACK + 1)]
    return [(x, y, x + width, y + height) for x, y in xy]


def badge_reach(widths: ArrayLike, height: float) -> float:
    """How far (pixels) past its ring a badge may reach, at most: what the view adds around
    the flagged nodes when it says which part of the screen it paints."""
    widest = float(np.max(widths)) if np.size(widths) else 0.0
    return max(widest + 2 * GAP, (STACK + 1) * (height + GAP) + GAP)


class _Grid:
    """Rectangles filed by the square cells they cover, so a query looks at its neighbours
    only."""

    def __init__(self, cell: float) -> None:
        self.cell = cell
        self.cells: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}

    def _keys(self, rect: tuple[float, float, float, float]) -> list[tuple[int, int]]:
        """The cells ``rect`` grown by ``GAP`` covers."""
        c = self.cell
        cols = range(math.floor((rect[0] - GAP) / c), math.floor((rect[2] + GAP) / c) + 1)
        rows = range(math.floor((rect[1] - GAP) / c), math.floor((rect[3] + GAP) / c) + 1)
        return [(i, j) for i in cols for j in rows]

    def add(self, rect: tuple[float, float, float, float]) -> None:
        for key in self._keys(rect):
            self.cells.setdefault(key, []).append(rect)

    def hits(self, rect: tuple[float, float, float, float]) -> bool:
        """Whether ``rect`` comes closer than ``GAP`` to a filed rectangle (overlapping it
        included)."""
        left, top, right, bottom = rect
        g = GAP - 1e-9
        cells = self.cells
        for key in self._keys(rect):
            for o in cells.get(key, ()):
                if left < o[2] + g and o[0] < right + g and top < o[3] + g and o[1] < bottom + g:
                    return True
        return False


def place_badges(
    rings: ArrayLike,
    boxes: ArrayLike,
    texts: Sequence[str],
    widths: ArrayLike,
    obstacles: ArrayLike,
    height: float,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """(k, 4) pills for k badges, and which of them to draw (k,): badge i reads ``texts[i]``,
    is ``widths[i]`` wide and ``height`` high, and belongs to the node with box ``boxes[i]``
    drawn with the ring ``rings[i]`` around it. ``obstacles`` (m, 4): the node boxes no badge
    may cover (the badges' own nodes among them). In the order given (an earlier badge keeps
    the better spot), a badge takes the first of its places around its node (:func:`spots`)
    clear of the obstacles and of the badges placed before it; else it shares the pill of an
    earlier badge with its text that is that near (not drawn: its pill is that one); else the
    first clear place above its corner; else its top right corner."""
    rings = np.asarray(rings, dtype=np.float64).reshape(-1, 4)
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    widths = np.asarray(widths, dtype=np.float64).reshape(-1)
    obstacles = np.asarray(obstacles, dtype=np.float64).reshape(-1, 4)
    k = len(rings)
    placed = np.zeros((k, 4), dtype=np.float64)
    drawn = np.ones(k, dtype=bool)
    if k == 0:
        return placed, drawn
    ring_rows, box_rows, width_list = rings.tolist(), boxes.tolist(), widths.tolist()
    candidates = [
        spots(tuple(ring_rows[i]), tuple(box_rows[i]), width_list[i], float(height))
        for i in range(k)
    ]
    # only the obstacles near some badge matter: those crossing the candidates' extent
    every = np.asarray([s for c in candidates for s in c], dtype=np.float64)
    lo, hi = every[:, :2].min(axis=0) - GAP, every[:, 2:].max(axis=0) + GAP
    near = (
        (obstacles[:, 2] > lo[0])
        & (obstacles[:, 0] < hi[0])
        & (obstacles[:, 3] > lo[1])
        & (obstacles[:, 1] < hi[1])
    )
    cell = max(64.0, 2.0 * float(height), float(widths.max()))
    boxes_grid, badges_grid = _Grid(cell), _Grid(cell)
    # a box far bigger than the screen is filed only where the badges may go
    clipped = np.concatenate(
        [np.maximum(obstacles[near, :2], lo), np.minimum(obstacles[near, 2:], hi)], 1
    )
    for rect in clipped.tolist():
        boxes_grid.add(tuple(rect))

    def clear(spot: tuple[float, float, float, float]) -> bool:
        return not boxes_grid.hits(spot) and not badges_grid.hits(spot)

    for i, options in enumerate(candidates):
        chosen = next((s for s in options[:_AROUND] if clear(s)), None)
        if chosen is None:
            twin = _twin(placed[:i][drawn[:i]], np.flatnonzero(drawn[:i]), options, texts, i)
            if twin >= 0:
                placed[i], drawn[i] = placed[twin], False
                continue
            chosen = next((s for s in options[_AROUND:] if clear(s)), options[0])
        badges_grid.add(chosen)
        placed[i] = chosen
    return placed, drawn


def _twin(
    pills: NDArray[np.float64],
    index: NDArray[np.intp],
    options: list[tuple[float, float, float, float]],
    texts: Sequence[str],
    i: int,
) -> int:
    """The first drawn badge (``pills``, their indexes ``index``) with badge i's text whose
    pill lies within the places around badge i's node (``options``), or -1."""
    around = np.asarray(options[:_AROUND])
    lo, hi = around[:, :2].min(axis=0), around[:, 2:].max(axis=0)
    for pill, j in zip(pills, index.tolist(), strict=True):
        if texts[j] != texts[i]:
            continue
        if pill[0] < hi[0] and lo[0] < pill[2] and pill[1] < hi[1] and lo[1] < pill[3]:
            return j
    return -1
