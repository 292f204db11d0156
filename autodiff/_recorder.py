"""The recording half of :class:`autodiff.trace.Trace`: the engine's observer hook.

Each event stores compact tuples of node ids and raw snapshots; live engine objects are
mapped to node ids by ``id()``. Each recorded object has one weak reference whose callback is
the C-level ``append`` of the trace's ``_dead`` list (no Python frame runs when a graph is
freed). The next event, or the end of recording, drains that list: it removes the ids of the
dead objects before any lookup (so that a reused id can never alias) and marks them FREED with
the step stamp they died at (no step can have been recorded in between).
"""

from __future__ import annotations

import struct
import weakref
from typing import Any

import numpy as np

from autodiff import core
from autodiff._snapshot import Snapshot, capture

_F64 = np.dtype(np.float64)
_NDARRAY = np.ndarray
_FLOAT64 = np.float64
_FLOAT_BITS = struct.Struct("d")

# Event kinds in a node's history.
_VALUE, _GRAD, _CLEARED, _FREED = range(4)
_VARIABLE, _FUNCTION = 0, 1
_FWD, _BWD = 0, 1  # first field of a raw step
# Cap on remembered no_grad outputs / operand constants (only needed if they later feed a
# recorded graph; the oldest are almost always dead).
_CONSTANT_MEMORY = 200_000


class _NodeRef(weakref.ref):
    __slots__ = ("key", "nid")


