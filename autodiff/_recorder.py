"""The recording half of :class:`autodiff.trace.Trace`: the engine's observer hook.

Recording keeps only what cannot be recovered later, in the cheapest form, on one ordered
*tape* (a list):

- one tuple per forward or backward step: node ids and raw snapshots (``capture``);
- one tuple per node registered outside a step (a leaf, a constant, a graph built before
  recording) and per event that is not a step (a leaf's new value, the seed gradient);
- the weak reference of each recorded object that died: each reference's callback is the
  tape's C-level ``append``, so a death is written in its place in the timeline without running
  any Python code.

Live objects are mapped to node ids by their creation order (``_order``, unique in the
process and never reused, unlike ``id()``), so a dead object's entry never needs removing.
The tables the reading side uses (``_raw`` steps, ``_info`` node kinds, ``_extra`` node
events) are decoded from the tape when first read (:meth:`Recorder._sync`).
"""

from __future__ import annotations

import struct
import threading
import weakref
from typing import Any

import numpy as np

from autodiff import core
from autodiff._snapshot import Snapshot, capture

_F64 = np.dtype(np.float64)
_NDARRAY = np.ndarray
_FLOAT64 = np.float64
_FLOAT_BITS = struct.Struct("d")
_ref = weakref.ref

# Event kinds in a node's history.
_VALUE, _GRAD, _CLEARED, _FREED = range(4)
_VARIABLE, _FUNCTION = 0, 1
_FWD, _BWD = 0, 1  # first field of a raw step, and of the tape's two hot entries
# The tape's other entries: a step already in its raw form, a node's info, a node event.
_T_STEP, _T_NODE, _T_EVENT = 2, 3, 4
# Cap on remembered no_grad outputs / operand constants (only needed if they later feed a
# recorded graph; the oldest are almost always dead).
_CONSTANT_MEMORY = 200_000


