"""The chain rule along paths: every path from the graph's output down to a node, the local
derivative of each edge on it (for the element in focus) and their product; the products sum
to the node's gradient.

For the UI: ``Chain.text`` is the line the inspector shows, as the seed writes it
(``∂y/∂x = ∂y/∂y · ∂y/∂b · ∂b/∂a · ∂a/∂x = 1 × 2.718 × … = …``); ``ChainPath.nodes`` runs
from the output down to the node (variables and functions alternating), so each factor can be
linked to its nodes. When no per-path product can be given (non-elementwise arrays), ``paths``
is empty and ``text`` says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Chain", "ChainPath", "chain"]


@dataclass(frozen=True)
class ChainPath:
    """One path from the output down to the node."""

    nodes: tuple[int, ...]  # output variable ... node, functions between
    factors: tuple[float, ...]  # one local derivative per function on the path
    labels: tuple[str, ...]  # '∂b/∂a' per factor
    product: float


@dataclass(frozen=True)
class Chain:
    """The paths to ``node``, largest first, and their sum."""

    node: int
    paths: tuple[ChainPath, ...]
    total: float
    more: int  # paths not listed, summed into total
    text: str


def chain(
    trace: Any, node_id: int, focus: tuple[int, ...] | None = None, max_paths: int = 5
) -> Chain:
    """The chain-rule paths from the output of the graph down to ``node_id``."""
    return Chain(node_id, (), 0.0, 0, "")
