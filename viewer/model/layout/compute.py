"""Layouts in trace terms: :func:`compute_layout` runs :mod:`viewer.model.layout.layered` on a
trace's
nodes and edges and keeps what the scene needs, one polyline per argument slot.

The graph is read through the trace's reading interface (``variables``, ``functions``,
``edges()`` as integer arrays, ``node()``), so laying a graph out never builds its networkx
graph (``trace.graph``); nodes and edges keep the order they have there.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["GraphLayout", "LayoutCancelled", "compute_layout", "layout_from_positions"]

from autodiff.trace import TraceReader
from viewer.model.layout import layered as layout_module
from viewer.model.layout.progress import LayoutCancelled
from viewer.model.scene.text import format_snapshot


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
    # the width of module boxes (a graph with scopes, see viewer.model.scopes.relayout)
    module_width: float = 1.8
    # the width of the Functions' columns (their boxes are 0.1 narrower): wide enough for the
    # longest op name of the graph where one line of label shows (see function_box_width)
    function_width: float = 1.0

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
    node_ids = np.asarray(node_ids, dtype=np.int64).reshape(-1)
    is_function = np.isin(node_ids, np.asarray(trace.functions, dtype=np.int64))
    edges, slots = _edges_between(trace, node_ids, is_function)
    positions = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
    chunks = []
    for e, (iu, iv) in enumerate(edges.tolist()):
        path = edge_paths(iu, iv, e) if edge_paths is not None else None
        if path is None:
            path = np.vstack([positions[iu], positions[iv]])
        chunks.append(np.asarray(path, dtype=np.float64).reshape(-1, 2))
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in chunks], dtype=np.intp)])
    return GraphLayout(
        node_ids=node_ids,
        positions=positions,
        edges=edges,
        edge_slots=slots,
        edge_points=np.concatenate(chunks) if chunks else np.zeros((0, 2)),
        edge_offsets=offsets.astype(np.intp),
    )


def compute_layout(
    trace: TraceReader,
    progress: Callable[[float], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    by_generation: bool = False,
) -> GraphLayout:
    """Lay out the trace's graph with :func:`viewer.model.layout.layered.layered_layout`.

    Layers minimise the total edge span (a parameter sits just above its consumer); with
    ``by_generation`` every node's layer is fixed by its DeZero generation instead
    (``2 * generation + is_function``), the order backward visits them.
    Pure: touches no model object, so the Qt side may run it in a worker thread.
    ``progress(fraction)`` is called now and then; when ``should_cancel()`` returns True the
    layout stops by raising ``LayoutCancelled``.
    """
    node_ids, is_function = _nodes_of(trace)
    edges, slots = _edges_between(trace, node_ids, is_function)
    options: dict[str, Any] = {"progress": progress, "should_cancel": should_cancel}
    if by_generation:
        options["layers"] = _generation_layers(trace, node_ids, is_function, edges)
    width = variable_box_width(trace.node(int(n)) for n in node_ids[~is_function][:WIDTH_SAMPLE])
    function_width = function_box_width(trace, node_ids[is_function])
    if width > 1.0 or function_width > 1.0:
        options["node_width"] = np.where(is_function, function_width, width)
    result = layout_module.layered_layout(len(node_ids), edges, **options)
    has_edges = len(edges) > 0
    return GraphLayout(
        node_ids=node_ids,
        positions=np.asarray(result.positions, dtype=np.float64).reshape(-1, 2),
        edges=edges,
        edge_slots=slots,
        edge_points=result.edge_points if has_edges else np.zeros((0, 2)),
        edge_offsets=np.asarray(result.edge_offsets if has_edges else [0], dtype=np.intp),
        layers=np.asarray(result.layers, dtype=np.intp),
        variable_width=width,
        function_width=function_width,
    )


# Layout units an op name's character takes where a Function's label is its one line: its
# font follows the boxes' height (LabelLayer.font_pixel_size), the same whatever the zoom.
# Six characters fill the 0.9 box of a 1.0 column (Linear read whole, Pooling did not).
OP_CHARACTER_WIDTH = 0.15
MAX_FUNCTION_WIDTH = 3.0  # SoftmaxCrossEntropy, 19 characters, reads whole


def function_box_width(trace: TraceReader, function_ids: Any) -> float:
    """The Functions' column width (layout units, 1.0 to MAX_FUNCTION_WIDTH) that holds the
    graph's longest op name: ``Conv2d`` and ``SoftmaxCrossEntropy`` were cut to ``Con…`` and
    ``Soft…`` in boxes of 0.9. Ops are read in bulk (``trace.ops``)."""
    ids = np.asarray(function_ids, dtype=np.int64).reshape(-1)
    if len(ids) == 0:
        return 1.0
    ops = trace.ops(ids)
    longest = max((len(str(op)) for op in set(ops) if op), default=0)
    width = round(longest * OP_CHARACTER_WIDTH + 0.1, 6)  # + the column's gap to its box
    return float(min(max(width, 1.0), MAX_FUNCTION_WIDTH))


CHARACTERS_PER_UNIT = 14  # label characters one layout unit holds where full labels show
MAX_VARIABLE_WIDTH = 2.2
WIDTH_SAMPLE = 5000  # variables looked at (a big graph's labels show only zoomed in)


def variable_box_width(variables: Iterable[Mapping[str, Any]]) -> float:
    """The variables' box width (layout units, 1.0 to MAX_VARIABLE_WIDTH) that holds the
    longest label line of the variables (``node()`` attributes; the first WIDTH_SAMPLE are
    read): name, shape, value, gradient (their last known snapshots), plus a margin for the
    other steps' digits. A name longer than the widest box is cut in the box and whole in the
    tooltip and the inspector."""
    longest = 0
    for a in itertools.islice(variables, WIDTH_SAMPLE):
        shape = a.get("shape")
        lines = [str(a.get("name") or ""), "x".join(str(d) for d in shape) if shape else ""]
        if a.get("value") is not None:
            lines.append(format_snapshot(a["value"]))
        if a.get("grad") is not None:
            lines.append("∇ " + format_snapshot(a["grad"]))
        longest = max(longest, *(len(line) for line in lines))
    width = (longest + 2) / CHARACTERS_PER_UNIT
    return float(min(max(width, 1.0), MAX_VARIABLE_WIDTH))


def _nodes_of(trace: TraceReader) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """The trace's node ids in id order (the order of ``trace.graph.nodes``) and which of
    them are functions."""
    variables, functions = trace.variables, trace.functions
    n = len(variables) + len(functions)
    ids = np.fromiter(itertools.chain(variables, functions), dtype=np.int64, count=n)
    order = np.argsort(ids, kind="stable")
    return ids[order], (order >= len(variables))


def _edges_between(
    trace: TraceReader, node_ids: NDArray[np.int64], is_function: NDArray[np.bool_]
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The trace's edges between ``node_ids`` (``is_function`` says which are functions):
    (E, 2) indexes into ``node_ids`` and the (E,) argument slots, in the order of
    ``trace.graph.edges()``: by source id; from a variable, by consumer id; from a function,
    by output slot; parallel edges (``x + x``) by slot."""
    pairs, slots = trace.edges()
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    slots = np.asarray(slots, dtype=np.intp).reshape(-1)
    if len(node_ids) == 0 or len(pairs) == 0:
        return np.zeros((0, 2), np.intp), np.zeros(0, np.intp)
    sorter = np.argsort(node_ids, kind="stable")
    ordered = node_ids[sorter]
    at = np.minimum(np.searchsorted(ordered, pairs), len(ordered) - 1)
    shown = (ordered[at] == pairs).all(axis=1)
    pairs, slots, index = pairs[shown], slots[shown], sorter[at[shown]]
    then = np.where(is_function[index[:, 0]], slots, pairs[:, 1])
    order = np.lexsort((slots, then, pairs[:, 0]))
    return index[order].astype(np.intp, copy=False), slots[order]


def _generation_layers(
    trace: TraceReader,
    node_ids: NDArray[np.int64],
    is_function: NDArray[np.bool_],
    edges: NDArray[np.intp],
) -> NDArray[np.int64]:
    """``2 * generation + is_function`` per node, made to grow along every edge: where a
    recorded generation does not grow (a leaf whose data was replaced, a loaded trace), the
    node goes one below its lowest predecessor."""
    generations = [int(trace.node(int(n)).get("generation") or 0) for n in node_ids]
    start = 2 * np.asarray(generations, dtype=np.int64).reshape(-1) + is_function
    return layout_module.layers_at_least(len(node_ids), edges, start)
