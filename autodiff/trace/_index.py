"""The reading half of :class:`autodiff.trace.Trace`: node histories, states and structure.

Everything here is derived lazily from the recorder's compact tables (``_info``, ``_raw``,
``_extra``) and extended incrementally when recording goes on:

* per node, its history: ``(position, event kind, raw value, origin pass)`` in order, from which
  ``state_at`` / ``value_at`` / ``grad_at`` and the node's :meth:`~TraceIndex.timeline` come;
* the structure of the graph as plain integers: each function's forward step, the steps of
  each backward pass, each variable's creator. A viewer that shows one graph of a long run
  (one backward pass out of thousands) walks these instead of building every Step, Snapshot
  and networkx node of the run.
"""

from __future__ import annotations

import array
import bisect
import collections
import contextlib
import enum
import gc
import itertools
import operator
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from autodiff.trace._recorder import _CLEARED, _EMPTIED, _GRAD, _VALUE
from autodiff.trace._rows import FUNCTION, FWD

# Building this many objects or more at once pauses the cycle collector (see _bulk).
BULK = 10_000
# A node's history longer than this is read through a table of what it holds after each of
# its events (:meth:`TraceIndex._prefix`), built once: a leaf of a long run (a weight) has an
# event in every pass, and a detector asks for its state in each pass's graph.
SHORT_HISTORY = 16
_POSITION = operator.itemgetter(0)  # an event's position in its node's history


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


def _position(step_index: int, before: bool) -> int:
    """A step index as a position in a node's history: after it, or right before it."""
    return 2 * step_index if before else 2 * step_index + 1


class NodeState(enum.Enum):
    """What the viewer draws for a node after a given step."""

    NOT_COMPUTED = "not_computed"  # value not yet computed (before its forward step)
    VALUE = "value"  # value computed, grad never computed
    GRAD = "grad"  # grad computed
    GRAD_CLEARED = "grad_cleared"  # grad dropped by retain_grad=False
    FREED = "freed"  # the live object was garbage collected
    CONSTANT = "constant"  # made under no_grad, or a plain array operand
    # A gradient left over from a backward pass that has ended which a later backward adds
    # to: nothing empties it first (a forgotten cleargrad() / zero_grad()).
    GRAD_CARRIED = "grad_carried"
    # A gradient left over from a backward pass that has ended which no later backward adds
    # to: the program empties or replaces it first (cleargrad() between the forward and the
    # backward), or no later backward of the recording reaches it.
    GRAD_PREVIOUS = "grad_previous"


class GradFate(NamedTuple):
    """What becomes of a gradient left over from a backward pass that has ended, from the
    node's later history: ``adder``, the later backward pass that adds to it (the node is
    GRAD_CARRIED); else ``emptied``: True when the program empties it (cleargrad /
    zero_grad), sets another, or backward drops it before anything adds to it; False when
    nothing touches it again in the recording (or it is freed). Both None / False for a
    node holding no left-over gradient."""

    adder: int | None
    emptied: bool


_NO_FATE = GradFate(None, False)


class _Prefix(NamedTuple):
    """Where to look in a node's history (in position order) after its first ``k`` events,
    as indexes into it (-1: none), in compact int arrays (12 bytes an event, against about
    100 for the history itself): ``value[k]``, its last value event; ``grad[k]``, its last
    event that gave, cleared or emptied its gradient; ``after[k]``, the first event at or
    after ``k`` that touches the gradient (:func:`_next_grad_indexes`); ``first_value`` and
    ``freed``, the first value event and the object's collection (``len``: none)."""

    value: array.array
    grad: array.array
    after: array.array
    first_value: int
    freed: int


def _prefix_of(history: list[tuple]) -> _Prefix | None:
    """``history``'s :class:`_Prefix`; None when it is not in position order (never recorded
    so; a hand-made file could be)."""
    if any(a[0] > b[0] for a, b in itertools.pairwise(history)):
        return None
    n = len(history)
    value = array.array("i", [-1]) * (n + 1)
    grad = array.array("i", [-1]) * (n + 1)
    first_value = freed = n
    last_value = last_grad = -1
    for i, event in enumerate(history):
        kind = event[1]
        if kind == _VALUE:
            last_value = i
            first_value = min(first_value, i)
        elif kind in (_GRAD, _CLEARED, _EMPTIED):
            last_grad = i
        else:
            freed = min(freed, i)
        value[i + 1] = last_value
        grad[i + 1] = last_grad
    return _Prefix(value, grad, _next_grad_indexes(history), first_value, freed)


