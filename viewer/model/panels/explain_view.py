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

from viewer.model.explain import Chain, ChainPath, StepExplanation
from viewer.model.scene.text import format_snapshot

__all__ = [
    "ExplainLine",
    "Segment",
    "chain_lines",
    "edge_midpoints",
    "edge_text",
    "explain_lines",
    "focus_choice",
    "link_segments",
    "result_text",
    "step_edge_labels",
]

# a piece of a line and the node id it names (None: plain text)
Segment = tuple[str, int | None]

# the most edges one step labels (a concatenation of thousands of inputs would bury the graph)
MAX_EDGE_LABELS = 64


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
    ``exp(x)`` and ``x1ᵀ``, not inside ``exp`` or ``gx0`` (a name is not glued to a letter
    before it, nor to a letter or digit after it)."""
    names = sorted({name for name, _ in links if name}, key=len, reverse=True)
    if not names or not text:
        return ((text, None),) if text else ()
    node_of = dict((name, int(node)) for name, node in reversed(tuple(links)) if name)
    # formula names are ASCII; a mark after one (x1ᵀ, x²) still leaves it a name
    pattern = re.compile(
        r"(?<![A-Za-z_])(" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z0-9_])"
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


def result_text(result: Any, element: Sequence[int] | None = None) -> str:
    """The gradient a term sends: the number (4 significant digits, as the graph's labels);
    for an array, the element the numbers are for, or its shape when there is none."""
    array = np.asarray(result)
    if array.ndim == 0 or array.size == 1:
        return f"{float(array.reshape(-1)[0]):.4g}"
    if element is not None and len(element) == array.ndim:
        return f"{float(array[tuple(element)]):.4g}"
    return f"array {tuple(array.shape)}"


def explain_lines(explanation: StepExplanation, name_of: Any) -> list[ExplainLine]:
    """The lines of one backward step: what ran, then per term the input it feeds, the
    formula with its names linked, the numbers (the model's text) and the result, then shapes,
    broadcasting and accumulation when there are any. ``name_of(node_id)`` names a node."""
    fn = explanation.function
    lines = [
        ExplainLine(
            "title",
            (
                (f"step {explanation.step + 1}: backward of ", None),
                (explanation.op or name_of(fn), fn if fn >= 0 else None),
            ),
        )
    ]
    if explanation.note:
        lines.append(ExplainLine("detail", ((explanation.note, None),)))
    for term in explanation.terms:
        arrow = (
            ("→ ", None),
            (name_of(term.input), term.input),
            (f"  (argument {term.slot})", None),
        )
        lines.append(ExplainLine("title", arrow))
        if term.formula:
            lines.append(ExplainLine("formula", link_segments(term.formula, term.links)))
        result = result_text(term.result, term.element)
        shown = term.numbers and term.numbers != result
        numbers = f"= {term.numbers} = {result}" if shown else f"= {result}"
        lines.append(ExplainLine("numbers", ((numbers, None),)))
        shapes = term.shapes
        if term.element is not None and np.ndim(term.result) > 0:
            at = f"numbers at element {list(term.element)}"
            shapes = f"{at} · {shapes}" if shapes else at
        for detail in (shapes, term.broadcast, term.accumulation):
            if detail:
                lines.append(ExplainLine("detail", link_segments(detail, term.links)))
    return lines


def chain_lines(chain: Chain) -> list[ExplainLine]:
    """The chain rule down to the selected node, as the model writes it (one line per path it
    lists, then their sum and ``+ N more paths``), each factor of a path linked to the
    Function it is the local derivative of (the seed ``∂y/∂y`` to the output)."""
    lines: list[ExplainLine] = []
    for k, text in enumerate(chain.text.splitlines()):
        if text.startswith("where "):  # the symbols of unnamed variables, each linked
            lines.append(ExplainLine("chain", _linked_symbols(text)))
            continue
        path = chain.paths[k] if k < len(chain.paths) else None
        lines.append(ExplainLine("chain", _linked_factors(text, path)))
    return lines


_SYMBOL = re.compile(r"v(\d+) is variable #\1\b[^,]*")


def _linked_symbols(text: str) -> tuple[Segment, ...]:
    """``where v8 is variable #8 from Mul, …`` with each symbol's part linked to its node."""
    segments: list[Segment] = []
    start = 0
    for found in _SYMBOL.finditer(text):
        segments += [(text[start : found.start()], None), (found.group(0), int(found.group(1)))]
        start = found.end()
    segments.append((text[start:], None))
    return tuple((t, n) for t, n in segments if t)


def _linked_factors(text: str, path: ChainPath | None) -> tuple[Segment, ...]:
    """``text`` with ``path``'s labels linked, found in order after the line's first ``=``;
    the line unlinked when they are not all there."""
    if path is None or not path.labels:
        return ((text, None),)
    # factor 0 is the seed, at the output (nodes[0]); factor k the Function nodes[2k - 1]
    targets = [path.nodes[0], *path.nodes[1::2]]
    segments: list[Segment] = []
    at = text.find("=") + 1
    start = 0
    for k, label in enumerate(path.labels):
        found = text.find(label, at)
        if found < 0 or k >= len(targets):
            return ((text, None),)
        segments += [(text[start:found], None), (label, int(targets[k]))]
        start = at = found + len(label)
    segments.append((text[start:], None))
    return tuple((t, n) for t, n in segments if t)


def focus_choice(
    explanation: StepExplanation | None,
    output_shape: Any,
    selected_shape: Any,
    focus: tuple[int, ...] | None,
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """What the element chooser offers: the shape it picks in and the element it shows.

    At a backward step, the shape of the gradient the Function received (the model maps an
    element of it to each input through broadcasting); else the selected node's. The element
    is ``focus``, or, when none is set, the one the model chose (the largest) where a term's
    element indexes that shape. ((), None): no array to choose in."""
    shape: tuple[int, ...] = ()
    for candidate in (output_shape if explanation is not None else None, selected_shape):
        if candidate is not None and int(np.prod(tuple(candidate))) > 1:
            shape = tuple(int(d) for d in candidate)
            break
    if not shape:
        return (), None
    if focus is not None and len(focus) == len(shape):
        return shape, tuple(focus)
    if explanation is not None:
        for term in explanation.terms:
            element = term.element
            if element is not None and np.shape(term.result) == shape:
                return shape, tuple(int(i) for i in element)
    return shape, None


def edge_text(snapshot: Any) -> str:
    """An edge's label: ``∇14.78``, ``∇[1 2 3]`` for a few numbers, ``∇|·|=0.752`` (the
    norm) for a bigger array, short enough that the labels of one step rarely overlap."""
    if snapshot.array is not None and snapshot.size <= 4:
        return "∇" + format_snapshot(snapshot)
    return f"∇|·|={snapshot.norm:.3g}"


def step_edge_labels(scene: Any, step_index: int) -> list[tuple[int, str]]:
    """The gradient each edge of a backward step carries, as ``(edge index, '∇14.78')``: the
    gradient the Function received on its output edges, the one it sent on each input edge.
    Nothing for a forward step, or a Function hidden in a module box; at most
    :data:`MAX_EDGE_LABELS`."""
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
        labels.append((e, edge_text(grads[slot])))
        if len(labels) == MAX_EDGE_LABELS:
            break
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
