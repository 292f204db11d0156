"""The reading half of :class:`autodiff.trace.Trace`: node histories, states and structure.

Everything here is derived lazily from the recorder's compact tables (``_info``, ``_raw``,
``_extra``) and extended incrementally when recording goes on:

* per node, its history: ``(visible step, event kind, raw value)`` in step order, from which
  ``state_at`` / ``value_at`` / ``grad_at`` and the node's :meth:`~TraceIndex.timeline` come;
* the structure of the graph as plain integers: each function's forward step, the steps of
  each backward pass, each variable's creator. A viewer that shows one graph of a long run
  (one backward pass out of thousands) walks these instead of building every Step, Snapshot
  and networkx node of the run.
"""

from __future__ import annotations

import contextlib
import enum
import gc
from collections.abc import Iterator
from typing import Any

from autodiff._recorder import _CLEARED, _FUNCTION, _FWD, _GRAD, _VALUE

# Building this many objects or more at once pauses the cycle collector (see _bulk).
BULK = 10_000


@contextlib.contextmanager
def _bulk(n: int) -> Iterator[None]:
    """Pause the cycle collector while ``n`` new objects that form no cycle are built (steps,
    snapshots, histories, graph nodes): with a long run's millions of objects alive, the
    collections their allocations trigger cost more than building them. Reference counting
    is untouched; the collector is left as it was found."""
    if n < BULK or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class NodeState(enum.Enum):
    """What the viewer draws for a node after a given step."""

    NOT_COMPUTED = "not_computed"  # value not yet computed (before its forward step)
    VALUE = "value"  # value computed, grad never computed
    GRAD = "grad"  # grad computed
    GRAD_CLEARED = "grad_cleared"  # grad dropped by retain_grad=False
    FREED = "freed"  # the live object was garbage collected
    CONSTANT = "constant"  # made under no_grad, or a plain array operand
    # A gradient left over from a backward pass that has ended (a forgotten cleargrad() /
    # zero_grad()): the program still holds it, and the next backward adds to it.
    GRAD_CARRIED = "grad_carried"