class Recorder:
    """Observer methods, registration of live objects and the tape's decoding; the state
    lives on the Trace."""

    # attributes set by Trace.__init__
    _refs: list
    _tape: list
    _tape_append: Any  # _tape.append: the weak references' callback too
    _known: dict[int, int]
    _raw_steps: list[tuple]
    _node_info: list[tuple | None]
    _extra_events: list[tuple]

    # ------------------------------------------------------------------------------
    # The decoded tables (what the reading side uses)
    # ------------------------------------------------------------------------------
    @property
    def _raw(self) -> list[tuple]:
        """Raw steps: ``(_FWD, fid, in_ids, out_ids, values, during)`` or
        ``(_BWD, fid, output grads, input grads, accumulations, cleared ids, pass)``."""
        if self._tape:
            self._sync()
        return self._raw_steps

    @property
    def _info(self) -> list[tuple]:
        """Per node id: ``(_VARIABLE, generation, shape, dtype)`` or
        ``(_FUNCTION, generation, op, input ids, output ids)``."""
        if self._tape:
            self._sync()
        return self._node_info  # type: ignore[return-value]

    @property
    def _extra(self) -> list[tuple]:
        """Node events that are not steps: ``(stamp, visible step, node, kind, raw)``, in
        stamp order (the stamp is the number of steps recorded before the event)."""
        if self._tape:
            self._sync()
        return self._extra_events

    def _sync(self) -> None:
        """Decode the tape recorded so far into the tables, and empty it."""
        with self._sync_lock:
            tape = self._tape
            end = len(tape) if self._recording else self._tape_end
            if end:
                chunk = tape[:end]
                del tape[:end]
                self._decode(chunk)
            if not self._recording:
                tape.clear()  # deaths after recording stopped are not part of the trace
                self._tape_end = 0

    def _decode(self, chunk: list) -> None:
        raw = self._raw_steps
        extra = self._extra_events
        info = self._node_info
        refs = self._refs
        if len(info) < len(refs):
            info.extend([None] * (len(refs) - len(info)))
        refmap = self._refmap
        k = len(raw)
        for e in chunk:
            if type(e) is not tuple:  # a weak reference whose object died here
                if len(refmap) < len(refs):
                    self._extend_refmap()
                nid = refmap.get(id(e))
                if nid is not None:
                    extra.append((k, k - 1, nid, _FREED, None))
                continue
            kind = e[0]
            if kind == _FWD:
                _, fid, in_ids, values, during, cls, gen, out_meta = e
                n_out = len(values)
                out_ids = (fid + 1,) if n_out == 1 else tuple(range(fid + 1, fid + 1 + n_out))
                info[fid] = (_FUNCTION, gen, cls.__name__, in_ids, out_ids)
                if out_meta is None:  # every output a 0-d float64
                    for nid in out_ids:
                        info[nid] = (_VARIABLE, gen + 1, (), _F64)
                else:
                    for nid, (shape, dtype) in zip(out_ids, out_meta, strict=True):
                        info[nid] = (_VARIABLE, gen + 1, shape, dtype)
                raw.append((_FWD, fid, in_ids, out_ids, values, during))
                k += 1
            elif kind == _BWD:
                accs = e[4]
                if accs:
                    in_ids = info[e[1]][3]  # type: ignore[index]
                    gxs = e[3]
                    accs = tuple(
                        [(in_ids[slot], slot, old, gxs[slot], new) for slot, old, new in accs]
                    )
                    e = (_BWD, e[1], e[2], gxs, accs, e[5], e[6])
                raw.append(e)
                k += 1
            elif kind == _T_STEP:
                raw.append(e[1])
                k += 1
            elif kind == _T_NODE:
                info[e[1]] = e[2]
            else:  # _T_EVENT
                _, visible_now, nid, event, value = e
                extra.append((k, k if visible_now else k - 1, nid, event, value))

    def _extend_refmap(self) -> None:
        refmap = self._refmap
        refs = self._refs
        for nid in range(len(refmap), len(refs)):
            ref = refs[nid]
            refmap[id(ref) if ref is not None else -1 - nid] = nid

    # ------------------------------------------------------------------------------
    # Registration of live objects (the slow paths: first sight of a leaf, a constant, a
    # graph built before recording)
    # ------------------------------------------------------------------------------
    def _new_node(self, obj: Any, info: tuple) -> int:
        refs = self._refs
        nid = len(refs)
        if obj is None:
            refs.append(None)
        else:
            refs.append(_ref(obj, self._tape_append))
            self._known[obj._order] = nid
        self._tape_append((_T_NODE, nid, info))
        return nid

    def _event(self, nid: int, kind: int, value: Any, visible_now: bool = False) -> None:
        """A node event at the current point of the timeline, visible from the last step
        (or, with ``visible_now``, from the next)."""
        self._tape_append((_T_EVENT, visible_now, nid, kind, value))

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
        if creator is not None and creator._order not in self._known:
            self._adopt(creator, as_steps=False)
            nid = self._known.get(x._order)
            if nid is not None:
                return nid
        maybe_constant = self._maybe_constant
        was_constant = x._order in maybe_constant
        if was_constant:
            del maybe_constant[x._order]
        nid = self._new_variable(x)
        raw = capture(x.data, self.max_array_size)
        self._event(nid, _VALUE, raw)
        if was_constant or type(x) is core.Constant:
            self._constants.add(nid)
        elif creator is None:
            self._leaf_raw[nid] = raw
        return nid

    def _adopt(self, creator: Any, as_steps: bool) -> None:
        """Register the not yet known graph upstream of ``creator`` (iteratively, no recursion).

        With ``as_steps`` each Function becomes a forward step, in (generation, creation
        order); otherwise its values appear as already computed.
        """
        known = self._known
        found = []
        seen = {creator._order}
        stack = [creator]
        while stack:
            f = stack.pop()
            found.append(f)
            for x in f.inputs:
                if x._order in known:
                    continue
                c = x.creator
                if c is not None and c._order not in known and c._order not in seen:
                    seen.add(c._order)
                    stack.append(c)
        seen.clear()
        found.sort(key=lambda f: (f.generation, f._order))
        max_size = self.max_array_size
        for f in found:
            in_ids = tuple(
                known[x._order] if x._order in known else self._add_input(x) for x in f.inputs
            )
            # the Function's id first, its info once its outputs have theirs
            fid = len(self._refs)
            self._refs.append(_ref(f, self._tape_append))
            known[f._order] = fid
            out_ids = []
            values = []
            for ref in f.outputs:
                y = ref()
                if y is None:
                    nid = self._new_node(None, (_VARIABLE, f.generation + 1, None, None))
                    self._event(nid, _FREED, None)
                    values.append(None)
                else:
                    nid = known.get(y._order)
                    if nid is None:
                        nid = self._new_variable(y)
                    values.append(capture(y.data, max_size))
                out_ids.append(nid)
            out_ids = tuple(out_ids)
            self._tape_append(
                (_T_NODE, fid, (_FUNCTION, f.generation, type(f).__name__, in_ids, out_ids))
            )
            if as_steps:
                self._tape_append((_T_STEP, (_FWD, fid, in_ids, out_ids, tuple(values), -1)))
            else:
                self._event(fid, _VALUE, None)
                for nid, raw in zip(out_ids, values, strict=True):
                    self._event(nid, _VALUE, raw)
        found.clear()

    def _var_id(self, v: Any) -> int:
        nid = self._known.get(v._order)
        if nid is None:
            nid = self._add_input(v)
        return nid

    # ------------------------------------------------------------------------------
    # The observer hook (autodiff.core calls these while recording)
    # ------------------------------------------------------------------------------
    def on_constant(self, variable: Any) -> None:
        self._maybe_constant[variable._order] = None

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
        # The hot path, once per operation: one weak reference per new object, one dict
        # entry per new object and one tuple on the tape; the common one- and two-input,
        # one-output shapes spelled out.
        known = self._known
        leaf_raw = self._leaf_raw
        n_in = len(inputs)
        if n_in == 2:
            x0, x1 = inputs
            n0 = known.get(x0._order)
            if n0 is None:
                n0 = self._add_input(x0)
            elif n0 in leaf_raw:
                self._check_leaf(x0, n0)
            n1 = known.get(x1._order)
            if n1 is None:
                n1 = self._add_input(x1)
            elif n1 in leaf_raw:
                self._check_leaf(x1, n1)
            in_ids = (n0, n1)
        elif n_in == 1:
            x0 = inputs[0]
            n0 = known.get(x0._order)
            if n0 is None:
                n0 = self._add_input(x0)
            elif n0 in leaf_raw:
                self._check_leaf(x0, n0)
            in_ids = (n0,)
        else:
            in_ids = []
            for x in inputs:
                nid = known.get(x._order)
                if nid is None:
                    nid = self._add_input(x)
                elif nid in leaf_raw:
                    self._check_leaf(x, nid)
                in_ids.append(nid)
            in_ids = tuple(in_ids)
        refs = self._refs
        append = self._tape_append
        fid = len(refs)
        refs.append(_ref(f, append))
        known[f._order] = fid
        if len(outputs) == 1:
            y = outputs[0]
            refs.append(_ref(y, append))
            known[y._order] = fid + 1
            data = y.data
            if data.dtype is _F64 and not data.ndim:
                append((_FWD, fid, in_ids, (data.item(),), self._during, type(f), f.generation, None))
            else:
                values = (capture(data, self.max_array_size),)
                meta = ((data.shape, data.dtype),)
                append((_FWD, fid, in_ids, values, self._during, type(f), f.generation, meta))
            return
        values = []
        meta = []
        nid = fid
        for y in outputs:
            nid += 1
            refs.append(_ref(y, append))
            known[y._order] = nid
            data = y.data
            meta.append((data.shape, data.dtype))
            if data.dtype is _F64 and not data.ndim:
                values.append(data.item())
            else:
                values.append(capture(data, self.max_array_size))
        append((_FWD, fid, in_ids, tuple(values), self._during, type(f), f.generation, tuple(meta)))

    def _check_leaf(self, x: Any, nid: int) -> None:
        """A leaf used again: record a new value if its data changed (an optimizer step).

        The comparison reads the live array; a copy is made only when it changed."""
        last = self._leaf_raw[nid]
        data = x.data
        if type(last) is Snapshot:  # a large array, kept as a summary: compare summaries
            raw = capture(data, self.max_array_size)
            if raw == last:
                return
        elif _same_raw(data, last):
            return
        else:
            raw = capture(data, self.max_array_size)
        self._leaf_raw[nid] = raw
        self._event(nid, _VALUE, raw)

    def on_backward_begin(self, output: Any, retain_grad: bool, create_graph: bool) -> None:
        self._pass += 1
        root = self._var_id(output)
        self.backward_roots.append(root)
        self._backward_stack.append((self._pass, create_graph))
        self._during = self._pass
        self._track_nograd = self._create_graph = create_graph
        grad = output.grad
        # The seed becomes visible with the first backward step; on a leaf there is none.
        self._event(root, _GRAD, self._grad_raw(grad), visible_now=output.creator is not None)
        if create_graph:
            gid = self._var_id(grad)
            self._grad_of[gid] = root

    def on_backward_event(
        self, f: Any, gys: tuple, gxs: tuple, accs: tuple, cleared: tuple
    ) -> None:
        fid = self._known.get(f._order)
        if fid is None:
            self._adopt(f, as_steps=False)
            fid = self._known[f._order]
        if self._create_graph:  # gradients are graph nodes
            self._link_grads(f, gxs, accs)
        # The raw values (arrays without create_graph): no Variable is made for the trace. A
        # numpy float64 scalar (most gradients of a scalar graph) is immutable and is kept as
        # it is; anything else goes through _grad_raw. Inline: this runs once per step.
        if len(gys) == 1:
            if type(gys[0]) is not _FLOAT64:
                gys = (self._grad_raw(gys[0]),)
        else:
            gys = self._grads_raw(gys)
        if len(gxs) == 2:
            g0, g1 = gxs
            if type(g0) is not _FLOAT64 or type(g1) is not _FLOAT64:
                if g0 is not None:
                    g0 = self._grad_raw(g0)
                if g1 is gxs[0]:  # the same gradient for both inputs (Add)
                    g1 = g0
                elif g1 is not None:
                    g1 = self._grad_raw(g1)
                gxs = (g0, g1)
        elif len(gxs) == 1:
            if type(gxs[0]) is not _FLOAT64 and gxs[0] is not None:
                gxs = (self._grad_raw(gxs[0]),)
        else:
            gxs = self._grads_raw(gxs)
        if accs:
            if len(accs) == 1:
                slot, old, new = accs[0]
                if type(old) is not _FLOAT64 or type(new) is not _FLOAT64:
                    accs = ((slot, self._grad_raw(old), self._grad_raw(new)),)
            else:
                raw_of = self._grad_raw
                accs = tuple([(slot, raw_of(old), raw_of(new)) for slot, old, new in accs])
        if cleared:
            known = self._known
            if len(cleared) == 1:
                cleared = (known[cleared[0]._order],)
            else:
                cleared = tuple([known[y._order] for y in cleared if y._order in known])
        self._tape_append((_BWD, fid, gys, gxs, accs, cleared, self._pass))

    def _link_grads(self, f: Any, gxs: tuple, accs: tuple) -> None:
        """Under create_graph, remember which variable each gradient node is the gradient of."""
        known = self._known
        in_ids = [known.get(x._order) for x in f.inputs]
        pairs = [(slot, g) for slot, g in enumerate(gxs)] + [(s, new) for s, _, new in accs]
        for slot, g in pairs:
            if isinstance(g, core.Variable) and in_ids[slot] is not None:
                gid = known.get(g._order)
                if gid is not None:
                    self._grad_of[gid] = in_ids[slot]

    def on_backward_end(self, output: Any) -> None:
        if self._backward_stack:
            self._backward_stack.pop()
        if self._backward_stack:
            self._during, self._create_graph = self._backward_stack[-1]
            self._track_nograd = self._create_graph
        else:
            self._during = -1
            self._create_graph = False
            self._track_nograd = True
            self._grad_cache.clear()

    def _grads_raw(self, grads: tuple) -> tuple:
        raw_of = self._grad_raw
        return tuple([None if g is None else raw_of(g) for g in grads])

    def _grad_raw(self, g: Any) -> Any:
        """Raw snapshot of a gradient: an ndarray, a numpy scalar or a Variable.

        A small array seen again in the same backward pass (a gradient handed from the step
        that produced it to its creator's step) shares one copy; the cache holds the arrays
        (never Variables) until the pass ends so that their ids cannot be reused meanwhile.
        """
        t = type(g)
        if t is _NDARRAY:
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
        if t is _FLOAT64:
            return g  # immutable: kept as it is
        if isinstance(g, core.Variable):
            return self._grad_raw(g.data)
        return capture(np.asarray(g), self.max_array_size)

    def _start(self) -> None:
        self._recording = True
        core.add_observer(self)

    def _stop(self) -> None:
        core.remove_observer(self)
        self._tape_end = len(self._tape)
        self._recording = False
        self._refresh_names()
        self._maybe_constant = {}
        self._leaf_raw = {}
        self._grad_cache = {}
        self._backward_stack = []
        self._during = -1
        self._create_graph = False
        self._known = {}
        if self._graph is not None:
            self._sync_graph()  # type: ignore[attr-defined]
            nodes = self._graph.nodes
            for nid in self.variables:  # type: ignore[attr-defined]
                nodes[nid]["name"] = self._names.get(nid)

    def _refresh_names(self) -> None:
        """Pick up the names given to live Variables since they were recorded."""
        names = self._names
        variable = core.Variable
        for nid, ref in enumerate(self._refs):
            if ref is not None:
                obj = ref()
                if obj is not None and isinstance(obj, variable) and obj.name is not None:
                    names[nid] = obj.name


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
    if data.shape != last.shape or data.dtype is not last.dtype and data.dtype != last.dtype:
        return False
    if data.size:
        # An optimizer step changes nearly every element: the first one usually tells
        # (two different values that are not NaN have different bits).
        first = data.item(0)
        if first != last.item(0) and first == first:
            return False
    return data.tobytes() == last.tobytes()
