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
import numpy as np

from autodiff import core
from autodiff._snapshot import Snapshot, capture, raw_nonfinite, to_snapshot

_F64 = np.dtype(np.float64)

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


# Event kinds in a node's history.
_VALUE, _GRAD, _CLEARED, _FREED = range(4)
_VARIABLE, _FUNCTION = 0, 1
_FWD, _BWD = 0, 1  # first field of a raw step
# Cap on remembered no_grad outputs / operand constants (only needed if they later feed a
# recorded graph; the oldest are almost always dead).
_CONSTANT_MEMORY = 200_000


class _NodeRef(weakref.ref):
    __slots__ = ("key", "nid")


def _make_freed_callback(trace_ref: weakref.ref) -> Any:
    # The callback holds the trace only weakly: a dropped trace is freed, not kept by its refs.
    def freed(ref: _NodeRef) -> None:
        trace = trace_ref()
        if trace is None:
            return
        ids = trace._ids
        if ids.get(ref.key) == ref.nid:
            del ids[ref.key]
        if trace._leaf_raw:
            trace._leaf_raw.pop(ref.nid, None)
        if trace._recording:
            stamp = len(trace._raw)
            trace._extra.append((stamp, stamp - 1, ref.nid, _FREED, None))

    return freed


class Trace:
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
    # Registration of live objects
    # ------------------------------------------------------------------------------
    def _new_node(self, obj: Any, info: tuple) -> int:
        nid = len(self._info)
        self._info.append(info)
        if obj is None:
            self._refs.append(None)
        else:
            ref = _NodeRef(obj, self._freed_cb)
            ref.nid = nid
            ref.key = key = id(obj)
            self._refs.append(ref)
            self._ids[key] = nid
        (self.variables if info[0] == _VARIABLE else self.functions).append(nid)
        return nid

    def _new_variable(self, v: Any) -> int:
        data = v.data
        if data is None:
            info = (_VARIABLE, v.generation, None, None)
        else:
            info = (_VARIABLE, v.generation, data.shape, data.dtype)
        nid = self._new_node(v, info)
        if v.name is not None:
            self._names[nid] = v.name
        return nid

    def _add_input(self, x: Any) -> int:
        """Register a Variable seen for the first time as an input (leaf, constant or upstream)."""
        creator = x.creator
        if creator is not None and id(creator) not in self._ids:
            self._adopt(creator, as_steps=False)
            nid = self._ids.get(id(x))
            if nid is not None:
                return nid
        order = self._maybe_constant.pop(id(x), None)
        nid = self._new_variable(x)
        raw = capture(x.data, self.max_array_size)
        stamp = len(self._raw)
        self._extra.append((stamp, stamp - 1, nid, _VALUE, raw))
        if (order is not None and order == x._order) or type(x) is core.Constant:
            self._constants.add(nid)
        elif creator is None:
            self._leaf_raw[nid] = raw
        return nid

    def _adopt(self, creator: Any, as_steps: bool) -> None:
        """Register the not yet known graph upstream of ``creator`` (iteratively, no recursion).

        With ``as_steps`` each Function becomes a forward step, in (generation, creation
        order); otherwise its values appear as already computed.
        """
        ids = self._ids
        found = []
        seen = {id(creator)}
        stack = [creator]
        while stack:
            f = stack.pop()
            found.append(f)
            for x in f.inputs:
                if id(x) in ids:
                    continue
                c = x.creator
                if c is not None and id(c) not in ids and id(c) not in seen:
                    seen.add(id(c))
                    stack.append(c)
        seen.clear()
        found.sort(key=lambda f: (f.generation, f._order))
        max_size = self.max_array_size
        for f in found:
            in_ids = tuple(ids[id(x)] if id(x) in ids else self._add_input(x) for x in f.inputs)
            fid = self._new_node(f, (_FUNCTION, f.generation, "", (), ()))
            out_ids = []
            values = []
            for ref in f.outputs:
                y = ref()
                if y is None:
                    nid = self._new_node(None, (_VARIABLE, f.generation + 1, None, None))
                    stamp = len(self._raw)
                    self._extra.append((stamp, stamp - 1, nid, _FREED, None))
                    values.append(None)
                else:
                    nid = ids.get(id(y))
                    if nid is None:
                        nid = self._new_variable(y)
                    values.append(capture(y.data, max_size))
                out_ids.append(nid)
            out_ids = tuple(out_ids)
            self._info[fid] = (_FUNCTION, f.generation, type(f).__name__, in_ids, out_ids)
            if as_steps:
                self._raw.append((_FWD, fid, in_ids, out_ids, tuple(values), -1))
            else:
                stamp = len(self._raw)
                self._extra.append((stamp, stamp - 1, fid, _VALUE, None))
                for nid, raw in zip(out_ids, values, strict=True):
                    self._extra.append((stamp, stamp - 1, nid, _VALUE, raw))
        found.clear()

    def _var_id(self, v: Any) -> int:
        nid = self._ids.get(id(v))
        if nid is None:
            nid = self._add_input(v)
        return nid

    # ------------------------------------------------------------------------------
    # The observer hook (autodiff.core calls these while recording)
    # ------------------------------------------------------------------------------
    def on_constant(self, variable: Any) -> None:
        self._maybe_constant[id(variable)] = variable._order

    def on_forward(self, f: Any, inputs: list, outputs: list, recorded: bool) -> None:
        if not recorded:
            if self._track_nograd:
                mc = self._maybe_constant
                for y in outputs:
                    mc[id(y)] = y._order
                if len(mc) > _CONSTANT_MEMORY:
                    for key in list(mc)[: _CONSTANT_MEMORY // 2]:
                        del mc[key]
            return
        # The hot path: everything inlined, one tuple per node, one per step.
        ids = self._ids
        info = self._info
        refs = self._refs
        callback = self._freed_cb
        in_ids = []
        for x in inputs:
            nid = ids.get(id(x))
            if nid is None:
                nid = self._add_input(x)
            elif nid in self._leaf_raw:
                self._check_leaf(x, nid)
            in_ids.append(nid)
        in_ids = tuple(in_ids)
        fid = len(info)
        out_ids = tuple(range(fid + 1, fid + 1 + len(outputs)))
        info.append((_FUNCTION, f.generation, type(f).__name__, in_ids, out_ids))
        ref = _NodeRef(f, callback)
        ref.nid = fid
        ref.key = key = id(f)
        refs.append(ref)
        ids[key] = fid
        self.functions.append(fid)
        variables = self.variables
        values = []
        nid = fid
        for y in outputs:
            nid += 1
            data = y.data
            info.append((_VARIABLE, y.generation, data.shape, data.dtype))
            ref = _NodeRef(y, callback)
            ref.nid = nid
            ref.key = key = id(y)
            refs.append(ref)
            ids[key] = nid
            variables.append(nid)
            if data.ndim == 0 and data.dtype is _F64:
                values.append(data.item())
            else:
                values.append(capture(data, self.max_array_size))
        stack = self._backward_stack
        self._raw.append((_FWD, fid, in_ids, out_ids, tuple(values), stack[-1][0] if stack else -1))

    def _check_leaf(self, x: Any, nid: int) -> None:
        """A leaf used again: record a new value if its data changed (an optimizer step)."""
        last = self._leaf_raw[nid]
        raw = capture(x.data, self.max_array_size)
        if _raw_equal(raw, last):
            return
        self._leaf_raw[nid] = raw
        stamp = len(self._raw)
        self._extra.append((stamp, stamp - 1, nid, _VALUE, raw))

    def on_backward_begin(self, output: Any, retain_grad: bool, create_graph: bool) -> None:
        self._pass += 1
        root = self._var_id(output)
        self.backward_roots.append(root)
        self._backward_stack.append((self._pass, create_graph))
        self._track_nograd = create_graph
        grad = output.grad
        raw = self._grad_raw(grad)
        stamp = len(self._raw)
        # The seed becomes visible with the first backward step; on a leaf there is none.
        visible = stamp if output.creator is not None else stamp - 1
        self._extra.append((stamp, visible, root, _GRAD, raw))
        if create_graph:
            gid = self._var_id(grad)
            self._grad_of[gid] = root

    def on_backward_step(self, step: Any) -> None:
        f = step.function
        fid = self._ids.get(id(f))
        if fid is None:
            self._adopt(f, as_steps=False)
            fid = self._ids[id(f)]
        in_ids = self._info[fid][3]
        raw_of = self._grad_raw
        # the raw values (arrays without create_graph): no Variable is made for the trace
        gys = step.output_grads_raw
        if len(gys) == 1:
            gys = (raw_of(gys[0]),)
        else:
            gys = tuple([None if g is None else raw_of(g) for g in gys])
        input_grads = step.input_grads_raw
        if len(input_grads) == 1:
            g = input_grads[0]
            gxs = (None if g is None else raw_of(g),)
        elif len(input_grads) == 2:
            g0, g1 = input_grads
            gxs = (None if g0 is None else raw_of(g0), None if g1 is None else raw_of(g1))
        else:
            gxs = tuple([None if g is None else raw_of(g) for g in input_grads])
        accs = ()
        if step.accumulated_raw:
            accs = tuple(
                [
                    (in_ids[slot], slot, raw_of(old), gxs[slot], raw_of(new))
                    for slot, old, new in step.accumulated_raw
                ]
            )
        cleared = ()
        if step.cleared:
            out_ids = self._info[fid][4]
            ys = step.cleared
            ref = self._refs[out_ids[0]] if len(ys) == len(out_ids) == 1 else None
            if ref is not None and ref() is ys[0]:
                cleared = out_ids
            else:
                ids = self._ids
                cleared = tuple([ids[id(y)] for y in ys if id(y) in ids])
        stack = self._backward_stack
        if stack and stack[-1][1]:  # create_graph: gradients are graph nodes
            self._link_grads(step, in_ids)
        self._raw.append((_BWD, fid, gys, gxs, accs, cleared, self._pass))

    def _link_grads(self, step: Any, in_ids: tuple) -> None:
        ids = self._ids
        for slot, g in enumerate(step.input_grads_raw):
            if g is not None and id(g) in ids:
                self._grad_of[ids[id(g)]] = in_ids[slot]
        for slot, _old, new in step.accumulated_raw:
            if id(new) in ids:
                self._grad_of[ids[id(new)]] = in_ids[slot]

    def on_backward_end(self, output: Any) -> None:
        if self._backward_stack:
            self._backward_stack.pop()
        if self._backward_stack:
            self._track_nograd = self._backward_stack[-1][1]
        else:
            self._track_nograd = True
            self._grad_cache.clear()

    def _grad_raw(self, g: Any) -> Any:
        """Raw snapshot of a gradient: an ndarray, a numpy scalar or a Variable.

        A small array seen again in the same backward pass (a gradient handed from the step
        that produced it to its creator's step) shares one copy; the cache holds the arrays
        (never Variables) until the pass ends so that their ids cannot be reused meanwhile.
        """
        t = type(g)
        if t is np.ndarray:
            if g.ndim == 0 and g.dtype is _F64:
                return g.item()
            if g.size > self.max_array_size:
                return capture(g, self.max_array_size)
            hit = self._grad_cache.get(id(g))
            if hit is not None and hit[0] is g:
                return hit[1]
            raw = capture(g, self.max_array_size)
            self._grad_cache[id(g)] = (g, raw)
            return raw
        if t is np.float64:
            return float(g)
        if isinstance(g, core.Variable):
            return self._grad_raw(g.data)
        return capture(np.asarray(g), self.max_array_size)

    def _start(self) -> None:
        self._recording = True
        core.add_observer(self)

    def _stop(self) -> None:
        core.remove_observer(self)
        self._recording = False
        self._refresh_names()
        self._maybe_constant = {}
        self._leaf_raw = {}
        self._grad_cache = {}
        self._backward_stack = []
        self._ids = {}
        if self._graph is not None:
            self._sync_graph()
            for nid in self.variables:
                self._graph.nodes[nid]["name"] = self._names.get(nid)

    def _refresh_names(self) -> None:
        names = self._names
        refs = self._refs
        for nid in self.variables:
            ref = refs[nid]
            v = ref() if ref is not None else None
            if v is not None and v.name is not None:
                names[nid] = v.name

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


def _raw_equal(a: Any, b: Any) -> bool:
    if type(a) is float and type(b) is float:
        return a == b or (a != a and b != b)
    if type(a) is not type(b):
        return False
    if a is None:
        return True
    if type(a) is Snapshot:
        return a == b
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


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
