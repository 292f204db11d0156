"""The statistics-only PyTorch recorder (``record(statistics_only=True)``): the autograd
graph each backward pass runs, in torch's order, with the statistics of every gradient, and no
forward values. It sees no forward op: no dispatch mode, whose per-op Python alone costs more
than the recording may.

The graph comes from the autograd nodes themselves. ``torch.autograd.backward`` and
``torch.autograd.grad`` are wrapped while recording: before torch runs a pass, the nodes
reachable from its roots (``next_functions``) that are not recorded yet become function nodes,
named from the node (``AddmmBackward0``: ``linear``), their outputs variables shaped as torch
says (``_input_metadata``), the leaf behind each ``AccumulateGrad`` a variable; a hook on each
node notes its step when torch has run it. Module scopes come from the global module hooks:
at each module's entry and exit the nodes made since the last boundary that its inputs (at
entry) or outputs (at exit) reach are tagged with the scope they were made in.

A pass's gradients are held until it ends (or until many are held) and summarised together
(min, max, mean, norm, NaN/Inf counts; see _Pass); its steps are written then, in torch's
order. A gradient that reaches its only consumer unchanged (most of them) is summarised once,
as the consumer's input gradient and as the producer's output gradient; a transpose's
gradient shares its input's summary, and a leaf's first ``.grad`` the summary of the one
gradient torch made it from.
"""

from __future__ import annotations

import threading
import weakref
from functools import partial
from typing import Any

from torch import Tensor

from autodiff.trace._checks import MAX_PARAM_STR
from autodiff.trace._recorder import _EMPTIED, _GRAD
from autodiff.trace._snapshot import Snapshot
from autodiff.trace.pytorch import _internals as ti
from autodiff.trace.pytorch._ops import node_op_name, tensors
from autodiff.trace.pytorch._recording import TorchRecording
from autodiff.trace.pytorch._values import dtype_of, statistics_of

__all__ = ["GradientRecording"]

_SCOPES = "autodiff.trace.scope"  # node.metadata key: the scope a node was made in


# rows a pass writes once its gradients' statistics are known (see _Pass); _KEPT: a
# non-leaf's .grad kept by retain_grad()
_STEP, _SEED, _LEAF, _KEPT = 0, 1, 2, 3

# gradients held for their statistics before they are computed: at most this many elements
# (beyond, the statistics of those held so far are computed at once, and they are let go).
# Small (1 MB of float32): gradients held past their use keep torch from reusing their
# memory, and the allocator gets fresh pages from the system (page faults): the small CNN of
# bench/torch_record.py, 700 000 gradient elements a pass, took 1000-8000 page faults per 10
# steps held whole (2^24) and 1.41x-1.46x its plain step, 125-420 and 1.22x-1.41x at 2^18; the
# MLP (340 000 a pass, no faults either way) the same
HELD_ELEMENTS = 1 << 18


