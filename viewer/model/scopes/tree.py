"""Module scopes of a trace: the tree of scope instances, which of them are collapsed or
folded, and the graph that is visible then, computed with numpy over ``trace.node_scopes()``.

A scope *instance* is one Layer call (or one ``autodiff.scope`` block): a contiguous interval
of forward time, so replacing one by a single box never makes a cycle. A collapsed instance is
drawn as one node of kind ``'module'``; a run of consecutive sibling instances of the same
class that ran the same sequence of ops is *folded* into one such box ("Block \u00d7 12") until it
is unfolded.

What a box hides (:meth:`ScopeModel.visible`): the Functions that ran inside it, the variables
they made that are used only inside it, and the Parameter leaves used only inside it. A
variable that crosses the boundary stays visible, so the box acts as one big Function between
its inputs and its outputs. The visible graph maps every hidden node to its box's index, so
whatever lands on a hidden node (the current step, a selection, a NaN flag, a leak badge)
lands on the box.

Every per-node pass here is numpy; Python loops run over scopes or over visible nodes only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff.trace import TraceReader
from viewer.model.layout.clusters import cluster_tree

__all__ = ["MAX_FIRST_SCREEN", "ModuleBox", "ScopeModel", "ScopeNode", "VisibleGraph", "has_scopes"]

MAX_FIRST_SCREEN = 150  # boxes the first screen of a graph with scopes aims at, at most


def has_scopes(trace: TraceReader) -> bool:
    """Whether ``trace`` recorded any scope besides the root (older traces record none)."""
    return len(trace.scopes()) > 1


@dataclass
class ScopeNode:
    """One scope instance in :meth:`Document.scope_tree`.

    ``path`` is the trace's ('MLP/l1'), ``name`` its last part, ``cls`` the Layer's class
    ('' for an ``autodiff.scope`` block), ``depth`` 1 for a top scope. ``collapsed``: drawn as
    one box (when nothing above it is). ``fold_count`` > 1: the instance heads a run of that many
    repeats; ``folded`` says the run is drawn as one box ("Block \u00d7 12"). ``fold_head`` is the
    scope id of the run's first instance (its own id when it heads one or is in none)."""

    scope_id: int
    path: str
    name: str
    cls: str
    depth: int
    collapsed: bool
    folded: bool = False
    fold_count: int = 1
    fold_head: int = -1
    children: list[ScopeNode] = field(default_factory=list)


@dataclass(frozen=True)
class ModuleBox:
    """A box of the visible graph: a collapsed scope instance or a folded run."""

    index: int  # the box's node index in the visible graph
    scope_id: int  # the instance (the run's first one for a fold)
    path: str
    name: str
    cls: str
    count: int  # instances in the box (1, or the run's length)
    params: NDArray[np.int64]  # node ids of the Parameter leaves it hides
    param_values: int  # their elements together


@dataclass
class VisibleGraph:
    """The graph shown for one collapse state. Node ``i`` is trace node ``node_ids[i]``; for
    a box, that is the first Function it hides (a real id, so selection and the inspector
    keep working). ``index_of_id[nid]``: the node index showing trace node ``nid`` (its box
    for a hidden node), -1 if not in the graph. ``keys`` identify nodes across collapse
    states: the node id, or ``-1 - scope_id`` for a box."""

    node_ids: NDArray[np.int64]
    keys: NDArray[np.int64]
    is_function: NDArray[np.bool_]
    is_module: NDArray[np.bool_]
    box_scope: NDArray[np.int64]  # per node: its box's scope id, -1 for a plain node
    edges: NDArray[np.intp]
    edge_slots: NDArray[np.intp]
    index_of_id: NDArray[np.intp]
    modules: dict[int, ModuleBox]  # node index -> box
    step_nodes: NDArray[np.intp]  # per trace step: the node index of its Function
    step_backward: NDArray[np.bool_]  # per trace step: a backward step
    model: ScopeModel

    @property
    def n_nodes(self) -> int:
        return len(self.node_ids)

    def index_of(self, node_id: int) -> int:
        nid = int(node_id)
        return int(self.index_of_id[nid]) if 0 <= nid < len(self.index_of_id) else -1


def _leaf_facts(trace: TraceReader, leaves: list[int]) -> list[tuple[bool, tuple[int, ...]]]:
    """(is a Parameter, shape) of each leaf id, from the trace's bulk readers (``node()``
    builds a node's whole attributes, its last value and gradient too: 40 us a node)."""
    parameters = trace.parameters()
    return [
        (nid in parameters, shape or ())
        for nid, shape in zip(leaves, trace.shapes(leaves), strict=True)
    ]


