"""The Trace: the recorder's tables, read as steps, node states and a graph."""

from __future__ import annotations

import contextlib
import functools
import operator
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from autodiff import core
from autodiff.trace import _audit
from autodiff.trace._index import TraceIndex, _bulk
from autodiff.trace._recorder import (
    _GRAD,
    _LAST_STEP_KIND,
    _VALUE,
    LineRecorder,
    LineSource,
    Recorder,
    _same_raw,
)
from autodiff.trace._rows import FUNCTION, FWD, VARIABLE, BackwardRow, ForwardRow, ScopeRow
from autodiff.trace._snapshot import Snapshot, _dtype_name, capture, raw_nonfinite, to_snapshot
from autodiff.trace.formats import json_io, npz

if TYPE_CHECKING:
    import networkx as nx

    from autodiff.trace._audit import LeakReport

__all__ = [
    "Accumulation",
    "Step",
    "Trace",
    "from_output",
    "load",
    "record",
    "trace_from_dict",
    "trace_from_npz",
]

DEFAULT_MAX_ARRAY_SIZE = 4096


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


# torch ops whose output shares its input's memory: an in-place change of the input is one
# of the output
_TORCH_VIEWS = frozenset(
    {"t", "transpose", "permute", "view", "reshape", "_unsafe_view", "expand", "squeeze",
     "unsqueeze", "select", "slice", "alias", "as_strided", "unflatten", "flatten", "narrow",
     "diagonal", "unfold", "view_as", "expand_as"}
)  # fmt: skip
_VIEW_DEPTH = 8  # views of views followed back to a leaf


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shapes, dtypes and elements (NaN where NaN was)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def _snapshot(made: dict[int, Snapshot], raw: Any) -> Snapshot | None:
    """The Snapshot of ``raw``, from ``made`` (id(raw) -> Snapshot) or made and kept there."""
    if raw is None or type(raw) is Snapshot:
        return raw
    snap = made.get(id(raw))
    if snap is None:
        snap = made[id(raw)] = to_snapshot(raw)
    return snap


def _delegate(part: str, name: str) -> Any:
    """A Trace method that is its ``part``'s method ``name`` (same signature and doc)."""
    method = getattr({"_recorder": Recorder, "_indexer": TraceIndex}[part], name)
    get = operator.attrgetter(f"{part}.{name}")

    def forward(self: Trace, *args: Any, **kwargs: Any) -> Any:
        return get(self)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = method.__doc__
    forward.__wrapped__ = method  # type: ignore[attr-defined]  # inspect.signature reads it
    return forward


