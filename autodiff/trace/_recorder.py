"""The recorder :class:`autodiff.trace.Trace` holds: the engine's observer hook and its tables.

Recording keeps only what cannot be recovered later, in the cheapest form, on one ordered
*tape* (a list):

- one tuple per forward or backward step: the objects' creation orders, raw snapshots
  (``capture``) and the weak references of the new objects;
- one tuple per object registered outside a step (a leaf, a constant, a graph built before
  recording) and per event that is not a step (a leaf's new value, the seed gradient);
- the weak reference of each recorded object that died: each reference's callback is the
  tape's C-level ``append``, so a death is written in its place in the timeline without running
  any Python code.

While recording, an engine object is named by its creation order (``core``'s ``_order``:
unique in the process and never reused, unlike ``id()``). A Variable that has a creator and a
Function are recorded by the forward step that made them if they were made after recording
started, so the hot path needs no lookup at all; everything else (leaves, constants, older
graphs) is registered once, on the slow path. The tables the reading side uses (``_raw`` steps,
``_info`` node kinds, ``_extra`` node events, ``_refs``, ...) are decoded from the tape when
first read (:meth:`Recorder._sync`), which also turns creation orders into node ids: integers
from 0 in registration order.
"""

from __future__ import annotations

import operator
import os
import struct
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from autodiff import core
from autodiff.trace._checks import (
    MAX_NAME,
    MAX_OP,
    MAX_SCOPE_PATH,
    cut_text,
    small_params,
    small_value,
)
from autodiff.trace._compact import compact
from autodiff.trace._rows import (
    BWD,
    FUNCTION,
    FWD,
    ROOT_SCOPE,
    VARIABLE,
    BackwardRow,
    EventRow,
    ForwardRow,
    FunctionRow,
    ScopeRow,
    VariableRow,
)
from autodiff.trace._snapshot import Snapshot, capture

# A row from a plain tuple without the NamedTuple's Python-level __new__ (half the cost: a
# long run decodes millions of rows)
_new = tuple.__new__

_F64 = np.dtype(np.float64)
_NDARRAY = np.ndarray
_FLOAT64 = np.float64
_FLOAT_BITS = struct.Struct("d")
_ref = weakref.ref
_VARIABLE = core.Variable
_CONSTANT = core.Constant
_PARAMETER = core.Parameter

# Event kinds in a node's history. _CLEARED: dropped by backward (retain_grad=False);
# _EMPTIED: set to None by the program (cleargrad(), zero_grad(), ``x.grad = None``).
_VALUE, _GRAD, _CLEARED, _FREED, _EMPTIED = range(5)
# The tape's other entries (see _decode).
(
    _FWD_MANY, _T_STEP, _T_NODE, _T_INFO, _T_INPUT, _T_EVENT, _T_GRAD_OF, _T_ROOT, _T_NAME,
    _T_LEAF, _T_SEGMENT, _T_SCOPE, _T_SCOPE_END, _T_PARAMETER, _T_PARAMS,
) = range(2, 17)  # fmt: skip
# A recorded Function's source line (LineRecorder only): (_T_LINE, function order, line)
_T_LINE = 17
# Tape entries that are steps have kinds up to this one: FWD, BWD, _FWD_MANY (several outputs,
# or one summarised) and _T_STEP (a step of a graph adopted as steps)
_LAST_STEP_KIND = _T_STEP
# Cap on remembered no_grad outputs / operand constants (only needed if they later feed a
# recorded graph; the oldest are almost always dead).
_CONSTANT_MEMORY = 200_000
_MISSING = object()
_OPERAND = 2  # _T_INPUT's constant field for a core.Constant (backward stores no gradient)
_RECEIVED = object()  # in a backward step's input grads: the gradient the step received
_KEYS = object()  # in a FWD entry's second input key: the first is the tuple of all of them


