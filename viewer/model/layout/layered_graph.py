"""Phase 2 of :mod:`viewer.model.layout.layered`: virtual nodes, and the graph the later phases
share.

A :class:`LayeredGraph` holds the real nodes, then virtual nodes on every edge that spans more
than one layer, and the segments joining adjacent layers; ordering and placement read it. The
long edges leaving one node may share a trunk: for every node of a huge graph, and for a hub
(a shared input with many far consumers, such as a weight added at every step of a long loop),
whose own virtual nodes would otherwise grow with the square of the graph's depth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["LayeredGraph"]


@dataclass
class LayeredGraph:
    """Real nodes 0..n-1, then virtual nodes; ``top -> bottom`` segments join adjacent layers.

    Unique edge ``e`` passes through virtual nodes ``chain[e]``, ``chain[e] + 1``, ... (one
    per layer strictly between its ends). With shared trunks, the edges leaving one node share
    a single chain of virtual nodes that runs down to the deepest of them. ``routed_short[e]``:
    edge ``e`` leaves a hub's trunk, and is drawn through the trunk's ends only, so that the
    polylines of a hub's edges do not hold a point per layer each.
    """

    n: int
    layer: NDArray[np.int64]
    comp: NDArray[np.int64]
    top: NDArray[np.int64]
    bottom: NDArray[np.int64]
    src: NDArray[np.int64]
    dst: NDArray[np.int64]
    chain: NDArray[np.int64]
    routed_short: NDArray[np.bool_]

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
        hubs: NDArray[np.bool_],
    ) -> LayeredGraph:
        """``shared_trunks``: every node's long edges share a trunk; else only the ``hubs``'
        (a mask), whose edges are also routed short."""
        span = layer[dst] - layer[src]
        on_trunk = np.ones(len(src), bool) if shared_trunks else hubs[src]
        # chains: one per node (empty unless it is a trunk), then one per other edge
        length = np.zeros(n, np.int64)
        np.maximum.at(length, src[on_trunk], span[on_trunk] - 1)
        others = np.flatnonzero(~on_trunk)
        head = np.concatenate([np.arange(n), src[others]])
        length = np.concatenate([length, span[others] - 1])
        chain_of_edge = src.copy()
        chain_of_edge[others] = n + np.arange(len(others))
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
            routed_short=hubs[src],
        )
