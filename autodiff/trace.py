"""The recorder: the engine's graph as a networkx DAG plus an exact forward/backward timeline.

``with record() as t: ...`` attaches a :class:`Trace` to the engine's observer hook
(:func:`autodiff.core.add_observer`). While recording, each event stores a compact tuple of
node ids and raw snapshots (see :mod:`autodiff._snapshot`); the :class:`Step` objects, the
:class:`Snapshot` statistics and the networkx graph are built on first access. The trace holds
only weak references to engine objects: recording never keeps a graph alive.
"""

from __future__ import annotations

import contextlib
import enum
import os
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import networkx as nx

from autodiff import core
from autodiff._recorder import (  # noqa: F401  (the event and node kinds, for _trace_io)
    _BWD,
    _CLEARED,
    _FREED,
    _FUNCTION,
    _FWD,
    _GRAD,
    _VALUE,
    _VARIABLE,
    Recorder,
    _make_freed_callback,
    _NodeRef,
)
from autodiff._snapshot import Snapshot, capture, raw_nonfinite, to_snapshot

if TYPE_CHECKING:
    from autodiff.leaks import LeakReport

__all__ = [
    "Accumulation",
    "NodeState",
    "Snapshot",
    "Step",
    "Trace",
    "TraceFormatError",
    "from_output",
    "load",
    "record",
]

DEFAULT_MAX_ARRAY_SIZE = 4096


class TraceFormatError(ValueError):
    """A saved trace is malformed; the message names the JSON path and the problem."""


class NodeState(enum.Enum):
    """What the viewer draws for a node after a given step."""

    NOT_COMPUTED = "not_computed"  # value not yet computed (before its forward step)
    VALUE = "value"  # value computed, grad never computed
    GRAD = "grad"  # grad computed
    GRAD_CLEARED = "grad_cleared"  # grad dropped by retain_grad=False
    FREED = "freed"  # the live object was garbage collected
    CONSTANT = "constant"  # made under no_grad, or a plain array operand


@dataclass(frozen=True, slots=True)
class Accumulation:
    """A fan-in sum during backward: ``old + contribution = new`` at input ``slot``."""

    node: int
    slot: int
    old: Snapshot
    contribution: Snapshot
    new: Snapshot


@dataclass(frozen=True, slots=True)
class Step:
    """One Function's forward or backward, in the order the engine ran it."""

    index: int
    phase: str  # 'forward' | 'backward'
    function: int
    op: str
    generation: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    values: tuple[Snapshot | None, ...]
    output_grads: tuple[Snapshot | None, ...]
    input_grads: tuple[Snapshot | None, ...]
    accumulations: tuple[Accumulation, ...]
    cleared: tuple[int, ...]
    backward_pass: int
    nonfinite: bool
    # For a forward step run inside backward(create_graph=True) (a gradient being computed
    # as a differentiable graph): the index of that backward pass; -1 otherwise.
    during_backward: int = -1


