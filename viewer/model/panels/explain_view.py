"""The Explain section's words, Qt-free: a backward step's terms and the selected node's chain
rule as lines of plain-text segments, each segment linked to the node it names (or to none),
and the labels the graph puts on the step's edges.

The numbers come from :mod:`viewer.model.explain` as it wrote them; nothing here rounds them
again, so what the section shows is the model's text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from viewer.model.explain import Chain, StepExplanation
from viewer.model.scene.text import format_snapshot

__all__ = [
    "ExplainLine",
    "Segment",
    "chain_lines",
    "edge_midpoints",
    "explain_lines",
    "focus_shape",
    "link_segments",
    "result_text",
    "step_edge_labels",
]

# a piece of a line and the node id it names (None: plain text)
Segment = tuple[str, int | None]

# how many paths the chain lists before "+ N more paths" (the model sums the rest)
MAX_PATHS_SHOWN = 3


@dataclass(frozen=True)
class ExplainLine:
    """One line of the section. ``kind`` says how it is drawn: 'title', 'formula', 'numbers',
    'result', 'detail' (shapes, broadcasting, accumulation, notes) or 'chain'."""

    kind: str
    segments: tuple[Segment, ...]

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.segments)


def link_segments(text: str, links: Sequence[tuple[str, int]]) -> tuple[Segment, ...]:
    """``text`` cut where a linked name stands as a name of its own: ``x`` in ``gy · 2x`` and in
    ``exp(x)``, not inside ``exp`` or ``gx0`` (a name is not glued to a letter before it, nor to
    a letter or digit after it)."""
    names = sorted({name for name, _ in links if name}, key=len, reverse=True)
    if not names or not text:
        return ((text, None),) if text else ()
    node_of = dict((name, int(node)) for name, node in reversed(tuple(links)) if name)
    pattern = re.compile(
        r"(?<![^\W\d])(" + "|".join(re.escape(n) for n in names) + r")(?![\w])", re.UNICODE
    )
    segments: list[Segment] = []
    at = 0
    for match in pattern.finditer(text):
        if match.start() > at:
            segments.append((text[at : match.start()], None))
        segments.append((match.group(0), node_of[match.group(0)]))
        at = match.end()
    if at < len(text):
        segments.append((text[at:], None))
    return tuple(segments)


def result_text(result: Any) -> str:
    """The gradient a term sends: the number (4 significant digits, as the graph's labels) or,
    for an array, its shape and its summary."""
    array = np.asarray(result)
    if array.ndim == 0 or array.size == 1:
        return f"{float(array.reshape(-1)[0]):.4g}"
    return f"array {tuple(array.shape)}"


def explain_lines(
    explanation: StepExplanation, name_of: Any, step_title: str = ""
) -> list[ExplainLine]:
    """The lines of one backward step: what ran, then per term the input it feeds, the
    formula with its names linked, the numbers (the model's text), the result, and shapes,
    broadcasting and accumulation when there are any. ``name_of(node_id)`` names a node."""
    lines: list[ExplainLine] = []
    fn = explanation.function
    head: list[Segment] = [(step_title or f"step {explanation.step + 1}: backward of ", None)]
    head.append((explanation.op or name_of(fn), fn if fn >= 0 else None))
    lines.append(ExplainLine("title", tuple(head)))
    if explanation.note:
        lines.append(ExplainLine("detail", ((explanation.note, None),)))
    for term in explanation.terms:
        lines.append(
            ExplainLine(
                "title",
                (
                    ("→ ", None),
                    (name_of(term.input), term.input),
                    (f"  (argument {term.slot})", None),
                ),
            )
        )
        if term.formula:
            lines.append(ExplainLine("formula", link_segments(term.formula, term.links)))
        if term.shapes:
            lines.append(ExplainLine("detail", link_segments(term.shapes, term.links)))
        if term.numbers:
            where = f"at {list(term.element)}: " if term.element else ""
            lines.append(ExplainLine("numbers", ((f"{where}= {term.numbers}", None),)))
        lines.append(ExplainLine("result", ((f"= {result_text(term.result)}", None),)))
        for detail in (term.broadcast, term.accumulation):
            if detail:
                lines.append(ExplainLine("detail", link_segments(detail, term.links)))
    return lines


def chain_lines(chain: Chain, name_of: Any) -> list[ExplainLine]:
    """The chain rule down to the selected node: the model's line as the seed writes it, then
    the largest paths, each factor linked to the Function it is the derivative of, and
    ``+ N more paths``."""
    lines: list[ExplainLine] = []
    if chain.text:
        lines.append(ExplainLine("chain", ((chain.text, None),)))
    paths = chain.paths[:MAX_PATHS_SHOWN]
    if len(chain.paths) > 1 or chain.more:
        for path in paths:
            functions = [n for k, n in enumerate(path.nodes) if k % 2 == 1]
            segments: list[Segment] = [("path: ", None)]
            for k, label in enumerate(path.labels):
                if k:
                    segments.append((" · ", None))
                segments.append((label, functions[k] if k < len(functions) else None))
            factors = " × ".join(f"{f:.4g}" for f in path.factors)
            segments.append((f" = {factors} = {path.product:.4g}", None))
            lines.append(ExplainLine("detail", tuple(segments)))
    more = chain.more + max(0, len(chain.paths) - len(paths))
    if more:
        plural = "s" if more != 1 else ""
        lines.append(ExplainLine("detail", ((f"+ {more} more path{plural}", None),)))
    return lines


def focus_shape(explanation: StepExplanation | None, selected_shape: Any) -> tuple[int, ...]:
    """The shape the element chooser picks an element of: the selected node's, when it is an
    array; else that of the step's first array term; () when there is no array to choose in."""
    if selected_shape is not None and len(tuple(selected_shape)) > 0:
        return tuple(int(d) for d in selected_shape)
    if explanation is not None:
        for term in explanation.terms:
            shape = np.shape(term.result)
            if len(shape) > 0 and int(np.prod(shape)) > 1:
                return tuple(int(d) for d in shape)
    return ()


def step_edge_labels(scene: Any, step_index: int) -> list[tuple[int, str]]:
    """The gradient each edge of a backward step carries, as ``(edge index, '∇14.78')``: the
    gradient the Function received on its output edges, the one it sent on each input edge.
    Nothing for a forward step, or a Function hidden in a module box."""
    steps = scene.trace.steps
    if not 0 <= step_index < len(steps):
        return []
    step = steps[step_index]
    if step.phase != "backward":
        return []
    fn = scene.index_of(step.function)
    if fn < 0 or scene.module(fn) is not None:
        return []
    labels: list[tuple[int, str]] = []
    edges = np.asarray(scene.edges).reshape(-1, 2)
    for e in np.flatnonzero((edges[:, 0] == fn) | (edges[:, 1] == fn)).tolist():
        u, v = (int(i) for i in edges[e])
        slot = int(scene.edge_slots[e])
        if v == fn:
            nodes, grads = step.inputs, step.input_grads
            other = u
        else:
            nodes, grads = step.outputs, step.output_grads
            other = v
        if slot >= len(grads) or grads[slot] is None or slot >= len(nodes):
            continue
        if scene.index_of(nodes[slot]) != other:
            continue
        labels.append((e, "∇" + format_snapshot(grads[slot])))
    return labels


def edge_midpoints(scene: Any, edges: Sequence[int]) -> NDArray[np.float64]:
    """Where a label sits on each of ``edges``: half-way along its polyline, (n, 2)."""
    points = np.zeros((len(edges), 2))
    for k, e in enumerate(edges):
        line = np.asarray(scene.edge_polyline(int(e)), dtype=np.float64).reshape(-1, 2)
        if len(line) == 0:
            continue
        if len(line) == 1:
            points[k] = line[0]
            continue
        lengths = np.hypot(*np.diff(line, axis=0).T)
        along = np.concatenate([[0.0], np.cumsum(lengths)])
        half = along[-1] / 2
        points[k] = [np.interp(half, along, line[:, 0]), np.interp(half, along, line[:, 1])]
    return points