class TraceIndex:
    """Histories, states and the integer structure index; the tables live on the Trace."""

    # attributes set by Trace.__init__
    _info: list[tuple]
    _raw: list[tuple]
    _extra: list[tuple]
    _constants: set[int]
    _recording: bool
    _graph: Any

    def _init_index(self) -> None:
        # Per-node history, indexed by node id (None: no event yet).
        self._events: list[list[tuple] | None] = []
        self._indexed = (0, 0)  # (steps, extra events) already in the histories
        self._dirty: set[int] = set()  # nodes with new events since the graph was synced
        self._timelines: dict[int, tuple[int, list[tuple[int, NodeState]]]] = {}
        # Structure: function -> its forward step; backward pass -> its steps (ascending);
        # variable -> its creator function. Extended up to _structured = (steps, nodes).
        self._forward_step: dict[int, int] = {}
        self._pass_steps: dict[int, list[int]] = {}
        self._creator: dict[int, int] = {}
        self._structured = (0, 0)

    # ------------------------------------------------------------------------------
    # Node histories
    # ------------------------------------------------------------------------------
    def _index(self) -> None:
        """Extend the per-node histories with the steps and events recorded since last time."""
        k0, e0 = self._indexed
        raw = self._raw
        extra = self._extra
        n_raw, n_extra = len(raw), len(extra)
        if k0 == n_raw and e0 == n_extra:
            return
        with _bulk(n_raw - k0 + n_extra - e0):
            self._index_events(k0, e0)

    def _index_events(self, k0: int, e0: int) -> None:
        raw = self._raw
        extra = self._extra
        n_raw, n_extra = len(raw), len(extra)
        events = self._events
        if len(events) < len(self._info):
            events.extend([None] * (len(self._info) - len(events)))
        info = self._info
        # nodes already in the networkx graph get their value/grad attributes refreshed
        start = 0 if self._graph is None else self._graph_nodes  # type: ignore[attr-defined]
        touched = self._dirty

        def push(node: int, event: tuple) -> None:
            lst = events[node]
            if lst is None:
                events[node] = [event]
            else:
                lst.append(event)
            if node < start:
                touched.add(node)

        e = e0
        for k in range(k0, n_raw + 1):
            while e < n_extra and extra[e][0] <= k:
                _, visible, node, kind, value = extra[e]
                push(node, (visible, kind, value))
                e += 1
            if k == n_raw:
                break
            r = raw[k]
            fid = r[1]
            if r[0] == _FWD:
                push(fid, (k, _VALUE, None))
                for nid, value in zip(r[3], r[4], strict=True):
                    push(nid, (k, _VALUE, value))
                continue
            push(fid, (k, _GRAD, None))
            in_ids = info[fid][3]
            accs = r[4]
            for slot, g in enumerate(r[3]):
                if g is None:
                    continue
                if accs:
                    for a in accs:
                        if a[1] == slot:
                            g = a[4]  # the running sum is what the node holds now
                push(in_ids[slot], (k, _GRAD, g))
            for nid in r[5]:
                push(nid, (k, _CLEARED, None))
        self._indexed = (n_raw, n_extra)

    def _history(self, node_id: int) -> list[tuple]:
        if not 0 <= node_id < len(self._info):
            raise KeyError(f"Trace has no node {node_id!r} (ids are 0..{len(self._info) - 1})")
        self._index()
        events = self._events
        if node_id >= len(events):
            return []
        return events[node_id] or []

    # ------------------------------------------------------------------------------
    # States
    # ------------------------------------------------------------------------------
    def state_at(self, node_id: int, step_index: int) -> NodeState:
        """The node's state after ``steps[0..step_index]`` (-1: before any step).

        A Function node is NOT_COMPUTED before its forward step, VALUE after it, GRAD after
        its backward step (FREED once collected).
        """
        has_value = False
        grad_state = None
        for visible, kind, _ in self._history(node_id):
            if visible > step_index:
                continue
            if kind == _VALUE:
                has_value = True
            elif kind == _GRAD:
                grad_state = NodeState.GRAD
            elif kind == _CLEARED:
                grad_state = NodeState.GRAD_CLEARED
            else:
                return NodeState.FREED
        if not has_value:
            return NodeState.NOT_COMPUTED
        if node_id in self._constants:
            return NodeState.CONSTANT
        return grad_state or NodeState.VALUE

    def change_points(self, node_id: int) -> list[int]:
        """The step indexes after which the node's state, value or gradient may change,
        ascending, starting with -1 (before any step)."""
        return [point for point, _ in self.timeline(node_id)]

    def timeline(self, node_id: int) -> list[tuple[int, NodeState]]:
        """``(step, state_at(node_id, step))`` at each of :meth:`change_points`: the node's
        whole timeline in one pass over its history (asking ``state_at`` at every point
        would cost the history's length each time)."""
        history = self._history(node_id)
        cached = self._timelines.get(node_id)
        if cached is not None and cached[0] == len(history):
            return cached[1]
        visible = [e[0] if e[0] > -1 else -1 for e in history]
        points = sorted(set(visible) | {-1})
        if all(visible[i] <= visible[i + 1] for i in range(len(visible) - 1)):
            timeline = self._sweep(node_id, history, visible, points)
        else:  # not in step order (never recorded so; a hand-made file could be)
            timeline = [(p, self.state_at(node_id, p)) for p in points]
        self._timelines[node_id] = (len(history), timeline)
        return timeline

    def _sweep(
        self, node_id: int, history: list[tuple], visible: list[int], points: list[int]
    ) -> list[tuple[int, NodeState]]:
        # What state_at computes, for every point at once: the history is in step order.
        constant = node_id in self._constants
        has_value = freed = False
        grad_state = None
        timeline = []
        k = 0
        n = len(history)
        for point in points:
            while k < n and visible[k] <= point:
                kind = history[k][1]
                if kind == _VALUE:
                    has_value = True
                elif kind == _GRAD:
                    grad_state = NodeState.GRAD
                elif kind == _CLEARED:
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

    def value_at(self, node_id: int, step_index: int) -> Any:
        """The variable's value after ``steps[0..step_index]`` (None before it was computed)."""
        found = None
        for visible, kind, value in self._history(node_id):
            if kind == _VALUE and visible <= step_index:
                found = value
        return self._snap(found)  # type: ignore[attr-defined]

    def grad_at(self, node_id: int, step_index: int) -> Any:
        """The variable's gradient after ``steps[0..step_index]`` (None if none or cleared)."""
        found = None
        for visible, kind, value in self._history(node_id):
            if visible <= step_index:
                if kind == _GRAD:
                    found = value
                elif kind == _CLEARED:
                    found = None
        return self._snap(found)  # type: ignore[attr-defined]

    def _last(self, node_id: int, kind: int) -> Any:
        found = None
        for _, k, value in self._history(node_id):
            if k == kind:
                found = value
        return self._snap(found)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------------------
    # Structure, as integers
    # ------------------------------------------------------------------------------
    def _index_structure(self) -> None:
        k0, n0 = self._structured
        raw, info = self._raw, self._info
        if k0 == len(raw) and n0 == len(info):
            return
        forward_step = self._forward_step
        pass_steps = self._pass_steps
        for k in range(k0, len(raw)):
            r = raw[k]
            if r[0] == _FWD:
                forward_step[r[1]] = k
                bpass = r[5]  # the backward pass that ran it (create_graph), or -1
            else:
                bpass = r[6]
            if bpass >= 0:
                steps = pass_steps.get(bpass)
                if steps is None:
                    pass_steps[bpass] = [k]
                else:
                    steps.append(k)
        creator = self._creator
        for nid in range(n0, len(info)):
            entry = info[nid]
            if entry[0] == _FUNCTION:
                for y in entry[4]:
                    creator[y] = nid
        self._structured = (len(raw), len(info))

    def forward_step_of(self, function_id: int) -> int:
        """The index of the function's forward step; -1 when it has none (a function found
        upstream of a recorded one, whose values were already computed)."""
        self._index_structure()
        return self._forward_step.get(function_id, -1)

    def steps_of_pass(self, backward_pass: int) -> list[int]:
        """Indexes of the steps of backward pass ``backward_pass``, ascending: its backward
        steps and, under ``create_graph=True``, the forward steps it ran."""
        self._index_structure()
        return list(self._pass_steps.get(backward_pass, ()))

    def creator_of(self, node_id: int) -> int:
        """The function node that produced variable ``node_id``; -1 for a leaf or constant."""
        self._index_structure()
        return self._creator.get(node_id, -1)

    def ancestors(self, node_id: int) -> set[int]:
        """Every node with a path to ``node_id`` (as ``networkx.ancestors(t.graph, node_id)``,
        without building the graph): its creator, the creator's inputs, and so on."""
        if not 0 <= node_id < len(self._info):
            raise KeyError(f"Trace has no node {node_id!r} (ids are 0..{len(self._info) - 1})")
        self._index_structure()
        info = self._info
        creator = self._creator
        found: set[int] = set()
        stack = [node_id]
        while stack:
            nid = stack.pop()
            entry = info[nid]
            if entry[0] == _FUNCTION:
                parents = entry[3]
            else:
                c = creator.get(nid)
                parents = () if c is None else (c,)
            for p in parents:
                if p not in found:
                    found.add(p)
                    stack.append(p)
        found.discard(node_id)
        return found

    def outputs(self, last: int | None = None) -> list[int]:
        """Variables made by a function and never used as an input (what a run without
        backward leaves), ascending; with ``last``, only the last ``last`` of them. From the
        integer tables: the graph is not built."""
        info = self._info
        used = set()
        made = []
        for entry in info:
            if entry[0] == _FUNCTION:
                used.update(entry[3])
                made.extend(entry[4])
        found = sorted(set(made) - used)
        if last is None:
            return found
        return found[-last:] if last > 0 else []
