"""What the graph view draws, as numpy arrays: one :class:`Scene` per graph, one :class:`Frame`
per playback step.

The view renders a scene's :attr:`Scene.geometry` once (positions, node kinds, edge polylines)
and a :class:`Frame` per step (state code, fill colour and label per node, the current Function
and its edges). Node *indexes* (0..n-1, rows of the arrays) are what the view deals in;
:attr:`Scene.node_ids` maps them to the trace's node ids.

States change only at a few steps per node, so the scene collects each node's change points
once and a frame is a vectorised lookup: a redraw costs O(n) numpy, not O(n) trace queries.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from autodiff.trace import NodeState

try:
    from viewer.model.layout import LayoutCancelled
except ImportError:  # the layout module is not there yet

    class LayoutCancelled(Exception):  # type: ignore[no-redef]
        """The layout was cancelled through ``should_cancel``."""


__all__ = [
    "DARK",
    "LIGHT",
    "PALETTES",
    "STATE_NAMES",
    "Frame",
    "GraphLayout",
    "LayoutCancelled",
    "Overlay",
    "Palette",
    "Scene",
    "SceneGeometry",
    "compute_layout",
    "format_snapshot",
    "layout_from_positions",
    "state_code",
]

STATE_NAMES: tuple[str, ...] = tuple(s.value for s in NodeState)
_CODE = {s: i for i, s in enumerate(NodeState)}
_FREED = _CODE[NodeState.FREED]

VARIABLE_SIZE = (1.0, 0.45)  # width, height in layout units (one layout column is 1.0 wide)
FUNCTION_SIZE = (0.9, 0.4)


def state_code(state: NodeState | str) -> int:
    """The code of a NodeState (or its value string) in :data:`STATE_NAMES`."""
    if isinstance(state, str):
        return STATE_NAMES.index(state)
    return _CODE[state]


# =============================================================================
# Palettes (RGBA uint8 tables indexed by state code)
# =============================================================================
def _rgba(hex_colour: str, alpha: int = 255) -> tuple[int, int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16), alpha


@dataclass(frozen=True)
class Palette:
    """Colours of the graph. ``variable_fill`` / ``function_fill``: (n_states, 4) uint8,
    row ``state_code(state)``; every state has a visibly different fill."""

    name: str
    background: tuple[int, int, int, int]
    text: tuple[int, int, int, int]
    edge: tuple[int, int, int, int]
    edge_active: tuple[int, int, int, int]
    current: tuple[int, int, int, int]
    selection: tuple[int, int, int, int]
    error: tuple[int, int, int, int]
    variable_fill: NDArray[np.uint8]
    function_fill: NDArray[np.uint8]


def _table(colours: Mapping[str, str]) -> NDArray[np.uint8]:
    return np.array([_rgba(colours[name]) for name in STATE_NAMES], dtype=np.uint8)


LIGHT = Palette(
    name="light",
    background=_rgba("#fbfbfc"),
    text=_rgba("#1d1f23"),
    edge=_rgba("#8d939e"),
    edge_active=_rgba("#e8590c"),
    current=_rgba("#e8590c"),
    selection=_rgba("#2f6fdb"),
    error=_rgba("#c92a2a"),
    variable_fill=_table(
        {
            "not_computed": "#fdf3e3",
            "value": "#ffc46b",
            "grad": "#ff8f3d",
            "grad_cleared": "#e8d2b0",
            "freed": "#dddddd",
            "constant": "#ece6cf",
        }
    ),
    function_fill=_table(
        {
            "not_computed": "#e9f4f8",
            "value": "#add8e6",
            "grad": "#74b3d9",
            "grad_cleared": "#9cc8d8",
            "freed": "#d4d4d4",
            "constant": "#d9e4e8",
        }
    ),
)

DARK = Palette(
    name="dark",
    background=_rgba("#17191c"),
    text=_rgba("#e4e6eb"),
    edge=_rgba("#7b818c"),
    edge_active=_rgba("#ff922b"),
    current=_rgba("#ff922b"),
    selection=_rgba("#74a8ff"),
    error=_rgba("#ff6b6b"),
    variable_fill=_table(
        {
            "not_computed": "#3a332a",
            "value": "#e0a04a",
            "grad": "#f07f2e",
            "grad_cleared": "#6b5a42",
            "freed": "#44474d",
            "constant": "#5e5946",
        }
    ),
    function_fill=_table(
        {
            "not_computed": "#26343a",
            "value": "#6fa8bf",
            "grad": "#4f93c4",
            "grad_cleared": "#3d6d80",
            "freed": "#505358",
            "constant": "#46545a",
        }
    ),
)

PALETTES: dict[str, Palette] = {"light": LIGHT, "dark": DARK}


# =============================================================================
# Layout in trace terms
# =============================================================================
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

    @property
    def n_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def n_edges(self) -> int:
        return len(self.edges)


@dataclass(frozen=True)
class Overlay:
    """A mark the view draws on a node besides its state: a leak badge, a NaN flag, a
    gradient-check error colour. ``kind`` groups overlays ('leak', 'nonfinite', 'gradcheck')."""

    kind: str
    badge: str
    color: tuple[int, int, int, int]
    tooltip: str = ""


@dataclass
class SceneGeometry:
    """Where things are, in layout units; fixed for a graph (the view renders it once)."""

    positions: NDArray[np.float64]
    is_function: NDArray[np.bool_]
    edge_points: NDArray[np.float64]
    edge_offsets: NDArray[np.intp]
    arrow_points: NDArray[np.float64]  # three points (a closed triangle) per edge
    variable_size: tuple[float, float] = VARIABLE_SIZE
    function_size: tuple[float, float] = FUNCTION_SIZE

    @property
    def n_nodes(self) -> int:
        return len(self.positions)

    @property
    def n_edges(self) -> int:
        return max(0, len(self.edge_offsets) - 1)

    @property
    def half_sizes(self) -> NDArray[np.float64]:
        """(n, 2): half width and half height of each node's box."""
        var = np.asarray(self.variable_size) / 2
        fun = np.asarray(self.function_size) / 2
        return np.where(self.is_function[:, None], fun, var)

    def bounds(self) -> tuple[float, float, float, float]:
        """(x_min, y_min, x_max, y_max) around every node box; for fit-to-view."""
        if self.n_nodes == 0:
            return (-1.0, -1.0, 1.0, 1.0)
        half = self.half_sizes
        lo = (self.positions - half).min(axis=0)
        hi = (self.positions + half).max(axis=0)
        return (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1]))


