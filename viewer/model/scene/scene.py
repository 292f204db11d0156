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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff.trace import NodeState, TraceReader
from viewer.model.layout.compute import GraphLayout
from viewer.model.node_display import NodeDisplay, node_display
from viewer.model.node_states import STATE_CODES, STATE_NAMES, node_timeline
from viewer.model.scene.colours import PALETTES, Palette, faded
from viewer.model.scene.frames import scope_frames
from viewer.model.scene.geometry import (
    FUNCTION_SIZE,
    MODULE_SIZE,
    VARIABLE_SIZE,
    SceneGeometry,
    arrow_heads,
    separate_parallel_edges,
)
from viewer.model.scene.hit_tests import edge_at, node_at
from viewer.model.scene.overlays import NodeOverlays, Overlay
from viewer.model.scene.text import (
    MODULE_LABEL_LINES,
    READABLE_TEXT_PX,
    SceneText,
    accumulation_text,
    box_px_for_text,
    label_detail,
    module_label,
    module_name,
    node_name,
    nonfinite_badge,
)
from viewer.model.scene.wrap import wrap_rows
from viewer.model.scopes.tree import ModuleBox, VisibleGraph

__all__ = ["DETACHED_NOTE", "Frame", "Scene"]

# a fitted view shows its graph with a margin (GraphView.fit pads 4% on each side)
FIT_MARGIN = 1.1