class ScopeModel:
    """The scopes of one trace and which of them are collapsed or folded."""

    def __init__(self, trace: TraceReader) -> None:
        self.trace = trace
        rows = list(trace.scopes())
        self.rows = rows
        n_scopes = len(rows)
        self.parent = np.array([r.parent for r in rows], dtype=np.int64)
        self.depth = np.array([r.depth for r in rows], dtype=np.int64)
        self.max_depth = int(self.depth.max()) if n_scopes else 0
        self.collapsed = np.zeros(n_scopes, dtype=bool)
        # what the scenes of this trace know of its nodes (node id -> ...), kept across the
        # scenes of one collapse state and the next, so a new scene costs its new nodes only
        self.node_attrs: dict[int, dict[str, Any]] = {}
        self.node_events: dict[int, tuple[Any, Any]] = {}  # (steps, state codes)
        self.node_labels: dict[tuple[int, int], str] = {}
        self._read_nodes(trace)
        # the instances this graph has a Function of (a TraceView shares its base's table)
        # the scopes at each depth, once: walking the tree level by level is then O(scopes)
        order = np.argsort(self.depth, kind="stable")
        cuts = np.searchsorted(self.depth[order], np.arange(1, self.max_depth + 2))
        self._levels = [order[cuts[d - 1] : cuts[d]] for d in range(1, self.max_depth + 1)]
        self.present = np.zeros(n_scopes, dtype=bool)
        self.present[self.node_scope[self.is_function]] = True
        for at in reversed(self._levels):
            self.present[self.parent[at[self.present[at]]]] = True
        self.max_depth = int(self.depth[self.present].max()) if self.present.any() else 0
        self._levels = self._levels[: self.max_depth]
        self._by_path: dict[str, list[int]] = {}
        for s in np.flatnonzero(self.present).tolist():
            if s:
                self._by_path.setdefault(rows[s].path, []).append(s)
        self._find_repeats()
        self.folded = self.fold_count > 1  # every run starts folded (on its head)
        self.folded &= self.fold_head == np.arange(n_scopes)

    # ------------------------------------------------------------------ reading the trace
    @property
    def function_width(self) -> float:
        """The Functions' column width for every layout of this trace (one for all collapse
        states, so a box opening in place keeps its neighbours' widths)."""
        width = getattr(self, "_function_width", None)
        if width is None:
            from viewer.model.layout.compute import function_box_width

            width = self._function_width = function_box_width(
                self.trace, self.ids[self.is_function]
            )
        return width

    def _read_nodes(self, trace: TraceReader) -> None:
        variables, functions = trace.variables, trace.functions
        n = len(variables) + len(functions)
        ids = np.fromiter((*variables, *functions), dtype=np.int64, count=n)
        order = np.argsort(ids, kind="stable")
        self.ids = ids[order]
        self.is_function = order >= len(variables)
        size = int(self.ids.max()) + 1 if n else 0
        self.local_of_id = np.full(size, -1, dtype=np.intp)
        self.local_of_id[self.ids] = np.arange(n)
        all_scopes = np.asarray(trace.node_scopes(), dtype=np.int64).reshape(-1)
        self.node_scope = all_scopes[self.ids] if n else np.zeros(0, np.int64)
        pairs, slots = trace.edges()
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        keep = (pairs < size).all(axis=1) & (pairs >= 0).all(axis=1)
        pairs, slots = pairs[keep], np.asarray(slots, dtype=np.intp).reshape(-1)[keep]
        local = self.local_of_id[pairs] if len(pairs) else np.zeros((0, 2), np.intp)
        keep = (local >= 0).all(axis=1)
        self.edge_src, self.edge_dst = local[keep, 0], local[keep, 1]
        self.edge_slots = slots[keep]
        into_function = self.is_function[self.edge_dst]
        self.use_var = self.edge_src[into_function]  # variable -> consumer function
        self.use_fun = self.edge_dst[into_function]
        made = np.zeros(n, dtype=bool)
        made[self.edge_dst[~into_function]] = True
        leaves = np.flatnonzero(~self.is_function & ~made)
        self.is_param = np.zeros(n, dtype=bool)
        self.param_size = np.zeros(n, dtype=np.int64)
        for i, (is_param, shape) in zip(
            leaves.tolist(), _leaf_facts(trace, self.ids[leaves].tolist()), strict=True
        ):
            if is_param:
                self.is_param[i] = True
                self.param_size[i] = int(np.prod(shape)) if shape else 1
        self.first_nonfinite = trace.first_nonfinite()
        steps = trace.steps
        self.step_function = np.fromiter((s.function for s in steps), np.int64, len(steps))
        self.step_backward = np.fromiter(
            (s.phase == "backward" for s in steps), dtype=bool, count=len(steps)
        )
        forward = ~self.step_backward
        ops = [s.op for s, f in zip(steps, forward.tolist(), strict=True) if f]
        self._forward_functions = self.step_function[forward]
        self._forward_ops = ops

    def _find_repeats(self) -> None:
        """Runs of consecutive sibling instances with the same class and op sequence."""
        n_scopes = len(self.rows)
        self.fold_head = np.arange(n_scopes)
        self.fold_count = np.ones(n_scopes, dtype=np.int64)
        self.run_length = self.fold_count
        fun = self._forward_functions
        if n_scopes <= 2 or len(fun) == 0:
            return
        local = self.local_of_id[np.clip(fun, 0, len(self.local_of_id) - 1)]
        ok = (fun < len(self.local_of_id)) & (local >= 0)
        fun_scope = np.where(ok, self.node_scope[np.maximum(local, 0)], 0)
        _, codes = np.unique(
            np.asarray(self._forward_ops, dtype=object).astype(str), return_inverse=True
        )
        rng = np.random.default_rng(13)
        weight = rng.integers(1, 2**62, size=int(codes.max()) + 1, dtype=np.int64)
        position = np.arange(len(fun), dtype=np.int64)
        # per scope: its forward steps form one interval (first, last) of the forward order
        first = np.full(n_scopes, len(fun), dtype=np.int64)
        last = np.full(n_scopes, -1, dtype=np.int64)
        np.minimum.at(first, fun_scope, position)
        np.maximum.at(last, fun_scope, position)
        for at in reversed(self._levels):
            np.minimum.at(first, self.parent[at], first[at])
            np.maximum.at(last, self.parent[at], last[at])
        w = weight[codes.reshape(-1)]
        s1 = np.concatenate([[0], np.cumsum(w)])
        s2 = np.concatenate([[0], np.cumsum(w * position)])
        has = last >= first
        lo, hi = np.where(has, first, 0), np.where(has, last + 1, 0)
        length = hi - lo
        sum1 = s1[hi] - s1[lo]
        shifted = (s2[hi] - s2[lo]) - lo * sum1  # position inside the instance, wrapped
        classes = [r.cls for r in self.rows]
        by_parent = np.lexsort((np.arange(n_scopes), self.parent))
        prev = -1
        for s in by_parent.tolist():
            if s == 0:
                continue
            head = self.fold_head[prev] if prev >= 0 else -1
            if (
                prev >= 0
                and self.parent[s] > 0  # top scopes are separate calls (training steps)
                and self.parent[prev] == self.parent[s]
                and classes[s]
                and classes[s] == classes[prev]
                and has[s]
                and first[s] == last[prev] + 1  # nothing ran between them: no cycle
                and length[s] == length[prev]
                and sum1[s] == sum1[prev]
                and shifted[s] == shifted[prev]
            ):
                self.fold_head[s] = head
                self.fold_count[head] += 1
            prev = s
        self.fold_count = np.where(self.fold_head == np.arange(n_scopes), self.fold_count, 1)
        # count holds the run length on each run's head only; members read their head's
        self.run_length = self.fold_count[self.fold_head]

    # ------------------------------------------------------------------ the tree
    def instances(self, path: str) -> list[int]:
        """The scope ids of the instances at ``path``; a KeyError names the known paths."""
        found = self._by_path.get(str(path).strip("/"))
        if found is None:
            known = ", ".join(sorted(self._by_path)[:12])
            raise KeyError(f"no scope {path!r} in this graph; scopes: {known}")
        return found

    def tree(self) -> list[ScopeNode]:
        """The scope instances as nested :class:`ScopeNode` (the root left out)."""
        made: list[ScopeNode | None] = [None] * len(self.rows)
        top: list[ScopeNode] = []
        for s, r in enumerate(self.rows):
            if s == 0 or not self.present[s]:
                continue
            head = int(self.fold_head[s])
            node = ScopeNode(
                scope_id=s,
                path=r.path,
                name=r.name,
                cls=r.cls,
                depth=int(r.depth),
                collapsed=bool(self.collapsed[s]),
                folded=bool(self.folded[head]),
                fold_count=int(self.fold_count[s]),
                fold_head=head,
            )
            made[s] = node
            parent = made[r.parent] if r.parent > 0 else None
            (parent.children if parent is not None else top).append(node)
        return top

    # ------------------------------------------------------------------ changing the state
    def set_depth(self, depth: int) -> None:
        """Collapse every scope deeper than ``depth`` and expand the others; 0 shows each top
        scope as one box. Folds are kept."""
        self.collapsed = self.depth > int(depth)
        self.collapsed[0] = False

    def set_collapsed(self, path: str, collapsed: bool) -> list[int]:
        ids = self.instances(path)
        self.collapsed[ids] = collapsed
        return ids

    def set_folded(self, path: str, folded: bool) -> list[int]:
        """Fold (or unfold) the run that the instances at ``path`` belong to; the heads of
        the runs touched are returned (none when ``path`` repeats nothing). An unfolded run
        shows its repeats as one box each (:meth:`unfold_run`)."""
        heads = sorted({int(self.fold_head[s]) for s in self.instances(path)})
        heads = [h for h in heads if self.fold_count[h] > 1]
        if folded:
            self.folded[heads] = True
        for h in [] if folded else heads:
            self.unfold_run(h)
        return heads

    def unfold_run(self, head: int) -> None:
        """Unfold the run headed by ``head`` into its repeats, each one collapsed: "Block x 6"
        opens into six Block boxes, not into six Blocks' contents at once."""
        self.folded[head] = False
        self.collapsed[self.fold_head == head] = True

    def expand_instances(self, scope_ids: list[int]) -> tuple[bool, list[int]]:
        """Show the contents of each instance of ``scope_ids``: every box above it opens, the
        outermost first (a folded run holding it or an ancestor unfolds, its other repeats
        staying boxes), and it expands. Returns whether anything changed and the heads of the
        runs unfolded."""
        changed, unfolded = False, []
        for s in scope_ids:
            for a in reversed(self.ancestors(s)):
                head = int(self.fold_head[a])
                if self.folded[head] and self.fold_count[head] > 1:
                    self.unfold_run(head)
                    unfolded.append(head)
                    changed = True
                if self.collapsed[a]:
                    self.collapsed[a] = False
                    changed = True
        return changed, unfolded

    def run_name(self, head: int) -> str:
        """The name of the run headed by ``head`` as its folded box shows it: 'Block \u00d7 6'."""
        row = self.rows[int(head)]
        return f"{row.cls or row.name} \N{MULTIPLICATION SIGN} {int(self.fold_count[int(head)])}"

    def expand_all(self) -> None:
        self.collapsed[:] = False
        self.folded[:] = False

    def ancestors(self, scope_id: int) -> list[int]:
        """``scope_id`` and the instances above it, innermost first (the root left out)."""
        out = []
        s = int(scope_id)
        while s > 0:
            out.append(s)
            s = int(self.parent[s])
        return out

    def scope_of(self, node_id: int) -> int:
        """The scope id a trace node belongs to (0 for a leaf; a Parameter: 0)."""
        nid = int(node_id)
        if not 0 <= nid < len(self.local_of_id) or self.local_of_id[nid] < 0:
            raise KeyError(f"no node {node_id} in this graph")
        return int(self.node_scope[self.local_of_id[nid]])

    def reveal(self, node_id: int) -> bool:
        """Expand and unfold every box that hides ``node_id``; True if something changed."""
        nid = int(node_id)
        if not 0 <= nid < len(self.local_of_id) or self.local_of_id[nid] < 0:
            raise KeyError(f"no node {node_id} in this graph")
        local = int(self.local_of_id[nid])
        changed = False
        box = int(self._containers()[local])
        while box >= 0:  # one box per pass, the outermost first: at most the depth of passes
            head = int(self.fold_head[box])
            if self.folded[head]:
                self.unfold_run(head)  # then the repeat that holds the node opens
            else:
                self.collapsed[box] = False
            changed = True
            box = int(self._containers()[local])
        return changed

    def choose_depth(self, limit: int = MAX_FIRST_SCREEN) -> int:
        """The deepest depth whose visible graph has at most ``limit`` nodes (0 if none).
        Opening a box never shows fewer nodes than it hid, so the count grows with the depth:
        a binary search (a file may nest scopes thousands deep)."""
        saved = self.collapsed.copy()
        lo, hi = 0, self.max_depth  # depth lo fits (or is 0); find the deepest that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            self.set_depth(mid)
            if self._count_visible() <= limit:
                lo = mid
            else:
                hi = mid - 1
        self.collapsed = saved
        return lo

    # ------------------------------------------------------------------ the visible graph
    def _boxes(self) -> NDArray[np.int64]:
        """Per scope: the scope id of the box it is drawn in (-1: not in a box)."""
        n_scopes = len(self.rows)
        box = np.full(n_scopes, -1, dtype=np.int64)
        own = np.where(self.collapsed, np.arange(n_scopes), -1)
        heads = self.fold_head
        fold = np.where(self.folded[heads], heads, -1)
        own = np.where(fold >= 0, fold, own)
        for at in self._levels:
            above = box[self.parent[at]]
            box[at] = np.where(above >= 0, above, own[at])
        return box

    def drawn_open(self) -> NDArray[np.bool_]:
        """Per scope: drawn open, its contents shown (each such scope gets a frame in the
        scene): a scope of this graph other than the root, neither collapsed nor in a box."""
        shown = self.present & (self._boxes() < 0)
        shown[0] = False
        return shown

    def frame_owners(self, vis: VisibleGraph) -> NDArray[np.int64]:
        """Per node of ``vis``: the innermost open scope it is drawn inside (0: none). A
        Function belongs to the scope it ran in, a variable to the scope that made it, a box
        to the scope around it; a Parameter to the innermost one that holds every use of it
        shown (a layer's weight in the layer's frame; a weight two layers share, in the frame
        around both), as the layout places it (:mod:`viewer.model.layout.clusters`)."""
        box = self._boxes()
        local = self.local_of_id[np.asarray(vis.node_ids, dtype=np.int64)]
        param = self.is_param[local]
        scope = self.node_scope[local]
        scope = np.where(param, 0, scope)
        scope = np.where(vis.is_module, self.parent[np.maximum(vis.box_scope, 0)], scope)
        # a variable a collapsed scope made and something outside uses: the box's scope's
        inside = box[scope]
        owner = np.where(inside >= 0, self.parent[np.maximum(inside, 0)], scope)
        tree = cluster_tree(self.parent) if param.any() and len(vis.edges) else None
        if tree is not None:  # (None: nested too deep to lay out as frames, see cluster_tree)
            u, v = vis.edges[:, 0], vis.edges[:, 1]
            used = param[u]
            owner = np.where(param, tree.common(u[used], owner[v[used]], vis.n_nodes), owner)
        return owner

    def _containers(self) -> NDArray[np.int64]:
        """Per local node: the scope id of the box hiding it, -1 when visible. A box's own
        Functions carry its id too (they are hidden in it)."""
        box = self._boxes()
        node_box = box[self.node_scope]
        is_var = ~self.is_function
        n = len(self.ids)
        big = np.iinfo(np.int64).max
        lo = np.full(n, big, dtype=np.int64)
        hi = np.full(n, -2, dtype=np.int64)
        use_box = node_box[self.use_fun]
        np.minimum.at(lo, self.use_var, use_box)
        np.maximum.at(hi, self.use_var, use_box)
        used_inside = (lo == hi) & (lo >= 0)
        container = np.where(self.is_function, node_box, -1)
        made_inside = is_var & (node_box >= 0) & used_inside & (lo == node_box)
        container = np.where(made_inside, node_box, container)
        params = self.is_param & used_inside
        return np.where(params, lo, container)

    def _count_visible(self) -> int:
        c = self._containers()
        return int(np.count_nonzero(c < 0)) + len(np.unique(c[c >= 0]))

    def visible(self) -> VisibleGraph:
        """The graph shown for the current state (see the module docstring)."""
        container = self._containers()
        n = len(self.ids)
        shown = container < 0
        boxes = np.unique(container[~shown])
        hidden_local = np.flatnonzero(~shown)
        # a box stands where its first Function is (every box hides at least one)
        rep = np.full(len(boxes), np.iinfo(np.int64).max, dtype=np.int64)
        hidden_fun = hidden_local[self.is_function[hidden_local]]
        slot = np.searchsorted(boxes, container[hidden_fun])
        np.minimum.at(rep, slot, self.ids[hidden_fun])
        plain = np.flatnonzero(shown)
        keys_sort = np.concatenate([self.ids[plain], rep])
        order = np.argsort(keys_sort, kind="stable")
        node_ids = keys_sort[order]
        n_plain = len(plain)
        is_module = order >= n_plain
        box_scope = np.full(len(order), -1, dtype=np.int64)
        box_scope[is_module] = boxes[order[is_module] - n_plain]
        # a folded run's box and its head's own box are different nodes
        n_scopes = len(self.rows)
        heads = self.fold_head[np.maximum(box_scope, 0)]
        run = is_module & self.folded[heads] & (heads == box_scope) & (self.run_length[heads] > 1)
        keys = np.where(is_module, -1 - box_scope - np.where(run, n_scopes, 0), node_ids)
        position = np.empty(len(order), dtype=np.intp)
        position[order] = np.arange(len(order))
        local_index = np.full(n, -1, dtype=np.intp)
        local_index[plain] = position[:n_plain]
        if len(boxes):
            local_index[hidden_local] = position[
                n_plain + np.searchsorted(boxes, container[hidden_local])
            ]
        is_function = np.zeros(len(order), dtype=bool)
        is_function[position[:n_plain]] = self.is_function[plain]
        # edges between what is shown; a box's inner edges go, parallel ones become one. A
        # variable a box made that is also used outside it stays shown, and its use inside
        # the same box is an inner edge too (an RNN's state: made by one step's call, used by
        # it and by the next; else box -> state -> box would be a cycle).
        u, v = local_index[self.edge_src], local_index[self.edge_dst]
        made_by = self._creator_local()[self.edge_src]
        back_in = (made_by >= 0) & (local_index[np.maximum(made_by, 0)] == v)
        keep = (u != v) & ~back_in
        u, v, slots = u[keep], v[keep], self.edge_slots[keep]
        if len(u):
            pair = u.astype(np.int64) * max(len(order), 1) + v
            _, at = np.unique(pair, return_index=True)
            at.sort()
            u, v, slots = u[at], v[at], slots[at]
        edges = np.column_stack([u, v]).astype(np.intp).reshape(-1, 2)
        index_of_id = np.full(len(self.local_of_id), -1, dtype=np.intp)
        index_of_id[self.ids] = local_index
        step_nodes = np.full(len(self.step_function), -1, dtype=np.intp)
        ok = (self.step_function >= 0) & (self.step_function < len(index_of_id))
        step_nodes[ok] = index_of_id[self.step_function[ok]]
        modules = self._module_boxes(np.flatnonzero(is_module), box_scope, container)
        return VisibleGraph(
            node_ids=node_ids,
            keys=keys,
            is_function=is_function,
            is_module=is_module,
            box_scope=box_scope,
            edges=edges,
            edge_slots=slots.astype(np.intp),
            index_of_id=index_of_id,
            modules=modules,
            step_nodes=step_nodes,
            step_backward=self.step_backward,
            model=self,
        )

    def _creator_local(self) -> NDArray[np.int64]:
        """Per local node: the local index of the Function that made it (-1: none)."""
        made = getattr(self, "_creators", None)
        if made is None:
            made = np.full(len(self.ids), -1, dtype=np.int64)
            out = self.is_function[self.edge_src]  # the Function -> output edges
            made[self.edge_dst[out]] = self.edge_src[out]
            self._creators = made
        return made

    def _module_boxes(
        self, indexes: NDArray[np.intp], box_scope: NDArray[np.int64], container: Any
    ) -> dict[int, ModuleBox]:
        params = np.flatnonzero(self.is_param & (container >= 0))
        by_box = container[params]
        order = np.argsort(by_box, kind="stable")
        params, by_box = params[order], by_box[order]
        out: dict[int, ModuleBox] = {}
        for i in indexes.tolist():
            s = int(box_scope[i])
            row = self.rows[s]
            lo, hi = np.searchsorted(by_box, [s, s + 1])
            mine = params[lo:hi]
            count = int(self.run_length[s]) if self.folded[self.fold_head[s]] else 1
            out[i] = ModuleBox(
                index=i,
                scope_id=s,
                path=row.path,
                name=row.name,
                cls=row.cls,
                count=count,
                params=self.ids[mine],
                param_values=int(self.param_size[mine].sum()),
            )
        return out