def _next_grad_indexes(history: list[tuple]) -> array.array:
    """For each index ``i`` of ``history`` (and ``len(history)``): the index of the first
    event at or after ``i`` that touches the node's gradient (a backward's or the program's
    gradient, backward dropping it, the program emptying it, the object freed), or -1."""
    nexts = array.array("i", [-1]) * (len(history) + 1)
    found = -1
    for i in range(len(history) - 1, -1, -1):
        if history[i][1] != _VALUE:
            found = i
        nexts[i] = found
    return nexts


def _next_grad_events(history: list[tuple]) -> list[tuple | None]:
    """:func:`_next_grad_indexes` as the events themselves (None: none)."""
    return [history[i] if i >= 0 else None for i in _next_grad_indexes(history)]


def _fate_of(event: tuple | None, origin: int) -> GradFate:
    """What comes of a gradient left over from pass ``origin`` when ``event`` is the next
    thing to touch it: a later backward adds to it (the engine sums into a gradient it
    finds), anything else ends it before that."""
    if event is None:
        return _NO_FATE  # nothing in the recording touches it again
    _, kind, _, o = event
    if kind == _GRAD:
        if o is None or o < 0:
            return GradFate(None, True)  # the program set another gradient
        return GradFate(o, False) if o != origin else _NO_FATE
    if kind in (_CLEARED, _EMPTIED):
        return GradFate(None, True)
    return _NO_FATE  # freed


