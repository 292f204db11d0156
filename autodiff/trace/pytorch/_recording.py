"""The PyTorch recorder: torch's autograd graph, forward values and backward steps, written
into a :class:`~autodiff.trace._recorder.Recorder`'s tables through the constructors the file
loaders use (``add_variable``, ``add_function``, ``add_forward_step``...).

Forward: every aten op passes through a dispatch mode. An op's outputs get their ``grad_fn``
only after the mode has handled it, so the op is kept pending and read when the next op is
dispatched (or recording stops): then each new autograd node becomes a function node, its
outputs variables, and the values are copied (``capture``: whole up to ``max_array_size``,
summarised beyond). A node's inputs are its ``next_functions`` edges, matched by identity (the
producer's node and ``output_nr``, or the leaf behind an AccumulateGrad), so each input slot
is the slot torch's backward fills.

Backward: a hook on each recorded node writes a step when torch has run it, so the steps come
in the engine's own order with the gradients torch passed (``grad_outputs``) and produced
(``grad_inputs``). A leaf's ``.grad`` is read by its post-accumulate hook and shown after the
step after which torch accumulated it. A callback queued at a pass's first step ends it.
While torch's engine runs a pass, the dispatch mode is taken off (its arithmetic is what the
steps show) unless the pass may run forward ops of the program (see ``_backward``).

Cuts: an op that makes a tensor without history from one that has it (``detach``, ``.data``,
any op under ``no_grad``) is remembered, and becomes a function node (named by its op) whose
output is marked cut when a recorded op uses it.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any

import torch
from torch.utils.weak import WeakTensorKeyDictionary

from autodiff.trace._checks import small_params
from autodiff.trace._recorder import _EMPTIED, _GRAD, _VALUE, Recorder
from autodiff.trace.pytorch import _internals as ti
from autodiff.trace.pytorch._capture import ValueCapture
from autodiff.trace.pytorch._names import module_level_name
from autodiff.trace.pytorch._ops import op_info, op_name, plain_inputs, tensors
from autodiff.trace.pytorch._retained import RetainedGrads
from autodiff.trace.pytorch._stale import note_changed_leaves
from autodiff.trace.pytorch._values import dtype_of, numpy_dtype, same

__all__ = ["TorchRecording"]

_RECORDINGS = itertools.count()


def _add_new(new: dict[int, tuple[Any, list]], t: Any, key: str) -> None:
    """Note tensor ``t`` under its autograd node in ``new`` when the node is not recorded."""
    g = t.grad_fn
    if g is not None and ti.node_tag(g, key) is None:
        entry = new.get(id(g))
        if entry is None:
            new[id(g)] = (g, [t])
        elif all(m is not t for m in entry[1]):
            entry[1].append(t)


class TorchRecording:
    """One recording: the dispatch mode, the hooks and the tables they fill. ``start()`` on
    the thread to record, ``stop()`` on the same thread."""

    COMPILE_NOTE = (
        "torch.compile: recorded as the eager ops it runs (under the recorder's dispatch mode "
        "compiled code runs eagerly)"
    )

    def __init__(self, max_array_size: int) -> None:
        self.tables = Recorder(max_array_size)
        # Each recording tags nodes under a key of its own: a graph an earlier recording
        # made (a hidden state carried over, a held loss) is history from before this one,
        # not nodes of its tables.
        self._key = f"autodiff.trace#{next(_RECORDINGS)}"
        self.max_array_size = max_array_size
        self.notes: list[str] = []
        self.recording = False
        self._thread = 0
        self._mode = ti.DispatchMode(self._on_op)
        self._pending: tuple | None = None  # the last op: (func, args, outputs, scope, during)
        self._generation: list[int] = []  # node id -> generation
        self._outputs: dict[int, tuple[int, ...]] = {}  # function node -> its output nodes
        self._slots: dict[int, tuple[int, ...]] = {}  # function node -> edge index per input
        # how many input slots use each variable: a non-leaf's in its graph, a leaf's in the
        # graph built since the last backward pass (where more than one gradient reaches a
        # variable, its steps show the running sum)
        self._consumers: dict[int, int] = {}
        self._leaves = WeakTensorKeyDictionary()  # leaf tensor -> its node
        self._constants = WeakTensorKeyDictionary()  # tensor without history -> its node
        self._cut_from = WeakTensorKeyDictionary()  # see _note_cut
        self._leaf_list: list[tuple[Any, int]] = []  # (weakref of the leaf tensor, node)
        self._leaf_last: dict[int, tuple[Any, bool]] = {}  # node -> (raw value, has grad)
        self._handles: list[Any] = []
        self._node_hooks: list[Any] = []
        self._param_names: dict[int, tuple[Any, str]] = {}  # id(param) -> (weakref, name)
        self._script_named: set[int] = set()  # parameters named by module_level_name
        self._module_names: dict[int, tuple[Any, dict[int, str]]] = {}  # root id -> names
        # open scopes: (scope id, qualified name; None for torch.compile's wrapper)
        self._scopes: list[tuple[int, str | None]] = []
        self._pass = -1
        self._pass_open = False
        self._seed_pending = False  # a pass began and its seed is not recorded yet
        self._task = -1  # the graph task of the pass open
        self._root_id = 0  # the outermost module running now
        self._held: dict[int, Any] = {}  # this pass: variable -> the sum of its gradients
        self._values = ValueCapture(max_array_size)
        self._raw = self._values.one  # the raw value kept of a tensor (see ValueCapture)
        self._segment_start = 0
        self._scan_pending = False
        self._restore: Any = None  # puts torch's backward functions back
        # a backward pass may run forward ops (see _backward): the mode stays on for it
        self._may_run_forward = False
        self._mode_off = False  # the dispatch mode taken off for a backward pass or a step
        self._step_off = False  # taken off for an optimizer's step (see _step_before)
        self._fresh: set[int] = set()  # see _note_fresh
        self._incoming: dict[int, Any] = {}  # fresh leaf -> the raw gradient that reached it
        # the tensors among the arguments of the custom Function being recorded (see
        # _function_applied)
        self._applied: list | None = None
        self._retained = RetainedGrads()  # the non-leaves whose .grad retain_grad() keeps

    # ------------------------------------------------------------------------------
    # Start and stop
    # ------------------------------------------------------------------------------
    def start(self) -> None:
        self.start_hooks()
        self._mode.__enter__()
        self._restore = ti.undo_all(
            ti.wrap_backward(self._backward),
            ti.wrap_function_apply(self._function_applied),
            ti.wrap_retain_grad(self._note_retained),
        )

    def stop(self) -> None:
        try:
            self._restore()
            # (stopped during a pass: the pass leaves it off; an exception that interrupted
            # its taking off or putting back may leave the flag wrong: the stack says)
            if not self._mode_off and ti.on_stack(self._mode):
                self._mode.__exit__(None, None, None)
        finally:
            self._flush()
            self.stop_hooks()

    def _backward(self, original: Any, is_grad: bool, roots: Any, *args: Any, **kwargs: Any) -> Any:
        """A backward pass runs with the dispatch mode off, its arithmetic unseen (the steps
        show it) unless it may run forward ops to record: ``create_graph``, a custom Function's
        backward (a reentrant checkpoint), a checkpoint's recomputation. (Also not when
        another mode is above it, or another wrapper of torch's backward is inside this one.)"""
        at = 3 if is_grad else 2  # create_graph's position after the roots
        create_graph = kwargs.get("create_graph", args[at] if len(args) > at else False)
        if not self.recording or threading.get_ident() != self._thread:
            return original(roots, *args, **kwargs)
        if self._step_off:  # an optimizer's step raised: its end never came
            self._put_mode_back()
        self._note_fresh(accumulates=not is_grad and kwargs.get("inputs") is None)
        if create_graph or self._may_run_forward:
            return original(roots, *args, **kwargs)
        # left as it is: under another mode above it, or inside another wrapper of torch's
        # backward that is not marked to run with the mode off (see ti.is_torchs_backward)
        if self._mode_off or not ti.on_top(self._mode) or not ti.is_torchs_backward(original):
            return original(roots, *args, **kwargs)
        self._take_mode_off()
        try:
            return original(roots, *args, **kwargs)
        finally:
            self._put_mode_back()

    def _take_mode_off(self) -> None:
        """Take the dispatch mode off this thread (its last op recorded first)."""
        if self._pending is not None:
            self._flush()
        self._mode.__exit__(None, None, None)
        self._mode_off = True

    def _put_mode_back(self) -> None:
        self._mode_off = self._step_off = False
        if self.recording:  # not stopped meanwhile (a script's next recording)
            self._mode.__enter__()

    def _step_before(self, optimizer: Any, args: tuple, kwargs: dict) -> None:
        """An optimizer's step runs with the dispatch mode off: its ops make no graph (it
        changes the parameters in place, under no_grad), and what it did to the parameters is
        read when the next graph begins (``_scan_leaves``) or a backward pass does (the stale
        check). Not a step given a closure (it runs the program's forward and backward), nor
        one under another mode, on another thread or inside a backward pass."""
        if (
            not self.recording
            or self._mode_off
            or threading.get_ident() != self._thread
            or len(args) > 1
            or kwargs.get("closure") is not None
            or not ti.on_top(self._mode)
        ):
            return
        self._take_mode_off()
        self._values.forget()  # the step changes tensors in place
        self._step_off = True

    def _step_after(self, optimizer: Any, args: tuple, kwargs: dict) -> None:
        if self._step_off and threading.get_ident() == self._thread:
            self._put_mode_back()

    def start_hooks(self) -> None:
        """Start recording on this thread, with the module hooks (not the dispatch mode)."""
        self.recording = True
        self._thread = threading.get_ident()
        self._handles.extend(ti.module_hooks(self._module_before, self._module_after))
        self._handles.extend(ti.optimizer_hooks(self._step_before, self._step_after))

    def stop_hooks(self) -> None:
        """Stop recording: every hook removed, no tensor held."""
        self.recording = False
        for handle in self._handles + self._node_hooks:
            handle.remove()
        self._handles.clear()
        self._node_hooks.clear()
        self._held.clear()
        self._values.forget()
        self._scopes.clear()
        self._retained.clear()

    # ------------------------------------------------------------------------------
    # Forward
    # ------------------------------------------------------------------------------
    def _on_op(self, func: Any, args: tuple, kwargs: dict) -> Any:
        if self._pending is not None:
            self._flush()
        if op_info(func)[0]:
            self._values.forget()  # (``.data.add_()`` changes a tensor, not its version)
        out = func(*args, **kwargs)
        node = ti.current_autograd_node()
        if node is not None:
            if not torch.is_grad_enabled():
                return out  # backward's own arithmetic (no create_graph): seen as its steps
            if not self._in_this_pass():  # create_graph: the root's node runs ops first
                fid = ti.node_tag(node, self._key)
                if fid is None:
                    return out
                self._open_pass(fid, 0)
        scope = self._scopes[-1][0] if self._scopes else 0
        self._pending = (func, args, out, scope, self._pass if node is not None else -1)
        return out

    def _flush(self) -> None:
        """Record the pending op now that its outputs have their autograd node."""
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        func, args, out, scope, during = pending
        outs = tensors(out)
        new: dict[int, tuple[Any, list]] = {}
        mutable, may_cut, _ = op_info(func)
        if mutable:
            # an in-place op on a view: its base's new node (CopySlices) comes first, as the
            # view's new node takes its input from it
            for t in outs:
                base = ti.view_base(t)
                if base is not None:
                    _add_new(new, base, self._key)
        for t in outs:
            _add_new(new, t, self._key)
        if new:
            self._add_functions(new, func, args, tensors(args), scope, during)
        elif during < 0 and outs and may_cut and not mutable:
            self._note_cut(func, args, outs)

    def _add_functions(
        self, new: dict, func: Any, args: tuple, inputs: list, scope: int, during: int
    ) -> None:
        """Record the autograd nodes ``new`` (see ``_add_new``) that op ``func`` made."""
        if self._pass_open and during < 0:  # a pass failed, and the program went on
            self._end_pass()
        if self._scan_pending and during < 0:  # the first node of the next graph
            self._scan_pending = False
            self._scan_leaves()
        if not self._may_run_forward and ti.saved_tensor_hooks_active():
            self._may_run_forward = True  # a checkpoint's backward recomputes this op
        for g, made in new.values():
            self._add_function(g, func, args, inputs, made, scope, during)

    def _function_applied(self, original: Any, cls: type, args: tuple, kwargs: dict) -> Any:
        """``cls.apply(*args, **kwargs)`` of a custom Function: its node is recorded when it
        returns, its inputs matched with the call's arguments. (The ops its forward ran are
        not its node's: the last of them may not even make its output.)"""
        out = original(*args, **kwargs)
        if not self.recording or threading.get_ident() != self._thread or ti.dispatch_disabled():
            return out  # (with dispatch disabled, the ops it ran were not the program's)
        with ti.no_dispatch():  # the recorder's own ops are not the program's
            self._applied = ti.function_inputs(cls, args, kwargs)
            try:
                self._flush()  # the forward's last op, whose output may be the Function's
                new: dict[int, tuple[Any, list]] = {}
                for t in tensors(out):
                    if t.grad_fn is not None and ti.forward_class_name(t.grad_fn) is not None:
                        _add_new(new, t, self._key)
                if new:
                    scope = self._scopes[-1][0] if self._scopes else 0
                    during = self._pass if ti.current_autograd_node() is not None else -1
                    self._add_functions(new, None, (), self._applied, scope, during)
                # an output without history (non-differentiable, or under no_grad) is the
                # Function's cut, not one of the ops its forward ran
                self._note_cut(None, self._applied, tensors(out), cls.__name__)
            finally:
                self._applied = None
        return out

    def _add_function(
        self, g: Any, func: Any, args: tuple, inputs: list, made: list, scope: int, during: int
    ) -> None:
        rec = self.tables
        edges = g.next_functions
        applied = self._applied
        if applied is not None and ti.forward_class_name(g) is not None:
            args = inputs = applied  # a custom Function's node: its edges are its arguments
        plain_of = None  # read at the first edge without a producer
        in_ids: list[int] = []
        slots: list[int] = []
        key = self._key
        for i, (p, nr) in enumerate(edges):
            if p is None:
                if plain_of is None:
                    plain_of = plain_inputs(edges, args, inputs)
                t = plain_of.get(i)
                if t is None:
                    continue
                vid = self._history_less(t)
            else:
                fid = ti.node_tag(p, key)
                if fid is not None:
                    vid = self._outputs[fid][nr]
                else:
                    leaf = ti.accumulated_leaf(p)
                    if leaf is not None:
                        vid = self._leaf(leaf)
                    elif i < len(inputs):  # made before recording: a leaf of this graph
                        vid = self._history_less(inputs[i])
                    else:
                        continue
            in_ids.append(vid)
            slots.append(i)
        gen = max([self._generation[v] for v in in_ids], default=0)
        custom = ti.forward_class_name(g)
        if custom is not None:
            self._may_run_forward = True  # its backward is the program's own Python
        fid = rec.add_function(gen, custom or op_name(func, args))
        self._generation.append(gen)
        by_slot = {t.output_nr: t for t in made}
        out_ids = []
        values = []
        for k in range(ti.output_count(g)):
            t = by_slot.get(k)
            if t is None:
                vid = rec.add_variable(gen + 1, None, None)
                values.append(None)
            else:
                vid = rec.add_variable(gen + 1, tuple(t.shape), numpy_dtype(t))
                values.append(self._raw(t))
            self._generation.append(gen + 1)
            rec.set_scope(vid, scope)
            out_ids.append(vid)
        rec.link_function(fid, tuple(in_ids), tuple(out_ids))
        params = [("torch_node", g.name())]
        if custom is None:
            params.append(("aten", op_info(func)[2]))
            params += ti.saved(g)
        rec.set_params(fid, small_params(dict(params)))
        rec.set_scope(fid, scope)
        self._outputs[fid] = tuple(out_ids)
        self._slots[fid] = tuple(slots)
        consumers = self._consumers
        for v in in_ids:
            consumers[v] = consumers.get(v, 0) + 1
        ti.tag_node(g, fid, key)
        self._node_hooks.append(g.register_hook(self._node_ran(fid)))
        rec.add_forward_step(fid, tuple(values), during)

    def _node_ran(self, fid: int) -> Any:
        def hook(grad_inputs: tuple, grad_outputs: tuple) -> None:
            self._on_backward_step(fid, grad_inputs, grad_outputs)

        return hook

    # ------------------------------------------------------------------------------
    # Leaves, tensors without history and cuts
    # ------------------------------------------------------------------------------
    def _leaf(self, t: Any) -> int:
        """The node of a leaf that requires grad (registered at its first use)."""
        vid = self._leaves.get(t)
        if vid is not None:
            return vid
        vid = self._new_leaf(t)
        rec = self.tables
        stamp = len(rec._raw)
        raw = self._raw(t)
        rec.add_event(stamp, self._segment_start - 1, vid, _VALUE, raw, None)
        has_grad = t.grad is not None
        if has_grad:  # a gradient held from before recording
            rec.add_event(stamp, self._segment_start - 1, vid, _GRAD, self._raw(t.grad), -1)
        self._leaf_list.append((weakref.ref(t), vid))
        self._leaf_last[vid] = (raw, has_grad)
        self._handles.append(t.register_post_accumulate_grad_hook(self._leaf_grad(vid)))
        return vid

    def _new_leaf(self, t: Any) -> int:
        """A variable node for leaf ``t``: a parameter marked and named as its module names
        it; a leaf no module names (a parameter of none, a tensor made with
        ``requires_grad=True``) by the program's one module-level name for it, if it has one."""
        rec = self.tables
        vid = rec.add_variable(0, tuple(t.shape), numpy_dtype(t))
        self._generation.append(0)
        self._leaves[t] = vid
        named = None
        if isinstance(t, torch.nn.Parameter):
            rec.mark_parameter(vid)
            named = self._param_names.get(id(t))
        if named is not None and named[0]() is t:
            rec.set_name(vid, named[1])
        else:  # no module named it (yet): the program's own name for it, if one says it
            name = module_level_name(t)
            if name is not None:
                rec.set_name(vid, name)
                self._script_named.add(vid)
        return vid

    def _leaf_grad(self, vid: int) -> Any:
        def hook(t: Any) -> None:
            self._on_leaf_grad(vid, t)

        return hook

    def _history_less(self, t: Any) -> int:
        """The node of a tensor without history: a cut's output if an op made it from one
        with history (``_note_cut``), else a constant."""
        vid = self._constants.get(t)
        if vid is not None:
            return vid
        vid = self._cut(t)
        if vid is None:
            rec = self.tables
            vid = rec.add_variable(0, tuple(t.shape), numpy_dtype(t), constant=True, operand=True)
            self._generation.append(0)
            rec.add_event(len(rec._raw), self._segment_start - 1, vid, _VALUE, self._raw(t), None)
        self._constants[t] = vid
        return vid

    def _note_cut(self, func: Any, args: Any, outs: list, name: str | None = None) -> None:
        """Remember outputs made without history from an input that has it: a cut, if a
        recorded op uses them later, named ``name`` (else by ``func``, the op). Inputs are
        kept as node ids (or a cut not yet used: ``no_grad`` chains), never as tensors."""
        sources = []
        for t in tensors(args):
            if t.requires_grad:
                g = t.grad_fn
                if g is None:
                    sources.append(self._leaf(t))
                elif ti.node_tag(g, self._key) is not None:
                    sources.append(self._outputs[ti.node_tag(g, self._key)][t.output_nr])
            else:
                earlier = self._cut_from.get(t)
                if earlier is not None:
                    sources.append(earlier)
        if sources:
            note = (name or op_name(func, args), tuple(sources))
            for t in outs:
                # a mask or an index carries no gradient: no cut
                if not t.requires_grad and (t.is_floating_point() or t.is_complex()):
                    self._cut_from[t] = [note, None, t.shape, t.dtype]

    def _cut(self, t: Any) -> int | None:
        entry = self._cut_from.get(t)
        if entry is None:
            return None
        return self._made_cut(entry, t)

    def _made_cut(self, entry: list, t: Any) -> int:
        """The output node of a remembered cut, made at its first use (``entry[1]``)."""
        if entry[1] is not None:
            return entry[1]
        (op, sources), _, shape, dtype = entry
        rec = self.tables
        in_ids = tuple(s if type(s) is int else self._made_cut(s, None) for s in sources)
        gen = max([self._generation[v] for v in in_ids], default=0)
        fid = rec.add_function(gen, op)
        self._generation.append(gen)
        vid = rec.add_variable(gen + 1, tuple(shape), dtype_of(dtype))
        self._generation.append(gen + 1)
        rec.link_function(fid, in_ids, (vid,))
        rec.add_forward_step(fid, (None if t is None else self._raw(t),))
        rec.mark_cut(vid, len(rec._raw))
        self._outputs[fid] = (vid,)
        entry[1] = vid
        return vid

    def _scan_leaves(self) -> None:
        """After a backward pass, when the next graph's first node is made: what the program
        did to the leaves in between (an optimizer's step, ``zero_grad``) shows right before
        that node's step, the segment's start."""
        rec = self.tables
        k = len(rec._raw)
        self._segment_start = k
        alive = []
        leaves = []
        for ref, vid in self._leaf_list:
            t = ref()
            if t is not None:
                alive.append((ref, vid))
                leaves.append(t)
        for (_, vid), t, raw in zip(alive, leaves, self._values.many(leaves), strict=True):
            last, had_grad = self._leaf_last[vid]
            changed = not same(raw, last)
            if changed:
                rec.add_event(k, k, vid, _VALUE, raw, None)
            has_grad = t.grad is not None
            if had_grad and not has_grad:
                rec.add_event(k, k, vid, _EMPTIED, None, None)
            self._leaf_last[vid] = (raw if changed else last, has_grad)
        self._leaf_list = alive
        consumers = self._consumers
        for _, vid in alive:
            consumers.pop(vid, None)

    # ------------------------------------------------------------------------------
    # Backward
    # ------------------------------------------------------------------------------
    def _on_backward_step(self, fid: int, grad_inputs: tuple, grad_outputs: tuple) -> None:
        # any thread: torch runs a CUDA graph's backward on a thread of its own
        if not self.recording:
            return
        with ti.no_dispatch():  # the recorder's own ops are not the program's
            self._backward_step(fid, grad_inputs, grad_outputs)

    def _backward_step(self, fid: int, grad_inputs: tuple, grad_outputs: tuple) -> None:
        if self._pending is not None:
            self._flush()
        rec = self.tables
        if not self._in_this_pass():
            slot = next((i for i, g in enumerate(grad_outputs) if g is not None), 0)
            self._open_pass(fid, slot)
        if self._seed_pending:
            self._seed(grad_outputs)
        count = len(grad_inputs)
        produced = [grad_inputs[e] if e < count else None for e in self._slots[fid]]
        # the values of the gradients it received and produced, the large ones' statistics
        # computed together
        raws = self._values.many(list(grad_outputs) + produced)
        split = len(grad_outputs)
        gys = tuple(raws[:split])
        in_ids = rec._info[fid].inputs
        gxs = raws[split:]
        accs = []
        held = self._held
        for slot, g in enumerate(produced):
            if g is None:
                continue
            raw = gxs[slot]
            vid = in_ids[slot]
            if vid in self._fresh:
                self._incoming[vid] = raw
            if self._consumers.get(vid, 0) > 1:
                old = held.get(vid)
                if old is None:
                    held[vid] = g.detach().clone()
                else:
                    new = old + g.detach()
                    held[vid] = new
                    accs.append((vid, slot, self._raw(old), raw, self._raw(new)))
        # torch keeps no gradient of a non-leaf (unless retain_grad()): dropped once used
        cleared, kept = self._retained.after_step(self._outputs[fid])
        rec.add_backward_step(fid, gys, tuple(gxs), tuple(accs), cleared, self._pass)
        for vid, g in kept:
            k = len(rec._raw)
            rec.add_event(k, k - 1, vid, _GRAD, self._raw(g), self._pass)

    def _in_this_pass(self) -> bool:
        """Whether the backward running now is the pass open (a pass that failed never ran
        its end callback: the next one has another graph task)."""
        return self._pass_open and ti.graph_task_id() == self._task

    def _open_pass(self, fid: int, slot: int) -> None:
        """A backward pass begins at node ``fid`` (the first torch runs): its root is the
        output ``slot`` of it; the seed is read at the node's step."""
        if self._pass_open:
            self._end_pass()  # one that failed
        self._task = ti.graph_task_id()
        self._pass += 1
        self._pass_open = True
        self._seed_pending = True
        self.tables.backward_roots.append(self._outputs[fid][slot])
        ti.queue_end_of_pass(self._end_pass)
        if self._retained.waiting():
            self._retained.resolve(self._key, self._outputs)
        note_changed_leaves(self)  # a .data change since the forward: stale_inputs sees it

    def _seed(self, grad_outputs: tuple) -> None:
        """The gradient the pass began with, shown with its first step."""
        self._seed_pending = False
        rec = self.tables
        root = rec.backward_roots[-1]
        seed = next((g for g in grad_outputs if g is not None), None)
        k = len(rec._raw)
        rec.add_event(k, k, root, _GRAD, None if seed is None else self._raw(seed), self._pass)

    def _end_pass(self) -> None:
        self._pass_open = False
        self._seed_pending = False
        self._held.clear()
        self._values.forget()
        self._scan_pending = True

    def _note_fresh(self, accumulates: bool) -> None:
        """Before a backward pass: the leaves whose ``.grad`` it will set to the one gradient
        that reaches them (None before, one use in the graph): their ``.grad`` is shown with
        the numbers already kept of that gradient, not summarised again."""
        fresh = self._fresh
        fresh.clear()
        self._incoming.clear()
        if not accumulates:
            return
        consumers = self._consumers
        for ref, vid in self._leaf_list:
            if consumers.get(vid) == 1:
                t = ref()
                if t is not None and t.grad is None:
                    fresh.add(vid)

    def _on_leaf_grad(self, vid: int, t: Any) -> None:
        if not self.recording or not self._pass_open:
            return
        rec = self.tables
        k = len(rec._raw)
        raw = self._incoming.pop(vid, None) if vid in self._fresh else None
        if raw is None:
            with ti.no_dispatch():
                raw = self._raw(t.grad)
        rec.add_event(k, k - 1, vid, _GRAD, raw, self._pass)
        self._leaf_last[vid] = (self._leaf_last[vid][0], True)

    def _note_retained(self, t: Any) -> None:
        """``t.retain_grad()`` ran: on the program's thread, ``t`` is noted (see
        ``_retained``)."""
        if self.recording and threading.get_ident() == self._thread and t.grad_fn is not None:
            self._retained.note(t)

    # ------------------------------------------------------------------------------
    # Module scopes
    # ------------------------------------------------------------------------------
    def _module_before(self, module: Any, args: Any) -> None:
        if not self.recording or threading.get_ident() != self._thread:
            return
        if self._step_off:  # an optimizer's step raised: its end never came
            self._put_mode_back()
        if ti.is_compiled_module(module):
            if self.COMPILE_NOTE not in self.notes:
                self.notes.append(self.COMPILE_NOTE)
            # the wrapper is no scope: its ops are its parent's, its module the root
            self._scopes.append((self._scopes[-1][0] if self._scopes else 0, None))
            return
        cls = type(module).__name__
        named = [entry for entry in self._scopes if entry[1] is not None]
        if not named:
            self._names_under(module)
            qual, name, parent = "", cls, self._scopes[-1][0] if self._scopes else 0
        else:
            parent, up = named[-1]
            root = self._module_names.get(self._root_id)
            qual = root[1].get(id(module)) if root is not None else None
            if qual is None:  # a module outside the root's tree: by its class
                qual, name = up, cls
            elif up and qual.startswith(up + "."):
                name = qual[len(up) + 1 :].replace(".", "/")
            else:
                name = qual.replace(".", "/") or cls
        self._scopes.append((self.tables.add_scope(name, cls, parent), qual))

    def _module_after(self, module: Any, args: Any, output: Any) -> None:
        if not self.recording or threading.get_ident() != self._thread or not self._scopes:
            return
        self._scopes.pop()  # the module's pending op keeps the scope it ran in

    def _names_under(self, root: Any) -> dict[int, str]:
        """The qualified names of ``root``'s modules (and its parameters' names, noted for
        the leaves), computed once per root module."""
        self._root_id = id(root)
        known = self._module_names.get(id(root))
        if known is not None and known[0]() is root:
            return known[1]
        names = {id(m): q for q, m in root.named_modules()}
        self._module_names[id(root)] = (weakref.ref(root), names)
        rec = self.tables
        for q, p in root.named_parameters():
            if id(p) not in self._param_names:
                self._param_names[id(p)] = (weakref.ref(p), q)
                vid = self._leaves.get(p)
                # used before its module ran: its module's name, not the program's
                if vid is not None and (vid not in rec._names or vid in self._script_named):
                    rec.set_name(vid, q)
        return names
