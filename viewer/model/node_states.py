"""Node states over the playback steps: the state codes the view draws, and each node's
timeline (its state at each step where it may change)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from autodiff.trace import NodeState

__all__ = [
    "STATE_CODES",
    "STATE_NAMES",
    "change_points",
    "history_kinds",
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
    trace: Any,
    node_id: int,
    steps: Sequence[Any],
    attrs: Mapping[str, Any],
    kinds: tuple[int, ...] | None,
) -> list[tuple[int, NodeState]]:
    """(step, state) at each change point of the node, starting with -1.

    Asking ``trace.state_at`` at every point costs O(k) per point, O(k^2) for a node used k
    times (a shared weight in a long graph). When the trace exposes its per-node history in
    step order, one scan gives every state; the scan follows ``Trace.state_at`` exactly.
    """
    history = getattr(trace, "_history", None)
    if callable(history) and kinds is not None:
        events = history(node_id)
        visible = [max(int(e[0]), -1) for e in events]
        if all(a <= b for a, b in itertools.pairwise(visible)):
            return _scan_history(events, visible, kinds, bool(attrs.get("constant")))
    return [(p, trace.state_at(node_id, p)) for p in change_points(trace, node_id, steps)]


def history_kinds() -> tuple[int, int, int, int] | None:
    from autodiff import trace as trace_module

    names = ("_VALUE", "_GRAD", "_CLEARED", "_FREED")
    if all(isinstance(getattr(trace_module, n, None), int) for n in names):
        return tuple(getattr(trace_module, n) for n in names)  # type: ignore[return-value]
    return None


def _scan_history(
    events: Sequence[tuple], visible: list[int], kinds: tuple[int, ...], constant: bool
) -> list[tuple[int, NodeState]]:
    value_kind, grad_kind, cleared_kind, _ = kinds
    has_value = False
    grad_state: NodeState | None = None
    freed = False
    timeline: list[tuple[int, NodeState]] = []
    k = 0
    points = sorted(set(visible) | {-1})
    for point in points:
        while k < len(events) and visible[k] <= point:
            kind = events[k][1]
            if kind == value_kind:
                has_value = True
            elif kind == grad_kind:
                grad_state = NodeState.GRAD
            elif kind == cleared_kind:
                grad_state = NodeState.GRAD_CLEARED
            else:
                freed = True
            k += 1
        if freed:
            state = NodeState.FREED
        elif not has_value:
            state = NodeState.NOT_COMPUTED
        elif constant:
            state = NodeState.CONSTANT
        else:
            state = grad_state or NodeState.VALUE
        timeline.append((point, state))
    return timeline


def change_points(trace: Any, node_id: int, steps: Sequence[Any]) -> list[int]:
    """Step indexes at which the node's state, value or gradient may change (with -1)."""
    public = getattr(trace, "change_points", None)
    if callable(public):
        return sorted({max(int(p), -1) for p in public(node_id)} | {-1})
    history = getattr(trace, "_history", None)
    if callable(history):
        return sorted({max(int(event[0]), -1) for event in history(node_id)} | {-1})
    # Fallback for trace-like objects: the steps that mention the node, and the step before.
    points = {-1}
    for s in steps:
        mentioned = (
            s.function == node_id
            or node_id in s.inputs
            or node_id in s.outputs
            or node_id in s.cleared
        )
        if mentioned:
            points.update((s.index - 1, s.index))
    return sorted(points)