class TraceIndex:
    """Histories, states and the integer structure index over a recorder's tables.

    ``tables``: the :class:`~autodiff.trace._recorder.Recorder` (its ``_raw``, ``_info``,
    ``_extra``, ``_constants`` and ``_operands``); ``snapshot(raw)``: a raw value as the
    Trace's Snapshot. Neither refers back to the Trace, so dropping a Trace frees it by
    reference counting alone. ``shown_nodes``: how many nodes the Trace's networkx graph
    holds (0 while it has none); a new event marks those nodes' attributes dirty."""

    def __init__(self, tables: Any, snapshot: Callable[[Any], Any]) -> None:
        self._tables = tables
        self._snap = snapshot
        self.shown_nodes = 0
        # Per-node history, indexed by node id (None: no event yet).
        self._events: list[list[tuple] | None] = []
        self._indexed = (0, 0)  # (steps, extra events) already in the histories
        self._dirty: set[int] = set()  # nodes with new events since the graph was synced
        self._timelines: dict[int, tuple[Any, list[tuple[int, NodeState]]]] = {}
        self._prefixes: dict[int, tuple[int, _Prefix | None]] = {}  # node -> (its length, ...)
        self._pass_end: dict[int, int] = {}  # backward pass -> position of its last step
        # Structure: function -> its forward step; backward pass -> its steps (ascending);
        # variable -> its creator function. Extended up to _structured = (steps, nodes).
        self._forward_step: dict[int, int] = {}
        self._pass_steps: dict[int, list[int]] = {}
        self._creator: dict[int, int] = {}
        self._structured = (0, 0)

    # The tables, read through the recorder (which decodes what its tape still holds).
    _raw = property(operator.attrgetter("_tables._raw"))
    _info = property(operator.attrgetter("_tables._info"))
    _extra = property(operator.attrgetter("_tables._extra"))
    _operands = property(operator.attrgetter("_tables._operands"))
    _constants = property(operator.attrgetter("_tables._constants"))

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
        operands = self._operands
        pass_end = self._pass_end
        # nodes already in the networkx graph get their value/grad attributes refreshed
        start = self.shown_nodes
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
            while e < n_extra and extra[e].stamp <= k:
                stamp, visible, node, kind, value, origin = extra[e]
                pos = min(2 * visible + 1, 2 * stamp)
                push(node, (pos, kind, value, origin))
                if origin is not None and origin >= 0 and origin not in pass_end:
                    pass_end[origin] = pos  # a seed: the pass begins (and may end) here
                e += 1
            if k == n_raw:
                break
            r = raw[k]
            fid = r.function
            pos = 2 * k + 1
            if r.kind == FWD:
                push(fid, (pos, _VALUE, None, None))
                for nid, value in zip(r.outputs, r.values, strict=True):
                    push(nid, (pos, _VALUE, value, None))
                if r.during >= 0:  # run by a backward pass (create_graph): part of that pass
                    pass_end[r.during] = pos
                continue
            bpass = r.backward_pass
            pass_end[bpass] = pos
            push(fid, (pos, _GRAD, None, None))
            in_ids = info[fid].inputs
            accs = r.accumulations
            for slot, g in enumerate(r.input_grads):
                if g is None:
                    continue
                nid = in_ids[slot]
                if nid in operands:
                    continue  # backward stores no gradient on a plain operand
                if accs:
                    for _node, a_slot, _old, _contribution, new in accs:
                        if a_slot == slot:
                            g = new  # the running sum is what the node holds now
                push(nid, (pos, _GRAD, g, bpass))
            for nid in r.cleared:
                push(nid, (pos, _CLEARED, None, None))
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
    #
    # A node's history is in *positions*: ``2 * i + 1`` is right after step i, ``2 * i`` is
    # right before step i (after what the program did between steps i - 1 and i: a leaf
    # given a new value, a gradient emptied). Playback shows the state after each step; a
    # view of one graph of a long run starts right before its first step.
    # ------------------------------------------------------------------------------
    def state_at(self, node_id: int, step_index: int, before: bool = False) -> NodeState:
        """The node's state after ``steps[0..step_index]`` (-1: before any step); with
        ``before``, right before step ``step_index`` runs.

        A Function node is NOT_COMPUTED before its forward step, VALUE after it, GRAD after
        its backward step (FREED once collected). A variable holding a gradient from a
        backward pass that has ended is GRAD_CARRIED when a later backward adds to it, and
        GRAD_PREVIOUS when none does (see :meth:`grad_fate`).
        """
        return self.state_at_position(node_id, _position(step_index, before))

    def state_at_position(self, node_id: int, position: int) -> NodeState:
        """:meth:`state_at` at a position (``2 * i + 1``: after step i; ``2 * i``: before)."""
        prefix = self._prefix(node_id)
        if prefix is not None:
            return self._state_in(node_id, prefix, position)[0]
        return self._sweep(node_id, self._split(node_id, position), [position])[0][1]

    def _prefix(self, node_id: int) -> _Prefix | None:
        """The node's :class:`_Prefix`, made when first asked for and again once its history
        grows; None for a short history (read as it is) or one out of position order."""
        history = self._history(node_id)
        if len(history) <= SHORT_HISTORY:
            return None
        cached = self._prefixes.get(node_id)
        if cached is not None and cached[0] == len(history):
            return cached[1]
        prefix = _prefix_of(history)
        self._prefixes[node_id] = (len(history), prefix)
        return prefix

    def _state_in(self, node_id: int, prefix: _Prefix, position: int) -> tuple[NodeState, GradFate]:
        """The node's state and its left-over gradient's fate at ``position``, read through
        its prefix table: what :meth:`_sweep` makes of the same events."""
        history = self._events[node_id]
        k = bisect.bisect_right(history, position, key=_POSITION)
        if prefix.freed < k:
            return NodeState.FREED, _NO_FATE
        g = prefix.grad[k]
        grad_state = origin = None
        if g >= 0:
            _, kind, _, origin = history[g]
            grad_state = (
                NodeState.GRAD
                if kind == _GRAD
                else (NodeState.GRAD_CLEARED if kind == _CLEARED else None)
            )
        state = self._state(node_id, prefix.first_value < k, grad_state)
        if state is NodeState.GRAD and self._left_over(origin, position):
            a = prefix.after[k]
            fate = _fate_of(history[a] if a >= 0 else None, origin)
            state = NodeState.GRAD_PREVIOUS if fate.adder is None else NodeState.GRAD_CARRIED
            return state, fate
        return state, _NO_FATE

    def _split(self, node_id: int, position: int) -> list[tuple]:
        # The node's history with the events up to ``position`` first (as recorded) and the
        # later ones after them in position order: what a sweep to ``position`` applies, then
        # what it reads of the future (a hand-made file may hold events out of order).
        history = self._history(node_id)
        upto = [e for e in history if e[0] <= position]
        if len(upto) == len(history):
            return upto
        later = sorted((e for e in history if e[0] > position), key=operator.itemgetter(0))
        return upto + later

    def grad_fate(self, node_id: int, step_index: int, before: bool = False) -> GradFate:
        """What becomes of the gradient the node holds after step ``step_index`` when it is
        left over from a backward pass that has ended (GRAD_CARRIED or GRAD_PREVIOUS): the
        later pass that adds to it, or whether the program empties it first. The same answer
        the state is made from."""
        return self.grad_fate_at_position(node_id, _position(step_index, before))

    def grad_fate_at_position(self, node_id: int, position: int) -> GradFate:
        """:meth:`grad_fate` at a position (see :meth:`state_at_position`)."""
        prefix = self._prefix(node_id)
        if prefix is not None:
            return self._state_in(node_id, prefix, position)[1]
        history = self._split(node_id, position)
        points = self._sweep(node_id, history, [position], fates=True)
        return points[0][2]

    def _state(self, node_id: int, has_value: bool, grad_state: Any) -> NodeState:
        if not has_value:
            return NodeState.NOT_COMPUTED
        if node_id in self._constants:
            return NodeState.CONSTANT
        return grad_state or NodeState.VALUE

    def _left_over(self, origin: Any, position: int) -> bool:
        """Whether a gradient made by backward pass ``origin`` is left over at ``position``:
        that pass has ended (-1: it was there before recording)."""
        if origin is None:
            return False
        if origin < 0:
            return True
        end = self._pass_end.get(origin)
        return end is not None and end < position

    def change_points(self, node_id: int) -> list[int]:
        """The step indexes after which the node's state, value or gradient may change,
        ascending, starting with -1 (before any step)."""
        return [point for point, _ in self.timeline(node_id)]

    def timeline(self, node_id: int) -> list[tuple[int, NodeState]]:
        """``(step, state_at(node_id, step))`` at each of :meth:`change_points`: the node's
        whole timeline in one pass over its history (asking ``state_at`` at every point
        would cost the history's length each time)."""
        steps: list[tuple[int, NodeState]] = []
        for pos, state in self.position_timeline(node_id):
            step = pos // 2
            if steps and steps[-1][0] == step:
                steps[-1] = (step, state)  # the state after the step wins
            else:
                steps.append((step, state))
        return steps

    def position_timeline(self, node_id: int) -> list[tuple[int, NodeState]]:
        """``(position, state)`` at each position where the node's state, value or gradient
        may change, ascending, starting with -1 (see :meth:`state_at_position`)."""
        history = self._history(node_id)
        key = (len(history), self._indexed)
        cached = self._timelines.get(node_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        positions = [e[0] for e in history]
        points = set(positions)
        points.add(-1)
        left_points = set()
        pass_end = self._pass_end
        last = 2 * len(self._raw) - 1  # after the last step
        for e in history:
            if e[1] == _GRAD and e[3] is not None and e[3] >= 0:
                end = pass_end.get(e[3])
                if end is not None and end < last and end + 1 not in points:
                    left_points.add(end + 1)  # where it becomes a left-over gradient
        ordered = sorted(points | left_points)
        if all(positions[i] <= positions[i + 1] for i in range(len(positions) - 1)):
            timeline = self._sweep(node_id, history, ordered)
        else:  # not in step order (never recorded so; a hand-made file could be)
            timeline = [(p, self.state_at_position(node_id, p)) for p in ordered]
        if left_points:  # a pass end where nothing changed for this node is no change point
            timeline = [
                point
                for i, point in enumerate(timeline)
                if point[0] not in left_points or point[1] is not timeline[i - 1][1]
            ]
        self._timelines[node_id] = (key, timeline)
        return timeline

    def _sweep(
        self, node_id: int, history: list[tuple], points: list[int], fates: bool = False
    ) -> list[tuple]:
        # The node's state at each of ``points`` (ascending), the events of ``history`` (in
        # position order) applied in turn: the one place the events make a state. With
        # ``fates``, each point also carries the GradFate of a left-over gradient.
        has_value = freed = False
        grad_state = origin = None
        timeline: list[tuple] = []
        nexts: list[tuple | None] | None = None
        k = 0
        n = len(history)
        for point in points:
            while k < n and history[k][0] <= point:
                _, kind, _, o = history[k]
                if kind == _VALUE:
                    has_value = True
                elif kind == _GRAD:
                    grad_state, origin = NodeState.GRAD, o
                elif kind == _CLEARED:
                    grad_state = NodeState.GRAD_CLEARED
                elif kind == _EMPTIED:
                    grad_state = None
                else:
                    freed = True
                k += 1
            fate = _NO_FATE
            if freed:
                state = NodeState.FREED
            else:
                state = self._state(node_id, has_value, grad_state)
                if state is NodeState.GRAD and self._left_over(origin, point):
                    if nexts is None:
                        nexts = _next_grad_events(history)
                    fate = _fate_of(nexts[k], origin)
                    if fate.adder is None:
                        state = NodeState.GRAD_PREVIOUS
                    else:
                        state = NodeState.GRAD_CARRIED
            timeline.append((point, state, fate) if fates else (point, state))
        return timeline

    def value_at(self, node_id: int, step_index: int, before: bool = False) -> Any:
        """The variable's value after ``steps[0..step_index]`` (None before it was computed);
        with ``before``, right before step ``step_index``."""
        return self.value_at_position(node_id, _position(step_index, before))

    def value_at_position(self, node_id: int, position: int) -> Any:
        prefix = self._prefix(node_id)
        if prefix is not None:
            history = self._events[node_id]
            v = prefix.value[bisect.bisect_right(history, position, key=_POSITION)]
            return self._snap(history[v][2] if v >= 0 else None)
        found = None
        for pos, kind, value, _ in self._history(node_id):
            if kind == _VALUE and pos <= position:
                found = value
        return self._snap(found)

    def grad_at(self, node_id: int, step_index: int, before: bool = False) -> Any:
        """The variable's gradient after ``steps[0..step_index]`` (None if none, cleared by
        backward or emptied by the program); with ``before``, right before that step."""
        return self.grad_at_position(node_id, _position(step_index, before))

    def grad_at_position(self, node_id: int, position: int) -> Any:
        return self._snap(self._grad_event(node_id, position)[0])

    def grad_origin(self, node_id: int, step_index: int, before: bool = False) -> int | None:
        """The backward pass (0-based) that produced the gradient the node holds after step
        ``step_index``: -1 when it was held before recording began, None when the node holds
        none or holds one the program set itself."""
        return self.grad_origin_at_position(node_id, _position(step_index, before))

    def grad_origin_at_position(self, node_id: int, position: int) -> int | None:
        return self._grad_event(node_id, position)[1]

    def _grad_event(self, node_id: int, position: int) -> tuple[Any, Any]:
        prefix = self._prefix(node_id)
        if prefix is not None:
            history = self._events[node_id]
            g = prefix.grad[bisect.bisect_right(history, position, key=_POSITION)]
            if g < 0 or history[g][1] != _GRAD:
                return None, None  # none yet, or cleared by backward or emptied
            return history[g][2], history[g][3]
        found = origin = None
        for pos, kind, value, o in self._history(node_id):
            if pos <= position:
                if kind == _GRAD:
                    found, origin = value, o
                elif kind in (_CLEARED, _EMPTIED):
                    found = origin = None
        return found, origin

    def _last(self, node_id: int, kind: int) -> Any:
        found = None
        for _, k, value, _ in self._history(node_id):
            if k == kind:
                found = value
        return self._snap(found)

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
            if r.kind == FWD:
                forward_step[r.function] = k
                bpass = r.during  # the backward pass that ran it (create_graph), or -1
            else:
                bpass = r.backward_pass
            if bpass >= 0:
                steps = pass_steps.get(bpass)
                if steps is None:
                    pass_steps[bpass] = [k]
                else:
                    steps.append(k)
        creator = self._creator
        for nid in range(n0, len(info)):
            entry = info[nid]
            if entry.kind == FUNCTION:
                for y in entry.outputs:
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

    def ancestors(
        self, node_id: int, stop_at_cuts: bool = False, limit: int | None = None
    ) -> set[int]:
        """Every node with a path to ``node_id`` (as ``networkx.ancestors(t.graph, node_id)``,
        without building the graph): its creator, the creator's inputs, and so on.

        ``stop_at_cuts``: the graph as the engine held it when ``node_id`` was made, so a
        variable whose history the program had cut (``unchain_backward()``) before then is a
        leaf of it: truncated backprop's windows do not pull in every window before them.
        ``limit``: at most that many, the nearest first (breadth first)."""
        if not 0 <= node_id < len(self._info):
            raise KeyError(f"Trace has no node {node_id!r} (ids are 0..{len(self._info) - 1})")
        self._index_structure()
        info = self._info
        creator = self._creator
        cut = self._tables._cut if stop_at_cuts else {}
        made_at = self.forward_step_of(creator.get(node_id, node_id)) if cut else -1
        found: set[int] = set()
        queue = collections.deque([node_id])
        full = len(self._info) if limit is None else max(0, int(limit))
        while queue and len(found) < full:
            nid = queue.popleft()
            entry = info[nid]
            if entry.kind == FUNCTION:
                parents = entry.inputs
            elif cut and cut.get(nid, made_at + 1) <= made_at:
                parents = ()  # cut before node_id was made: a leaf of its graph
            else:
                c = creator.get(nid)
                parents = () if c is None else (c,)
            for p in parents:
                if p not in found and len(found) < full:
                    found.add(p)
                    queue.append(p)
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
            if entry.kind == FUNCTION:
                used.update(entry.inputs)
                made.extend(entry.outputs)
        found = sorted(set(made) - used)
        if last is None:
            return found
        return found[-last:] if last > 0 else []
