"""Node states over the playback steps: the state codes the view draws, and each node's
timeline (its state at each step where it may change)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autodiff.trace import NodeState, TraceReader

__all__ = [
    "STATE_CODES",
    "STATE_NAMES",
    "change_points",
    "node_timeline",
    "state_code",
]

STATE_NAMES: tuple[str, ...] = tuple(s.value for s in NodeState)
STATE_CODES = {s: i for i, s in enumerate(NodeState)}


def state_code(state: NodeState | str) -> int:
    """The code of a NodeState (or its value string) in :data:`STATE_NAMES`."""
    if isinstance(state, str):
        return STATE_NAMES.index(state)
    return STATE_CODES[state]


def node_timeline(
    trace: TraceReader, node_id: int, steps: Sequence[Any]
) -> list[tuple[int, NodeState]]:
    """(step, state) at each change point of the node, starting with -1.

    A Trace (or TraceView) gives the whole timeline from one pass over the node's history
    (``timeline``); asking ``state_at`` at every point would cost O(k) per point, O(k^2) for a
    node used k times (a shared weight in a long graph). Other trace-likes get the latter.
    """
    timeline = getattr(trace, "timeline", None)
    if callable(timeline):
        return list(timeline(node_id))
    return [(p, trace.state_at(node_id, p)) for p in change_points(trace, node_id, steps)]


def change_points(trace: TraceReader, node_id: int, steps: Sequence[Any]) -> list[int]:
    """Step indexes at which the node's state, value or gradient may change (with -1)."""
    return sorted({max(int(p), -1) for p in trace.change_points(node_id)} | {-1})
