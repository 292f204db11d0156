"""The recording half of :class:`autodiff.trace.Trace`: the engine's observer hook.

Each event stores compact tuples of node ids and raw snapshots; live engine objects are
mapped to node ids by ``id()``, guarded by a weakref callback that removes the entry when the
object dies (and marks it FREED while recording), so that a reused id can never alias.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from autodiff import core
from autodiff._snapshot import Snapshot, capture

_F64 = np.dtype(np.float64)

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


class Recorder:
    """Observer methods and registration of live objects; the state lives on the Trace."""

    # attributes set by Trace.__init__
    _info: list[tuple]
    _refs: list
    _ids: dict[int, int]
    _raw: list[tuple]
    _extra: list[tuple]

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