DETACHED_NOTE = (
    "[detached] history the program cut (unchain_backward) before this graph was built: "
    "shown as the program left it; this graph's backward does not run here"
)


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
        self,
        trace: TraceReader,
        layout: GraphLayout,
        palette: str | Palette = "light",
        scopes: VisibleGraph | None = None,
    ) -> None:
        self.trace = trace
        self.layout = layout
        self.palette = palette if isinstance(palette, Palette) else PALETTES[palette]
        self.node_ids = np.asarray(layout.node_ids, dtype=np.int64)
        # a graph with module boxes: the collapse state it shows (None: every node is shown)
        self.scopes = scopes
        n = len(self.node_ids)
        if scopes is None:
            self._index_of: dict[int, int] | None = {
                int(nid): i for i, nid in enumerate(self.node_ids)
            }
            is_module = np.zeros(n, dtype=bool)
            self.modules: dict[int, ModuleBox] = {}
            attrs = [trace.node(int(nid)) for nid in self.node_ids]
        else:
            self._index_of = None  # scopes.index_of_id: a hidden node gives its box
            is_module = np.asarray(scopes.is_module, dtype=bool)
            self.modules = scopes.modules
            attrs = self._attrs_with_boxes(trace, scopes)
        self.kinds: tuple[str, ...] = tuple(a["kind"] for a in attrs)
        is_function = np.array([k == "function" for k in self.kinds], dtype=bool).reshape(n)
        self.names: tuple[str, ...] = tuple(node_name(a) for a in attrs)
        self.shapes: tuple[tuple[int, ...] | None, ...] = tuple(a["shape"] for a in attrs)
        self.edges = np.asarray(layout.edges, dtype=np.intp).reshape(-1, 2)
        self.edge_slots = np.asarray(layout.edge_slots, dtype=np.intp)
        points, offsets = separate_parallel_edges(
            self.edges, np.asarray(layout.edge_points, float), np.asarray(layout.edge_offsets)
        )
        self.geometry = SceneGeometry(
            variable_size=(max(VARIABLE_SIZE[0], layout.variable_width), VARIABLE_SIZE[1]),
            function_size=(
                max(FUNCTION_SIZE[0], layout.function_width - 0.1),
                FUNCTION_SIZE[1],
            ),
            positions=np.asarray(layout.positions, dtype=np.float64).reshape(n, 2),
            is_function=is_function,
            edge_points=points,
            edge_offsets=offsets,
            arrow_points=np.zeros((0, 2)),
            is_module=is_module if is_module.any() else None,
            module_size=(max(MODULE_SIZE[0], layout.module_width), MODULE_SIZE[1]),
        )
        self.geometry.arrow_points = arrow_heads(self.geometry, self.edges)
        if scopes is not None:
            self.geometry.frames = scope_frames(
                self.geometry.positions,
                self.geometry.half_sizes,
                scopes,
                np.asarray(layout.edge_points, dtype=np.float64),
                np.asarray(layout.edge_offsets, dtype=np.int64),
            )
        self._plain_geometry: SceneGeometry | None = None  # before wrap_to set it in bands
        self._mark_detached(trace)
        self.overlays = NodeOverlays()
        self._edges_of: list[list[int]] = [[] for _ in range(n)]
        for e, (u, v) in enumerate(self.edges.tolist()):
            self._edges_of[u].append(e)
            self._edges_of[v].append(e)
        self.text = SceneText(
            self.node_ids,
            self.kinds,
            self.names,
            self.shapes,
            tuple(bool(a.get("constant")) for a in attrs),
            self.edges,
            self.edge_slots,
            self._edges_of,
        )
        self._steps = trace.steps
        self._build_events()
        self._labels: dict[int, str] = {}
        self._label_cache: tuple[NDArray[np.intp], list[str]] | None = None
        self._last_frame: Frame | None = None
        self._mark_cuts()
        # with scopes, read once per trace: it looks at every step
        first = scopes.model.first_nonfinite if scopes is not None else trace.first_nonfinite()
        if first is not None and self.index_of(first.function) >= 0:
            phase = "forward output" if first.phase == "forward" else "backward gradient"
            badge = nonfinite_badge(first)
            self.set_overlay(
                first.function,
                Overlay("nonfinite", badge, self.palette.error, f"first {badge} in a {phase}"),
            )

    def _attrs_with_boxes(self, trace: TraceReader, scopes: VisibleGraph) -> list[dict[str, Any]]:
        """Each node's attributes (a box: what its label is made of), through the cache the
        scenes of one trace share."""
        known = scopes.model.node_attrs
        attrs: list[dict[str, Any]] = []
        modules = scopes.modules
        for i, nid in enumerate(self.node_ids.tolist()):
            box = modules.get(i)
            if box is not None:
                attrs.append(_box_attrs(box))
                continue
            a = known.get(nid)
            if a is None:
                a = known[nid] = trace.node(nid)
            attrs.append(a)
        return attrs

    def _mark_detached(self, trace: TraceReader) -> None:
        """The nodes (and edges touching them) of the history the program cut before this
        graph: the view draws them greyed (``Frame.fill``) and dashed."""
        ids = trace.detached()
        if not ids:
            return
        detached = np.isin(self.node_ids, np.fromiter(ids, dtype=np.int64, count=len(ids)))
        if not detached.any():
            return
        self.geometry.detached = detached
        self.geometry.detached_edges = (
            detached[self.edges].any(axis=1) if len(self.edges) else np.zeros(0, dtype=bool)
        )

    @property
    def detached(self) -> NDArray[np.bool_]:
        """(n,) which nodes are history cut before this graph (greyed, no steps)."""
        d = self.geometry.detached
        return d if d is not None else np.zeros(self.n_nodes, dtype=bool)

    def _mark_cuts(self) -> None:
        """A 'cut' mark on each variable of this graph whose history the program cut
        (unchain_backward) before the graph was built: it enters as a leaf."""
        cuts = self.trace.cuts()
        if not cuts:
            return
        first = self.trace.global_step(0) if self._steps else 0
        end = first + len(self._steps)
        detached = self.detached
        for nid, at in cuts.items():
            i = self.index_of(int(nid))
            if i < 0 or self.kinds[i] != "variable" or at > end or detached[i]:
                continue
            if self.trace.creator_of(int(nid)) < 0:  # a leaf here: the graph stops at it
                tip = (
                    "its history was cut (unchain_backward) before this graph: it enters "
                    "as a leaf, and backward stops here"
                )
            else:  # a whole recording (a saved trace): the cut falls inside what is shown
                shown = self.trace.local_step(at)
                tip = (
                    f"its history was cut (unchain_backward) before step {shown + 1}: "
                    "the Function above made it, but the backward passes after the cut stop "
                    "here"
                )
            self.set_overlay(int(nid), Overlay("cut", "cut", self.palette.edge, tip))

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
        """Node index of a trace node id; -1 if the scene does not show it. A node hidden in
        a module box gives the box's index."""
        if self._index_of is None:
            return self.scopes.index_of(node_id)
        return self._index_of.get(int(node_id), -1)

    def module(self, index: int) -> ModuleBox | None:
        """The module box at node ``index`` (None for a variable or a Function)."""
        return self.modules.get(int(index))

    def node_id(self, index: int) -> int | None:
        return int(self.node_ids[index]) if 0 <= index < len(self.node_ids) else None

    def set_palette(self, palette: str | Palette) -> None:
        old = self.palette.error
        self.palette = palette if isinstance(palette, Palette) else PALETTES[palette]
        # badges drawn in the palette's error colour follow the theme
        self.overlays.recolour(old, self.palette.error)
        self._last_frame = None

    # --- per-step state ----------------------------------------------------------
    def _build_events(self) -> None:
        """Each node's state at each of its change points, sorted by step. A module box
        changes at the steps run inside it: to 'value' (forward) or 'grad' (backward)."""
        trace = self.trace
        known = self.scopes.model.node_events if self.scopes is not None else {}
        step_parts: list[NDArray[np.int64]] = []
        code_parts: list[NDArray[np.int8]] = []
        owners: list[int] = []
        for index, nid in enumerate(self.node_ids.tolist()):
            if index in self.modules:
                continue
            timeline = known.get(nid)
            if timeline is None:
                pairs = node_timeline(trace, nid)
                timeline = (
                    np.array([p for p, _ in pairs], dtype=np.int64),
                    np.array([STATE_CODES[state] for _, state in pairs], dtype=np.int8),
                )
                if self.scopes is not None:
                    known[nid] = timeline
            step_parts.append(timeline[0])
            code_parts.append(timeline[1])
            owners.append(index)
        lengths = np.fromiter((len(p) for p in step_parts), dtype=np.intp, count=len(step_parts))
        event_steps = np.concatenate(step_parts) if step_parts else np.zeros(0, np.int64)
        event_codes = np.concatenate(code_parts) if code_parts else np.zeros(0, np.int8)
        event_nodes = np.repeat(np.asarray(owners, dtype=np.intp), lengths)
        if self.modules:
            where = self.scopes.step_nodes
            inside = np.flatnonzero(where >= 0)
            inside = inside[self.geometry.modules[where[inside]]]
            backward = self.scopes.step_backward[inside]
            ran = np.where(
                backward, STATE_CODES[NodeState.GRAD], STATE_CODES[NodeState.VALUE]
            ).astype(np.int8)
            event_steps = np.concatenate([event_steps, inside.astype(np.int64)])
            event_nodes = np.concatenate([event_nodes, where[inside]])
            event_codes = np.concatenate([event_codes, ran])
        detached = self.geometry.detached
        if self.modules and detached is not None:
            # a box of cut-off history ran before this graph: it shows as having run forward
            boxes = np.array([i for i in self.modules if detached[i]], dtype=np.intp)
            event_steps = np.concatenate([event_steps, np.full(len(boxes), -1, np.int64)])
            event_nodes = np.concatenate([event_nodes, boxes])
            ran = np.full(len(boxes), STATE_CODES[NodeState.VALUE], dtype=np.int8)
            event_codes = np.concatenate([event_codes, ran])
        order = np.argsort(event_steps, kind="stable")
        self._event_steps = event_steps[order]
        self._event_nodes = event_nodes[order]
        self._event_codes = event_codes[order]

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
        if self.modules:
            fill = np.where(self.geometry.modules[:, None], self.palette.module_fill[codes], fill)
        label_events = np.full(self.n_nodes, -1, dtype=np.intp)
        label_events[nodes] = events
        labels = self._labels_for(label_events)
        if step >= 0 and self._steps[step].phase == "backward":
            # The outputs whose gradient this step used and dropped show it during the step
            # (node_display): not part of the cached labels, which hold between change points.
            s = self._steps[step]
            patched = [self.index_of(y) for y in s.outputs if y in s.cleared]
            patched = [i for i in patched if i >= 0 and i not in self.modules]
            if patched:
                labels = list(labels)
                for i in patched:
                    shown = self.display(i, step)
                    labels[i] = self.text.label(i, shown.value, shown.grad)
                    codes[i] = STATE_CODES[shown.state]
                fill = fill.copy()
                fill[patched] = self.palette.variable_fill[codes[patched]]
        if self.geometry.detached is not None:
            fill = fill.copy()
            fill[self.geometry.detached] = faded(
                fill[self.geometry.detached], self.palette.background
            )
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
                if i >= 0 and i not in self.modules:
                    accumulations[i] = self.accumulation_text(acc.node, step)
            if current_function in self.modules:
                # the box the step ran in says so while the step is current
                labels = list(labels)
                labels[current_function] = self.module_text(current_function, step, now=True)
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

    def display(self, index: int, step: int) -> NodeDisplay:
        """What node ``index`` shows after ``step``: the one source of its label, its tooltip
        and the inspector."""
        step = max(-1, min(int(step), self.n_steps - 1))
        s = self._steps[step] if step >= 0 else None
        return node_display(self.trace, int(self.node_ids[index]), step, s)

    # --- text (scene_text) -------------------------------------------------------------
    label_detail = staticmethod(label_detail)

    def label(self, index: int, step: int, detail: int = 2) -> str:
        """The label of node ``index`` at ``step``: ``detail`` 0 none, 1 name/op, 2 with shape
        and value / gradient summaries."""
        if detail <= 0:
            return ""
        if detail == 1 or self.kinds[index] == "function":
            return self.names[index]
        if index in self.modules:
            return self.module_text(index, step)
        shown = self.display(index, step)
        return self.text.label(index, shown.value, shown.grad)

    def _cached_text(self, index: int, step: int) -> str:
        """The label between two change points (no step-only facts, see frame())."""
        if self.kinds[index] == "function":
            return self.names[index]
        if index in self.modules:
            box = self.modules[index]
            key = (-1 - box.scope_id, step, box.count)
            known = self.scopes.model.node_labels
            text = known.get(key)
            if text is None:
                text = known[key] = self.module_text(index, step)
            return text
        nid = int(self.node_ids[index])
        if self.scopes is None:
            return self.text.label(
                index, self.trace.value_at(nid, step), self.trace.grad_at(nid, step)
            )
        known = self.scopes.model.node_labels
        text = known.get((nid, step))
        if text is None:
            value, grad = self.trace.value_at(nid, step), self.trace.grad_at(nid, step)
            text = known[(nid, step)] = self.text.label(index, value, grad)
        return text

    # --- module boxes ------------------------------------------------------------------
    def module_text(self, index: int, step: int, now: bool = False) -> str:
        """A module box's label after ``step``: its name and class (``Block \u00d7 12``
        for a folded run), its input and output shapes, its parameters, and what ran in it: the
        phase of the last step inside it (``now``: the current step runs inside it) and the
        gradient norm of its parameters."""
        box = self.modules[index]
        inputs, outputs = self._boundary_shapes(index)
        ran = self._last_phase(index, step)
        if now and ran:
            status = "▶ forward" if ran == "forward" else "◀ backward"
        elif self.detached[index]:
            status = "ran before this graph (cut off)"
        else:
            status = f"ran {ran}" if ran else "not run yet"
        norm = self.parameter_grad_norm(index, step)
        if norm is not None:
            status += f" · ‖∇θ‖ {_short(norm)}"
        return module_label(box, inputs, outputs, status)

    def _boundary_shapes(self, index: int) -> tuple[list[str], list[str]]:
        inputs, outputs = [], []
        for e in self._edges_of[index]:
            u, v = (int(i) for i in self.edges[e])
            other, side = (u, inputs) if v == index else (v, outputs)
            shape = self.shapes[other]
            side.append("x".join(str(d) for d in shape) if shape else "()")
        return inputs, outputs

    def last_phase(self, index: int, step: int) -> str:
        """What last ran inside box ``index`` at or before ``step``: 'forward', 'backward'
        or ''."""
        return self._last_phase(index, step)

    def boundary(self, index: int) -> tuple[list[int], list[int]]:
        """The node indexes whose edges enter box ``index`` and those its edges leave to, in
        edge order (one per edge: a variable used twice inside appears twice)."""
        inputs, outputs = [], []
        for e in self._edges_of[index]:
            u, v = (int(i) for i in self.edges[e])
            (inputs if v == index else outputs).append(u if v == index else v)
        return inputs, outputs

    def _last_phase(self, index: int, step: int) -> str:
        """'forward' / 'backward': the phase of the last step at or before ``step`` that ran
        inside box ``index``; '' if none did."""
        if step < 0:
            return ""
        where = self.scopes.step_nodes[: step + 1]
        mine = np.flatnonzero(where == index)
        if len(mine) == 0:
            return ""
        return "backward" if self.scopes.step_backward[mine[-1]] else "forward"

    def parameter_grad_norm(self, index: int, step: int) -> float | None:
        """The 2-norm of the gradients of box ``index``'s parameters after ``step`` (None
        when none of them has one)."""
        total, seen = 0.0, False
        for pid in self.modules[index].params.tolist():
            g = self.trace.grad_at(pid, step)
            if g is not None and g.norm is not None:
                total += float(g.norm) ** 2
                seen = True
        return float(np.sqrt(total)) if seen else None

    def max_label_lines(self) -> int:
        return max(self.text.max_label_lines(), MODULE_LABEL_LINES if self.modules else 1)

    def accumulation_text(self, node_id: int, step: int) -> str:
        return accumulation_text(self._steps, node_id, step)

    def edge_tooltip(self, edge: int) -> str:
        return self.text.edge_tooltip(edge)

    def node_tooltip(self, index: int, step: int) -> str:
        text = self._node_tooltip(index, step)
        if self.kinds[index] == "function" and index not in self.modules:
            params = self.trace.function_params(int(self.node_ids[index]))
            if params.get("torch_node"):  # a torch recording's node, as torch names it
                aten = f" ({params['aten']})" if params.get("aten") else ""
                text += f"\ntorch: {params['torch_node']}{aten}"
        if self.detached[index]:
            text += "\n" + DETACHED_NOTE
        return text

    def _node_tooltip(self, index: int, step: int) -> str:
        step = max(-1, min(int(step), self.n_steps - 1))
        nid = int(self.node_ids[index])
        if index in self.modules:
            box = self.modules[index]
            lines = [f"{box.path} (module{', ' + box.cls if box.cls else ''})"]
            lines += self.module_text(index, step).split("\n")[1:]
            for overlay in self.overlays_at(index):
                if overlay.tooltip:
                    lines.append(f"[{overlay.kind}] {overlay.tooltip}")
            lines.append(
                "double-click or Enter: unfold into one box per repeat"
                if box.count > 1
                else "double-click or Enter: expand"
            )
            return "\n".join(lines)
        return self.text.node_tooltip(
            index,
            self.display(index, step),
            self.accumulation_text(nid, step),
            self.overlays.get(nid, ()),
        )

    # --- wrapping (wrap) ---------------------------------------------------------------
    def wrap_to(self, width_px: float, height_px: float) -> bool:
        """Set this scene's rows in side-by-side bands for a view ``width_px`` x ``height_px``:
        as many as draw it biggest, or the fewest that draw its labels READABLE_TEXT_PX tall;
        back in one column where bands would not help
        (:func:`~viewer.model.scene.wrap.wrap_rows`). True when :attr:`geometry` changed."""
        plain = self._plain_geometry if self._plain_geometry is not None else self.geometry
        self._plain_geometry = plain
        if width_px <= 0 or height_px <= 0 or plain.n_nodes == 0:
            return False
        box = float(plain.half_sizes[:, 1].min() * 2)
        # pixels per unit that make the labels readable, with the fitted view's margin
        readable = box_px_for_text(READABLE_TEXT_PX, self.max_label_lines()) / box * FIT_MARGIN
        new = wrap_rows(plain, self.edges, width_px / height_px, readable / height_px) or plain
        if new.positions.shape == self.geometry.positions.shape and np.array_equal(
            new.positions, self.geometry.positions
        ):
            return False
        self.geometry = new
        return True

    # --- edges ---------------------------------------------------------------------
    def edge_polyline(self, edge: int) -> NDArray[np.float64]:
        g = self.geometry
        return g.edge_points[g.edge_offsets[edge] : g.edge_offsets[edge + 1]]

    def edge_lines(self) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """All edges as one polyline for a single curve item: points (m, 2) and ``connect``
        (m,) where ``connect[i]`` says whether point i joins point i + 1."""
        g = self.geometry
        points = g.edge_points
        connect = np.ones(len(points), dtype=bool)
        ends = g.edge_offsets[1:] - 1
        connect[ends[ends >= 0]] = False
        return points, connect

    # --- hit tests (hit_tests) ---------------------------------------------------------
    def node_at(self, x: float, y: float) -> int:
        return node_at(self.geometry, x, y)

    def edge_at(self, x: float, y: float, tolerance: float = 0.08) -> int:
        return edge_at(self.geometry, x, y, tolerance)

    def tooltip_at(self, x: float, y: float, step: int) -> str | None:
        """Text for a hover at (x, y): the node's summary or the edge's shapes; None."""
        index = self.node_at(x, y)
        if index >= 0:
            return self.node_tooltip(index, step)
        edge = self.edge_at(x, y)
        if edge >= 0:
            return self.edge_tooltip(edge)
        return None

    # --- overlays (node_overlays) ------------------------------------------------------
    def set_overlay(self, node_id: int, overlay: Overlay) -> None:
        self.overlays.set(node_id, overlay)

    def overlays_at(self, index: int) -> list[Overlay]:
        """The overlays drawn on node ``index`` (a box: those of the nodes it hides too)."""
        return [
            o for nid, marks in self.overlays.items() if self.index_of(nid) == index for o in marks
        ]

    def clear_overlays(self, kind: str | None = None) -> None:
        self.overlays.clear(kind)

    def overlay_arrays(self, kind: str) -> tuple[NDArray[np.intp], NDArray[np.uint8], list[str]]:
        return self.overlays.arrays(kind, self.index_of)

    def flag_nodes(
        self, node_ids: Sequence[int], kind: str, badge: str, tooltips: Sequence[str] = ()
    ) -> None:
        """Overlay every node of ``node_ids`` with the error colour (leak survivors, ...)."""
        self.overlays.flag(node_ids, kind, badge, self.palette.error, tooltips)

    def set_error_colours(self, errors: Mapping[int, float], kind: str = "gradcheck") -> None:
        self.overlays.set_errors(errors, kind)


def _box_attrs(box: ModuleBox) -> dict[str, Any]:
    return {"kind": "module", "name": module_name(box), "shape": None, "constant": False}


def _short(x: float) -> str:
    return f"{x:.3g}"