class Trace(Recorder):
    """A recorded graph and its timeline. Build one with :func:`record`, :func:`from_output`
    or :func:`load`.

    ``steps`` is the exact timeline; ``graph`` the networkx.MultiDiGraph (one edge per argument
    slot, ``slot`` attribute); node ids are integers from a counter, in registration order.
    """

    def __init__(self, max_array_size: int = DEFAULT_MAX_ARRAY_SIZE) -> None:
        if max_array_size < 0:
            raise ValueError(f"max_array_size must be >= 0, got {max_array_size}")
        self.max_array_size = int(max_array_size)
        self.variables: list[int] = []
        self.functions: list[int] = []
        self.backward_roots: list[int] = []
        # Node tables, indexed by node id. _info: (_VARIABLE, generation, shape, dtype) with
        # a numpy dtype (shape and dtype None when unknown) or
        # (_FUNCTION, generation, op, input ids, output ids).
        self._info: list[tuple] = []
        self._refs: list[_NodeRef | None] = []
        self._names: dict[int, str] = {}
        self._constants: set[int] = set()
        self._grad_of: dict[int, int] = {}
        # Timeline: raw step tuples, and node events that are not part of a step:
        # (stamp = len(_raw) when it happened, visible step, node, kind, raw).
        self._raw: list[tuple] = []
        self._extra: list[tuple] = []
        self._steps: list[Step] = []
        self._snapshots: dict[int, Snapshot] = {}  # id(raw value) -> its Snapshot
        # Per-node history built lazily from _raw and _extra: node -> [(visible, kind, raw)].
        self._events: dict[int, list[tuple]] = {}
        self._indexed = (0, 0)
        self._dirty: set[int] = set()
        self._graph: nx.MultiDiGraph | None = None
        self._graph_nodes = 0
        # Recording state (live objects are mapped by id(), guarded by the weakref callback).
        self._recording = False
        self._ids: dict[int, int] = {}
        self._freed_cb = _make_freed_callback(weakref.ref(self))
        self._maybe_constant: dict[int, int] = {}  # id(variable) -> its _order
        self._track_nograd = True
        self._leaf_raw: dict[int, Any] = {}  # leaf node -> raw value last seen
        self._pass = -1
        self._backward_stack: list[tuple[int, bool]] = []
        self._grad_cache: dict[int, tuple[Any, Any]] = {}  # id(array) -> (array, raw)

    def __repr__(self) -> str:
        return (
            f"<Trace {len(self.variables)} variables, {len(self.functions)} functions, "
            f"{len(self._raw)} steps>"
        )

    # ------------------------------------------------------------------------------
    # Steps
    # ------------------------------------------------------------------------------
    @property
    def steps(self) -> list[Step]:
        steps = self._steps
        raw = self._raw
        for k in range(len(steps), len(raw)):
            steps.append(self._make_step(k, raw[k]))
        return steps

    def _snap(self, raw: Any) -> Snapshot | None:
        """The Snapshot of a raw value, made once and shared by steps, states and the graph
        (raw values live as long as the trace, so their ids are stable keys)."""
        if raw is None or type(raw) is Snapshot:
            return raw
        snap = self._snapshots.get(id(raw))
        if snap is None:
            snap = self._snapshots[id(raw)] = to_snapshot(raw)
        return snap

    def _make_step(self, k: int, r: tuple) -> Step:
        snap = self._snap
        fid = r[1]
        _, gen, op, in_ids, out_ids = self._info[fid]
        if r[0] == _FWD:
            values = tuple(snap(v) for v in r[4])
            nonfinite = any(raw_nonfinite(v) for v in r[4])
            return Step(
                k, "forward", fid, op, gen, in_ids, out_ids, values, (), (), (), (), -1,
                nonfinite, r[5],
            )  # fmt: skip
        _, _, gys, gxs, accs, cleared, bpass = r
        accumulations = tuple(
            Accumulation(node, slot, snap(old), snap(c), snap(new))
            for node, slot, old, c, new in accs
        )
        nonfinite = any(raw_nonfinite(g) for g in gxs) or any(raw_nonfinite(a[4]) for a in accs)
        return Step(
            k, "backward", fid, op, gen, in_ids, out_ids, (),
            tuple(snap(g) for g in gys), tuple(snap(g) for g in gxs),
            accumulations, cleared, bpass, nonfinite,
        )  # fmt: skip

    def first_nonfinite(self) -> Step | None:
        """The first step (forward or backward) that produced NaN or Inf, or None."""
        for k, r in enumerate(self._raw):
            if r[0] == _FWD:
                bad = any(raw_nonfinite(v) for v in r[4])
            else:
                bad = any(raw_nonfinite(g) for g in r[3]) or any(raw_nonfinite(a[4]) for a in r[4])
            if bad:
                return self.steps[k]
        return None

    # ------------------------------------------------------------------------------
    # Node histories and states
    # ------------------------------------------------------------------------------
    def _index(self) -> None:
        """Extend the per-node histories with the steps and events recorded since last time."""
        k0, e0 = self._indexed
        raw = self._raw
        extra = self._extra
        if k0 == len(raw) and e0 == len(extra):
            return
        events = self._events
        dirty = self._dirty
        info = self._info

        def add(node: int, ev: tuple) -> None:
            lst = events.get(node)
            if lst is None:
                events[node] = [ev]
            else:
                lst.append(ev)
            dirty.add(node)

        e = e0
        for k in range(k0, len(raw) + 1):
            while e < len(extra) and extra[e][0] <= k:
                _, visible, node, kind, value = extra[e]
                add(node, (visible, kind, value))
                e += 1
            if k == len(raw):
                break
            r = raw[k]
            fid = r[1]
            if r[0] == _FWD:
                add(fid, (k, _VALUE, None))
                for nid, value in zip(r[3], r[4], strict=True):
                    add(nid, (k, _VALUE, value))
            else:
                add(fid, (k, _GRAD, None))
                in_ids = info[fid][3]
                accumulated = {a[1]: a[4] for a in r[4]}
                for slot, g in enumerate(r[3]):
                    if g is not None:
                        add(in_ids[slot], (k, _GRAD, accumulated.get(slot, g)))
                for nid in r[5]:
                    add(nid, (k, _CLEARED, None))
        self._indexed = (len(raw), len(extra))

    def _history(self, node_id: int) -> list[tuple]:
        if not 0 <= node_id < len(self._info):
            raise KeyError(f"Trace has no node {node_id!r} (ids are 0..{len(self._info) - 1})")
        self._index()
        return self._events.get(node_id, [])

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

    def value_at(self, node_id: int, step_index: int) -> Snapshot | None:
        """The variable's value after ``steps[0..step_index]`` (None before it was computed)."""
        found = None
        for visible, kind, value in self._history(node_id):
            if kind == _VALUE and visible <= step_index:
                found = value
        return self._snap(found)

    def grad_at(self, node_id: int, step_index: int) -> Snapshot | None:
        """The variable's gradient after ``steps[0..step_index]`` (None if none or cleared)."""
        found = None
        for visible, kind, value in self._history(node_id):
            if visible <= step_index:
                if kind == _GRAD:
                    found = value
                elif kind == _CLEARED:
                    found = None
        return self._snap(found)

    def _last(self, node_id: int, kind: int) -> Any:
        found = None
        for _, k, value in self._history(node_id):
            if k == kind:
                found = value
        return self._snap(found)

    # ------------------------------------------------------------------------------
    # Nodes and the graph
    # ------------------------------------------------------------------------------
    def node(self, node_id: int) -> dict[str, Any]:
        """The node's attributes (the same keys as ``graph.nodes[node_id]``)."""
        self._history(node_id)  # validates the id
        ref = self._refs[node_id]
        obj = ref() if ref is not None else None
        if obj is not None and self._info[node_id][0] == _VARIABLE and obj.name is not None:
            self._names[node_id] = obj.name
        return self._attrs(node_id)

    def _attrs(self, nid: int) -> dict[str, Any]:
        info = self._info[nid]
        if info[0] == _FUNCTION:
            return {
                "kind": "function",
                "name": None,
                "op": info[2],
                "shape": None,
                "dtype": None,
                "generation": info[1],
                "constant": False,
                "value": None,
                "grad": None,
                "grad_of": None,
            }
        _, gen, shape, dtype = info
        return {
            "kind": "variable",
            "name": self._names.get(nid),
            "op": None,
            "shape": None if shape is None else tuple(shape),
            "dtype": None if dtype is None else str(dtype),
            "generation": gen,
            "constant": nid in self._constants,
            "value": self._last(nid, _VALUE),
            "grad": self._last(nid, _GRAD),
            "grad_of": self._grad_of.get(nid),
        }

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The networkx.MultiDiGraph (built on first access, extended as recording goes on).

        Node attributes: kind, name, op, shape, dtype, generation, constant, value (last
        known Snapshot), grad (last known Snapshot), grad_of (for a gradient that is itself a
        graph node under create_graph=True: the variable it is the gradient of). Edge
        attribute ``slot``: the argument slot (variable -> function) or the output index
        (function -> variable); it is also the edge key.
        """
        return self._sync_graph()

    def _sync_graph(self) -> nx.MultiDiGraph:
        g = self._graph
        if g is None:
            g = self._graph = nx.MultiDiGraph(max_array_size=self.max_array_size)
        self._index()
        start, end = self._graph_nodes, len(self._info)
        if self._recording:
            self._refresh_names()
        for nid in range(start, end):
            g.add_node(nid, **self._attrs(nid))
        for nid in range(start, end):
            info = self._info[nid]
            if info[0] == _FUNCTION:
                in_ids, out_ids = info[3], info[4]
                for slot, x in enumerate(in_ids):
                    g.add_edge(x, nid, key=slot, slot=slot)
                for slot, y in enumerate(out_ids):
                    g.add_edge(nid, y, key=slot, slot=slot)
        self._graph_nodes = end
        nodes = g.nodes
        for nid in self._dirty:
            if nid < start and self._info[nid][0] == _VARIABLE:
                attrs = nodes[nid]
                attrs["value"] = self._last(nid, _VALUE)
                attrs["grad"] = self._last(nid, _GRAD)
                attrs["name"] = self._names.get(nid)
                attrs["grad_of"] = self._grad_of.get(nid)
        self._dirty.clear()
        return g

    def live(self, node_id: int) -> Any:
        """The engine object behind ``node_id`` if it is still alive, else None."""
        ref = self._refs[node_id]
        return None if ref is None else ref()

    def freed(self, node_id: int) -> bool:
        """True when the node's engine object existed and has been collected."""
        ref = self._refs[node_id]
        return ref is not None and ref() is None

    # ------------------------------------------------------------------------------
    # Exports and the leak audit
    # ------------------------------------------------------------------------------
    def to_dot(self) -> str:
        from autodiff import _trace_io

        return _trace_io.to_dot(self)

    def to_graphml(self, path: str | os.PathLike[str]) -> None:
        from autodiff import _trace_io

        _trace_io.to_graphml(self, path)

    def to_json(self, path: str | os.PathLike[str]) -> None:
        from autodiff import _trace_io

        _trace_io.to_json(self, path)

    def audit(self) -> LeakReport:
        """Which recorded objects are still alive, and who holds them (see autodiff.leaks)."""
        from autodiff import leaks

        return leaks.audit(self)