class Trace:
    """A recorded graph and its timeline. Build one with :func:`record`, :func:`from_output`
    or :func:`load`.

    ``steps`` is the exact timeline; ``graph`` the networkx.MultiDiGraph (one edge per argument
    slot, ``slot`` attribute); node ids are integers from a counter, in registration order.

    A Trace is composed of two parts: its :class:`~autodiff.trace._recorder.Recorder` (the
    engine's observer while recording, and the tables it decodes its tape into) and its
    :class:`~autodiff.trace._index.TraceIndex` (histories and states over those tables). What
    they answer is offered here, by delegation.
    """

    def __init__(
        self,
        max_array_size: int = DEFAULT_MAX_ARRAY_SIZE,
        *,
        tables: Recorder | None = None,
        lines: LineSource | None = None,
    ) -> None:
        """``tables``: a loader's filled tables to read instead of a fresh recorder (their
        ``max_array_size`` is then the trace's). ``lines``: record each Function's line of
        this source file (or of the files this test of a ``co_filename`` accepts), see
        :meth:`line_of`; None records none."""
        if tables is not None:
            max_array_size = tables.max_array_size
        if max_array_size < 0:
            raise ValueError(f"max_array_size must be >= 0, got {max_array_size}")
        self.max_array_size = int(max_array_size)
        # the tape, the decoded tables and the recording state
        if tables is not None:
            self._recorder = tables
        elif lines is None:
            self._recorder = Recorder(self.max_array_size)
        else:
            self._recorder = LineRecorder(self.max_array_size, lines)
        self._steps: list[Step] = []
        self._some_steps: dict[int, Step] = {}  # steps built one by one (Trace.step)
        self._snapshots: dict[int, Snapshot] = {}  # id(raw value) -> its Snapshot
        # histories and structure, built lazily from the tables
        # the Snapshot of a raw value, made once and shared by steps, states and the graph (raw
        # values live as long as the trace, so their ids are stable keys)
        self._snap = functools.partial(_snapshot, self._snapshots)
        self._indexer = TraceIndex(self._recorder, self._snap)
        self._graph: nx.MultiDiGraph | None = None
        self._graph_nodes = 0
        self._variables: list[int] = []
        self._functions: list[int] = []
        self._kinds_seen = 0  # nodes of _info sorted into _variables / _functions
        # node_scopes' array and the table sizes it was made at (a view asks for it per graph)
        self._scope_array: tuple[tuple[int, int], np.ndarray] | None = None

    # --- the recorder's tables (read: the tape is decoded first) -----------------------
    _raw = property(operator.attrgetter("_recorder._raw"))
    _info = property(operator.attrgetter("_recorder._info"))
    _extra = property(operator.attrgetter("_recorder._extra"))
    _refs = property(operator.attrgetter("_recorder._refs"))
    _names = property(operator.attrgetter("_recorder._names"))
    _constants = property(operator.attrgetter("_recorder._constants"))
    _operands = property(operator.attrgetter("_recorder._operands"))
    _grad_of = property(operator.attrgetter("_recorder._grad_of"))
    _scope_of = property(operator.attrgetter("_recorder._scope_of"))
    _parameters = property(operator.attrgetter("_recorder._parameters"))
    _tape = property(operator.attrgetter("_recorder._tape"))
    _recording = property(operator.attrgetter("_recorder._recording"))

    @property
    def backward_roots(self) -> list[int]:
        """The output node of each backward pass, in order."""
        return self._recorder.backward_roots

    @backward_roots.setter
    def backward_roots(self, roots: list[int]) -> None:
        self._recorder.backward_roots = roots

    @property
    def tables(self) -> Recorder:
        """The recorder, as its tables and their constructors (``add_variable``,
        ``add_function``, ``add_forward_step``...): what the writers read; a loader fills a
        fresh recorder and a Trace reads it (``Trace(tables=...)``)."""
        return self._recorder

    _sync = _delegate("_recorder", "_sync")
    _walk = _delegate("_recorder", "_walk")

    def _start(self, attach: bool = True) -> None:
        self._recorder._start(attach)

    def _stop(self, detach: bool = True) -> None:
        self._recorder._stop(detach)
        if self._graph is not None:  # names given while recording reach the graph built
            self._sync_graph()
            nodes = self._graph.nodes
            names = self._names
            for nid in self.variables:
                nodes[nid]["name"] = names.get(nid)

    # --- the index's answers ------------------------------------------------------------
    state_at = _delegate("_indexer", "state_at")
    state_at_position = _delegate("_indexer", "state_at_position")
    change_points = _delegate("_indexer", "change_points")
    timeline = _delegate("_indexer", "timeline")
    position_timeline = _delegate("_indexer", "position_timeline")
    value_at = _delegate("_indexer", "value_at")
    value_at_position = _delegate("_indexer", "value_at_position")
    grad_at = _delegate("_indexer", "grad_at")
    grad_at_position = _delegate("_indexer", "grad_at_position")
    grad_origin = _delegate("_indexer", "grad_origin")
    grad_origin_at_position = _delegate("_indexer", "grad_origin_at_position")
    grad_fate = _delegate("_indexer", "grad_fate")
    grad_fate_at_position = _delegate("_indexer", "grad_fate_at_position")
    forward_step_of = _delegate("_indexer", "forward_step_of")
    steps_of_pass = _delegate("_indexer", "steps_of_pass")
    creator_of = _delegate("_indexer", "creator_of")
    ancestors = _delegate("_indexer", "ancestors")
    outputs = _delegate("_indexer", "outputs")

    @property
    def variables(self) -> list[int]:
        """Variable node ids in creation order."""
        self._sort_kinds()
        return self._variables

    @property
    def functions(self) -> list[int]:
        """Function node ids in creation order."""
        self._sort_kinds()
        return self._functions

    def scopes(self) -> list[ScopeRow]:
        """The scope instances, by scope id (0: the root, ``path == ''``): one per Layer call
        and per ``autodiff.scope`` block, in the order they began."""
        return self._recorder._scopes

    def node_scopes(self) -> np.ndarray:
        """The scope id of every node, indexed by node id (0: in no scope); a variable is in
        its creator's scope, a leaf in none. Read-only: made once, and again once the
        recording has grown."""
        scope_of = self._scope_of
        key = (len(self._info), len(scope_of))
        made = self._scope_array
        if made is not None and made[0] == key:
            return made[1]
        out = np.zeros(key[0], dtype=np.int64)
        if scope_of:
            out[np.fromiter(scope_of.keys(), np.int64, len(scope_of))] = np.fromiter(
                scope_of.values(), np.int64, len(scope_of)
            )
        out.flags.writeable = False
        self._scope_array = (key, out)
        return out

    def cut_at(self, node_id: int) -> int | None:
        """The step before which variable ``node_id`` was first used as a leaf after the
        program cut its history (``unchain()`` / ``unchain_backward()``); None if never."""
        return self._recorder._cut.get(int(node_id))

    def cuts(self) -> dict[int, int]:
        """Every variable whose history was cut, and the step before which (see cut_at)."""
        return dict(self._recorder._cut)

    def line_of(self, node_id: int) -> int | None:
        """The line of the program's source a function node ran on; a variable's is its
        creator's. None when not known: a leaf, or a trace recorded without ``lines``
        (:func:`record`) or saved without them."""
        rec = self._recorder
        lines = rec._lines  # (decodes the tape)
        info = rec._t_info
        if not 0 <= node_id < len(info):
            raise IndexError(f"node {node_id} does not exist (the trace has {len(info)} nodes)")
        if not lines:
            return None
        if info[node_id].kind == VARIABLE:
            node_id = self.creator_of(node_id)
        return lines.get(node_id)

    # --- as a reader (TraceReader): the whole recording, its own base -------------------
    pass_offset = 0  # its backward pass 0 is the run's

    @property
    def base(self) -> Trace:
        """The whole recording: this trace."""
        return self

    # the engine's recordings keep their forward values (a statistics-only torch recording,
    # pytorch.record(statistics_only=True), sets this False on its instance)
    values_kept: bool = True

    def global_step(self, step_index: int) -> int:
        return step_index

    def local_step(self, global_index: int) -> int:
        return global_index

    def detached(self) -> frozenset[int]:
        """None: no history was cut before a whole recording."""
        return frozenset()

    def parameters(self) -> frozenset[int]:
        """The variable nodes that are ``Parameter``s (``node(id)['parameter']``, for all)."""
        return frozenset(self._parameters)

    def shapes(self, node_ids: Any) -> list[tuple[int, ...] | None]:
        """``node(id)['shape']`` of each of ``node_ids``, read straight from the tables (no
        attributes built); None for a function or an unknown shape."""
        return [
            None if row.kind != VARIABLE or row.shape is None else tuple(row.shape)
            for _, row in self._rows(node_ids)
        ]

    def _rows(self, node_ids: Any) -> list[tuple[int, Any]]:
        """``(id, table row)`` of each of ``node_ids``: what the bulk readers (shapes, names,
        ops) read instead of building each node's attributes; an unknown id is a KeyError."""
        info = self._info
        n = len(info)
        rows = []
        for nid in node_ids:
            nid = int(nid)
            if not 0 <= nid < n:
                raise KeyError(f"node {nid} is not in the trace ({n} nodes)")
            rows.append((nid, info[nid]))
        return rows

    def names(self, node_ids: Any) -> list[str | None]:
        """``node(id)['name']`` of each of ``node_ids`` (a live variable's name as it is now,
        as ``node()`` reads it; None for a Function or an unnamed variable), without building
        each node's attributes."""
        rows = self._rows(node_ids)  # decodes the tape (self._info) and validates the ids
        rec = self._recorder
        refs, names = rec._t_refs, rec._t_names
        out: list[str | None] = []
        for nid, row in rows:
            if row.kind != VARIABLE:
                out.append(None)
                continue
            ref = refs[nid]
            obj = ref() if ref is not None else None
            if obj is not None and obj.name is not None:
                names[nid] = obj.name
            out.append(names.get(nid))
        return out

    def ops(self, node_ids: Any) -> list[str | None]:
        """``node(id)['op']`` of each of ``node_ids`` (a Function's class name, None for a
        variable), read straight from the tables."""
        return [None if row.kind == VARIABLE else row.op for _, row in self._rows(node_ids)]

    def _sort_kinds(self) -> None:
        info = self._info
        n = len(info)
        if self._kinds_seen == n:
            return
        variables, functions = self._variables, self._functions
        for nid in range(self._kinds_seen, n):
            (variables if info[nid].kind == VARIABLE else functions).append(nid)
        self._kinds_seen = n

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
        some = self._some_steps
        with _bulk(len(raw) - len(steps)):
            for k in range(len(steps), len(raw)):
                step = some.pop(k, None)
                steps.append(step if step is not None else self._make_step(k, raw[k]))
        return steps

    @property
    def step_count(self) -> int:
        """``len(steps)``, without building them or decoding the tape."""
        return self.count_steps()

    def count_steps(self, at_most: int | None = None) -> int:
        """The number of steps recorded, counted without decoding the tape (a long run's
        takes seconds to decode). With ``at_most``, counting stops past it: the answer is then
        ``at_most + 1`` for any longer recording, in time proportional to ``at_most``."""
        rec = self._recorder
        with rec._sync_lock:
            n = len(rec._t_raw)
            if at_most is not None and n > at_most:
                return at_most + 1
            tape = self._tape
            end = len(tape) if rec._recording else rec._tape_end
            for i in range(end):
                e = tape[i]
                if type(e) is tuple and e[0] <= _LAST_STEP_KIND:
                    n += 1
                    if at_most is not None and n > at_most:
                        return at_most + 1
            return n

    def step(self, index: int) -> Step:
        """``steps[index]``, building only that Step (a long run has millions)."""
        n = len(self._raw)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"step index {index} out of range (the trace has {n} steps)")
        if index < len(self._steps):
            return self._steps[index]
        step = self._some_steps.get(index)
        if step is None:
            step = self._some_steps[index] = self._make_step(index, self._raw[index])
        return step

    def _make_step(self, k: int, r: ForwardRow | BackwardRow) -> Step:
        snap = self._snap
        fid = r.function
        _, gen, op, in_ids, out_ids = self._info[fid]
        if r.kind == FWD:
            values = tuple([snap(v) for v in r.values])
            nonfinite = any(v is not None and not v.finite for v in values)
            return Step(
                k, "forward", fid, op, gen, in_ids, out_ids, values, (), (), (), (), -1,
                nonfinite, r.during,
            )  # fmt: skip
        _, _, gys, gxs, accs, cleared, bpass = r
        input_grads = tuple([snap(g) for g in gxs])
        accumulations = tuple(
            [Accumulation(node, slot, snap(o), snap(c), snap(n)) for node, slot, o, c, n in accs]
        )
        nonfinite = any(g is not None and not g.finite for g in input_grads) or any(
            not a.new.finite for a in accumulations
        )
        return Step(
            k, "backward", fid, op, gen, in_ids, out_ids, (),
            tuple([snap(g) for g in gys]), input_grads, accumulations, cleared, bpass, nonfinite,
        )  # fmt: skip

    def stale_inputs(self, step_index: int) -> tuple[int, ...] | None:
        """The inputs of backward step ``step_index`` whose value the program changed (in
        place, or ``x.data`` rebound) after the Function's forward step read it: the engine's
        backward reads the new value, so the gradient it computes is not the forward's.
        ``()`` for a forward step or none changed. Only what the trace kept is compared: the
        leaves (inputs, parameters) kept whole, whose values the recorder checks when a
        backward pass begins; an intermediate result changed in place is not seen. In a
        PyTorch recording an input that is a view of a leaf (``W.t()``, which ``linear``
        reads) shares the leaf's memory: it is compared as the leaf. None: this recording
        cannot tell (a PyTorch recording that kept no value of an input of the step:
        statistics only; or no forward step of the Function: made before recording began)."""
        r = self._raw[step_index]
        if r.kind == FWD:
            return ()
        params = self._recorder._params
        torch = any(name == "torch_node" for name, _ in params.get(r.function, ()))
        forward = self._indexer.forward_step_of(r.function)
        if forward < 0:
            return None if torch else ()
        value_at = self._indexer.value_at
        stale = []
        for x in dict.fromkeys(self._info[r.function].inputs):
            source = self._viewed_leaf(x) if torch else x
            then, now = value_at(source, forward), value_at(source, step_index)
            if torch and then is None:
                return None  # an input without a value: statistics only
            if then is None or now is None or then is now:
                continue
            if then.array is None or now.array is None:
                continue  # summarised: not compared
            if not _same_array(then.array, now.array):
                stale.append(x)
        return tuple(stale)

    def _viewed_leaf(self, x: int) -> int:
        """The leaf whose memory torch's view ``x`` shares (through views of views), else
        ``x``."""
        source = x
        for _ in range(_VIEW_DEPTH):
            creator = self._indexer.creator_of(source)
            if creator < 0:
                return source
            if self._info[creator].op not in _TORCH_VIEWS or len(self._info[creator].inputs) != 1:
                return x
            source = self._info[creator].inputs[0]
        return x

    def first_nonfinite(self) -> Step | None:
        """The first step (forward or backward) that produced NaN or Inf, or None."""
        for k, r in enumerate(self._raw):
            if r.kind == FWD:
                bad = any(raw_nonfinite(v) for v in r.values)
            else:
                bad = any(raw_nonfinite(g) for g in r.input_grads) or any(
                    raw_nonfinite(new) for *_, new in r.accumulations
                )
            if bad:
                return self.step(k)
        return None

    # ------------------------------------------------------------------------------
    # Nodes and the graph
    # ------------------------------------------------------------------------------
    def node(self, node_id: int) -> dict[str, Any]:
        """The node's attributes (the same keys as ``graph.nodes[node_id]``)."""
        self._indexer._history(node_id)  # validates the id (and decodes the tape)
        rec = self._recorder
        ref = rec._t_refs[node_id]
        obj = ref() if ref is not None else None
        if obj is not None and rec._t_info[node_id].kind == VARIABLE and obj.name is not None:
            rec._t_names[node_id] = obj.name
        return self._attrs(node_id)

    def _attrs(self, nid: int) -> dict[str, Any]:
        # the recorder's decoded tables as they are: every caller has decoded the tape first
        rec = self._recorder
        info = rec._t_info[nid]
        scope = rec._t_scope_of.get(nid)
        path = "" if scope is None else rec._t_scopes[scope].path
        if info.kind == FUNCTION:
            return {
                "kind": "function",
                "name": None,
                "op": info.op,
                "shape": None,
                "dtype": None,
                "generation": info.generation,
                "constant": False,
                "value": None,
                "grad": None,
                "grad_of": None,
                "scope": path,
                "parameter": False,
            }
        _, gen, shape, dtype = info
        last = self._indexer._last
        return {
            "scope": path,
            "parameter": nid in rec._t_parameters,
            "kind": "variable",
            "name": rec._t_names.get(nid),
            "op": None,
            "shape": None if shape is None else tuple(shape),
            "dtype": None if dtype is None else _dtype_name(dtype),
            "generation": gen,
            "constant": nid in rec._t_constants,
            "value": last(nid, _VALUE),
            "grad": last(nid, _GRAD),
            "grad_of": rec._t_grad_of.get(nid),
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
            import networkx as nx  # when first drawn: the script worker never draws

            g = self._graph = nx.MultiDiGraph(max_array_size=self.max_array_size)
        self._indexer._index()
        start, end = self._graph_nodes, len(self._info)
        if self._recording:
            self._recorder._refresh_names()
        info = self._info
        attrs = self._attrs
        with _bulk(end - start):
            g.add_nodes_from([(nid, attrs(nid)) for nid in range(start, end)])
            g.add_edges_from(self._edges(range(start, end)))
        self._graph_nodes = self._indexer.shown_nodes = end
        nodes = g.nodes
        for nid in self._indexer._dirty:
            if nid < start and info[nid][0] == VARIABLE:
                a = nodes[nid]
                a["value"] = self._indexer._last(nid, _VALUE)
                a["grad"] = self._indexer._last(nid, _GRAD)
                a["name"] = self._names.get(nid)
                a["grad_of"] = self._grad_of.get(nid)
        self._indexer._dirty.clear()
        return g

    def _edges(self, functions: Any, keep: Any = None) -> list[tuple[int, int, int, dict]]:
        """``(u, v, key, attrs)`` of the functions among the node ids ``functions``, in the
        graph's order: per function its inputs, then its outputs; only edges to nodes in
        ``keep`` when it is given."""
        info = self._info
        edges = []
        for nid in functions:
            entry = info[nid]
            if entry[0] != FUNCTION:
                continue
            for slot, x in enumerate(entry[3]):
                if keep is None or x in keep:
                    edges.append((x, nid, slot, {"slot": slot}))
            for slot, y in enumerate(entry[4]):
                if keep is None or y in keep:
                    edges.append((nid, y, slot, {"slot": slot}))
        return edges

    def edges(self, node_ids: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """The graph's edges as integer arrays, built from the tables (no networkx): an
        ``(E, 2)`` array of ``(source, target)`` node ids and the ``(E,)`` argument slots, per
        function in id order its inputs, then its outputs. With ``node_ids``, only the edges
        between those nodes (as in :meth:`subgraph`)."""
        n_nodes = len(self._info)
        if node_ids is None:
            rows = self._edges(range(n_nodes))
        else:
            keep = {int(n) for n in node_ids}
            for nid in keep:
                if not 0 <= nid < n_nodes:
                    raise KeyError(f"Trace has no node {nid!r} (ids are 0..{n_nodes - 1})")
            rows = self._edges(sorted(keep), keep)
        pairs = np.array([(u, v) for u, v, _, _ in rows], dtype=np.int64).reshape(-1, 2)
        slots = np.array([k for _, _, k, _ in rows], dtype=np.int64)
        return pairs, slots

    def subgraph(self, node_ids: Any) -> nx.MultiDiGraph:
        """``networkx.MultiDiGraph(t.graph.subgraph(node_ids))`` (the same nodes, attributes,
        edges and iteration order), built from the tables without the whole graph: what a
        viewer showing one graph of a long run needs."""
        keep = {int(n) for n in node_ids}
        n_nodes = len(self._info)
        for nid in keep:
            if not 0 <= nid < n_nodes:
                raise KeyError(f"Trace has no node {nid!r} (ids are 0..{n_nodes - 1})")
        order = sorted(keep)
        self._indexer._index()
        if self._recording:
            for nid in order:
                self.node(nid)  # picks up names given since the op
        import networkx as nx

        g = nx.MultiDiGraph(max_array_size=self.max_array_size)
        g.add_nodes_from([(nid, self._attrs(nid)) for nid in order])
        # The order a copy of a subgraph view gets: edges by source node, then as the source's
        # successors were added (a variable's consumers in creation order; a function's
        # outputs by slot), then by key.
        edges = self._edges(order, keep)
        info = self._info
        edges.sort(key=lambda e: (e[0], e[2] if info[e[0]][0] == FUNCTION else e[1], e[2]))
        g.add_edges_from(edges)
        return g

    def function_params(self, node_id: int) -> dict[str, Any]:
        """The small attributes recorded of function node ``node_id`` (Pow's ``{"c": 2}``,
        Sum's ``axis``...), kept where the live Function is not: saved traces, a script's
        graphs. Plain data only (tuples of ints for shapes and axes); {} when none was kept."""
        return dict(self.tables._params.get(node_id, ()))

    def live(self, node_id: int) -> Any:
        """The engine object behind ``node_id`` if it is still alive, else None."""
        ref = self._refs[node_id]
        return None if ref is None else ref()

    def alive(self) -> list[int]:
        """The nodes whose engine object is still alive, in id order (the objects themselves
        through :meth:`live`: this list holds none of them)."""
        return [nid for nid, ref in enumerate(self._refs) if ref is not None and ref() is not None]

    def freed(self, node_id: int) -> bool:
        """True when the node's engine object existed and has been collected."""
        ref = self._refs[node_id]
        return ref is not None and ref() is None

    # ------------------------------------------------------------------------------
    # Exports and the leak audit
    # ------------------------------------------------------------------------------
    def to_dot(self, step: int | None = None) -> str:
        """DOT text of the graph; ``step``: its values after that step (default: the last)."""
        return json_io.to_dot(self, step)

    def to_graphml(self, path: str | os.PathLike[str]) -> None:
        json_io.to_graphml(self, path)

    def to_json(self, path: str | os.PathLike[str]) -> None:
        json_io.to_json(self, path)

    def audit(self) -> LeakReport:
        """Which recorded objects are still alive, and who holds them (see autodiff.leaks)."""
        return _audit.audit(self, skip=_AUDIT_CODE)


def record(
    max_array_size: int = DEFAULT_MAX_ARRAY_SIZE, *, lines: LineSource | None = None
) -> contextlib.AbstractContextManager[Trace]:
    """Record every graph built and every backward run inside the block, on this thread
    (what other threads compute meanwhile is not recorded).

    Arrays with at most ``max_array_size`` elements are copied; larger ones are summarised.
    ``lines``: a source file (``__file__``), or a test of a code object's ``co_filename``:
    each Function also records the line of that source it ran on, the innermost in the calls
    that led to it (:meth:`Trace.line_of`). Each operation then costs a walk up the stack;
    None (the default) records no line and costs nothing.
    """
    return _Recording(Trace(max_array_size, lines=lines))


class _Recording:
    """:func:`record`'s block (a class: a generator's context costs a short block 3 us more)."""

    __slots__ = ("trace",)

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    def __enter__(self) -> Trace:
        self.trace._start()
        return self.trace

    def __exit__(self, *exc: object) -> None:
        self.trace._stop()


def from_output(output: Any, max_array_size: int = DEFAULT_MAX_ARRAY_SIZE) -> Trace:
    """A trace of the existing graph upstream of ``output``.

    Forward steps come in (generation, creation order). When backward already ran on the
    graph (a leaf holds a gradient), the trace also has a backward pass: backward from
    ``output`` is replayed, recorded, and every gradient is put back as it was, so the
    program sees no change. A gradient the program holds that one backward does not give
    (the sum of several backward calls) shows at the last step as it is held. Plain-array
    operands (``core.Constant``) are CONSTANT; outputs made under no_grad look like leaves.
    """
    if not isinstance(output, core.Variable):
        raise TypeError(f"from_output: expected a Variable, got {type(output).__name__}")
    trace = Trace(max_array_size)
    variables = _upstream_variables(output)
    held = [(v, v.grad) for v in variables]
    leaves_hold = any(g is not None and v.creator is None for v, g in held)
    if not leaves_hold:
        trace._walk(output)
        _append_grads(trace, [(v, v.grad) for v in variables], max_array_size)
        return trace
    retain = any(g is not None and v.creator is not None for v, g in held if v is not output)
    create_graph = any(g is not None and g.creator is not None for _, g in held)
    for v in variables:
        v.grad = None
    try:
        trace._walk(output, replay=(retain, create_graph))
        replayed = {id(v): v.grad for v in variables}
    finally:
        for v, g in held:
            v.grad = g
    differ = [(v, g) for v, g in held if g is not None and not _same_grad(g, replayed.get(id(v)))]
    _append_grads(trace, differ, max_array_size)
    return trace


def _upstream_variables(output: Any) -> list[Any]:
    """Every Variable of the graph behind ``output`` (iteratively; creation order)."""
    seen = {id(output): output}
    stack = [output]
    done: set[int] = set()
    while stack:
        f = stack.pop().creator
        if f is None or id(f) in done:
            continue
        done.add(id(f))
        for x in f.inputs:
            if id(x) not in seen:
                seen[id(x)] = x
                stack.append(x)
    return sorted(seen.values(), key=lambda v: v._order)


def _same_grad(a: Any, b: Any) -> bool:
    return b is not None and _same_raw(np.asarray(a.data), np.asarray(b.data))


def _append_grads(trace: Trace, grads: list[tuple[Any, Any]], max_array_size: int) -> None:
    """The gradients the program holds, shown at the last step (as they are held now)."""
    stamp = len(trace._raw)
    rows = trace.tables
    node_of = {id(trace.live(nid)): nid for nid in trace.variables}
    for v, g in grads:
        nid = node_of.get(id(v))
        if nid is not None and g is not None:
            rows.add_event(stamp, stamp - 1, nid, _GRAD, capture(g.data, max_array_size), None)


def load(path: str | os.PathLike[str], max_bytes: int | None = None) -> Trace:
    """Load a trace saved by :meth:`Trace.to_json`; raises :class:`TraceFormatError`."""
    return Trace(tables=json_io.load(path, max_bytes=max_bytes))


def trace_from_dict(data: Any) -> Trace:
    """A Trace from the dict of :func:`autodiff.trace.formats.json_io.trace_to_dict`, validated
    field by field; raises :class:`TraceFormatError`."""
    return Trace(tables=json_io.tables_from_dict(data))


def trace_from_npz(file: str | os.PathLike[str] | Any) -> Trace:
    """A Trace from the file of :func:`autodiff.trace.formats.npz.trace_to_npz`; raises
    :class:`TraceFormatError`."""
    return Trace(tables=npz.tables_from_npz(file))


_AUDIT_CODE = (Trace.audit.__code__,)  # the audit skips its own caller's frame
