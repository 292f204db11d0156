"""A trace restricted to one graph: what the viewer shows of a script that built many.

A training script records every iteration into one trace; the viewer shows one backward root
at a time. :class:`TraceView` answers the same questions as :class:`autodiff.trace.Trace`
(``graph``, ``steps``, ``state_at``...) for a subset of nodes and steps, with the steps
renumbered ``0..k-1``; ``state_at(node, i)`` is the state after the view's step ``i``.

A view costs what it shows: with an autodiff Trace, :func:`view_for_root` walks the trace's
integer structure (``ancestors``, ``forward_step_of``, ``steps_of_pass``) and the view builds
only its own steps (``Trace.step``), edges (``Trace.edges``) and, when asked for it, graph
(``Trace.subgraph``), never those of the whole run.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

from autodiff.trace._index import GradFate, NodeState

__all__ = ["TraceView", "view_for_root"]


class TraceView:
    """The part of ``trace`` made of ``node_ids`` and the steps ``step_indexes`` (global).

    ``detached``: nodes of the view that are history the program had cut
    (``unchain_backward()``) before the view's graph was built. They are drawn, with no steps
    of their own; a variable of the graph made by one of them enters the graph as a leaf
    (``creator_of`` is -1), and backward stops there."""

    def __init__(
        self,
        trace: Any,
        node_ids: Iterable[int],
        step_indexes: Iterable[int],
        detached: Iterable[int] = (),
    ) -> None:
        self.base = trace
        self._nodes = sorted({int(n) for n in node_ids} | {int(n) for n in detached})
        self._node_set = set(self._nodes)
        self._detached = frozenset(int(n) for n in detached)
        # the number, in the whole run, of the base trace's backward pass 0 (a pass of a long
        # run recorded into a trace of its own: its notes number passes as the run does)
        self.pass_offset = 0
        self._global = sorted({int(i) for i in step_indexes})
        step_of = getattr(trace, "step", None)
        if callable(step_of):  # one Step at a time: the whole run's steps are not built
            picked = [step_of(g) for g in self._global]
        else:
            all_steps = trace.steps
            picked = [all_steps[g] for g in self._global]
        self._steps = [dataclasses.replace(step, index=k) for k, step in enumerate(picked)]
        self._graph: nx.MultiDiGraph | None = None
        self._kinds: tuple[list[int], list[int]] | None = None  # (variables, functions)
        self.max_array_size = getattr(trace, "max_array_size", None)

    @property
    def values_kept(self) -> bool:
        """Whether the recording keeps forward values (its base's answer)."""
        return bool(self.base.values_kept)

    def __repr__(self) -> str:
        return f"<TraceView {len(self._nodes)} nodes, {len(self._steps)} steps of {self.base!r}>"

    # --- the Trace interface the viewer uses ------------------------------------------
    @property
    def steps(self) -> list[Any]:
        return self._steps

    @property
    def graph(self) -> nx.MultiDiGraph:
        if self._graph is None:
            import networkx as nx

            subgraph = getattr(self.base, "subgraph", None)
            if callable(subgraph) and not isinstance(self.base, nx.Graph):
                self._graph = subgraph(self._nodes)  # only these nodes' attributes are made
            else:
                self._graph = nx.MultiDiGraph(self.base.graph.subgraph(self._nodes))
        return self._graph

    def edges(self) -> tuple[Any, Any]:
        """The view's edges as integer arrays (see :meth:`autodiff.trace.Trace.edges`)."""
        return self.base.edges(self._nodes)

    @property
    def variables(self) -> list[int]:
        return self._split_kinds()[0]

    @property
    def functions(self) -> list[int]:
        return self._split_kinds()[1]

    def _split_kinds(self) -> tuple[list[int], list[int]]:
        """The view's (variables, functions), looked up in the base's variables without
        building any graph: O(k log n) for k nodes of a run of n."""
        if self._kinds is None:
            # A trace lists its variables in creation order, which is node id order.
            base_variables = self.base.variables
            end = len(base_variables)
            variables: list[int] = []
            functions: list[int] = []
            for n in self._nodes:
                k = bisect.bisect_left(base_variables, n)
                (variables if k < end and base_variables[k] == n else functions).append(n)
            self._kinds = (variables, functions)
        return self._kinds

    def scopes(self) -> list[Any]:
        """The base trace's scope instances (scope ids are the base's)."""
        return self.base.scopes()

    def node_scopes(self) -> Any:
        """The base trace's scope id per node, indexed by the base's node ids."""
        return self.base.node_scopes()

    def cut_at(self, node_id: int) -> int | None:
        """The base trace's cut of ``node_id`` (see ``Trace.cut_at``)."""
        return self.base.cut_at(node_id)

    def cuts(self) -> dict[int, int]:
        """The base trace's cuts of the view's nodes."""
        return {n: k for n, k in self.base.cuts().items() if n in self._node_set}

    def detached(self) -> frozenset[int]:
        """The view's nodes that are cut-off history: drawn, never stepped through."""
        return self._detached

    def parameters(self) -> frozenset[int]:
        """The view's nodes that are Parameters."""
        return self.base.parameters() & self._node_set

    def shapes(self, node_ids: Any) -> list[Any]:
        return self.base.shapes(node_ids)

    def names(self, node_ids: Any) -> list[Any]:
        return self.base.names(node_ids)

    def ops(self, node_ids: Any) -> list[Any]:
        return self.base.ops(node_ids)

    def creator_of(self, node_id: int) -> int:
        """The function node of the view that produced ``node_id``; -1 for a leaf, a constant
        or a variable whose creator is outside the view (as ``in_degree`` in its graph), or
        in its detached history (the variable enters this graph as a leaf: backward stops)."""
        creator = self.base.creator_of(node_id)
        if creator not in self._node_set:
            return -1
        if creator in self._detached and node_id not in self._detached:
            return -1
        return creator

    @property
    def backward_roots(self) -> list[int]:
        passes = {s.backward_pass for s in self._steps if s.phase == "backward"}
        roots = self.base.backward_roots
        return [roots[p] for p in sorted(passes) if 0 <= p < len(roots)]

    def global_step(self, step_index: int) -> int:
        """The base trace's step index for the view's ``step_index`` (-1 stays before all)."""
        if step_index < 0 or not self._global:
            return (self._global[0] - 1) if self._global else -1
        return self._global[min(step_index, len(self._global) - 1)]

    def local_step(self, global_index: int) -> int:
        """The view's step at or before the base trace's ``global_index`` (-1 if none)."""
        return bisect.bisect_right(self._global, global_index) - 1

    def node(self, node_id: int) -> dict[str, Any]:
        return self.base.node(node_id)

    def position(self, step_index: int) -> int:
        """The base trace's position (see ``Trace.state_at_position``) that the view's step
        ``step_index`` shows: right after that base step; for -1, right before the view's
        first step, so what the program changed between iterations (a leaf's new value, an
        emptied gradient) shows from the start of the view, never in the view before."""
        steps = self._global
        if not steps:
            return -1
        if step_index < 0:
            return 2 * steps[0]
        return 2 * steps[min(step_index, len(steps) - 1)] + 1

    def state_at(self, node_id: int, step_index: int) -> Any:
        return self.base.state_at_position(node_id, self.position(step_index))

    def value_at(self, node_id: int, step_index: int) -> Any:
        return self.base.value_at_position(node_id, self.position(step_index))

    def grad_at(self, node_id: int, step_index: int) -> Any:
        return self.base.grad_at_position(node_id, self.position(step_index))

    def grad_origin(self, node_id: int, step_index: int) -> int | None:
        return self.base.grad_origin_at_position(node_id, self.position(step_index))

    def grad_fate(self, node_id: int, step_index: int) -> GradFate:
        return self.base.grad_fate_at_position(node_id, self.position(step_index))

    def change_points(self, node_id: int) -> list[int]:
        return [point for point, _ in self.timeline(node_id)]

    def timeline(self, node_id: int) -> list[tuple[int, Any]]:
        """(view step, state) at each view step where the node's state, value or gradient
        may change: a change at base position p shows from the first view step whose
        position is at or after p (changes after the view's last step never show)."""
        base = self.base.position_timeline(node_id)
        points = [p for p, _ in base]
        steps = self._global
        first = self.position(-1)
        local = {-1}
        for p in points:
            if p <= first:
                continue
            k = bisect.bisect_left(steps, p // 2)  # the first view step g with 2g+1 >= p
            if k < len(steps):
                local.add(k)
        result = []
        for j in sorted(local):
            i = bisect.bisect_right(points, self.position(j)) - 1
            result.append((j, base[i][1] if i >= 0 else NodeState.NOT_COMPUTED))
        return result

    def stale_inputs(self, step_index: int) -> tuple[int, ...] | None:
        """The base trace's answer for the view's step (see ``Trace.stale_inputs``)."""
        if not 0 <= step_index < len(self._global):
            raise IndexError(f"step index {step_index} out of range ({len(self._global)} steps)")
        return self.base.stale_inputs(self._global[step_index])

    def first_nonfinite(self) -> Any | None:
        for step in self._steps:
            if step.nonfinite:
                return step
        return None

    def live(self, node_id: int) -> Any:
        return self.base.live(node_id)

    def function_params(self, node_id: int) -> dict[str, Any]:
        return self.base.function_params(node_id)

    def line_of(self, node_id: int) -> int | None:
        return self.base.line_of(node_id)

    def alive(self) -> list[int]:
        nodes = self._node_set
        return [nid for nid in self.base.alive() if nid in nodes]

    def freed(self, node_id: int) -> bool:
        return self.base.freed(node_id)

    def audit(self) -> Any:
        return self.base.audit()

    # DOT and GraphML read only ``graph``, which a view restricts to its own graph.
    def to_dot(self, step: int | None = None) -> str:
        from autodiff.trace.formats import json_io

        return json_io.to_dot(self, step)

    def to_graphml(self, path: str | os.PathLike[str]) -> None:
        from autodiff.trace.formats import json_io

        json_io.to_graphml(self, path)


# The detached history drawn, nearest first: as many nodes as the graph itself has, but at
# least DETACHED_MIN and at most DETACHED_MAX (context, not a second graph to lay out).
DETACHED_MIN = 64
DETACHED_MAX = 2000


def view_for_root(
    trace: Any, root: int, backward_pass: int = -1, detached_limit: int | None = None
) -> TraceView:
    """The graph behind ``root``: its ancestors and the forward steps that built them, plus
    backward pass ``backward_pass`` (and the gradient graph it recorded under
    ``create_graph=True``) when it is >= 0.

    The graph is what the engine held when ``root`` was made: a variable whose history the
    program had cut before then (``unchain_backward()``) is a leaf of it. That history, back
    to the cut before it, comes with the view as ``detached`` nodes (at most
    ``detached_limit``, the nearest first; by default as many as the graph has nodes, within
    DETACHED_MIN..DETACHED_MAX): drawn greyed, with none of its steps."""
    if all(
        callable(getattr(trace, name, None))
        for name in ("ancestors", "forward_step_of", "steps_of_pass", "step")
    ):
        # An autodiff Trace: integer walks over its tables, whatever the length of the run.
        nodes = trace.ancestors(root, stop_at_cuts=True) | {root}
        picked = {k for k in (trace.forward_step_of(n) for n in nodes) if k >= 0}
        if backward_pass >= 0:
            for k in trace.steps_of_pass(backward_pass):
                step = trace.step(k)
                picked.add(k)
                nodes.add(step.function)
                nodes.update(step.inputs)
                nodes.update(step.outputs)
        if detached_limit is None:
            detached_limit = max(DETACHED_MIN, min(len(nodes), DETACHED_MAX))
        return TraceView(trace, nodes, picked, _detached(trace, root, nodes, detached_limit))
    import networkx as nx

    graph = trace.graph
    nodes = set(nx.ancestors(graph, root)) | {root}
    steps = []
    for step in trace.steps:
        if step.phase == "forward" and step.function in nodes:
            steps.append(step.index)
        elif backward_pass >= 0 and (
            (step.phase == "backward" and step.backward_pass == backward_pass)
            or (step.phase == "forward" and getattr(step, "during_backward", -1) == backward_pass)
        ):
            steps.append(step.index)
            nodes.add(step.function)
            nodes.update(step.inputs)
            nodes.update(step.outputs)
    return TraceView(trace, nodes, steps)


def _detached(trace: Any, root: int, nodes: set[int], limit: int) -> set[int]:
    """The history behind the graph's cut leaves (variables of ``nodes`` whose history was
    cut before ``root`` was made), each back to the cut before it: at most ``limit`` nodes
    not in ``nodes``, the nearest to the cuts first."""
    cuts = trace.cuts()
    if not cuts or limit <= 0:
        return set()
    creator = trace.creator_of(root)
    made_at = trace.forward_step_of(creator if creator >= 0 else root)
    leaves = sorted(
        n for n in nodes if cuts.get(n, made_at + 1) <= made_at and trace.creator_of(n) >= 0
    )
    found: set[int] = set()
    work = 4 * (limit + len(nodes))  # nodes walked in all: many cut leaves share a history
    for leaf in reversed(leaves):  # the latest first: the nearest history
        left = limit - len(found)
        if left <= 0 or work <= 0:
            break
        walked = trace.ancestors(leaf, stop_at_cuts=True, limit=left + len(nodes))
        work -= len(walked) + 1
        history = walked - nodes
        found.update(sorted(history)[-left:] if len(history) > left else history)
    return found