@contextlib.contextmanager
def record(max_array_size: int = DEFAULT_MAX_ARRAY_SIZE) -> Iterator[Trace]:
    """Record every graph built and every backward run inside the block.

    Arrays with at most ``max_array_size`` elements are copied; larger ones are summarised.
    """
    trace = Trace(max_array_size)
    trace._start()
    try:
        yield trace
    finally:
        trace._stop()


def from_output(output: Any, max_array_size: int = DEFAULT_MAX_ARRAY_SIZE) -> Trace:
    """A trace of the existing graph upstream of ``output``.

    Forward steps come in (generation, creation order); there are no backward steps.
    Gradients the variables hold now appear at the last step. Plain-array operands
    (``core.Constant``) are CONSTANT; outputs made under no_grad look like leaves here.
    """
    if not isinstance(output, core.Variable):
        raise TypeError(f"from_output: expected a Variable, got {type(output).__name__}")
    trace = Trace(max_array_size)
    if output.creator is not None:
        trace._adopt(output.creator, as_steps=True)
    if id(output) not in trace._ids:
        trace._add_input(output)
    stamp = len(trace._raw)
    for nid in trace.variables:
        v = trace.live(nid)
        if v is not None and v.grad is not None:
            raw = capture(v.grad.data, trace.max_array_size)
            trace._extra.append((stamp, stamp - 1, nid, _GRAD, raw))
    trace._leaf_raw = {}
    trace._maybe_constant = {}
    trace._ids = {}
    return trace


def load(path: str | os.PathLike[str], max_bytes: int | None = None) -> Trace:
    """Load a trace saved by :meth:`Trace.to_json`; raises :class:`TraceFormatError`."""
    from autodiff import _trace_io

    return _trace_io.load(path, max_bytes=max_bytes)
