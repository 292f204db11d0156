"""Marks drawn on nodes besides their state (leak badges, the first NaN/Inf, gradient-check
error colours), kept by trace node id for one graph."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from viewer.model.scene.colours import error_colour

__all__ = ["NodeOverlays", "Overlay"]

RGBA = tuple[int, int, int, int]


@dataclass(frozen=True)
class Overlay:
    """A mark the view draws on a node besides its state: a leak badge, a NaN flag, a
    gradient-check error colour. ``kind`` groups overlays ('leak', 'nonfinite', 'gradcheck')."""

    kind: str
    badge: str
    color: RGBA
    tooltip: str = ""


class NodeOverlays(Mapping[int, tuple[Overlay, ...]]):
    """node id -> that node's overlays, at most one of each kind, in the order they were set."""

    def __init__(self) -> None:
        self._by_node: dict[int, tuple[Overlay, ...]] = {}

    def __getitem__(self, node_id: int) -> tuple[Overlay, ...]:
        return self._by_node[node_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._by_node)

    def __len__(self) -> int:
        return len(self._by_node)

    def set(self, node_id: int, overlay: Overlay) -> None:
        """Add ``overlay`` on ``node_id``, replacing one of the same kind."""
        kept = tuple(o for o in self._by_node.get(int(node_id), ()) if o.kind != overlay.kind)
        self._by_node[int(node_id)] = (*kept, overlay)

    def clear(self, kind: str | None = None) -> None:
        """Drop the overlays of ``kind`` (all of them with None)."""
        if kind is None:
            self._by_node.clear()
            return
        for nid in list(self._by_node):
            kept = tuple(o for o in self._by_node[nid] if o.kind != kind)
            if kept:
                self._by_node[nid] = kept
            else:
                del self._by_node[nid]

    def recolour(self, old: RGBA, new: RGBA) -> None:
        """Give every overlay drawn in ``old`` the colour ``new`` (a palette's error colour
        when the theme changes)."""
        if old == new:
            return
        for nid, overlays in self._by_node.items():
            self._by_node[nid] = tuple(
                replace(o, color=new) if o.color == old else o for o in overlays
            )

    def flag(
        self,
        node_ids: Sequence[int],
        kind: str,
        badge: str,
        colour: RGBA,
        tooltips: Sequence[str] = (),
    ) -> None:
        """Make the overlays of ``kind`` exactly one per node of ``node_ids``, in ``colour``."""
        self.clear(kind)
        for k, nid in enumerate(node_ids):
            tip = tooltips[k] if k < len(tooltips) else ""
            self.set(int(nid), Overlay(kind, badge, colour, tip))

    def set_errors(self, errors: Mapping[int, float], kind: str = "gradcheck") -> None:
        """Make the overlays of ``kind`` one per node of ``errors`` (node id -> relative
        error), coloured green below 1e-6, amber below 1e-3, red above."""
        self.clear(kind)
        for nid, error in errors.items():
            colour = error_colour(error)
            self.set(int(nid), Overlay(kind, f"{error:.1e}", colour, f"error {error:.3g}"))

    def arrays(
        self, kind: str, index_of: Callable[[int], int]
    ) -> tuple[NDArray[np.intp], NDArray[np.uint8], list[str]]:
        """(node indexes, (k, 4) RGBA colours, badges) of the overlays of ``kind`` on the nodes
        that ``index_of`` (node id -> index, -1 if not shown) finds."""
        indexes, colours, badges = [], [], []
        for nid, overlays in self._by_node.items():
            i = index_of(nid)
            for o in overlays:
                if o.kind == kind and i >= 0:
                    indexes.append(i)
                    colours.append(o.color)
                    badges.append(o.badge)
        return (
            np.asarray(indexes, dtype=np.intp),
            np.asarray(colours, dtype=np.uint8).reshape(-1, 4),
            badges,
        )
