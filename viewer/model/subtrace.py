"""A trace restricted to one graph: what the viewer shows of a script that built many.

A training script records every iteration into one trace; the viewer shows one backward root
at a time. :class:`TraceView` answers the same questions as :class:`autodiff.trace.Trace`
(``graph``, ``steps``, ``state_at``...) for a subset of nodes and steps, with the steps
renumbered ``0..k-1``; ``state_at(node, i)`` is the state after the view's step ``i``.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable
from typing import Any

import networkx as nx

from viewer.model.node_states import change_points

__all__ = ["TraceView", "view_for_root"]


class TraceView:
    """The part of ``trace`` made of ``node_ids`` and the steps ``step_indexes`` (global)."""

    def __init__(self, trace: Any, node_ids: Iterable[int], step_indexes: Iterable[int]) -> None:
        self.base = trace
        self._nodes = sorted({int(n) for n in node_ids})
        self._node_set = set(self._nodes)
        self._global = sorted({int(i) for i in step_indexes})
        all_steps = trace.steps
        self._steps = [
            dataclasses.replace(all_steps[g], index=k) for k, g in enumerate(self._global)
        ]
        self._graph: nx.MultiDiGraph | None = None
        self.max_array_size = getattr(trace, "max_array_size", None)

    def __repr__(self) -> str:
        return f"<TraceView {len(self._nodes)} nodes, {len(self._steps)} steps of {self.base!r}>"

    # --- the Trace interface the viewer uses ------------------------------------------
    @property
    def steps(self) -> list[Any]:
        return self._steps

    @property
    def graph(self) -> nx.MultiDiGraph:
        if self._graph is None:
            self._graph = nx.MultiDiGraph(self.base.graph.subgraph(self._nodes))
        return self._graph

    @property
    def variables(self) -> list[int]:
        return [n for n in self.base.variables if n in self._node_set]

    @property
    def functions(self) -> list[int]:
        return [n for n in self.base.functions if n in self._node_set]

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

    def state_at(self, node_id: int, step_index: int) -> Any:
        return self.base.state_at(node_id, self.global_step(step_index))

    def value_at(self, node_id: int, step_index: int) -> Any:
        return self.base.value_at(node_id, self.global_step(step_index))

    def grad_at(self, node_id: int, step_index: int) -> Any:
        return self.base.grad_at(node_id, self.global_step(step_index))

    def change_points(self, node_id: int) -> list[int]:
        points = change_points(self.base, node_id, self.base.steps)
        return sorted({self.local_step(p) for p in points} | {-1})

    def first_nonfinite(self) -> Any | None:
        for step in self._steps:
            if step.nonfinite:
                return step
        return None

    def live(self, node_id: int) -> Any:
        return self.base.live(node_id)

    def freed(self, node_id: int) -> bool:
        freed = getattr(self.base, "freed", None)
        return bool(freed(node_id)) if freed is not None else False

    def audit(self) -> Any:
        return self.base.audit()


def view_for_root(trace: Any, root: int, backward_pass: int = -1) -> TraceView:
    """The graph behind ``root``: its ancestors and the forward steps that built them, plus
    backward pass ``backward_pass`` (and the gradient graph it recorded under
    ``create_graph=True``) when it is >= 0."""
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