class Recorder:
    """Observer methods and registration of live objects; the state lives on the Trace."""

    # attributes set by Trace.__init__
    _info: list[tuple]
    _refs: list
    _ids: dict[int, int]
    _raw: list[tuple]
    _extra: list[tuple]
    _dead: list
    _dead_append: Any  # _dead.append: the weak references' callback

    # ------------------------------------------------------------------------------
    # Registration of live objects
    # ------------------------------------------------------------------------------
    def _new_node(self, obj: Any, info: tuple) -> int:
        nid = len(self._info)
        self._info.append(info)
        if obj is None:
            self._refs.append(None)
        else:
            ref = _NodeRef(obj, self._dead_append)
            ref.nid = nid
            ref.key = key = id(obj)
            self._refs.append(ref)
            self._ids[key] = nid
        return nid

    def _drain_dead(self) -> None:
        """Forget the ids of the objects collected since the last event; while recording,
        they become FREED at the current stamp (they died after the last recorded step)."""
        dead = self._dead
        ids = self._ids
        leaf_raw = self._leaf_raw
        stamp = len(self._raw)
        extra = self._extra
        recording = self._recording
        while dead:
            batch = dead[:]
            dead.clear()  # a callback during the loop below appends to a fresh list state
            for ref in batch:
                nid = ref.nid
                if ids.get(ref.key) == nid:
                    del ids[ref.key]
                if leaf_raw:
                    leaf_raw.pop(nid, None)
                if recording:
                    extra.append((stamp, stamp - 1, nid, _FREED, None))

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
        # The hot path, once per operation: everything inlined, one tuple per node and one
        # per step, the common one- and two-input, one-output shapes spelled out.
        if self._dead:
            self._drain_dead()
        ids = self._ids
        leaf_raw = self._leaf_raw
        n_in = len(inputs)
        if n_in == 2:
            x0, x1 = inputs
            n0 = ids.get(id(x0))
            if n0 is None:
                n0 = self._add_input(x0)
            elif n0 in leaf_raw:
                self._check_leaf(x0, n0)
            n1 = ids.get(id(x1))
            if n1 is None:
                n1 = self._add_input(x1)
            elif n1 in leaf_raw:
                self._check_leaf(x1, n1)
            in_ids = (n0, n1)
        elif n_in == 1:
            x0 = inputs[0]
            n0 = ids.get(id(x0))
            if n0 is None:
                n0 = self._add_input(x0)
            elif n0 in leaf_raw:
                self._check_leaf(x0, n0)
            in_ids = (n0,)
        else:
            in_ids = []
            for x in inputs:
                nid = ids.get(id(x))
                if nid is None:
                    nid = self._add_input(x)
                elif nid in leaf_raw:
                    self._check_leaf(x, nid)
                in_ids.append(nid)
            in_ids = tuple(in_ids)
        info = self._info
        refs = self._refs
        dead = self._dead_append
        fid = len(info)
        ref = _NodeRef(f, dead)
        ref.nid = fid
        ref.key = key = id(f)
        refs.append(ref)
        ids[key] = fid
        if len(outputs) == 1:
            y = outputs[0]
            nid = fid + 1
            out_ids = (nid,)
            data = y.data
            info.append((_FUNCTION, f.generation, type(f).__name__, in_ids, out_ids))
            info.append((_VARIABLE, y.generation, data.shape, data.dtype))
            ref = _NodeRef(y, dead)
            ref.nid = nid
            ref.key = key = id(y)
            refs.append(ref)
            ids[key] = nid
            if data.dtype is _F64 and data.ndim == 0:
                values = (data.item(),)
            else:
                values = (capture(data, self.max_array_size),)
        else:
            out_ids = tuple(range(fid + 1, fid + 1 + len(outputs)))
            info.append((_FUNCTION, f.generation, type(f).__name__, in_ids, out_ids))
            values = []
            nid = fid
            for y in outputs:
                nid += 1
                data = y.data
                info.append((_VARIABLE, y.generation, data.shape, data.dtype))
                ref = _NodeRef(y, dead)
                ref.nid = nid
                ref.key = key = id(y)
                refs.append(ref)
                ids[key] = nid
                if data.dtype is _F64 and data.ndim == 0:
                    values.append(data.item())
                else:
                    values.append(capture(data, self.max_array_size))
            values = tuple(values)
        self._raw.append((_FWD, fid, in_ids, out_ids, values, self._during))

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
        stamp = len(self._raw)
        self._extra.append((stamp, stamp - 1, nid, _VALUE, raw))

    def on_backward_begin(self, output: Any, retain_grad: bool, create_graph: bool) -> None:
        if self._dead:
            self._drain_dead()
        self._pass += 1
        root = self._var_id(output)
        self.backward_roots.append(root)
        self._backward_stack.append((self._pass, create_graph))
        self._during = self._pass
        self._track_nograd = self._create_graph = create_graph
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
        if self._dead:
            self._drain_dead()
        fid = self._ids.get(id(step.function))
        if fid is None:
            self._adopt(step.function, as_steps=False)
            fid = self._ids[id(step.function)]
        info = self._info[fid]
        # The raw values (arrays without create_graph): no Variable is made for the trace. A
        # numpy float64 scalar (most gradients of a scalar graph) is immutable and is kept as
        # it is; anything else goes through _grad_raw. Inline: this runs once per step.
        gys = step.output_grads_raw
        if len(gys) == 1:
            if type(gys[0]) is not _FLOAT64:
                gys = (self._grad_raw(gys[0]),)
        else:
            raw_of = self._grad_raw
            gys = tuple([None if g is None else raw_of(g) for g in gys])
        gxs = step.input_grads_raw
        if len(gxs) == 2:
            g0, g1 = gxs
            if type(g0) is not _FLOAT64 and g0 is not None:
                g0 = self._grad_raw(g0)
            if g1 is gxs[0]:  # the same gradient for both inputs (Add)
                g1 = g0
            elif type(g1) is not _FLOAT64 and g1 is not None:
                g1 = self._grad_raw(g1)
            gxs = (g0, g1)
        elif len(gxs) == 1:
            if type(gxs[0]) is not _FLOAT64 and gxs[0] is not None:
                gxs = (self._grad_raw(gxs[0]),)
        else:
            raw_of = self._grad_raw
            gxs = tuple([None if g is None else raw_of(g) for g in gxs])
        accs = step.accumulated_raw
        if accs:
            in_ids = info[3]
            raw_accs = []
            for slot, old, new in accs:
                if type(old) is not _FLOAT64:
                    old = self._grad_raw(old)
                if type(new) is not _FLOAT64:
                    new = self._grad_raw(new)
                raw_accs.append((in_ids[slot], slot, old, gxs[slot], new))
            accs = tuple(raw_accs)
        cleared = step.cleared
        if cleared:
            out_ids = info[4]
            if len(out_ids) == 1:  # the engine clears only this Function's outputs
                cleared = out_ids
            else:
                ids = self._ids
                cleared = tuple([ids[id(y)] for y in cleared if id(y) in ids])
        if self._create_graph:  # gradients are graph nodes
            self._link_grads(step, info[3])
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
            self._during, self._create_graph = self._backward_stack[-1]
            self._track_nograd = self._create_graph
        else:
            self._during = -1
            self._create_graph = False
            self._track_nograd = True
            self._grad_cache.clear()

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
        self._drain_dead()
        self._recording = False
        self._refresh_names()
        self._maybe_constant = {}
        self._leaf_raw = {}
        self._grad_cache = {}
        self._backward_stack = []
        self._during = -1
        self._create_graph = False
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
    return data.tobytes() == last.tobytes()
