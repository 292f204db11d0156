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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff.trace import NodeState, TraceReader
from viewer.model.graph_colours import DARK, LIGHT, PALETTES, Palette, error_colour
from viewer.model.graph_layout import (
    GraphLayout,
    LayoutCancelled,
    compute_layout,
    layout_from_positions,
)
from viewer.model.node_display import node_display
from viewer.model.node_states import (
    STATE_CODES,
    STATE_NAMES,
    node_timeline,
    state_code,
)
from viewer.model.scene_geometry import (
    VARIABLE_SIZE,
    SceneGeometry,
    arrow_heads,
    separate_parallel_edges,
)

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


@dataclass(frozen=True)
class Overlay:
    """A mark the view draws on a node besides its state: a leak badge, a NaN flag, a
    gradient-check error colour. ``kind`` groups overlays ('leak', 'nonfinite', 'gradcheck')."""

    kind: str
    badge: str
    color: tuple[int, int, int, int]
    tooltip: str = ""


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

    def __init__(
        self, trace: TraceReader, layout: GraphLayout, palette: str | Palette = "light"
    ) -> None:
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
        points, offsets = separate_parallel_edges(
            self.edges, np.asarray(layout.edge_points, float), np.asarray(layout.edge_offsets)
        )
        self.geometry = SceneGeometry(
            variable_size=(max(VARIABLE_SIZE[0], layout.variable_width), VARIABLE_SIZE[1]),
            positions=np.asarray(layout.positions, dtype=np.float64).reshape(n, 2),
            is_function=is_function,
            edge_points=points,
            edge_offsets=offsets,
            arrow_points=np.zeros((0, 2)),
        )
        self.geometry.arrow_points = arrow_heads(self.geometry, self.edges)
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
            badge = nonfinite_badge(first)
            self.set_overlay(
                first.function,
                Overlay("nonfinite", badge, self.palette.error, f"first {badge} in a {phase}"),
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
        old = self.palette.error
        self.palette = palette if isinstance(palette, Palette) else PALETTES[palette]
        new = self.palette.error
        if old != new:  # badges drawn in the palette's error colour follow the theme
            for nid, overlays in self.overlays.items():
                self.overlays[nid] = tuple(
                    replace(o, color=new) if o.color == old else o for o in overlays
                )
        self._last_frame = None

    # --- per-step state ----------------------------------------------------------
    def _build_events(self) -> None:
        """Each node's state at each of its change points, sorted by step."""
        trace = self.trace
        steps: list[int] = []
        nodes: list[int] = []
        codes: list[int] = []
        for index, nid in enumerate(self.node_ids):
            nid = int(nid)
            for point, state in node_timeline(trace, nid, self._steps):
                steps.append(point)
                nodes.append(index)
                codes.append(STATE_CODES[state])
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
        codes = np.full(self.n_nodes, STATE_CODES[NodeState.NOT_COMPUTED], dtype=np.int8)
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
        codes = np.full(self.n_nodes, STATE_CODES[NodeState.NOT_COMPUTED], dtype=np.int8)
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
        if step >= 0 and self._steps[step].phase == "backward":
            # The outputs whose gradient this step used and dropped show it during the step
            # (node_display): not part of the cached labels, which hold between change points.
            s = self._steps[step]
            patched = [self.index_of(y) for y in s.outputs if y in s.cleared]
            patched = [i for i in patched if i >= 0]
            if patched:
                labels = list(labels)
                for i in patched:
                    shown = self.display(i, step)
                    labels[i] = self._text(i, shown.value, shown.grad)
                    codes[i] = STATE_CODES[shown.state]
                fill = fill.copy()
                fill[patched] = self.palette.variable_fill[codes[patched]]
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
                self.index_of(v)
                for v in (s.outputs if s.phase == "forward" else (*s.inputs, *s.outputs))
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
            text = self._cached_text(index, point)
            self._labels[key] = text
        return text

    def max_label_lines(self) -> int:
        """The most lines any node's full label shows at any step (name, shape, value,
        gradient): the view sizes the label font once per graph from it, so text never
        jumps during playback."""
        most = 1
        for i, kind in enumerate(self.kinds):
            if kind != "variable":
                continue
            constant = bool(self._attrs[i].get("constant"))
            lines = (1 if self.names[i] else 0) + (1 if self.shapes[i] else 0) + 1
            most = max(most, lines + (0 if constant else 1))
        return most

    def _unnamed(self, index: int) -> str:
        """What to call a node without a name: "constant", "output of Mul", "variable #7"."""
        if self._attrs[index].get("constant"):
            return "constant"
        for e in self._edges_of[index]:
            u, v = (int(i) for i in self.edges[e])
            if v == index and self.kinds[u] == "function":
                return f"output of {self.names[u]}"
        return f"variable #{int(self.node_ids[index])}"

    def display(self, index: int, step: int) -> Any:
        """What node ``index`` shows after ``step`` (a :class:`NodeDisplay`): the one source
        of its label, its tooltip and the inspector."""
        step = max(-1, min(int(step), self.n_steps - 1))
        s = self._steps[step] if step >= 0 else None
        return node_display(self.trace, int(self.node_ids[index]), step, s)

    def label(self, index: int, step: int, detail: int = 2) -> str:
        """The label of node ``index`` at ``step``: ``detail`` 0 none, 1 name/op, 2 with shape
        and value / gradient summaries."""
        if detail <= 0:
            return ""
        if detail == 1 or self.kinds[index] == "function":
            return self.names[index]
        shown = self.display(index, step)
        return self._text(index, shown.value, shown.grad)

    def _cached_text(self, index: int, step: int) -> str:
        """The label between two change points (no step-only facts, see frame())."""
        if self.kinds[index] == "function":
            return self.names[index]
        nid = int(self.node_ids[index])
        return self._text(index, self.trace.value_at(nid, step), self.trace.grad_at(nid, step))

    def _text(self, index: int, value: Any, grad: Any) -> str:
        name = self.names[index]
        if self.kinds[index] == "function":
            return name
        lines = [name] if name else []
        shape = self.shapes[index]
        if shape:
            lines.append("x".join(str(d) for d in shape))
        if value is not None:
            lines.append(format_snapshot(value))
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
        shown = self.display(index, step)
        state = shown.state.value.replace("_", " ")
        head = f"{self.names[index] or self._unnamed(index)} ({self.kinds[index]}, {state})"
        lines = [head]
        if self.kinds[index] == "variable":
            if shown.value is not None:
                lines.append("value " + format_snapshot(shown.value))
            if shown.grad is not None:
                lines.append("∇ " + format_snapshot(shown.grad))
            for op, slot, g in shown.passing:
                lines.append(f"∇ {format_snapshot(g)} reached argument {slot} of {op}")
            if shown.note:
                lines.append(shown.note)
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
            colour = error_colour(error)
            self.set_overlay(int(nid), Overlay(kind, f"{error:.1e}", colour, f"error {error:.3g}"))


def nonfinite_badge(step: Any) -> str:
    """'NaN', 'Inf', '-Inf' (or '±Inf') by what the first non-finite snapshot of a step holds."""
    if step.phase == "forward":
        snaps = list(step.values)
    else:
        snaps = [*step.input_grads, *(a.new for a in step.accumulations)]
    for snap in snaps:
        if snap is None or snap.finite:
            continue
        if snap.nan:
            return "NaN"
        if snap.array is not None:
            values = np.asarray(snap.array, dtype=np.float64)
            pos, neg = bool(np.isposinf(values).any()), bool(np.isneginf(values).any())
        else:  # a summary: its finite min / max say which side is missing
            pos = not math.isfinite(snap.max) or snap.max > 0
            neg = not math.isfinite(snap.min) or snap.min < 0
        if pos and neg:
            return "±Inf"
        return "-Inf" if neg else "Inf"
    return "NaN"


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