@dataclass
class Frame:
    """What one playback step shows (all arrays are per node index or per edge index)."""

    step: int
    state_codes: NDArray[np.int8]  # index into state_names
    fill: NDArray[np.uint8]  # (n, 4) RGBA for the scene's palette
    labels: list[str]  # per node, lines separated by "\n"
    current_function: int  # node index of the Function of this step, -1 before any step
    current_nodes: NDArray[np.intp]  # that Function and the variables the step touched
    active_edges: NDArray[np.intp]  # the edges into and out of the current Function
    nonfinite: NDArray[np.bool_]  # nodes whose value or gradient so far holds NaN/Inf
    accumulations: dict[int, str] = field(default_factory=dict)  # node index -> "g = a + b = c"
    phase: str | None = None
    state_names: tuple[str, ...] = STATE_NAMES

    @property
    def n_nodes(self) -> int:
        return len(self.state_codes)


# =============================================================================
# The scene
# =============================================================================
class Scene:
    """Arrays for the graph view of one trace with one layout."""

    def __init__(self, trace: Any, layout: GraphLayout, palette: str | Palette = "light") -> None:
        self.trace = trace
        self.layout = layout
        self.palette = palette if isinstance(palette, Palette) else PALETTES[palette]
        self.node_ids = np.asarray(layout.node_ids, dtype=np.int64)
        self._index_of = {int(nid): i for i, nid in enumerate(self.node_ids)}
        n = len(self.node_ids)
        graph_nodes = trace.graph.nodes
        attrs = [graph_nodes[int(nid)] for nid in self.node_ids]
        self._attrs = attrs
        self.kinds: tuple[str, ...] = tuple(a["kind"] for a in attrs)
        is_function = np.array([k == "function" for k in self.kinds], dtype=bool)
        self.names: tuple[str, ...] = tuple(_short_name(a) for a in attrs)
        self.shapes: tuple[tuple[int, ...] | None, ...] = tuple(a["shape"] for a in attrs)
        self.edges = np.asarray(layout.edges, dtype=np.intp).reshape(-1, 2)
        self.edge_slots = np.asarray(layout.edge_slots, dtype=np.intp)
        points, offsets = _separate_parallel_edges(
            self.edges, np.asarray(layout.edge_points, float), np.asarray(layout.edge_offsets)
        )
        self.geometry = SceneGeometry(
            positions=np.asarray(layout.positions, dtype=np.float64).reshape(n, 2),
            is_function=is_function,
            edge_points=points,
            edge_offsets=offsets,
            arrow_points=np.zeros((0, 2)),
        )
        self.geometry.arrow_points = _arrow_heads(self.geometry, self.edges)
        self.overlays: dict[int, tuple[Overlay, ...]] = {}
        self._edges_of: list[list[int]] = [[] for _ in range(n)]
        for e, (u, v) in enumerate(self.edges):
            self._edges_of[u].append(e)
            self._edges_of[v].append(e)
        self._steps = trace.steps
        self._build_events()
        self._labels: dict[int, str] = {}
        self._label_cache: tuple[NDArray[np.intp], list[str]] | None = None
        self._last_frame: Frame | None = None
        first = trace.first_nonfinite() if hasattr(trace, "first_nonfinite") else None
        if first is not None and first.function in self._index_of:
            phase = "forward output" if first.phase == "forward" else "backward gradient"
            self.set_overlay(
                first.function,
                Overlay("nonfinite", "NaN", self.palette.error, f"first non-finite {phase}"),
            )

    # --- identity ---------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def n_edges(self) -> int:
        return len(self.edges)

    @property
    def n_steps(self) -> int:
        return len(self._steps)

    def index_of(self, node_id: int) -> int:
        """Node index of a trace node id; -1 if the scene does not show it."""
        return self._index_of.get(int(node_id), -1)

    def node_id(self, index: int) -> int | None:
        return int(self.node_ids[index]) if 0 <= index < len(self.node_ids) else None

    def set_palette(self, palette: str | Palette) -> None:
        self.palette = palette if isinstance(palette, Palette) else PALETTES[palette]
        self._last_frame = None

    # --- per-step state ----------------------------------------------------------
    def _build_events(self) -> None:
        """Each node's state at each of its change points, sorted by step."""
        trace = self.trace
        steps: list[int] = []
        nodes: list[int] = []
        codes: list[int] = []
        attrs = self._attrs
        kinds = _history_kinds()
        for index, nid in enumerate(self.node_ids):
            nid = int(nid)
            for point, state in _timeline(trace, nid, self._steps, attrs[index], kinds):
                steps.append(point)
                nodes.append(index)
                codes.append(_CODE[state])
        order = np.argsort(np.asarray(steps, dtype=np.int64), kind="stable")
        self._event_steps = np.asarray(steps, dtype=np.int64)[order]
        self._event_nodes = np.asarray(nodes, dtype=np.intp)[order]
        self._event_codes = np.asarray(codes, dtype=np.int8)[order]

    def _latest_events(self, step: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        """For every node with an event at or before ``step``: (node indexes, event indexes)."""
        k = int(np.searchsorted(self._event_steps, step, side="right"))
        if k == 0:
            return np.zeros(0, np.intp), np.zeros(0, np.intp)
        reversed_nodes = self._event_nodes[:k][::-1]
        unique_nodes, first = np.unique(reversed_nodes, return_index=True)
        return unique_nodes, (k - 1 - first)

    def state_codes(self, step: int) -> NDArray[np.int8]:
        codes = np.full(self.n_nodes, _CODE[NodeState.NOT_COMPUTED], dtype=np.int8)
        nodes, events = self._latest_events(step)
        codes[nodes] = self._event_codes[events]
        return codes

    def state(self, index: int, step: int) -> NodeState:
        return list(NodeState)[int(self.state_codes(step)[index])]

    def frame(self, step: int) -> Frame:
        """Everything that changes with the playback step, for one update call of the view."""
        step = max(-1, min(int(step), self.n_steps - 1))
        last = self._last_frame
        if last is not None and last.step == step:
            return last
        codes = np.full(self.n_nodes, _CODE[NodeState.NOT_COMPUTED], dtype=np.int8)
        nodes, events = self._latest_events(step)
        codes[nodes] = self._event_codes[events]
        fill = np.where(
            self.geometry.is_function[:, None],
            self.palette.function_fill[codes],
            self.palette.variable_fill[codes],
        )
        label_events = np.full(self.n_nodes, -1, dtype=np.intp)
        label_events[nodes] = events
        labels = self._labels_for(label_events)
        nonfinite = np.zeros(self.n_nodes, dtype=bool)
        current_function = -1
        current_nodes = np.zeros(0, np.intp)
        active_edges = np.zeros(0, np.intp)
        accumulations: dict[int, str] = {}
        phase = None
        if step >= 0:
            s = self._steps[step]
            phase = s.phase
            current_function = self.index_of(s.function)
            touched = [current_function] + [
                self.index_of(v) for v in (s.outputs if s.phase == "forward" else s.inputs)
            ]
            current_nodes = np.array(sorted({i for i in touched if i >= 0}), dtype=np.intp)
            if current_function >= 0:
                active_edges = np.array(self._edges_of[current_function], dtype=np.intp)
            for acc in s.accumulations:
                i = self.index_of(acc.node)
                if i >= 0:
                    accumulations[i] = self.accumulation_text(acc.node, step)
        for i in self._nonfinite_nodes(step):
            nonfinite[i] = True
        frame = Frame(
            step=step,
            state_codes=codes,
            fill=fill.astype(np.uint8, copy=False),
            labels=labels,
            current_function=current_function,
            current_nodes=current_nodes,
            active_edges=active_edges,
            nonfinite=nonfinite,
            accumulations=accumulations,
            phase=phase,
        )
        self._last_frame = frame
        return frame

    def _nonfinite_nodes(self, step: int) -> list[int]:
        if not hasattr(self, "_nonfinite_events"):
            events: list[tuple[int, int]] = []
            for s in self._steps:
                if not s.nonfinite:
                    continue
                if s.phase == "forward":
                    pairs = zip(s.outputs, s.values, strict=False)
                else:
                    pairs = zip(s.inputs, s.input_grads, strict=False)
                for nid, snap in pairs:
                    if snap is not None and not snap.finite and self.index_of(nid) >= 0:
                        events.append((s.index, self.index_of(nid)))
            self._nonfinite_events = events
        return [i for k, i in self._nonfinite_events if k <= step]

    def _labels_for(self, label_events: NDArray[np.intp]) -> list[str]:
        """Labels for per-node event indexes; only nodes whose event changed since the last
        call are formatted again (playback moves a step at a time)."""
        previous = self._label_cache
        if previous is None:
            labels = [self._label(i, int(e)) for i, e in enumerate(label_events)]
        else:
            old_events, old_labels = previous
            labels = list(old_labels)
            for i in np.flatnonzero(old_events != label_events):
                labels[i] = self._label(int(i), int(label_events[i]))
        self._label_cache = (label_events, labels)
        return labels

    def _label(self, index: int, event: int) -> str:
        key = event if event >= 0 else -1 - index  # before any event: one label per node
        text = self._labels.get(key)
        if text is None:
            point = int(self._event_steps[event]) if event >= 0 else -1
            text = self.label(index, point)
            self._labels[key] = text
        return text

    def label(self, index: int, step: int, detail: int = 2) -> str:
        """The label of node ``index`` at ``step``: ``detail`` 0 none, 1 name/op, 2 with shape
        and value / gradient summaries."""
        if detail <= 0:
            return ""
        name = self.names[index]
        if detail == 1 or self.kinds[index] == "function":
            return name
        nid = int(self.node_ids[index])
        lines = [name] if name else []
        shape = self.shapes[index]
        if shape:
            lines.append("x".join(str(d) for d in shape))
        value = self.trace.value_at(nid, step)
        if value is not None:
            lines.append(format_snapshot(value))
        grad = self.trace.grad_at(nid, step)
        if grad is not None:
            lines.append("∇ " + format_snapshot(grad))
        return "\n".join(lines)

    @staticmethod
    def label_detail(pixels_per_unit: float, n_nodes: int = 0) -> int:
        """Level of detail for labels at a zoom: 0 none (too small to read), 1 names only,
        2 full labels. Big graphs switch to full labels later, to keep redraws cheap."""
        if pixels_per_unit < 25:
            return 0
        full_at = 70 if n_nodes <= 2000 else 110
        return 1 if pixels_per_unit < full_at else 2

    def accumulation_text(self, node_id: int, step: int) -> str:
        """``g = 1 + 2 = 3``: the contributions summed at a fan-in node up to ``step``, within
        the backward pass of that step ("" when there was no accumulation)."""
        step = min(int(step), self.n_steps - 1)
        if step < 0:
            return ""
        bpass = self._steps[step].backward_pass
        terms: list[str] = []
        total = ""
        for s in self._steps[: step + 1]:
            if s.phase != "backward" or s.backward_pass != bpass:
                continue
            for acc in s.accumulations:
                if acc.node != node_id:
                    continue
                if not terms:
                    terms.append(format_snapshot(acc.old))
                terms.append(format_snapshot(acc.contribution))
                total = format_snapshot(acc.new)
        if not terms:
            return ""
        return "g = " + " + ".join(terms) + " = " + total

    # --- edges ---------------------------------------------------------------------
    def edge_polyline(self, edge: int) -> NDArray[np.float64]:
        g = self.geometry
        return g.edge_points[g.edge_offsets[edge] : g.edge_offsets[edge + 1]]

    def edge_tooltip(self, edge: int) -> str:
        u, v = (int(i) for i in self.edges[edge])
        slot = int(self.edge_slots[edge])
        variable = u if self.kinds[u] == "variable" else v
        shape = self.shapes[variable]
        shape_text = "scalar" if shape == () else f"shape {shape}" if shape is not None else ""
        if self.kinds[u] == "variable":
            where = f"argument {slot} of {self.names[v]}"
        else:
            where = f"output {slot} of {self.names[u]}"
        source = self.names[u] or "variable"
        target = self.names[v] or "variable"
        return f"{source} → {target}: {where}, {shape_text}".rstrip(", ")

    def edge_lines(self) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """All edges as one polyline for a single curve item: points (m, 2) and ``connect``
        (m,) where ``connect[i]`` says whether point i joins point i + 1."""
        g = self.geometry
        points = g.edge_points
        connect = np.ones(len(points), dtype=bool)
        ends = g.edge_offsets[1:] - 1
        connect[ends[ends >= 0]] = False
        return points, connect

    # --- hit tests -------------------------------------------------------------------
    def node_at(self, x: float, y: float) -> int:
        """Index of the node whose box contains (x, y), the nearest centre if several; -1."""
        g = self.geometry
        if g.n_nodes == 0:
            return -1
        d = np.abs(g.positions - np.array([x, y], dtype=np.float64))
        inside = np.all(d <= g.half_sizes, axis=1)
        if not inside.any():
            return -1
        candidates = np.flatnonzero(inside)
        dist = np.hypot(d[candidates, 0], d[candidates, 1])
        return int(candidates[np.argmin(dist)])

    def edge_at(self, x: float, y: float, tolerance: float = 0.08) -> int:
        """Index of the edge passing within ``tolerance`` of (x, y), the nearest; -1."""
        g = self.geometry
        if g.n_edges == 0 or len(g.edge_points) < 2:
            return -1
        points = g.edge_points
        starts = points[:-1]
        ends = points[1:]
        segment_edge = np.searchsorted(g.edge_offsets, np.arange(len(points) - 1), side="right") - 1
        valid = np.ones(len(starts), dtype=bool)
        valid[g.edge_offsets[1:-1] - 1] = False  # no segment from one edge into the next
        valid[len(starts) :] = False
        p = np.array([x, y], dtype=np.float64)
        seg = ends - starts
        length2 = np.einsum("ij,ij->i", seg, seg)
        t = np.clip(
            np.einsum("ij,ij->i", p - starts, seg) / np.where(length2 > 0, length2, 1.0), 0, 1
        )
        nearest = starts + seg * t[:, None]
        dist = np.hypot(*(nearest - p).T)
        dist[~valid] = np.inf
        best = int(np.argmin(dist))
        if not math.isfinite(dist[best]) or dist[best] > tolerance:
            return -1
        return int(segment_edge[best])

    def tooltip_at(self, x: float, y: float, step: int) -> str | None:
        """Text for a hover at (x, y): the node's summary or the edge's shapes; None."""
        index = self.node_at(x, y)
        if index >= 0:
            return self.node_tooltip(index, step)
        edge = self.edge_at(x, y)
        if edge >= 0:
            return self.edge_tooltip(edge)
        return None

    def node_tooltip(self, index: int, step: int) -> str:
        step = max(-1, min(int(step), self.n_steps - 1))
        nid = int(self.node_ids[index])
        state = self.trace.state_at(nid, step)
        head = f"{self.names[index] or 'variable'} ({self.kinds[index]}, {state.value})"
        lines = [head]
        if self.kinds[index] == "variable":
            lines.append(self.label(index, step).split("\n", 1)[-1])
        accumulation = self.accumulation_text(nid, step)
        if accumulation:
            lines.append(accumulation)
        for overlay in self.overlays.get(nid, ()):
            if overlay.tooltip:
                lines.append(f"[{overlay.kind}] {overlay.tooltip}")
        return "\n".join(line for line in lines if line)

    # --- overlays (issue 6 hooks) ------------------------------------------------------
    def set_overlay(self, node_id: int, overlay: Overlay) -> None:
        """Add ``overlay`` on ``node_id``, replacing one of the same kind."""
        kept = tuple(o for o in self.overlays.get(int(node_id), ()) if o.kind != overlay.kind)
        self.overlays[int(node_id)] = (*kept, overlay)

    def clear_overlays(self, kind: str | None = None) -> None:
        if kind is None:
            self.overlays.clear()
            return
        for nid in list(self.overlays):
            kept = tuple(o for o in self.overlays[nid] if o.kind != kind)
            if kept:
                self.overlays[nid] = kept
            else:
                del self.overlays[nid]

    def overlay_arrays(self, kind: str) -> tuple[NDArray[np.intp], NDArray[np.uint8], list[str]]:
        """(node indexes, (k, 4) RGBA colours, badges) of the overlays of ``kind``."""
        indexes, colours, badges = [], [], []
        for nid, overlays in self.overlays.items():
            i = self.index_of(nid)
            for o in overlays:
                if o.kind == kind and i >= 0:
                    indexes.append(i)
                    colours.append(o.color)
                    badges.append(o.badge)
        return (
            np.asarray(indexes, dtype=np.intp),
            np.asarray(colours, dtype=np.uint8).reshape(-1, 4),
            badges,
        )

    def flag_nodes(
        self, node_ids: Sequence[int], kind: str, badge: str, tooltips: Sequence[str] = ()
    ) -> None:
        """Overlay every node of ``node_ids`` with the error colour (leak survivors, ...)."""
        self.clear_overlays(kind)
        for k, nid in enumerate(node_ids):
            tip = tooltips[k] if k < len(tooltips) else ""
            self.set_overlay(int(nid), Overlay(kind, badge, self.palette.error, tip))

    def set_error_colours(self, errors: Mapping[int, float], kind: str = "gradcheck") -> None:
        """Colour nodes by a relative error: green below 1e-6, amber below 1e-3, red above."""
        self.clear_overlays(kind)
        for nid, error in errors.items():
            colour = _error_colour(error)
            self.set_overlay(int(nid), Overlay(kind, f"{error:.1e}", colour, f"error {error:.3g}"))


def _error_colour(error: float) -> tuple[int, int, int, int]:
    if not math.isfinite(error) or error >= 1e-3:
        return _rgba("#e03131")
    if error >= 1e-6:
        return _rgba("#f08c00")
    return _rgba("#2f9e44")


def _short_name(attrs: Mapping[str, Any]) -> str:
    if attrs["kind"] == "function":
        return str(attrs["op"])
    return attrs["name"] or ""


def format_snapshot(snapshot: Any, precision: int = 4) -> str:
    """A short text for a Snapshot: ``0.5``, ``[1 2 3]``, ``μ=0.12 |·|=3.4`` for big arrays."""
    if snapshot is None:
        return ""
    if snapshot.array is not None and snapshot.size <= 4:
        values = np.asarray(snapshot.array).reshape(-1)
        items = [_number(v, precision) for v in values.tolist()]
        return items[0] if snapshot.shape == () or len(items) == 1 else "[" + " ".join(items) + "]"
    text = f"μ={_number(snapshot.mean, 3)} |·|={_number(snapshot.norm, 3)}"
    if not snapshot.finite:
        text += f" nan={snapshot.nan} inf={snapshot.inf}"
    return text


def _number(v: Any, precision: int) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    return f"{float(v):.{precision}g}"


def _timeline(
    trace: Any,
    node_id: int,
    steps: Sequence[Any],
    attrs: Mapping[str, Any],
    kinds: tuple[int, ...] | None,
) -> list[tuple[int, NodeState]]:
    """(step, state) at each change point of the node, starting with -1.

    Asking ``trace.state_at`` at every point costs O(k) per point, O(k^2) for a node used k
    times (a shared weight in a long graph). When the trace exposes its per-node history in
    step order, one scan gives every state; the scan follows ``Trace.state_at`` exactly.
    """
    history = getattr(trace, "_history", None)
    if callable(history) and kinds is not None:
        events = history(node_id)
        visible = [max(int(e[0]), -1) for e in events]
        if all(a <= b for a, b in itertools.pairwise(visible)):
            return _scan_history(events, visible, kinds, bool(attrs.get("constant")))
    return [(p, trace.state_at(node_id, p)) for p in _change_points(trace, node_id, steps)]


def _history_kinds() -> tuple[int, int, int, int] | None:
    from autodiff import trace as trace_module

    names = ("_VALUE", "_GRAD", "_CLEARED", "_FREED")
    if all(isinstance(getattr(trace_module, n, None), int) for n in names):
        return tuple(getattr(trace_module, n) for n in names)  # type: ignore[return-value]
    return None


def _scan_history(
    events: Sequence[tuple], visible: list[int], kinds: tuple[int, ...], constant: bool
) -> list[tuple[int, NodeState]]:
    value_kind, grad_kind, cleared_kind, _ = kinds
    has_value = False
    grad_state: NodeState | None = None
    freed = False
    timeline: list[tuple[int, NodeState]] = []
    k = 0
    points = sorted(set(visible) | {-1})
    for point in points:
        while k < len(events) and visible[k] <= point:
            kind = events[k][1]
            if kind == value_kind:
                has_value = True
            elif kind == grad_kind:
                grad_state = NodeState.GRAD
            elif kind == cleared_kind:
                grad_state = NodeState.GRAD_CLEARED
            else:
                freed = True
            k += 1
        if freed:
            state = NodeState.FREED
        elif not has_value:
            state = NodeState.NOT_COMPUTED
        elif constant:
            state = NodeState.CONSTANT
        else:
            state = grad_state or NodeState.VALUE
        timeline.append((point, state))
    return timeline


def _change_points(trace: Any, node_id: int, steps: Sequence[Any]) -> list[int]:
    """Step indexes at which the node's state, value or gradient may change (with -1)."""
    public = getattr(trace, "change_points", None)
    if callable(public):
        return sorted({max(int(p), -1) for p in public(node_id)} | {-1})
    history = getattr(trace, "_history", None)
    if callable(history):
        return sorted({max(int(event[0]), -1) for event in history(node_id)} | {-1})
    # Fallback for trace-like objects: the steps that mention the node, and the step before.
    points = {-1}
    for s in steps:
        mentioned = (
            s.function == node_id
            or node_id in s.inputs
            or node_id in s.outputs
            or node_id in s.cleared
        )
        if mentioned:
            points.update((s.index - 1, s.index))
    return sorted(points)


def _separate_parallel_edges(
    edges: NDArray[np.intp], points: NDArray[np.float64], offsets: NDArray[np.intp]
) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Spread edges that join the same two nodes (``x + x``) so each slot has its own line:
    each is bowed sideways, the endpoints stay at the node centres."""
    points = points.reshape(-1, 2)
    offsets = np.asarray(offsets, dtype=np.intp)
    if len(edges) < 2:
        return points.copy(), offsets
    _, group, counts = np.unique(edges, axis=0, return_inverse=True, return_counts=True)
    group = group.reshape(-1)
    parallel = np.flatnonzero(counts[group] > 1)
    if len(parallel) == 0:
        return points.copy(), offsets
    chunks = [points[offsets[e] : offsets[e + 1]] for e in range(len(edges))]
    rank: dict[int, int] = {}
    spread = 0.3
    for e in parallel:
        g = int(group[e])
        k = rank.get(g, 0)
        rank[g] = k + 1
        shift = (k - (counts[g] - 1) / 2) * spread
        path = chunks[e]
        if len(path) < 2:
            continue
        direction = path[-1] - path[0]
        norm = float(np.hypot(*direction)) or 1.0
        normal = np.array([-direction[1], direction[0]]) / norm
        if len(path) == 2:
            path = np.vstack([path[0], (path[0] + path[1]) / 2, path[1]])
        t = np.linspace(0.0, 1.0, len(path))
        chunks[e] = path + np.sin(np.pi * t)[:, None] * normal * shift
    lengths = np.fromiter((len(c) for c in chunks), dtype=np.intp, count=len(chunks))
    new_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    return np.concatenate(chunks) if chunks else np.zeros((0, 2)), new_offsets


def _arrow_heads(geometry: SceneGeometry, edges: NDArray[np.intp]) -> NDArray[np.float64]:
    """A small triangle per edge, its tip where the last segment enters the target's box."""
    n_edges = geometry.n_edges
    if n_edges == 0:
        return np.zeros((0, 2))
    points = geometry.edge_points
    offsets = geometry.edge_offsets
    targets = np.asarray(edges[:, 1], dtype=np.intp)
    end = geometry.positions[targets]
    has_segment = (offsets[1:] - offsets[:-1]) >= 2
    previous = np.where(
        has_segment[:, None],
        points[np.maximum(offsets[1:] - 2, 0)],
        end - np.array([0.0, 1.0]),
    )
    direction = end - previous
    norm = np.hypot(direction[:, 0], direction[:, 1])
    direction = direction / np.where(norm > 0, norm, 1.0)[:, None]
    direction[norm == 0] = (0.0, 1.0)
    half = geometry.half_sizes[targets]
    with np.errstate(divide="ignore"):
        ax, ay = np.abs(direction[:, 0]), np.abs(direction[:, 1])
        scale = np.minimum(half[:, 0] / ax, half[:, 1] / ay)
    tips = end - direction * scale[:, None]
    size = 0.09
    normal = np.stack([-direction[:, 1], direction[:, 0]], axis=1)
    base = tips - direction * size * 1.6
    triangles = np.stack([tips, base + normal * size, base - normal * size], axis=1)
    return triangles.reshape(-1, 2)


def layout_from_positions(
    trace: Any,
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
    trace: Any,
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
    try:
        from viewer.model import layout as layout_module
    except ImportError:
        layout_module = None
    if layout_module is not None and hasattr(layout_module, "layout_graph"):
        options: dict[str, Any] = {"progress": progress, "should_cancel": should_cancel}
        if by_generation:
            options["layers"] = _generation_layers(graph)
        node_keys, result = layout_module.layout_graph(graph, **options)
        return _from_layout_module(trace, node_keys, result)
    return _fallback_layout(trace, progress, should_cancel)


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


def _from_layout_module(trace: Any, node_keys: Sequence[Any], result: Any) -> GraphLayout:
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


def _fallback_layout(
    trace: Any,
    progress: Callable[[float], None] | None,
    should_cancel: Callable[[], bool] | None,
) -> GraphLayout:
    """Rows by longest path from the leaves, nodes in creation order within a row."""
    graph = trace.graph
    node_ids = sorted(graph.nodes)
    layer: dict[int, int] = {}
    for k, nid in enumerate(node_ids):
        if should_cancel is not None and k % 1000 == 0 and should_cancel():
            raise LayoutCancelled("layout cancelled")
        preds = [layer[p] for p in graph.predecessors(nid) if p in layer]
        layer[nid] = max(preds) + 1 if preds else 0
    rows: dict[int, list[int]] = {}
    for nid in node_ids:
        rows.setdefault(layer[nid], []).append(nid)
    positions = np.zeros((len(node_ids), 2))
    index = {nid: i for i, nid in enumerate(node_ids)}
    for row, members in rows.items():
        for k, nid in enumerate(members):
            positions[index[nid]] = ((k - (len(members) - 1) / 2) * 1.4, row * 1.0)
    if progress is not None:
        progress(1.0)
    laid = layout_from_positions(trace, node_ids, positions)
    laid.layers = np.array([layer[n] for n in node_ids], dtype=np.intp)
    return laid
