"""The words the graph view shows: snapshot summaries, node labels, tooltips, the line of an
accumulation, and the zoom at which labels are worth drawing.

Everything here is formatting of facts the caller already has (snapshots, a
:class:`~viewer.model.node_display.NodeDisplay`, overlays); nothing reads the trace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from viewer.model.node_display import NodeDisplay
    from viewer.model.scene.overlays import Overlay

__all__ = [
    "MODULE_LABEL_LINES",
    "READABLE_TEXT_PX",
    "SMALLEST_TEXT_PX",
    "SceneText",
    "accumulation_text",
    "box_px_for_text",
    "format_snapshot",
    "label_detail",
    "label_text_px",
    "module_label",
    "node_name",
    "nonfinite_badge",
]


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


# Labels are drawn by how big their text is on screen, whatever the graph's size: below
# SMALLEST_TEXT_PX text is not legible, so a label that would be smaller is not drawn (only
# its name, if a name alone is that big; else nothing). READABLE_TEXT_PX is the size the view
# brings a label to when it shows a node (find, the step follow) and fits a graph for.
SMALLEST_TEXT_PX = 8.0
READABLE_TEXT_PX = 11.0


def label_text_px(box_px: float, lines: int) -> float:
    """The text size (pixels) a label of ``lines`` lines gets in a box ``box_px`` tall on
    screen: each line 1.3 of the text size, and 0.4 of it for the margins."""
    return float(box_px) / (max(1, int(lines)) * 1.3 + 0.4)


def box_px_for_text(text_px: float, lines: int) -> float:
    """How tall (pixels) a box must be on screen for its ``lines`` to get ``text_px`` text:
    the inverse of :func:`label_text_px`."""
    return float(text_px) * (max(1, int(lines)) * 1.3 + 0.4)


def label_detail(box_px: float, lines: int) -> int:
    """Level of detail for labels of at most ``lines`` lines in boxes ``box_px`` tall on
    screen: 2 full labels when their text is at least SMALLEST_TEXT_PX, 1 names only when a
    one-line name's is, 0 none. A function of the on-screen size alone: the same for every
    graph and every pass."""
    if label_text_px(box_px, lines) >= SMALLEST_TEXT_PX:
        return 2
    return 1 if label_text_px(box_px, 1) >= SMALLEST_TEXT_PX else 0


def node_name(attrs: Mapping[str, Any]) -> str:
    """What a node's label starts with: a Function's op, a variable's name ('' if none)."""
    if attrs["kind"] == "function":
        return str(attrs["op"])
    return attrs["name"] or ""


MODULE_LABEL_LINES = 4  # a module box: name and class, shapes, parameters, what ran


def module_name(box: Any) -> str:
    """A module box's name: the last part of its path, or ``Block \u00d7 12`` for a folded run."""
    if box.count > 1:
        return f"{box.cls or box.name} \N{MULTIPLICATION SIGN} {box.count}"
    return box.name


def module_label(box: Any, inputs: Sequence[str], outputs: Sequence[str], status: str) -> str:
    """A module box's label (``box``: a :class:`~viewer.model.scopes.tree.ModuleBox`): ``l1 ·
    Linear`` (``Block \u00d7 12`` for a folded run), ``2x3 → 2x4``, ``2 params (12 values)``, and
    ``status`` (what ran in it and its parameters' gradient norm)."""
    title = module_name(box)
    if box.count == 1 and box.cls and box.cls != box.name:
        title = f"{box.name} · {box.cls}"
    shapes = f"{', '.join(inputs) or '-'} → {', '.join(outputs) or '-'}"
    n = len(box.params)
    plural = "s" if n != 1 else ""
    params = f"{n} param{plural} ({box.param_values} values)" if n else "no params"
    return "\n".join([title, shapes, params, status])


def accumulation_text(steps: Sequence[Any], node_id: int, step: int) -> str:
    """``g = 1 + 2 = 3``: the contributions summed at a fan-in node up to ``step`` of
    ``steps``, within the backward pass of that step ("" when there was no accumulation)."""
    step = min(int(step), len(steps) - 1)
    if step < 0:
        return ""
    bpass = steps[step].backward_pass
    terms: list[str] = []
    total = ""
    for s in steps[: step + 1]:
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