class _Pass:
    """A backward pass while it runs. Its gradients are held (``values``) and summarised
    together when it ends, in one warm loop rather than one cold call per hook, and its steps
    and events are written then, in the order they happened (``rows``). A gradient is named
    by a reference: an index into ``values``; ``-1 - leaf`` for the gradient a leaf's
    ``.grad`` becomes (the gradient itself is not held, so that torch can make it ``.grad``
    without a copy); ``(reference, shape)`` for the same elements in another order."""

    __slots__ = (
        "cleared", "consumers", "done", "fresh", "held", "index", "leaf_grads", "passing",
        "root", "rows", "seed", "values",
    )  # fmt: skip

    def __init__(self, index: int, consumers: dict, fresh: set, root: int, seed: int) -> None:
        self.index = index
        self.consumers = consumers  # variable -> how many gradients reach it in this pass
        self.passing: dict[int, Any] = {}  # variable -> its gradient, from its only consumer
        self.fresh = fresh  # leaves without .grad before the pass that one gradient reaches
        self.root = root  # the root variable
        self.seed = seed  # the root's function node until the seed is recorded, then -1
        self.values: list = []  # gradients held, then their Snapshots
        self.done = 0  # values[:done] are Snapshots
        self.held = 0  # elements held
        self.leaf_grads: dict[int, Any] = {}  # fresh leaf -> its .grad's reference
        self.rows: list[tuple] = []  # steps and events not written yet
        # function node -> its outputs whose gradient is dropped after its step, where
        # retain_grad() keeps one (else all of them)
        self.cleared: dict[int, tuple[int, ...]] = {}

    def hold(self, g: Any) -> int:
        self.values.append(g)
        self.held += g.numel()
        return len(self.values) - 1

    def summarise(self) -> None:
        """Compute the statistics of the gradients held, and let them go."""
        values = self.values
        values[self.done :] = statistics_of(values[self.done :])
        self.done = len(values)
        self.held = 0

    def snapshot(self, ref: Any) -> Any:
        if ref is None:
            return None
        if type(ref) is int:
            if ref < 0:
                return self.snapshot(self.leaf_grads.get(-1 - ref))
            return self.values[ref]
        snap = self.snapshot(ref[0])
        if snap is None or snap.shape == ref[1]:
            return snap
        return Snapshot(ref[1], snap.dtype, None, *snap._stats)


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
        self._passes: list[_Pass] = []  # the passes running now (nested: a backward in one)
        self._inputs: dict[int, tuple[int, ...]] = {}  # function node -> its input variables
        self._producer: dict[int, int] = {}  # variable -> the function node that made it
        self._has_grad: dict[int, bool] = {}  # leaf -> whether .grad was set after its pass
        self._leaf_refs: list[tuple[Any, int]] = []  # (weakref of the leaf, its node)
        self._leaf_ids: dict[int, tuple[Any, int]] = {}  # id(leaf) -> (weakref, its node)
        self._names_of: dict[type, tuple] = {}  # node class -> its names (see _names)

    def start(self) -> None:
        self.start_hooks()
        self._restore = ti.undo_all(
            ti.wrap_backward(self._backward), ti.wrap_retain_grad(self._note_retained)
        )

    def stop(self) -> None:
        try:
            self._restore()
        finally:
            self._passes.clear()
            self.stop_hooks()

    # ------------------------------------------------------------------------------
    # Module scopes
    # ------------------------------------------------------------------------------
    def _module_before(self, module: Any, args: Any) -> None:
        if self.recording and threading.get_ident() == self._thread:
            self._tag_scope(args, self._scopes[-1][0] if self._scopes else 0)
        super()._module_before(module, args)

    def _module_after(self, module: Any, args: Any, output: Any) -> None:
        # (all the base class does here, the scope's pop, done here: one call per module)
        if self.recording and self._scopes and threading.get_ident() == self._thread:
            self._tag_scope(output, self._scopes[-1][0])
            self._scopes.pop()

    def _tag_scope(self, items: Any, scope: int) -> None:
        """Tag the nodes behind ``items`` not tagged yet with ``scope``: made since the last
        module boundary, in the scope open until now. Twice per module call: a module's one
        tensor (its argument, its output) whose node is tagged already (nothing was made
        since the last boundary, the common case) costs one dict look-up."""
        key = self._scope_key
        if type(items) is tuple and len(items) == 1:
            items = items[0]
        if isinstance(items, Tensor):
            node = items.grad_fn  # (never an AccumulateGrad: a leaf has none)
            if node is None or key in node.metadata:
                return
            stack = [node]
        else:
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
    def _backward(self, original: Any, is_grad: bool, roots: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.recording or threading.get_ident() != self._thread:
            return original(roots, *args, **kwargs)
        # the leaves whose AccumulateGrad runs: backward's, unless it names its inputs
        accumulates = not is_grad and kwargs.get("inputs") is None
        self._begin_pass(tensors(roots), accumulates)
        try:
            return original(roots, *args, **kwargs)
        finally:
            self._end_pass()

    def _begin_pass(self, roots: list, accumulates: bool) -> None:
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
        if self._retained.waiting():
            self._retained.resolve(self._key, self._outputs)
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
        for ref, vid in self._leaf_refs if accumulates else ():
            if consumers.get(vid) == 1:
                t = ref()
                if t is not None and t.grad is None:
                    fresh.add(vid)
        self._pass += 1
        root = root_ids[0] if root_ids else -1
        rec.backward_roots.append(root)
        if self._passes:  # a backward inside a backward: what the outer one did comes first
            outer = self._passes[-1]
            outer.summarise()
            self._write(outer)
        self._passes.append(_Pass(self._pass, consumers, fresh, root, self._producer.get(root, -1)))

    def _end_pass(self) -> None:
        now = self._passes.pop()
        now.summarise()
        self._write(now, final=True)

    def _write(self, now: _Pass, final: bool = False) -> None:
        """Write the pass's steps and events whose statistics are known, in order (all of
        them when it is ``final``: a leaf whose AccumulateGrad did not run shows none)."""
        rec = self.tables
        snapshot = now.snapshot
        written = 0
        for row in now.rows:
            kind = row[0]
            if kind == _STEP:
                _, fid, gys, gxs, waits = row
                if not final and any(v not in now.leaf_grads for v in waits):
                    break  # a leaf's AccumulateGrad has not run yet
                rec.add_backward_step(
                    fid,
                    tuple([snapshot(r) for r in gys]),
                    tuple([snapshot(r) for r in gxs]),
                    (),
                    now.cleared.get(fid, self._outputs[fid]),
                    now.index,
                )
            else:
                k = len(rec._raw)
                _, vid, ref = row
                if kind == _SEED:
                    rec.add_event(k, k, vid, _GRAD, snapshot(ref), now.index)
                else:
                    rec.add_event(k, k - 1, vid, _GRAD, snapshot(ref), now.index)
                    if kind == _LEAF:
                        self._has_grad[vid] = True
            written += 1
        del now.rows[:written]

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
                    order.append((node, entry[2]))
                    entry[1] = False
                continue
            fid = node.metadata.get(key)
            if fid is not None:
                seen[id(node)] = [node, False]
                stack.pop()
                old.append(fid)
                continue
            edges = node.next_functions
            seen[id(node)] = [node, True, edges]
            for p, _ in edges:
                if p is not None and type(p) is not accumulate and id(p) not in seen:
                    stack.append(p)
        if order:
            reached = dict.fromkeys(self._add_nodes(order))
        # nodes an earlier pass recorded (a retained graph): reached through their inputs
        producer = self._producer
        while old:
            fid = old.pop()
            if fid in reached:
                continue
            reached[fid] = None
            old.extend([producer[v] for v in self._inputs[fid] if v in producer])
        return list(reached)

    def _add_nodes(self, order: list) -> list[int]:
        """Record the autograd nodes of ``order``, ``(node, its next_functions)`` with each
        node's inputs before it: a function node each, its outputs variables, and a hook that
        notes its step. One loop with everything it reads at hand: it runs at every pass of a
        training loop, for every node the forward made (its rows in one call,
        ``add_function_ran``: a call each per node and output was a fifth of this loop)."""
        rec = self.tables
        key, scope_key = self._key, self._scope_key
        accumulate = ti.ACCUMULATE_GRAD
        outputs, slots_of, inputs_of = self._outputs, self._slots, self._inputs
        generation, producer = self._generation, self._producer
        names_of = self._names_of
        add = rec.add_function_ran
        hooks = self._node_hooks
        ran = self._on_backward_step
        made = []
        for g, edges in order:
            in_ids: list[int] = []
            slots: list[int] = []
            gen = 0
            for i, (p, nr) in enumerate(edges):
                if p is None:
                    continue
                if type(p) is accumulate:
                    leaf = ti.accumulated_leaf(p)
                    if leaf is None:
                        continue
                    vid = self._leaf(leaf)
                else:
                    vid = outputs[p.metadata[key]][nr]
                in_ids.append(vid)
                slots.append(i)
                if generation[vid] > gen:
                    gen = generation[vid]
            shapes = ti.output_metadata(g)
            named = names_of.get(type(g))
            if named is None:
                named = names_of[type(g)] = self._names(g)
            name, op, params, conv = named
            if conv:
                dims = len(shapes[0][0] or ()) if shapes else 0
                op = node_op_name(name, dims, bool(getattr(g, "_saved_transposed", False)))
            inputs = tuple(in_ids)
            meta = g.metadata
            fid, out_ids = add(
                gen,
                op,
                inputs,
                [(s, None if d is None else dtype_of(d)) for s, d in shapes],
                params,
                meta.get(scope_key, 0),
            )
            generation.append(gen)
            generation += [gen + 1] * len(out_ids)
            for vid in out_ids:
                producer[vid] = fid
            outputs[fid] = out_ids
            slots_of[fid] = tuple(slots)
            inputs_of[fid] = inputs
            meta[key] = fid
            hooks.append(g.register_hook(partial(ran, fid)))  # called (fid, grads in, out)
            made.append(fid)
        return made

    @staticmethod
    def _names(g: Any) -> tuple[str, str, tuple, bool]:
        """What the nodes of ``g``'s class are called: torch's name, the op a user knows, the
        node's parameters (torch's name, as ``small_params`` would keep it), and whether the
        op depends on the node (a convolution's dimensions and transposition)."""
        name = g.name()
        op = ti.forward_class_name(g) or node_op_name(name)
        params = (("torch_node", name),) if len(name) <= MAX_PARAM_STR else ()
        return name, op, params, name.startswith("Convolution")

    def _new_leaf(self, t: Any) -> int:
        vid = super()._new_leaf(t)
        ref = weakref.ref(t)
        self._leaf_ids[id(t)] = (ref, vid)
        self._leaf_refs.append((ref, vid))
        self._has_grad[vid] = t.grad is not None
        self._handles.append(t.register_post_accumulate_grad_hook(partial(self._on_leaf_grad, vid)))
        return vid

    def _leaf(self, t: Any) -> int:
        found = self._leaf_ids.get(id(t))
        if found is not None and found[0]() is t:
            return found[1]
        return self._new_leaf(t)

    # ------------------------------------------------------------------------------
    # Backward steps
    # ------------------------------------------------------------------------------
    def _on_backward_step(self, fid: int, grad_inputs: tuple, grad_outputs: tuple) -> None:
        """Node ``fid`` ran: a step with references to the gradients it received and made
        (runs once per node per pass: what it reads is at hand in locals)."""
        if not self.recording or not self._passes:
            return  # a pass not begun through the wrapped functions
        now = self._passes[-1]
        passing = now.passing
        hold = now.hold
        outs = self._outputs[fid]
        gys = []
        for vid, g in zip(outs, grad_outputs, strict=False):
            if g is None:
                gys.append(None)
                continue
            ref = passing.pop(vid, None)
            gys.append(hold(g) if ref is None else ref)
        if now.seed == fid:
            now.seed = -1
            now.rows.append((_SEED, now.root, gys[outs.index(now.root)]))
        # one gradient in: an input gradient may be it, transposed (see _permuted)
        gy = grad_outputs[0] if len(gys) == 1 and gys[0] is not None else None
        at = -1 if gy is None else gy.data_ptr()
        consumers = now.consumers
        fresh = now.fresh
        waits = []  # fresh leaves whose .grad this step's gradients become
        gxs = []
        count = len(grad_inputs)
        for vid, edge in zip(self._inputs[fid], self._slots[fid], strict=True):
            g = grad_inputs[edge] if edge < count else None
            if g is None:
                gxs.append(None)
                continue
            if g.data_ptr() == at and _permuted(g, gy):
                ref = (gys[0], tuple(g.shape))
                if vid in fresh:  # the leaf's .grad will be these numbers
                    now.leaf_grads[vid] = ref
            elif vid in fresh:
                ref = -1 - vid
                waits.append(vid)
            else:
                ref = hold(g)
            gxs.append(ref)
            if consumers.get(vid) == 1:
                passing[vid] = ref
        now.rows.append((_STEP, fid, gys, gxs, waits))
        cleared, kept = self._retained.after_step(outs)
        if kept:
            now.cleared[fid] = cleared
            for vid, g in kept:
                now.rows.append((_KEPT, vid, hold(g)))
        if now.held > HELD_ELEMENTS and not waits:
            now.summarise()
            self._write(now)

    def _on_leaf_grad(self, vid: int, t: Any) -> None:
        if not self.recording or not self._passes:
            return
        now = self._passes[-1]
        ref = now.leaf_grads.get(vid) if vid in now.fresh else None
        if ref is None:
            ref = now.hold(t.grad)  # .grad itself: holding it costs torch no copy
            if vid in now.fresh:
                now.leaf_grads[vid] = ref
        now.rows.append((_LEAF, vid, ref))


def _permuted(g: Any, gy: Any) -> bool:
    """Whether ``g`` holds the elements of ``gy`` in another order (a transpose's or a
    permute's gradient): the same memory, addressed by the same (size, stride) pairs."""
    return (
        g.data_ptr() == gy.data_ptr()
        and g.numel() == gy.numel()
        and sorted(zip(g.shape, g.stride(), strict=True))
        == sorted(zip(gy.shape, gy.stride(), strict=True))
    )