class _Decoded:
    """A table of the trace: reading it first decodes what the tape holds."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.storage = "_t" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        if obj._tape:
            obj._sync()
        return getattr(obj, self.storage)

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(obj, self.storage, value)


class Recorder:
    """The engine's observer while a trace records: registration of live objects, the tape,
    its decoding into the tables below, and the recording state. A :class:`Trace` owns one
    and reads the tables; the recorder knows nothing of what reads them."""

    # Slots: a recording makes one (a long run's, one per backward pass) and reads its state
    # on every operation
    __slots__ = (
        "__weakref__",
        "_backward_stack",
        "_compact_from",
        "_create_graph",
        "_due",
        "_during",
        "_forward_samples",
        "_fresh",
        "_last_grad",
        "_late_names",
        "_leaf_grad",
        "_leaf_raw",
        "_leaf_refs",
        "_line_budget",
        "_line_file",
        "_line_files",
        "_line_test",
        "_lines_left",
        "_maybe_constant",
        "_nid_of",
        "_nid_of_ref",
        "_param_getter",
        "_param_names",
        "_parameter_keys",
        "_params_memo",
        "_pass",
        "_plain_classes",
        "_pseudo",
        "_recording",
        "_registered",
        "_sample_keys",
        "_scan_pending",
        "_scope_depth",
        "_scope_now",
        "_segment_start",
        "_start_order",
        "_sync_lock",
        "_t_constants",
        "_t_cut",
        "_t_extra",
        "_t_grad_of",
        "_t_info",
        "_t_lines",
        "_t_names",
        "_t_operands",
        "_t_parameters",
        "_t_params",
        "_t_raw",
        "_t_refs",
        "_t_scope_of",
        "_t_scopes",
        "_tape",
        "_tape_append",
        "_tape_end",
        "_tbackward_roots",
        "_track_nograd",
        "compact_due",
        "forward_only",
        "max_array_size",
        "output_ref_callback",
        "sample_forward_only",
    )
    max_array_size: int  # arrays of up to this many elements are kept whole (capture)
    # The decoded tables, indexed by node id where they are lists; their rows are _rows'.
    _raw = _Decoded()  # steps: ForwardRow or BackwardRow, in order
    _info = _Decoded()  # nodes: VariableRow or FunctionRow
    _extra = _Decoded()  # node events that are not steps, in stamp order: EventRow
    _refs = _Decoded()  # weak reference of each node's engine object (None: not known)
    _names = _Decoded()  # node -> Variable name
    _constants = _Decoded()  # CONSTANT nodes
    _operands = _Decoded()  # the CONSTANT nodes backward stores no gradient on (core.Constant)
    _grad_of = _Decoded()  # gradient node -> the node it is the gradient of (create_graph)
    backward_roots = _Decoded()  # the output node of each backward pass, in order
    _scopes = _Decoded()  # scope instances: ScopeRow, by scope id (0: the root)
    _scope_of = _Decoded()  # node -> its scope id, for the nodes in one (others: 0)
    _parameters = _Decoded()  # the nodes that are Parameters
    _cut = _Decoded()  # output node -> the step before which it was first used as a leaf
    # function node -> its small attributes, ((name, value), ...) (_checks.small_params); only
    # Functions that have some (most primitives have none)
    _params = _Decoded()
    # function node -> the line of the program's source it ran on (a LineRecorder's, or a
    # loaded trace's; most recordings keep none)
    _lines = _Decoded()

    def __init__(self, max_array_size: int) -> None:
        self.max_array_size = max_array_size
        self._t_raw: list[tuple] = []
        self._t_info: list[tuple] = []
        self._t_extra: list[tuple] = []
        self._t_refs: list[weakref.ref | None] = []
        self._t_names: dict[int, str] = {}
        self._t_constants: set[int] = set()
        self._t_operands: set[int] = set()
        self._t_grad_of: dict[int, int] = {}
        self._tbackward_roots: list[int] = []
        self._t_scopes: list[ScopeRow] = [ROOT_SCOPE]
        self._t_scope_of: dict[int, int] = {}
        self._t_parameters: set[int] = set()
        self._t_cut: dict[int, int] = {}
        self._t_params: dict[int, tuple[tuple[str, Any], ...]] = {}
        self._t_lines: dict[int, int] = {}
        self._param_getter: dict[type, Any] = {}  # recording: per class, see _class_params
        self._param_names: dict[Any, tuple[str, ...]] = {}  # getter -> the names it gets
        # the Function classes that keep no attribute (most primitives): one set lookup per
        # operation decides, without a call
        self._plain_classes: set[type] = set()
        self._params_memo: dict[tuple, tuple] = {}  # decoding: see _decode_params
        self._scope_depth = 0  # recording: scopes open now
        self._scope_now = 0  # decoding: the scope the tape is in
        self._tape: list = []
        # The engine makes each recorded output's weak reference with this callback while this
        # recorder is its one observer that gives one (core._output_ref_callback): the tape
        # keeps that reference, and a death reaches the tape through it, as through its own.
        self._tape_append = self.output_ref_callback = self._tape.append
        self._sync_lock = threading.Lock()  # one decoder at a time
        self._tape_end = 0  # after recording: the tape entries that belong to it
        self._nid_of: dict[int, int] = {}  # creation order (or pseudo key) -> node id
        self._nid_of_ref: dict[int, int] = {}  # id(weak reference) -> node id
        self._late_names: dict[int, str] = {}  # creation order -> name given before its node
        # backward pass -> node -> the gradient it holds now (decoding: a step's output grads)
        self._last_grad: dict[int, dict[int, Any]] = {}
        # recording state
        self._recording = False
        self._start_order = 0  # objects made from here on are recorded by their step
        self._registered: set[int] = set()  # orders registered on the slow path
        self._pseudo = 0  # keys for nodes without an engine object: -1, -2, ...
        self._during = -1  # the backward pass running now (-1: none)
        self._create_graph = False  # whether it records its gradients as a graph
        self._maybe_constant: dict[int, None] = {}  # _order of outputs made under no_grad
        self._track_nograd = True
        self._leaf_raw: dict[int, Any] = {}  # leaf order -> raw value last seen
        # Leaves are checked for changes the program made between iterations (a new value, a
        # gradient emptied or left over) when a segment begins: the first recorded operation
        # after a backward pass, and each backward pass.
        self._leaf_refs: dict[int, weakref.ref] = {}  # leaf order -> its weak reference
        self._leaf_grad: dict[int, Any] = {}  # leaf order -> raw gradient last seen (_MISSING)
        self._scan_pending = False
        self._fresh: set[int] = set()  # leaves the segment's scan checked, not used since
        self._segment_start = 0  # decoding: the step that began the current segment
        self._pass = -1
        self._backward_stack: list[tuple[int, bool]] = []
        # Forward-only work (autodiff.trace._compact): counted into ``forward_only`` (None:
        # never compacted) from ``_compact_from`` on, when ``compact_due`` is set (another
        # thread may set it: the next operation compacts); ``_due``: the next operation has
        # housekeeping to do (a segment's scan or a compaction)
        self.forward_only: Any = None
        self.compact_due = False
        self._due = False
        self._compact_from = 0
        self._sample_keys: list[int] = []  # roots of the forward-only graphs kept whole
        self.sample_forward_only = True  # keep the summary's first graphs whole (in this one)
        self._parameter_keys: set[int] = set()  # orders of the Parameters registered
        self._forward_samples: list[int] = []  # their node ids, once decoded

    # ------------------------------------------------------------------------------
    # The tables' constructors: how a loader (``formats.json_io``, ``formats.npz``) fills a
    # fresh recorder's tables, one row each, in the layouts above (recording decodes its tape
    # into the same)
    # ------------------------------------------------------------------------------
    def add_variable(
        self,
        generation: int,
        shape: tuple[int, ...] | None,
        dtype: Any,
        name: str | None = None,
        constant: bool = False,
        operand: bool = False,
    ) -> int:
        """A variable node with no engine object behind it; returns its id."""
        nid = len(self._t_info)
        self._t_info.append(_new(VariableRow, (VARIABLE, generation, shape, dtype)))
        self._t_refs.append(None)
        if name is not None:
            self.set_name(nid, name)
        if constant:
            self.mark_constant(nid, operand)
        return nid

    def add_function(
        self, generation: int, op: str, inputs: tuple[int, ...] = (), outputs: tuple[int, ...] = ()
    ) -> int:
        """A function node (its links may come later, :meth:`link_function`); returns its id."""
        nid = len(self._t_info)
        self._t_info.append(_new(FunctionRow, (FUNCTION, generation, op, inputs, outputs)))
        self._t_refs.append(None)
        return nid

    def add_function_ran(
        self,
        generation: int,
        op: str,
        inputs: tuple[int, ...],
        outputs: list[tuple[Any, Any]],
        params: tuple[tuple[str, Any], ...] = (),
        scope: int = 0,
    ) -> tuple[int, tuple[int, ...]]:
        """A function node that ran forward, with no engine object behind it, at once: the
        node, a variable for each output (``(shape, dtype)`` each, one generation later), its
        attributes, its scope and its forward step (no values) — the rows :meth:`add_function`,
        :meth:`add_variable`, :meth:`set_params`, :meth:`set_scope` and
        :meth:`add_forward_step` write, in one call (a torch recording makes one per autograd
        node at every pass). Returns the function's id and its outputs' ids."""
        info = self._t_info
        fid = len(info)
        n = len(outputs)
        out_ids = tuple(range(fid + 1, fid + 1 + n))
        info.append(_new(FunctionRow, (FUNCTION, generation, op, inputs, out_ids)))
        out_gen = generation + 1
        info += [_new(VariableRow, (VARIABLE, out_gen, shape, dtype)) for shape, dtype in outputs]
        self._t_refs += [None] * (n + 1)
        if params:
            self._t_params[fid] = params
        if scope:
            scope_of = self._t_scope_of
            for vid in out_ids:
                scope_of[vid] = scope
            scope_of[fid] = scope
        self._t_raw.append(_new(ForwardRow, (FWD, fid, inputs, out_ids, (None,) * n, -1)))
        return fid, out_ids

    def link_function(self, fid: int, inputs: tuple[int, ...], outputs: tuple[int, ...]) -> None:
        _, generation, op, _, _ = self._t_info[fid]
        self._t_info[fid] = _new(FunctionRow, (FUNCTION, generation, op, inputs, outputs))

    def set_params(self, fid: int, params: tuple[tuple[str, Any], ...]) -> None:
        """Function ``fid``'s small attributes, ``(name, value)`` pairs (none: nothing kept)."""
        if params:
            self._t_params[fid] = params

    def set_line(self, fid: int, line: int) -> None:
        """Function ``fid`` ran on line ``line`` of the program's source."""
        self._t_lines[fid] = line

    def set_name(self, node: int, name: str) -> None:
        self._t_names[node] = name

    def mark_constant(self, node: int, operand: bool = False) -> None:
        """``node`` is a constant; ``operand``: one the engine wrapped (``core.Constant``),
        on which backward stores no gradient."""
        self._t_constants.add(node)
        if operand:
            self._t_operands.add(node)

    def set_grad_of(self, node: int, target: int) -> None:
        """``node`` is the gradient of ``target`` (a gradient graph's node, create_graph)."""
        self._t_grad_of[node] = target

    def add_scope(self, name: str, cls: str = "", parent: int = 0) -> int:
        """A scope instance inside ``parent`` (0: a top scope); returns its id. Its name, class
        and path are cut to the limits the loaders keep (MAX_NAME, MAX_OP, MAX_SCOPE_PATH)."""
        up = self._t_scopes[parent]
        name = cut_text(name, MAX_NAME)
        cls = cut_text(cls, MAX_OP)
        path = _scope_path(up.path if parent else None, name)
        self._t_scopes.append(_new(ScopeRow, (path, name, cls, parent, up.depth + 1)))
        return len(self._t_scopes) - 1

    def set_scope(self, node: int, scope: int) -> None:
        """``node`` ran (a function) or was made (a variable) in scope instance ``scope``."""
        if scope:
            self._t_scope_of[node] = scope

    def mark_parameter(self, node: int) -> None:
        self._t_parameters.add(node)

    def mark_cut(self, node: int, step: int) -> None:
        """Variable ``node`` lost its creator (``unchain()``) and was used as a leaf from
        step ``step`` on: graphs built after that stop at it."""
        self._t_cut.setdefault(node, step)

    def add_forward_step(self, fid: int, values: tuple, during: int = -1) -> None:
        """Function ``fid`` ran forward (its inputs and outputs as its node has them)."""
        _, _, _, in_ids, out_ids = self._t_info[fid]
        self._t_raw.append(_new(ForwardRow, (FWD, fid, in_ids, out_ids, values, during)))

    def add_backward_step(
        self,
        fid: int,
        output_grads: tuple,
        input_grads: tuple,
        accumulations: tuple,
        cleared: tuple[int, ...],
        backward_pass: int,
    ) -> None:
        """Function ``fid``'s step of backward pass ``backward_pass``; ``accumulations``:
        ``(input node, slot, old, contribution, new)`` per fan-in sum."""
        self._t_raw.append(
            _new(
                BackwardRow,
                (BWD, fid, output_grads, input_grads, accumulations, cleared, backward_pass),
            )
        )

    def add_event(
        self, stamp: int, visible: int, node: int, kind: int, raw: Any, origin: int | None
    ) -> None:
        """A node event that is not a step (see ``_extra``)."""
        self._t_extra.append(_new(EventRow, (stamp, visible, node, kind, raw, origin)))

    # ------------------------------------------------------------------------------
    # Decoding the tape into the tables
    # ------------------------------------------------------------------------------
    def _sync(self) -> None:
        """Decode the tape recorded so far into the tables, and empty it."""
        with self._sync_lock:
            tape = self._tape
            end = len(tape) if self._recording else self._tape_end
            if end:
                chunk = tape[:end]
                del tape[:end]
                self._compact_from = max(0, self._compact_from - end)
                self._decode(chunk)
            if not self._recording:
                nid_of = self._nid_of
                self._forward_samples += [nid_of[k] for k in self._sample_keys if k in nid_of]
                self._sample_keys = []
                tape.clear()  # deaths after recording stopped are not part of the trace
                self._tape_end = 0
                # all decoded: what only decoding needed goes
                self._late_names.clear()
                self._nid_of.clear()
                self._nid_of_ref.clear()
                self._last_grad.clear()

    def _node(self, key: Any, ref: Any, info: Any) -> int:
        """A new node for ``key`` (decoding)."""
        refs = self._t_refs
        nid = len(refs)
        refs.append(ref)
        if type(info) is tuple:  # made on the recording side: becomes its row here
            info = _new(VariableRow if info[0] == VARIABLE else FunctionRow, info)
        self._t_info.append(info)
        if key is not None:
            self._nid_of[key] = nid
        if ref is not None:
            self._nid_of_ref[id(ref)] = nid
            name = self._late_names.pop(key, None)
            if name is not None:
                self._t_names[nid] = name
        return nid

    def _nid(self, key: int) -> int:
        """The node of a key; one never registered (a Variable given a creator by hand) gets
        a node of its own."""
        nid = self._nid_of.get(key)
        if nid is None:
            nid = self._node(key, None, (VARIABLE, 0, None, None))
        return nid

    def _decode(self, chunk: list) -> None:
        raw = self._t_raw
        extra = self._t_extra
        info = self._t_info
        nid_of = self._nid_of
        last_grad = self._last_grad
        new = self._node
        refs = self._t_refs
        nid_of_ref = self._nid_of_ref
        late_names = self._late_names
        scope = self._scope_now
        scope_of = self._t_scope_of
        k = len(raw)
        for e in chunk:
            if type(e) is not tuple:  # a weak reference whose object died here
                nid = self._nid_of_ref.pop(id(e), None)
                if nid is not None:
                    # shown with the next step: an object freed after the last step (the
                    # program let go of its graph) never shows as freed during it
                    extra.append(_new(EventRow, (k, k, nid, _FREED, None, None)))
                continue
            kind = e[0]
            if kind == FWD:  # one output, nearly every op: _node's work, inline
                _, f_key, k0, k1, value, during, cls, gen, f_ref, y_ref, y_key = e
                if k1 is None:  # one input
                    in_ids = (nid_of[k0] if k0 in nid_of else self._nid(k0),)
                elif k1 is _KEYS:  # three or more: k0 is their tuple
                    in_ids = tuple([nid_of[x] if x in nid_of else self._nid(x) for x in k0])
                else:
                    in_ids = (
                        nid_of[k0] if k0 in nid_of else self._nid(k0),
                        nid_of[k1] if k1 in nid_of else self._nid(k1),
                    )
                fid = len(refs)
                y_id = fid + 1
                if type(value) is float:
                    shape, dtype = (), _F64
                else:  # an array kept whole (a summary takes _FWD_MANY)
                    shape, dtype = value.shape, value.dtype
                values = (value,)
                out_ids = (y_id,)
                refs.append(f_ref)
                refs.append(y_ref)
                info.append(_new(FunctionRow, (FUNCTION, gen, cls.__name__, in_ids, out_ids)))
                info.append(_new(VariableRow, (VARIABLE, gen + 1, shape, dtype)))
                nid_of[f_key] = fid
                nid_of[y_key] = y_id
                if f_ref is not None:
                    nid_of_ref[id(f_ref)] = fid
                if y_ref is not None:
                    nid_of_ref[id(y_ref)] = y_id
                    if late_names and (name := late_names.pop(y_key, None)) is not None:
                        self._t_names[y_id] = name
                raw.append(_new(ForwardRow, (FWD, fid, in_ids, out_ids, values, during)))
                if scope:
                    scope_of[fid] = scope_of[y_id] = scope
                k += 1
            elif kind == _FWD_MANY:
                _, f_key, in_keys, values, during, cls, gen, meta, f_ref, y_refs, y_keys = e
                in_ids = tuple([nid_of[x] if x in nid_of else self._nid(x) for x in in_keys])
                fid = new(f_key, f_ref, None)
                for slot, y_key in enumerate(y_keys):
                    if meta is not None:
                        shape, dtype = meta[slot]
                    elif type(values[slot]) is float:  # meta None: the value's own
                        shape, dtype = (), _F64
                    else:
                        shape, dtype = values[slot].shape, values[slot].dtype
                    new(y_key, y_refs[slot], _new(VariableRow, (VARIABLE, gen + 1, shape, dtype)))
                out_ids = tuple(range(fid + 1, fid + 1 + len(y_keys)))
                info[fid] = _new(FunctionRow, (FUNCTION, gen, cls.__name__, in_ids, out_ids))
                raw.append(_new(ForwardRow, (FWD, fid, in_ids, out_ids, values, during)))
                if scope:
                    for nid in (fid, *out_ids):
                        scope_of[nid] = scope
                k += 1
            elif kind == BWD:
                _, f_key, gys, gxs, accs, cleared, bpass, passed_on = e
                fid = nid_of[f_key]
                _, _, _, in_ids, out_ids = info[fid]
                held = last_grad.get(bpass)
                if held is None:
                    held = last_grad[bpass] = {}
                if gys is None:
                    gys = (held.get(out_ids[0]),)
                if passed_on:
                    gxs = tuple([gys[0] if g is _RECEIVED else g for g in gxs])
                for slot, g in enumerate(gxs):
                    if g is not None:
                        held[in_ids[slot]] = g
                if accs:
                    accs = tuple(
                        [(in_ids[slot], slot, old, gxs[slot], new_) for slot, old, new_ in accs]
                    )
                    for a in accs:
                        held[a[0]] = a[4]
                if cleared:
                    if cleared is True:
                        cleared = out_ids
                    else:
                        cleared = tuple([nid_of[y] for y in cleared if y in nid_of])
                raw.append(_new(BackwardRow, (BWD, fid, gys, gxs, accs, cleared, bpass)))
                k += 1
            elif kind == _T_INPUT:
                _, key, ref, node_info, name, value, constant, grad, in_backward = e
                if key in nid_of:  # an output used as a leaf after unchain(): known already
                    # its history was cut (unchain_backward, truncated BPTT) before step k
                    self._t_cut.setdefault(nid_of[key], k)
                    continue
                nid = new(key, ref, node_info)
                if name is not None:
                    self._t_names[nid] = name
                # A leaf existed before its first use: it shows from the segment's start;
                # one a backward pass made (its seed, a constant of a gradient's graph) shows
                # from the step that first used it.
                visible = k if in_backward else self._segment_start - 1
                extra.append(_new(EventRow, (k, visible, nid, _VALUE, value, None)))
                if grad is not _MISSING:  # a gradient held from before recording
                    extra.append(_new(EventRow, (k, visible, nid, _GRAD, grad, -1)))
                if constant:
                    self._t_constants.add(nid)
                    if constant == _OPERAND:
                        self._t_operands.add(nid)
            elif kind == _T_NODE:
                _, key, ref, node_info, name = e
                nid = new(key, ref, node_info)
                if name is not None:
                    self._t_names[nid] = name
                if ref is None:  # an output already collected when its graph was adopted
                    extra.append(_new(EventRow, (k, k - 1, nid, _FREED, None, None)))
            elif kind == _T_INFO:
                _, key, (_, gen, op, in_keys, out_keys) = e
                in_ids = tuple([self._nid(x) for x in in_keys])
                out_ids = tuple([self._nid(y) for y in out_keys])
                info[nid_of[key]] = _new(FunctionRow, (FUNCTION, gen, op, in_ids, out_ids))
            elif kind == _T_STEP:
                _, f_key, in_keys, out_keys, values, during = e[1]
                fid = nid_of[f_key]
                row = info[fid]
                raw.append(_new(ForwardRow, (FWD, fid, row.inputs, row.outputs, values, during)))
                k += 1
            elif kind == _T_EVENT:
                _, visible_now, key, event, value = e
                nid = self._nid(key)
                origin = None
                if event == _GRAD:  # a backward pass's seed
                    origin = len(self._tbackward_roots) - 1
                    last_grad.setdefault(origin, {})[nid] = value
                extra.append(
                    _new(EventRow, (k, k if visible_now else k - 1, nid, event, value, origin))
                )
            elif kind == _T_LEAF:  # a change the program made to a leaf between two steps
                _, key, event, value = e
                extra.append(_new(EventRow, (k, k, self._nid(key), event, value, None)))
            elif kind == _T_SEGMENT:
                self._segment_start = k
            elif kind == _T_SCOPE:
                scope = self.add_scope(e[1], e[2], scope)
            elif kind == _T_SCOPE_END:
                if scope:
                    scope = self._t_scopes[scope].parent
            elif kind == _T_PARAMETER:
                self._t_parameters.add(nid_of[e[1]])
            elif kind == _T_PARAMS:
                params = self._decode_params(e[2], e[3])
                if params:
                    self._t_params[nid_of[e[1]]] = params
            elif kind == _T_NAME:
                nid = nid_of.get(e[1])
                if nid is None:
                    self._late_names[e[1]] = e[2]  # named before its node was registered
                else:
                    self._t_names[nid] = e[2]
            elif kind == _T_GRAD_OF:
                if e[1] in nid_of and e[2] in nid_of:
                    self._t_grad_of[nid_of[e[1]]] = nid_of[e[2]]
            elif kind == _T_LINE:
                nid = nid_of.get(e[1])
                if nid is not None:
                    self._t_lines[nid] = e[2]
            else:  # _T_ROOT
                roots = self._tbackward_roots
                roots.append(self._nid(e[1]))
                last_grad.pop(len(roots) - 4, None)  # passes nest a few deep at most
        self._scope_now = scope

    # ------------------------------------------------------------------------------
    # Registration (the slow paths: first sight of a leaf, a constant, a graph built before
    # recording)
    # ------------------------------------------------------------------------------
    def _known_variable(self, x: Any) -> bool:
        o = x._order
        return o in self._registered or (x.creator is not None and o >= self._start_order)

    def _known_function(self, f: Any) -> bool:
        o = f._order
        return o >= self._start_order or o in self._registered

    def _input(self, x: Any) -> int:
        """The key of an input the hot path could not place: a leaf (its value checked for a
        change since its last use), a constant, an unchained output, or a Variable of a graph
        built before recording (registered with that graph)."""
        o = x._order
        if type(x) is _CONSTANT and x.creator is None and o not in self._registered:
            # An operand the engine wrapped (``x * 2``, ``linear(ndarray, W)``): a new one for
            # each call, never a leaf, a no_grad output or a step's; registered at once
            constant = _OPERAND
        else:
            last = self._leaf_raw.get(o, _MISSING)
            if last is not _MISSING:
                fresh = self._fresh
                if o in fresh:  # its first use since the segment's scan checked it
                    fresh.discard(o)
                    return o
                self._check_leaf(x, o)
                return o
            if o in self._registered:
                return o
            creator = x.creator
            if creator is not None:
                if o >= self._start_order:
                    return o  # recorded by its step
                self._adopt(creator, as_steps=False)
                if o in self._registered:
                    return o
            maybe_constant = self._maybe_constant
            constant = o in maybe_constant
            if constant:
                del maybe_constant[o]
            if type(x) is _CONSTANT:
                constant = _OPERAND
        data = x.data
        max_size = self.max_array_size
        if type(data) is _NDARRAY and data.size <= max_size:  # capture and _variable_info, inline
            info = (VARIABLE, x.generation, data.shape, data.dtype)
            raw = data.item() if data.dtype is _F64 and not data.ndim else data.copy()
        else:
            info = _variable_info(x)
            raw = capture(data, max_size)
        grad = _MISSING if constant or x.grad is None else self._grad_of_leaf(x)
        append = self._tape_append
        ref = _ref(x, append)
        in_backward = self._during >= 0  # e.g. the seed of a create_graph backward
        append((_T_INPUT, o, ref, info, x._name, raw, constant, grad, in_backward))
        if isinstance(x, _PARAMETER):
            append((_T_PARAMETER, o))
            self._parameter_keys.add(o)
        self._registered.add(o)
        if not constant:
            self._leaf_raw[o] = raw
            self._leaf_refs[o] = ref
            self._leaf_grad[o] = _MISSING if grad is _MISSING else _grad_mark(x.grad)
        return o

    def _grad_of_leaf(self, x: Any) -> Any:
        """The raw form of the gradient a leaf holds now (not None)."""
        g = x.grad
        if isinstance(g, core.Variable):
            g = g.data
        return capture(np.asarray(g), self.max_array_size)

    def _scan_leaves(self) -> None:
        """Record what the program changed on its live leaves since they were last seen: a
        new value (``x.data = ...``, an optimizer step), a gradient emptied (cleargrad) or
        set by hand. Runs once per segment, so a change made between two iterations shows
        from the start of the next one, never in the iteration before it.

        One loop per leaf, with :meth:`_check_leaf`'s usual case (an optimizer changed the
        array in place, which its first element shows) and :meth:`_scan_grad`'s (the
        gradient backward left) inline: a training loop runs it once per iteration over
        every weight."""
        append = self._tape_append
        fresh = self._fresh
        fresh.clear()
        leaf_raw = self._leaf_raw
        leaf_grad = self._leaf_grad
        dead = []
        for o, ref in self._leaf_refs.items():
            x = ref()
            if x is None:
                dead.append(o)
                continue
            last = leaf_raw[o]
            data = x.data
            if (
                type(last) is _NDARRAY
                and type(data) is _NDARRAY
                and data.shape == last.shape
                and data.dtype is last.dtype
                and data.size
                and (first := data.item(0)) != last.item(0)
                and first == first  # not NaN
            ):
                leaf_raw[o] = raw = data.copy()
                append((_T_LEAF, o, _VALUE, raw))
            elif type(last) is not float or not _same_float(data, last):
                self._check_leaf(x, o)
            fresh.add(o)
            g = x.grad
            mark = leaf_grad[o]
            if type(g) is _VARIABLE and type(mark) is tuple and mark[0] == g._order:
                data = g.data  # the gradient backward left: unchanged unless edited in place
                if type(data) is not _NDARRAY or not data.size:
                    continue
                now = data.item(0)
                first = mark[1]
                if now == first or (now != now and first != first):
                    continue
            self._scan_grad(o, g, mark)
        self._forget_dead(dead)

    def _scan_grad(self, o: int, g: Any, mark: Any) -> None:
        """Record a change of leaf ``o``'s gradient: ``g`` now, ``mark`` what it was
        (:func:`_grad_mark`, or _MISSING for none)."""
        if g is None:
            if mark is not _MISSING:
                self._leaf_grad[o] = _MISSING
                self._tape_append((_T_LEAF, o, _EMPTIED, None))
        elif mark is _MISSING or not _same_grad_object(g, mark):
            self._leaf_grad[o] = _grad_mark(g)
            data = g.data if isinstance(g, core.Variable) else g
            self._tape_append((_T_LEAF, o, _GRAD, capture(np.asarray(data), self.max_array_size)))

    def _forget_dead(self, dead: list[int]) -> None:
        """Forget the leaves that died (their creation orders)."""
        for o in dead:
            del self._leaf_refs[o]
            self._leaf_raw.pop(o, None)
            self._leaf_grad.pop(o, None)

    def _scan_before_backward(self) -> None:
        """A backward pass begins: record the gradients the program changed on the live
        leaves (cleargrad, mostly), then the values it changed since the leaves were last
        seen (:meth:`_note_stale`): one loop over the leaves for both, the value events
        after every gradient event."""
        self._fresh.clear()
        append = self._tape_append
        leaf_raw = self._leaf_raw
        leaf_grad = self._leaf_grad
        dead = []
        stale = []
        for o, ref in self._leaf_refs.items():
            x = ref()
            if x is None:
                dead.append(o)
                continue
            g = x.grad
            mark = leaf_grad[o]
            if g is None:
                if mark is not _MISSING:  # emptied (cleargrad): _scan_grad's first case
                    leaf_grad[o] = _MISSING
                    append((_T_LEAF, o, _EMPTIED, None))
            elif mark is _MISSING or not _same_grad_object(g, mark):
                self._scan_grad(o, g, mark)
            # A leaf kept whole whose data the program changed since it was last seen (in
            # place, or ``x.data`` rebound), after the forward read it, gets its new value
            # now, shown with the pass's first step: a reader sees that the engine's
            # backward reads the new one (TraceReader.stale_inputs). Summarised leaves are
            # not compared (summarising again costs as much as recording).
            last = leaf_raw[o]
            if type(last) is Snapshot:
                continue
            data = x.data
            if type(last) is float and _same_float(data, last):
                continue  # a scalar leaf left alone
            if (
                type(last) is _NDARRAY
                and type(data) is _NDARRAY
                and data.shape == last.shape
                and data.dtype is last.dtype
                and data.tobytes() == last.tobytes()  # bit for bit, faster than a memoryview's
            ):
                continue
            stale.append((x, o))
        self._forget_dead(dead)
        for x, o in stale:
            self._check_leaf(x, o)

    def _forget_leaves(self) -> None:
        """Recording ended: nothing about the live leaves is needed any more."""
        self._leaf_raw = {}
        self._leaf_refs = {}
        self._leaf_grad = {}
        self._fresh = set()
        self._scan_pending = False

    def _note_leaf_grads(self) -> None:
        """After a backward pass: the gradients the leaves hold now are the known ones (by
        identity: backward makes a new gradient Variable whenever it changes one)."""
        leaf_grad = self._leaf_grad
        for o, ref in self._leaf_refs.items():
            x = ref()
            if x is not None:
                g = x.grad
                if g is None:
                    leaf_grad[o] = _MISSING
                elif type(g) is _VARIABLE:  # what backward gives: _grad_mark's case, inline
                    data = g.data
                    first = data.item(0) if type(data) is _NDARRAY and data.size else None
                    leaf_grad[o] = (g._order, first)
                else:
                    leaf_grad[o] = _grad_mark(g)

    def _adopt(self, creator: Any, as_steps: bool) -> None:
        """Register the not yet known graph upstream of ``creator`` (iteratively, no recursion).

        With ``as_steps`` each Function becomes a forward step, in (generation, creation
        order); otherwise its values appear as already computed.
        """
        found = []
        seen = {creator._order}
        stack = [creator]
        while stack:
            f = stack.pop()
            found.append(f)
            for x in f.inputs:
                if self._known_variable(x):
                    continue
                c = x.creator
                if c is not None and not self._known_function(c) and c._order not in seen:
                    seen.add(c._order)
                    stack.append(c)
        seen.clear()
        found.sort(key=lambda f: (f.generation, f._order))
        max_size = self.max_array_size
        append = self._tape_append
        registered = self._registered
        for f in found:
            in_keys = tuple(
                x._order if self._known_variable(x) else self._input(x) for x in f.inputs
            )
            # the Function's node first, its info once its outputs have theirs
            append((_T_NODE, f._order, _ref(f, append), None, None))
            registered.add(f._order)
            out_keys = []
            values = []
            for ref in f.outputs:
                y = ref()
                if y is None:
                    self._pseudo -= 1
                    key = self._pseudo
                    append((_T_NODE, key, None, (VARIABLE, f.generation + 1, None, None), None))
                    values.append(None)
                else:
                    key = y._order
                    if not self._known_variable(y):
                        append((_T_NODE, key, _ref(y, append), _variable_info(y), y._name))
                        registered.add(key)
                    values.append(capture(y.data, max_size))
                out_keys.append(key)
            out_keys = tuple(out_keys)
            f_info = (FUNCTION, f.generation, type(f).__name__, in_keys, out_keys)
            append((_T_INFO, f._order, f_info))
            self._note_params(f)
            if as_steps:
                append((_T_STEP, (FWD, f._order, in_keys, out_keys, tuple(values), -1)))
            else:
                append((_T_EVENT, False, f._order, _VALUE, None))
                for key, value in zip(out_keys, values, strict=True):
                    append((_T_EVENT, False, key, _VALUE, value))
        found.clear()

    def _walk(self, output: Any, replay: tuple[bool, bool] | None = None) -> None:
        """Register the existing graph upstream of ``output`` as forward steps (for
        :func:`autodiff.trace.from_output`): everything in it is older than the walk.

        With ``replay`` ``(retain_grad, create_graph)``, a backward from ``output`` is then
        run and recorded as the trace's backward pass, with this trace as the engine's only
        observer (the caller saves and restores the gradients it changes)."""
        self._recording = True  # the walk's tape entries are decoded as they are read
        self._start_order = next(core._creation_counter)
        if output.creator is not None:
            self._adopt(output.creator, as_steps=True)
        self._var_key(output)
        if replay is not None:
            with core._sole_observer(self):
                output.backward(retain_grad=replay[0], create_graph=replay[1])
        self._recording = False
        self._tape_end = len(self._tape)  # what happens to these objects later is not recorded
        self._forget_leaves()
        self._maybe_constant = {}
        self._registered = set()

    def _var_key(self, v: Any) -> int:
        return v._order if self._known_variable(v) else self._input(v)

    # ------------------------------------------------------------------------------
    # The observer hook (autodiff.core calls these while recording)
    # ------------------------------------------------------------------------------
    def on_rename(self, variable: Any) -> None:
        self._tape_append((_T_NAME, variable._order, variable._name))

    def on_forward(self, f: Any, inputs: list, outputs: list, recorded: bool) -> None:
        if not recorded:
            if self._track_nograd:
                mc = self._maybe_constant
                for y in outputs:
                    mc[y._order] = None
                if len(mc) > _CONSTANT_MEMORY:
                    for key in list(mc)[: _CONSTANT_MEMORY // 2]:
                        del mc[key]
            return
        if len(outputs) == 1:
            self.on_forward_one(f, inputs, outputs[0])
            return
        if self._due:  # the first operation after a backward pass, or a compaction asked
            self._housekeeping()
        self._forward_many(f, inputs, outputs)

    def _forward_many(self, f: Any, inputs: list, outputs: Any) -> None:
        """The general tape entry of a recorded operation: several outputs, or one output
        summarised (its shape and dtype kept beside the summary)."""
        start = self._start_order
        keys = []
        for x in inputs:
            k = x._order
            if k < start or x.creator is None:
                k = self._input(x)
            keys.append(k)
        append = self._tape_append
        max_size = self.max_array_size
        values = []
        meta = []
        for y in outputs:
            data = y.data
            meta.append((data.shape, data.dtype))
            if data.dtype is _F64 and not data.ndim:
                values.append(data.item())
            else:
                values.append(capture(data, max_size))
        y_refs = tuple(f.outputs)
        if len(y_refs) != len(outputs) or y_refs[0].__callback__ is not append:
            y_refs = tuple([_ref(y, append) for y in outputs])  # plain: the tape needs its own
        append(
            (_FWD_MANY, f._order, tuple(keys), tuple(values), self._during, type(f),
             f.generation, tuple(meta), _ref(f, append), y_refs,
             tuple([y._order for y in outputs]))
        )  # fmt: skip
        self._note_params(f)

    @property
    def forward_samples(self) -> list[int]:
        """The roots of the forward-only graphs kept whole (node ids; known once the
        recording stopped)."""
        if self._tape and not self._recording:
            self._sync()
        return self._forward_samples

    @property
    def uncompacted(self) -> int:
        """Tape entries recorded since the last compaction (any thread may ask)."""
        return len(self._tape) - self._compact_from

    def _housekeeping(self) -> None:
        self._due = False
        if self._scan_pending:
            self._begin_segment()
        if self.compact_due:
            self.compact()

    def compact(self) -> int:
        """Count, instead of keeping, the forward-only steps recorded since the last
        compaction (:mod:`autodiff.trace._compact`); returns how many went. Not while a
        backward pass runs (its graph is being read)."""
        self.compact_due = False
        if self.forward_only is None or self._backward_stack:
            return 0
        removed = compact(self, self.forward_only, self._parameter_keys)
        if removed:  # the leaves that died with them: nothing needs their last values
            dead = [o for o, ref in self._leaf_refs.items() if ref() is None]
            self._forget_dead(dead)
            self._fresh.difference_update(dead)
        return removed

    def _begin_segment(self) -> None:
        """The first operation after a backward pass: a new segment begins."""
        self._scan_pending = False
        self._tape_append((_T_SEGMENT,))
        self._scan_leaves()

    def on_forward_one(self, f: Any, inputs: list, y: Any) -> None:
        """A recorded operation with one output (the engine calls this instead of
        :meth:`on_forward` for it)."""
        if self._due:  # the first operation after a backward pass, or a compaction asked
            self._housekeeping()
        # The hot path, once per operation: an input made by a step recorded here needs no
        # lookup; one weak reference per new object (the output's is the engine's, made with
        # the tape's callback when this is the one recorder) and one flat tuple on the tape, the
        # input keys and the value in it (no tuple of its own for either). The common one-
        # and two-input shapes are spelled out.
        data = y.data
        # a 0-d float64: its float; an array kept whole: its copy
        if data.dtype is _F64 and not data.ndim:
            value = data.item()
        elif data.size <= self.max_array_size:
            value = data.copy()
        else:  # summarised: the general entry, with its shape and dtype
            self._forward_many(f, inputs, (y,))
            return
        start = self._start_order
        n_in = len(inputs)
        if n_in == 2:
            x0, x1 = inputs
            k0 = x0._order
            if k0 < start or x0.creator is None:
                k0 = self._input(x0)
            k1 = x1._order
            if k1 < start or x1.creator is None:
                k1 = self._input(x1)
        elif n_in == 1:
            x0 = inputs[0]
            k0 = x0._order
            if k0 < start or x0.creator is None:
                k0 = self._input(x0)
            k1 = None  # one input
        else:  # e.g. linear's x, W, b: a layer's parameters, leaves
            fresh = self._fresh
            keys = []
            for x in inputs:  # a loop: cheaper than a comprehension for a few items
                k = x._order
                if k < start or x.creator is None:
                    if k in fresh:  # a leaf's first use since the segment's scan checked it
                        fresh.discard(k)  # (_input's first case, without the call)
                    else:
                        k = self._input(x)
                keys.append(k)
            k0, k1 = tuple(keys), _KEYS
        append = self._tape_append
        cls = type(f)
        y_ref = f.outputs[0]
        if y_ref.__callback__ is not append:  # a plain reference: the tape needs its own
            y_ref = _ref(y, append)
        append(
            (FWD, f._order, k0, k1, value, self._during, cls, f.generation,
             _ref(f, append), y_ref, y._order)
        )  # fmt: skip
        # A Function's own attributes (the engine's are slots): most primitives have none,
        # and this lookup is all they cost. Their __dict__ is not touched: reading it would
        # make an empty one for each.
        if cls not in self._plain_classes:
            self._forward_params(f)

    def _forward_params(self, f: Any) -> None:
        """Put the small attributes of ``f``, just recorded, on the tape."""
        get = self._param_getter.get(type(f))
        if get is None:
            get = self._class_params(f)
            if get is _NO_PARAMS:
                return
        try:
            self._tape_append((_T_PARAMS, f._order, get, get(f.__dict__)))
        except KeyError:  # an instance without one of its class's attributes
            self._note_params(f)

    def _class_params(self, f: Any) -> Any:
        """The getter (``operator.itemgetter``) of the attributes kept of ``f``'s class, chosen
        once per class from its first instance: the public ones that are small plain data;
        _NO_PARAMS for none (a class whose first instance has none keeps none)."""
        names = tuple([n for n, v in f.__dict__.items() if n[:1] != "_" and small_value(v)])
        get = _NO_PARAMS
        if names:
            get = operator.itemgetter(*names)
            self._param_names[get] = names
        else:
            self._plain_classes.add(type(f))
        self._param_getter[type(f)] = get
        return get

    def _note_params(self, f: Any) -> None:
        """Put Function ``f``'s small attributes on the tape, checked when decoded (the slow
        path, as a dict: a graph adopted, several outputs, an instance that lacks one of its
        class's attributes)."""
        get = self._param_getter.get(type(f))
        if get is None:
            get = self._class_params(f)
        if get is not _NO_PARAMS:
            d = f.__dict__
            present = {n: d[n] for n in self._param_names[get] if n in d}
            self._tape_append((_T_PARAMS, f._order, None, present))

    def _decode_params(self, get: Any, raw: Any) -> tuple:
        """The ``small_params`` of a tape entry (``get``: the class's getter, ``raw`` what it
        gave; None, and a dict of the attributes); equal attributes share one tuple (a long
        run repeats the same few: Pow's c = 2, Sum's axis)."""
        if get is None:
            return small_params(raw)
        names = self._param_names[get]
        values = (raw,) if len(names) == 1 else raw  # itemgetter of one name: the value
        memo = self._params_memo
        try:
            # the types too, inside tuples as well: 2 == 2.0 == True, (1,) == (True,)
            types = [type(v) if type(v) is not tuple else tuple(map(type, v)) for v in values]
            key = (names, values, tuple(types))
            params = memo.get(key)
        except TypeError:  # an unhashable value (an array): not kept anyway
            key = params = None
        if params is None:
            params = small_params(dict(zip(names, values, strict=True)))
            if key is not None:
                if len(memo) > 4096:  # NaN never equals itself: each would be new
                    memo.clear()
                memo[key] = params
        return params

    def _check_leaf(self, x: Any, key: int) -> None:
        """A leaf used again: record a new value if its data changed (an optimizer step).

        The comparison reads the live array; a copy is made only when it changed."""
        last = self._leaf_raw[key]
        data = x.data
        # The usual case in training: the optimizer changed the array in place since its last
        # use, which its first element shows (two different values that are not NaN have
        # different bits): one compare decides. Anything else: the full comparison.
        if (
            type(last) is _NDARRAY
            and type(data) is _NDARRAY
            and data.shape == last.shape
            and data.dtype is last.dtype
            and data.size
        ):
            first = data.item(0)
            if first != last.item(0) and first == first:
                self._leaf_raw[key] = raw = data.copy()
                self._tape_append((_T_LEAF, key, _VALUE, raw))
                return
        elif type(last) is float and _same_float(data, last):
            return  # a scalar leaf left alone
        if type(last) is Snapshot:  # a large array, kept as a summary: compare summaries
            raw = capture(data, self.max_array_size)
            if raw == last:
                return
        elif _same_raw(data, last):
            return
        else:
            raw = capture(data, self.max_array_size)
        self._leaf_raw[key] = raw
        self._tape_append((_T_LEAF, key, _VALUE, raw))

    def on_backward_begin(self, output: Any, retain_grad: bool, create_graph: bool) -> None:
        self._scan_pending = False
        self._due = self.compact_due
        if not self._backward_stack:  # (a pass inside a pass: its leaves are mid-update)
            self._scan_before_backward()
        self._pass += 1
        root = self._var_key(output)
        append = self._tape_append
        append((_T_ROOT, root))
        self._backward_stack.append((self._pass, create_graph))
        self._during = self._pass
        self._track_nograd = self._create_graph = create_graph
        grad = output.grad
        # The seed becomes visible with the first backward step; on a leaf there is none.
        append((_T_EVENT, output.creator is not None, root, _GRAD, self._grad_raw(grad)))
        if create_graph:
            append((_T_GRAD_OF, self._var_key(grad), root))

    def on_backward_event(
        self, f: Any, gys: tuple, gxs: tuple, accs: tuple, cleared: tuple
    ) -> None:
        key = f._order
        if key < self._start_order and key not in self._registered:
            self._adopt(f, as_steps=False)
        if self._create_graph:  # gradients are graph nodes
            self._link_grads(f, gxs, accs)
        # The raw values (arrays without create_graph): no Variable is made for the trace. A
        # numpy float64 scalar (most gradients of a scalar graph) is immutable and is kept as
        # it is; anything else goes through _grad_raw. Inline: this runs once per step.
        # A one-output Function received the sum of what its consumers' steps (or the seed)
        # gave its output, already on the tape: the decoder puts it back (gys None). A
        # gradient it hands on unchanged (Add returns the one it received) is that same
        # array: _RECEIVED, no copy.
        if len(gys) == 1:
            received = gys[0]
            gys = None
        else:
            received = None
            gys = self._grads_raw(gys)
        passed_on = False
        n_gxs = len(gxs)
        if n_gxs == 2:
            g0, g1 = gxs
            if type(g0) is not _FLOAT64 or type(g1) is not _FLOAT64:
                if g0 is received:
                    g0 = _RECEIVED
                    passed_on = True
                elif g0 is not None:
                    g0 = self._grad_raw(g0)
                if g1 is gxs[0]:  # the same gradient for both inputs
                    g1 = g0
                elif g1 is received:
                    g1 = _RECEIVED
                    passed_on = True
                elif g1 is not None:
                    g1 = self._grad_raw(g1)
                gxs = (g0, g1)
        elif n_gxs == 1:
            g0 = gxs[0]
            if type(g0) is not _FLOAT64 and g0 is not None:
                if g0 is received:
                    gxs = (_RECEIVED,)
                    passed_on = True
                else:
                    gxs = (self._grad_raw(g0),)
        else:  # e.g. linear's three: _grad_raw's usual case inline
            max_size = self.max_array_size
            raws = []
            for g in gxs:
                if g is None or type(g) is _FLOAT64:
                    raws.append(g)
                elif type(g) is _NDARRAY and g.ndim and g.size <= max_size:
                    raws.append(g.copy())
                else:
                    raws.append(self._grad_raw(g))
            gxs = tuple(raws)
        if accs:
            if len(accs) == 1:
                slot, old, new = accs[0]
                if type(old) is not _FLOAT64 or type(new) is not _FLOAT64:
                    accs = ((slot, self._grad_raw(old), self._grad_raw(new)),)
            else:
                raw_of = self._grad_raw
                accs = tuple([(slot, raw_of(old), raw_of(new)) for slot, old, new in accs])
        if cleared:  # one output: it is that one (True)
            cleared = True if received is not None else tuple([y._order for y in cleared])
        self._tape_append((BWD, key, gys, gxs, accs, cleared, self._pass, passed_on))

    def _link_grads(self, f: Any, gxs: tuple, accs: tuple) -> None:
        """Under create_graph, remember which variable each gradient node is the gradient of."""
        in_keys = [x._order for x in f.inputs]
        pairs = [(slot, g) for slot, g in enumerate(gxs)] + [(s, new) for s, _, new in accs]
        for slot, g in pairs:
            if isinstance(g, core.Variable):
                self._tape_append((_T_GRAD_OF, g._order, in_keys[slot]))

    def on_backward_end(self, output: Any) -> None:
        if self._backward_stack:
            self._backward_stack.pop()
        self._note_leaf_grads()
        if self._backward_stack:
            self._during, self._create_graph = self._backward_stack[-1]
            self._track_nograd = self._create_graph
        else:
            self._during = -1
            self._create_graph = False
            self._track_nograd = True
            self._scan_pending = self._due = True  # the next operation begins a segment

    def _grads_raw(self, grads: tuple) -> tuple:
        raw_of = self._grad_raw
        raws = []
        for g in grads:
            raws.append(None if g is None else raw_of(g))
        return tuple(raws)

    def _grad_raw(self, g: Any) -> Any:
        """Raw snapshot of a gradient: an ndarray, a numpy scalar or a Variable."""
        if type(g) is _VARIABLE:  # e.g. a pass's seed
            g = g.data
            if type(g) is not _NDARRAY:
                return capture(g, self.max_array_size)
        if type(g) is _NDARRAY:  # capture's usual cases, inline: this runs once per gradient
            if g.ndim:
                if g.size <= self.max_array_size:
                    return g.copy()
            elif g.dtype is _F64:
                return g.item()
            return capture(g, self.max_array_size)
        if type(g) is _FLOAT64:
            return g  # immutable: kept as it is
        if isinstance(g, core.Variable):
            g = g.data
        return capture(g, self.max_array_size)

    # ------------------------------------------------------------------------------
    # Start and stop
    # ------------------------------------------------------------------------------
    def __del__(self) -> None:
        # The tape's weak references call the tape's own append when their object dies: tape
        # and references are a cycle only the cycle collector would free (a worker runs with
        # it off). Dropped with its trace, the recorder empties the tape, so reference
        # counting frees what it held at once. An output's reference is also its Function's
        # (core._output_ref_callback): while such a Function lives, the emptied list does,
        # and takes the dead references of its outputs (a reference's callback goes when it
        # is called), so it is freed with the last of them.
        self._tape.clear()

    def on_scope_begin(self, part: Any) -> None:
        if type(part) is str:
            name, cls = part.replace("/", "_"), ""
        else:  # a Layer
            name, cls = part._scope_name(not self._scope_depth), type(part).__name__
        self._scope_depth += 1
        self._tape_append((_T_SCOPE, name, cls))

    def on_scope_end(self) -> None:
        if self._scope_depth:  # not one that was open before recording began
            self._scope_depth -= 1
            self._tape_append((_T_SCOPE_END,))

    def _start(self, attach: bool = True) -> None:
        """Begin recording; ``attach`` False: the caller attaches this recorder to the engine
        itself (core.replace_observers, in one change with others)."""
        self._recording = True
        self._start_order = next(core._creation_counter)
        if attach:
            core.add_observer(self)

    def _stop(self, detach: bool = True) -> None:
        """Stop recording; ``detach`` False: the caller detaches this recorder itself."""
        if detach:
            core.remove_observer(self)
        self._tape_end = len(self._tape)
        self._recording = False
        self._maybe_constant = {}
        self._forget_leaves()
        self._backward_stack = []
        self._scope_depth = 0
        self._during = -1
        self._create_graph = False
        self._registered = set()

    def _refresh_names(self) -> None:
        """Pick up the names given to live Variables since they were recorded (reading side,
        while recording goes on)."""
        self._sync()
        variable = core.Variable
        names = self._t_names
        for nid, ref in enumerate(self._t_refs):
            if ref is not None:
                obj = ref()
                if obj is not None and isinstance(obj, variable) and obj.name is not None:
                    names[nid] = obj.name


LineSource = str | os.PathLike[str] | Callable[[str], bool]
"""Which source lines a :class:`LineRecorder` notes: a file name (the program's), or a test of
a code object's ``co_filename``."""


class LineRecorder(Recorder):
    """A recorder that also notes, for each Function recorded forward, the line of the
    program's source it ran on: the innermost frame of that source in the calls that led to
    the Function (a layer's, a helper's or the engine's own frames are skipped). A plain
    :class:`Recorder` notes none and pays nothing for this: the engine binds the handlers
    of the recorder it is given (:func:`autodiff.core.add_observer`).

    ``line_budget`` (None: no limit) bounds the operations noted between two backward passes:
    past it the recorder becomes a :class:`_PausedLines` (a plain recorder's handlers, so a
    flood of forward-only work pays no stack walk per operation) until the next backward pass
    ends. Its state lives in the Recorder's slots, so the class can change in place."""

    __slots__ = ()

    def __init__(self, max_array_size: int, lines: LineSource) -> None:
        super().__init__(max_array_size)
        if callable(lines):
            self._line_file = None
            self._line_test = lines
        else:
            self._line_file = os.fspath(lines)
            self._line_test = None
        self._line_files = {}  # co_filename -> the test's answer
        self._line_budget = None
        self._lines_left = -1  # counted down to 0 (pause); below 0: no budget

    @property
    def line_budget(self) -> int | None:
        return self._line_budget

    @line_budget.setter
    def line_budget(self, budget: int | None) -> None:
        self._line_budget = budget
        self._renew_budget()

    def _line(self) -> int:
        """The line of the innermost frame of the program's source below the handler
        (-1: none of them is)."""
        frame = sys._getframe(2)  # the engine's Function.__call__, or on_forward's
        file = self._line_file
        if file is not None:
            while frame is not None:
                if frame.f_code.co_filename == file:
                    return frame.f_lineno
                frame = frame.f_back
            return -1
        known = self._line_files
        while frame is not None:
            name = frame.f_code.co_filename
            ok = known.get(name)
            if ok is None:
                ok = known[name] = bool(self._line_test(name))  # type: ignore[misc]
            if ok:
                return frame.f_lineno
            frame = frame.f_back
        return -1

    def on_forward_one(self, f: Any, inputs: list, y: Any) -> None:
        Recorder.on_forward_one(self, f, inputs, y)
        line = self._line()
        if line >= 0:
            self._tape_append((_T_LINE, f._order, line))
        self._lines_left -= 1
        if not self._lines_left:
            self._switch(_PausedLines)

    def on_forward(self, f: Any, inputs: list, outputs: list, recorded: bool) -> None:
        # one output: Recorder.on_forward hands it to on_forward_one above
        Recorder.on_forward(self, f, inputs, outputs, recorded)
        if recorded and len(outputs) != 1:
            line = self._line()
            if line >= 0:
                self._tape_append((_T_LINE, f._order, line))

    def on_backward_end(self, output: Any) -> None:
        Recorder.on_backward_end(self, output)
        if not self._backward_stack:
            self._renew_budget()

    def _renew_budget(self) -> None:
        budget = self._line_budget
        self._lines_left = -1 if budget is None else max(1, int(budget))

    def _switch(self, cls: type) -> None:
        """Become ``cls`` (LineRecorder or _PausedLines) and have the engine bind its handlers."""
        self.__class__ = cls
        if self._recording:
            with core.observers_changing():  # binds the handlers again when it ends
                pass


class _PausedLines(LineRecorder):
    """A :class:`LineRecorder` past its ``line_budget``: a plain recorder's handlers until the
    backward pass that ends the segment, then a LineRecorder again."""

    __slots__ = ()
    on_forward_one = Recorder.on_forward_one
    on_forward = Recorder.on_forward

    def on_backward_end(self, output: Any) -> None:
        Recorder.on_backward_end(self, output)
        if not self._backward_stack:
            self._renew_budget()
            self._switch(LineRecorder)


_ELIDED = "/…/"
_COMPARE_AS_BYTES = 1 << 20  # _same_raw: arrays of up to this many bytes compared as bytes


_NO_PARAMS = object()  # a class with no attribute kept


def _scope_path(up: str | None, name: str) -> str:
    """The path of scope ``name`` inside the scope at path ``up`` (None: a top scope). Past
    MAX_SCOPE_PATH characters it keeps its first part, then "/…/", then as many of its last
    parts as fit (the end of the last one alone when that is too long): a scope opened inside
    10 000 others still names where it began and where it is."""
    path = name if up is None else f"{up}/{name}"
    if len(path) <= MAX_SCOPE_PATH:
        return path
    first = path.find("/")
    head = path[: first if 0 <= first < MAX_SCOPE_PATH // 4 else MAX_SCOPE_PATH // 4]
    tail = path[len(head) + len(_ELIDED) - MAX_SCOPE_PATH :]
    part = tail.find("/")
    if 0 <= part < len(tail) - 1:  # from the start of a whole part
        tail = tail[part + 1 :]
    return head + _ELIDED + tail


def _variable_info(v: Any) -> tuple:
    data = v.data
    if data is None:
        return (VARIABLE, v.generation, None, None)
    return (VARIABLE, v.generation, data.shape, data.dtype)


def _grad_mark(g: Any) -> tuple:
    """What tells a gradient the program left alone: its object and its first element (an
    in-place edit, ``x.grad.data[...] = 0``, shows in the first element). A Variable is known
    by its creation order (never reused, and no weak reference to make for each gradient);
    anything else by a weak reference (None for a number: compared by value each time)."""
    if isinstance(g, _VARIABLE):
        key = g._order
        data = g.data
    else:
        data = g
        try:
            key = _ref(g)
        except TypeError:  # not weak-referenceable
            key = None
    first = data.item(0) if type(data) is _NDARRAY and data.size else None
    return key, first


def _same_grad_object(g: Any, mark: tuple) -> bool:
    key, first = mark
    if type(key) is int:
        if not isinstance(g, _VARIABLE) or g._order != key:
            return False
        data = g.data
    elif key is None or key() is not g:
        return False
    else:
        data = g
    if type(data) is _NDARRAY and data.size:
        now = data.item(0)
        return now == first or (now != now and first != first)
    return True


def _same_float(data: Any, last: float) -> bool:
    """Whether the live ``data`` surely still holds ``last``, the float kept of a 0-d float64
    leaf: equal floats other than zero have the same bits. False also when it cannot tell this
    way (a zero, which may have changed sign; NaN; another kind of value): :func:`_same_raw`
    then compares the bits (a scalar leaf, e.g. a tiny pass's ``x``, is checked twice a pass)."""
    if type(data) is _NDARRAY and data.dtype is _F64 and not data.ndim:
        value = data.item()
        return value == last and value != 0.0
    return False


def _same_raw(data: Any, last: Any) -> bool:
    """Whether the live array ``data`` still holds ``last``, its raw form, bit for bit.

    ``last`` is a float (0-d float64), None or an array copy; not a summary Snapshot. Bits,
    not values, so one memcmp decides (an optimizer step changes a weight's bits; a change
    from 0.0 to -0.0, or between two NaNs, counts as a change too)."""
    if data is not None and type(data) is not _NDARRAY:
        data = np.asarray(data)  # e.g. a numpy scalar the user assigned to .data
    if type(last) is float:
        if data is None or data.ndim != 0 or data.dtype is not _F64:
            return False
        return _FLOAT_BITS.pack(data.item()) == _FLOAT_BITS.pack(last)
    if last is None or data is None:
        return last is None and data is None
    if data.shape != last.shape or data.dtype != last.dtype:
        return False
    if data.nbytes > _COMPARE_AS_BYTES and data.dtype.kind in "biuf":
        # a large array: its bits as unsigned integers, without two copies of it as bytes
        bits = np.dtype(f"u{data.dtype.itemsize}")
        return bool(np.array_equal(data.view(bits), last.view(bits)))
    # two copies and one memcmp: some 50 times faster than comparing memoryviews, which
    # compare item by item
    return data.tobytes() == last.tobytes()