class SceneText:
    """The labels and tooltips of one graph's nodes and edges, by node and edge index.

    It holds what the text is made of that does not change with the step (names, kinds,
    shapes, which variables are constants, the edges); the caller brings what does (the
    value and gradient shown, overlays, an accumulation)."""

    def __init__(
        self,
        node_ids: NDArray[np.int64],
        kinds: Sequence[str],
        names: Sequence[str],
        shapes: Sequence[tuple[int, ...] | None],
        constants: Sequence[bool],
        edges: NDArray[np.intp],
        edge_slots: NDArray[np.intp],
        edges_of: Sequence[Sequence[int]],
    ) -> None:
        self._node_ids = node_ids
        self._kinds = kinds
        self._names = names
        self._shapes = shapes
        self._constants = constants
        self._edges = edges
        self._edge_slots = edge_slots
        self._edges_of = edges_of

    def label(self, index: int, value: Any, grad: Any) -> str:
        """A node's full label: a Function's op; a variable's name, shape, value and
        gradient, one per line (each only when there is one)."""
        name = self._names[index]
        if self._kinds[index] == "function":
            return name
        lines = [name] if name else []
        shape = self._shapes[index]
        if shape:
            lines.append("x".join(str(d) for d in shape))
        if value is not None:
            lines.append(format_snapshot(value))
        if grad is not None:
            lines.append("∇ " + format_snapshot(grad))
        if not lines and shape == ():  # an unnamed scalar not computed yet: not a blank box
            lines.append("scalar")
        return "\n".join(lines)

    def max_label_lines(self) -> int:
        """The most lines any node's full label shows at any step (name, shape, value,
        gradient): the view sizes the label font once per graph from it, so text never
        jumps during playback."""
        most = 1
        for i, kind in enumerate(self._kinds):
            if kind != "variable":
                continue
            lines = (1 if self._names[i] else 0) + (1 if self._shapes[i] else 0) + 1
            most = max(most, lines + (0 if self._constants[i] else 1))
        return most

    def unnamed(self, index: int) -> str:
        """What to call a node without a name: "constant", "output of Mul", "variable #7"."""
        if self._constants[index]:
            return "constant"
        for e in self._edges_of[index]:
            u, v = (int(i) for i in self._edges[e])
            if v == index and self._kinds[u] == "function":
                return f"output of {self._names[u]}"
        return f"variable #{int(self._node_ids[index])}"

    def edge_tooltip(self, edge: int) -> str:
        """``x → Mul: argument 0 of Mul, shape (2, 3)``."""
        u, v = (int(i) for i in self._edges[edge])
        slot = int(self._edge_slots[edge])
        variable = u if self._kinds[u] == "variable" else v
        shape = self._shapes[variable]
        shape_text = "scalar" if shape == () else f"shape {shape}" if shape is not None else ""
        if self._kinds[u] == "variable":
            where = f"argument {slot} of {self._names[v]}"
        else:
            where = f"output {slot} of {self._names[u]}"
        source = self._names[u] or "variable"
        target = self._names[v] or "variable"
        return f"{source} → {target}: {where}, {shape_text}".rstrip(", ")

    def node_tooltip(
        self,
        index: int,
        shown: NodeDisplay,
        accumulation: str = "",
        overlays: Sequence[Overlay] = (),
    ) -> str:
        """A node's hover text: what it is and its state, the value, gradient and note it
        shows (``shown``), the ``accumulation`` line and the overlays' tooltips."""
        state = shown.state.value.replace("_", " ")
        name = self._names[index] or self.unnamed(index)
        lines = [f"{name} ({self._kinds[index]}, {state})"]
        if self._kinds[index] == "variable":
            if shown.value is not None:
                lines.append("value " + format_snapshot(shown.value))
            if shown.grad is not None:
                lines.append("∇ " + format_snapshot(shown.grad))
            for op, slot, g in shown.passing:
                lines.append(f"∇ {format_snapshot(g)} reached argument {slot} of {op}")
            if shown.note:
                lines.append(shown.note)
        if accumulation:
            lines.append(accumulation)
        for overlay in overlays:
            if overlay.tooltip:
                lines.append(f"[{overlay.kind}] {overlay.tooltip}")
        return "\n".join(line for line in lines if line)
