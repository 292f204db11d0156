"""The statistics-only PyTorch recorder (``record(statistics_only=True)``): the autograd
graph each backward pass runs, in torch's order, with the statistics of every gradient, and no
forward values. It sees no forward op: no dispatch mode, whose per-op Python alone costs more
than the recording may.

The graph comes from the autograd nodes themselves. ``torch.autograd.backward`` and
``torch.autograd.grad`` are wrapped while recording: before torch runs a pass, the nodes
reachable from its roots (``next_functions``) that are not recorded yet become function nodes,
named from the node (``AddmmBackward0``: ``linear``), their outputs variables shaped as torch
says (``_input_metadata``), the leaf behind each ``AccumulateGrad`` a variable; a hook on each
node writes its step when torch has run it. Module scopes come from the global module hooks:
at each module's entry and exit the nodes made since the last boundary that its inputs (at
entry) or outputs (at exit) reach are tagged with the scope they were made in.

A gradient's statistics (min, max, mean, norm) are computed by torch when its step runs; a
gradient that reaches its only consumer unchanged (most of them) is summarised once, as the
consumer's input gradient and as the producer's output gradient.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, NamedTuple

from autodiff.trace._checks import MAX_PARAM_STR
from autodiff.trace._recorder import _EMPTIED, _GRAD
from autodiff.trace._snapshot import Snapshot
from autodiff.trace.pytorch import _internals as ti
from autodiff.trace.pytorch._ops import node_op_name, tensors
from autodiff.trace.pytorch._recording import TorchRecording
from autodiff.trace.pytorch._values import dtype_of, statistics

__all__ = ["GradientRecording"]

_SCOPES = "autodiff.trace.scope"  # node.metadata key: the scope a node was made in


class _Pass(NamedTuple):
    index: int
    consumers: dict[int, int]  # variable -> how many gradients reach it in this pass
    passing: dict[int, Any]  # variable -> its gradient's statistics, from its only consumer
    fresh: set[int]  # leaves without a gradient before the pass that one gradient reaches
    root: int  # the root variable
    seed: list[Any]  # [the root's node id] until the seed is recorded, then []


class GradientRecording(TorchRecording):
    """One statistics-only recording: the backward wrappers, the node, leaf and module hooks
    and the tables they fill. ``start()`` on the thread to record, ``stop()`` on the same
    thread."""

    COMPILE_NOTE = (
        "torch.compile: a compiled region is one node (CompiledFunctionBackward): the "
        "statistics-only recording sees torch's autograd graph, not the ops inside it"
    )

    def __init__(self) -> None:
        super().__init__(0)  # every gradient summarised
        self._scope_key = f"{_SCOPES}#{self._key}"
        self._restore: Any = None
        self._passes: list[_Pass] = []  # the passes running now (nested: a backward in one)
        self._inputs: dict[int, tuple[int, ...]] = {}  # function node -> its input variables
        self._producer: dict[int, int] = {}  # variable -> the function node that made it
        self._has_grad: dict[int, bool] = {}  # leaf -> whether .grad was set after its pass
        self._leaf_refs: list[tuple[Any, int]] = []  # (weakref of the leaf, its node)

    def start(self) -> None:
        super().start_hooks()
        self._restore = ti.wrap_backward(self._backward)

    def stop(self) -> None:
        try:
            if self._restore is not None:
                self._restore()
        finally:
            self._restore = None
            self._passes.clear()
            super().stop_hooks()

    # ------------------------------------------------------------------------------
    # Module scopes
    # ------------------------------------------------------------------------------
    def _module_before(self, module: Any, args: Any) -> None:
        if self.recording and threading.get_ident() == self._thread:
            self._tag_scope(args, self._scopes[-1][0] if self._scopes else 0)
        super()._module_before(module, args)

    def _module_after(self, module: Any, args: Any, output: Any) -> None:
        if self.recording and threading.get_ident() == self._thread and self._scopes:
            self._tag_scope(output, self._scopes[-1][0])
        super()._module_after(module, args, output)

    def _tag_scope(self, items: Any, scope: int) -> None:
        """Tag the nodes behind ``items`` not tagged yet with ``scope``: made since the last
        module boundary, in the scope open until now."""
        key = self._scope_key
        stack = [t.grad_fn for t in tensors(items)]
        while stack:
            node = stack.pop()
            if node is None or type(node) is ti.ACCUMULATE_GRAD:
                continue
            meta = node.metadata
            if key in meta:
                continue
            meta[key] = scope
            stack.extend([p for p, _ in node.next_functions])

    # ------------------------------------------------------------------------------
    # The graph, read when a pass begins
    # ------------------------------------------------------------------------------
    def _backward(self, original: Any, roots: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.recording or threading.get_ident() != self._thread:
            return original(roots, *args, **kwargs)
        self._begin_pass(tensors(roots))
        try:
            return original(roots, *args, **kwargs)
        finally:
            self._end_pass()

    def _begin_pass(self, roots: list) -> None:
        rec = self.tables
        k = len(rec._raw)
        alive = []
        for ref, vid in self._leaf_refs:  # what zero_grad() did since the last pass
            t = ref()
            if t is None:
                continue
            alive.append((ref, vid))
            if self._has_grad.get(vid) and t.grad is None:
                rec.add_event(k, k, vid, _EMPTIED, None, None)
                self._has_grad[vid] = False
        self._leaf_refs = alive
        reached = self._add_graph([t.grad_fn for t in roots if t.grad_fn is not None])
        consumers: dict[int, int] = {}
        inputs = self._inputs
        for fid in reached:
            for v in inputs[fid]:
                consumers[v] = consumers.get(v, 0) + 1
        root_ids = []
        for t in roots:
            g = t.grad_fn
            if g is not None:
                vid = self._outputs[ti.node_tag(g, self._key)][t.output_nr]
            elif t.requires_grad:
                vid = self._leaf(t)
            else:
                continue  # torch says what is wrong
            consumers[vid] = consumers.get(vid, 0) + 1  # the seed
            root_ids.append(vid)
        fresh = set()
        for ref, vid in self._leaf_refs:
            if consumers.get(vid) == 1:
                t = ref()
                if t is not None and t.grad is None:
                    fresh.add(vid)
        self._pass += 1
        root = root_ids[0] if root_ids else -1
        seed = [self._producer[root]] if root in self._producer else []
        rec.backward_roots.append(root)
        self._passes.append(_Pass(self._pass, consumers, {}, fresh, root, seed))

    def _end_pass(self) -> None:
        self._passes.pop()

    def _add_graph(self, nodes: list) -> list[int]:
        """Record the nodes reachable from ``nodes`` that are not yet (inputs first); returns
        every function node the pass can reach."""
        key = self._key
        accumulate = ti.ACCUMULATE_GRAD
        reached: dict[int, None] = {}
        old: list[int] = []
        # id(node) -> [node, whether it is still to be recorded]; the node is held so that
        # no other node's Python object takes its id during the walk
        seen: dict[int, list] = {}
        order: list = []
        stack = list(nodes)
        while stack:
            node = stack[-1]
            entry = seen.get(id(node))
            if entry is not None:  # its inputs are recorded (or it was met before)
                stack.pop()
                if entry[1]:
                    order.append(node)
                    entry[1] = False
                continue
            fid = node.metadata.get(key)
            seen[id(node)] = [node, fid is None]
            if fid is not None:
                stack.pop()
                old.append(fid)
                continue
            for p, _ in node.next_functions:
                if p is not None and type(p) is not accumulate and id(p) not in seen:
                    stack.append(p)
        for node in order:
            reached[self._add_node(node)] = None
        # nodes an earlier pass recorded (a retained graph): reached through their inputs
        producer = self._producer
        while old:
            fid = old.pop()
            if fid in reached:
                continue
            reached[fid] = None
            old.extend([producer[v] for v in self._inputs[fid] if v in producer])
        return list(reached)

    def _add_node(self, g: Any) -> int:
        rec = self.tables
        key = self._key
        in_ids: list[int] = []
        slots: list[int] = []
        for i, (p, nr) in enumerate(g.next_functions):
            if p is None:
                continue
            if type(p) is ti.ACCUMULATE_GRAD:
                leaf = ti.accumulated_leaf(p)
                if leaf is None:
                    continue
                vid = self._leaf(leaf)
            else:
                vid = self._outputs[ti.node_tag(p, key)][nr]
            in_ids.append(vid)
            slots.append(i)
        gen = max([self._generation[v] for v in in_ids], default=0)
        outputs = ti.output_metadata(g)
        name = g.name()
        op = ti.forward_class_name(g)
        if op is None:
            if name.startswith("Convolution"):
                dims = len(outputs[0][0] or ()) if outputs else 0
                op = node_op_name(name, dims, bool(getattr(g, "_saved_transposed", False)))
            else:
                op = node_op_name(name)
        fid = rec.add_function(gen, op)
        self._generation.append(gen)
        scope = g.metadata.get(self._scope_key, 0)
        out_ids = []
        for shape, dtype in outputs:
            vid = rec.add_variable(gen + 1, shape, None if dtype is None else dtype_of(dtype))
            self._generation.append(gen + 1)
            rec.set_scope(vid, scope)
            self._producer[vid] = fid
            out_ids.append(vid)
        inputs = tuple(in_ids)
        rec.link_function(fid, inputs, tuple(out_ids))
        if len(name) <= MAX_PARAM_STR:  # as small_params keeps a string
            rec.set_params(fid, (("torch_node", name),))
        rec.set_scope(fid, scope)
        self._outputs[fid] = tuple(out_ids)
        self._slots[fid] = tuple(slots)
        self._inputs[fid] = inputs
        ti.tag_node(g, fid, key)
        self._node_hooks.append(g.register_hook(self._node_ran(fid)))
        rec.add_forward_step(fid, (None,) * len(out_ids))
        return fid

    def _new_leaf(self, t: Any) -> int:
        vid = super()._new_leaf(t)
        self._leaf_refs.append((weakref.ref(t), vid))
        self._has_grad[vid] = t.grad is not None
        self._handles.append(t.register_post_accumulate_grad_hook(self._leaf_grad(vid)))
        return vid

    def _leaf(self, t: Any) -> int:
        vid = self._leaves.get(t)
        return self._new_leaf(t) if vid is None else vid

    # ------------------------------------------------------------------------------
    # Backward steps
    # ------------------------------------------------------------------------------
    def _on_backward_step(self, fid: int, grad_inputs: tuple, grad_outputs: tuple) -> None:
        if not self.recording or not self._passes:
            return  # a pass not begun through the wrapped functions
        now = self._passes[-1]
        passing = now.passing
        outs = self._outputs[fid]
        gys = []
        for vid, g in zip(outs, grad_outputs, strict=False):
            if g is None:
                gys.append(None)
                continue
            snap = passing.pop(vid, None)
            gys.append(statistics(g) if snap is None else snap)
        rec = self.tables
        if now.seed and now.seed[0] == fid:
            now.seed.clear()
            k = len(rec._raw)
            rec.add_event(k, k, now.root, _GRAD, gys[outs.index(now.root)], now.index)
        consumers = now.consumers
        gxs = []
        for vid, edge in zip(self._inputs[fid], self._slots[fid], strict=True):
            g = grad_inputs[edge] if edge < len(grad_inputs) else None
            if g is None:
                gxs.append(None)
                continue
            snap = None
            if len(gys) == 1 and gys[0] is not None:
                snap = _permuted(g, grad_outputs[0], gys[0])
            if snap is None:
                snap = statistics(g)
            gxs.append(snap)
            if consumers.get(vid) == 1:
                passing[vid] = snap
        rec.add_backward_step(fid, tuple(gys), tuple(gxs), (), outs, now.index)

    def _on_leaf_grad(self, vid: int, t: Any) -> None:
        if not self.recording or not self._passes:
            return
        now = self._passes[-1]
        snap = now.passing.pop(vid, None) if vid in now.fresh else None
        if snap is None:
            snap = statistics(t.grad)
        rec = self.tables
        k = len(rec._raw)
        rec.add_event(k, k - 1, vid, _GRAD, snap, now.index)
        self._has_grad[vid] = True


def _permuted(g: Any, gy: Any, snap: Any) -> Any:
    """``snap`` with ``g``'s shape when ``g`` holds the same elements as ``gy`` in another
    order (a transpose's or a permute's gradient: the same memory, its strides permuted), else
    None."""
    if g.numel() != gy.numel() or g.data_ptr() != gy.data_ptr() or not gy.is_contiguous():
        return None
    if sorted(g.stride()) != sorted(gy.stride()) or sorted(g.shape) != sorted(gy.shape):
        return None
    shape = tuple(g.shape)
    return snap if shape == snap.shape else Snapshot(shape, snap.dtype, None, *snap._stats)
