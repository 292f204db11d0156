"""Layouts in trace terms: :func:`compute_layout` runs :mod:`viewer.model.layout` on a trace's
graph and keeps what the scene needs, one polyline per argument slot."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import NDArray

__all__ = ["GraphLayout", "LayoutCancelled", "compute_layout", "layout_from_positions"]

from autodiff.trace import TraceReader
from viewer.model import layout as layout_module
from viewer.model.layout import LayoutCancelled
from viewer.model.scene_text import format_snapshot


@dataclass
class GraphLayout:
    """A layout of a trace's graph: node ``i`` is trace node ``node_ids[i]``; edge ``e`` goes
    from node index ``edges[e, 0]`` to ``edges[e, 1]`` (argument slot / output index
    ``edge_slots[e]``) along the polyline ``edge_points[edge_offsets[e]:edge_offsets[e+1]]``.

    y grows with the generation (inputs on top, outputs below when the view inverts y).
    """

    node_ids: NDArray[np.int64]
    positions: NDArray[np.float64]
    edges: NDArray[np.intp]
    edge_slots: NDArray[np.intp]
    edge_points: NDArray[np.float64]
    edge_offsets: NDArray[np.intp]
    layers: NDArray[np.intp] | None = None
    # the width of the variables' boxes, in layout units (one column is 1.0): wide enough for
    # the longest label line of the graph, so labels are not cut (see variable_box_width)
    variable_width: float = 1.0

    @property
    def n_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def n_edges(self) -> int:
        return len(self.edges)


def layout_from_positions(
    trace: TraceReader,
    node_ids: Sequence[int],
    positions: NDArray[np.float64],
    edge_paths: Callable[[int, int, int], NDArray[np.float64]] | None = None,
) -> GraphLayout:
    """A :class:`GraphLayout` from node positions: one straight edge per argument slot
    unless ``edge_paths(u_index, v_index, edge_number)`` gives a polyline."""
    graph = trace.graph
    node_ids = np.asarray(node_ids, dtype=np.int64)
    index_of = {int(n): i for i, n in enumerate(node_ids)}
    edges, slots, chunks = [], [], []
    for u, v, data in graph.edges(data=True):
        if u not in index_of or v not in index_of:
            continue
        iu, iv = index_of[u], index_of[v]
        e = len(edges)
        edges.append((iu, iv))
        slots.append(int(data.get("slot", 0)))
        path = edge_paths(iu, iv, e) if edge_paths is not None else None
        if path is None:
            path = np.vstack([positions[iu], positions[iv]])
        chunks.append(np.asarray(path, dtype=np.float64).reshape(-1, 2))
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in chunks], dtype=np.intp)])
    return GraphLayout(
        node_ids=node_ids,
        positions=np.asarray(positions, dtype=np.float64).reshape(-1, 2),
        edges=np.asarray(edges, dtype=np.intp).reshape(-1, 2),
        edge_slots=np.asarray(slots, dtype=np.intp),
        edge_points=np.concatenate(chunks) if chunks else np.zeros((0, 2)),
        edge_offsets=offsets.astype(np.intp),
    )


def compute_layout(
    trace: TraceReader,
    progress: Callable[[float], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    by_generation: bool = False,
) -> GraphLayout:
    """Lay out the trace's graph with :func:`viewer.model.layout.layout_graph`.

    Layers minimise the total edge span (a parameter sits just above its consumer); with
    ``by_generation`` every node's layer is fixed by its DeZero generation instead
    (``2 * generation + is_function``), the order backward visits them.
    Pure: touches no model object, so the Qt side may run it in a worker thread.
    ``progress(fraction)`` is called now and then; when ``should_cancel()`` returns True the
    layout stops by raising ``LayoutCancelled``.
    """
    graph = trace.graph
    options: dict[str, Any] = {"progress": progress, "should_cancel": should_cancel}
    if by_generation:
        options["layers"] = _generation_layers(graph)
    width = variable_box_width(graph)
    if width > 1.0:
        options["node_width"] = np.array(
            [width if graph.nodes[n]["kind"] == "variable" else 1.0 for n in graph.nodes]
        )
    node_keys, result = layout_module.layout_graph(graph, **options)
    laid = _from_layout_module(trace, node_keys, result)
    laid.variable_width = width
    return laid


CHARACTERS_PER_UNIT = 14  # label characters one layout unit holds where full labels show
MAX_VARIABLE_WIDTH = 2.2
_WIDTH_SAMPLE = 5000  # variables looked at (a big graph's labels show only zoomed in)


def variable_box_width(graph: Any) -> float:
    """The variables' box width (layout units, 1.0 to MAX_VARIABLE_WIDTH) that holds the
    longest label line of the graph (name, shape, value, gradient: their last known
    snapshots, plus a margin for the other steps' digits); a name longer than the widest box
    is cut in the box and whole in the tooltip and the inspector."""
    longest = 0
    seen = 0
    for _, a in graph.nodes(data=True):
        if a.get("kind") != "variable":
            continue
        seen += 1
        if seen > _WIDTH_SAMPLE:
            break
        shape = a.get("shape")
        lines = [str(a.get("name") or ""), "x".join(str(d) for d in shape) if shape else ""]
        if a.get("value") is not None:
            lines.append(format_snapshot(a["value"]))
        if a.get("grad") is not None:
            lines.append("∇ " + format_snapshot(a["grad"]))
        longest = max(longest, *(len(line) for line in lines))
    width = (longest + 2) / CHARACTERS_PER_UNIT
    return float(min(max(width, 1.0), MAX_VARIABLE_WIDTH))


def _generation_layers(graph: Any) -> NDArray[np.int64]:
    """``2 * generation + is_function`` per node (in ``graph.nodes`` order), made to grow
    along every edge: where a recorded generation does not grow (a leaf whose data was
    replaced, a loaded trace), the node goes one below its lowest predecessor."""
    nodes = list(graph.nodes)
    layers = {
        n: 2 * int(graph.nodes[n].get("generation") or 0)
        + (graph.nodes[n].get("kind") == "function")
        for n in nodes
    }
    for n in nx.topological_sort(graph):
        for p in graph.predecessors(n):
            if layers[p] >= layers[n]:
                layers[n] = layers[p] + 1
    return np.array([layers[n] for n in nodes], dtype=np.int64)


def _from_layout_module(trace: TraceReader, node_keys: Sequence[Any], result: Any) -> GraphLayout:
    positions = np.asarray(result.positions, dtype=np.float64).reshape(-1, 2)
    paths = getattr(result, "edge_paths", None)
    graph = trace.graph
    n_graph_edges = graph.number_of_edges()
    by_edge = None
    if isinstance(paths, list | tuple) and len(paths) == n_graph_edges:
        by_edge = paths
    laid = layout_from_positions(
        trace,
        [int(k) for k in node_keys],
        positions,
        (lambda u, v, e: by_edge[e]) if by_edge is not None else None,
    )
    layers = getattr(result, "layers", None)
    if layers is not None:
        laid.layers = np.asarray(layers, dtype=np.intp)
    return laid
