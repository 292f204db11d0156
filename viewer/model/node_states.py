"""Node states over the playback steps: the state codes the view draws, and each node's
timeline (its state at each step where it may change)."""

from __future__ import annotations

from autodiff.trace import NodeState, TraceReader

__all__ = [
    "STATE_CODES",
    "STATE_NAMES",
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


def node_timeline(trace: TraceReader, node_id: int) -> list[tuple[int, NodeState]]:
    """(step, state) at each change point of the node, starting with -1: the reader's
    ``timeline``, from one pass over the node's history (asking ``state_at`` at every point
    would cost O(k) per point, O(k^2) for a node used k times: a shared weight)."""
    return list(trace.timeline(node_id))
