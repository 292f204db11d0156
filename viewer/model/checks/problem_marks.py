"""The marks the app already drew, read as problems, and the problems drawn as marks.

Before the detectors, four findings each had a place of their own: the per-pass flags of a
script's graph list (NaN/Inf, graph still held, wrong backward), the first NaN/Inf's badge on
the graph, a carried-over gradient's node style, and Ctrl+G's wrong-backward colours. Here they
become problems of the kinds ``nonfinite``, ``graph-held``, ``wrong-backward`` and
``carried-gradient`` (:func:`mark_problems`), and :func:`unify` lists each finding once: a
detector's problem of the same kind on the same graph stands for the mark's (its message says
more), and a mark found two ways (a pass's NaN flag and its graph's first NaN) is one problem.
A carried-over gradient is a problem only where the carried-gradient detector says so (a
parameter's, or a leaf's the program updates): the node style still shows every carried
gradient, the data's too, as the state it is.

The other way round, :func:`mark_scene` draws the problems of the graph on screen on its nodes:
an overlay of kind ``'problem'`` (a ring and the kind as its badge, in the severity's colour),
except on a node whose own mark already shows that finding (the NaN badge, the gradient check's
wrong backward, a leak): that mark's tooltip names the problem instead, so one finding carries
one mark. Plain Python: no Qt.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from viewer.model.checks.detectors.flow import carried_gradient
from viewer.model.checks.problems import CannotRun, GraphInput, Problem, Thresholds
from viewer.model.scene.overlays import Overlay

__all__ = [
    "MARK_KINDS",
    "OVERLAY_KIND",
    "flag_problems",
    "mark_problems",
    "mark_scene",
    "problem_colour",
    "unify",
]

#: The kinds the existing marks stand for.
MARK_KINDS = ("nonfinite", "graph-held", "wrong-backward", "carried-gradient")
#: The Scene overlay kind of a problem's mark (the legend's 'problem' mark).
OVERLAY_KIND = "problem"
# The overlay kinds that already mark a finding of a problem kind on its node.
_OWN_MARK = {"nonfinite": "nonfinite", "wrong-backward": "gradcheck", "graph-held": "leak"}
_FLAG_NONFINITE, _FLAG_HELD, _FLAG_GRADCHECK = 1, 2, 4  # pass_sampling's FLAG_* (no import:
# the scripts package imports the checks)
_AMBER = (240, 140, 0, 255)
# leaf variables whose carried gradient is looked for in one graph: beyond, the timelines cost
# more than a mark is worth (the carried-gradient detector, when it runs, covers the rest)
_CARRIED_SCAN = 2000


def problem_colour(severity: str, error: tuple[int, int, int, int], info: tuple[int, ...]) -> Any:
    """The mark's colour: the palette's ``error`` for an error, amber for a warning, ``info``
    (the palette's edge colour) for an observation."""
    if severity == "error":
        return error
    return _AMBER if severity == "warning" else info


def flag_problems(graphs: Sequence[Any]) -> list[Problem]:
    """The per-pass flags of a script's graph list (objects with ``title``, ``flags``,
    ``root``, ``number``) as problems of the graph of each pass."""
    found = []
    for index, graph in enumerate(graphs):
        flags = int(getattr(graph, "flags", 0))
        number = int(getattr(graph, "number", -1))
        name = f"pass #{number + 1}" if number >= 0 else str(getattr(graph, "title", "the graph"))
        if flags & _FLAG_NONFINITE:
            found.append(
                Problem(
                    "nonfinite",
                    "error",
                    f"NaN or Inf in the loss or a gradient of {name}: open it and press N to "
                    "jump to the step that produced it",
                    index,
                )
            )
        if flags & _FLAG_HELD:
            root = int(getattr(graph, "root", -1))
            found.append(
                Problem(
                    "graph-held",
                    "warning",
                    f"the program still held the graph of {name} when the next pass ended "
                    "(e.g. history.append(loss)): keep loss.item() or float(loss.data) instead",
                    index,
                    None,
                    (root,) if root >= 0 else (),
                )
            )
        if flags & _FLAG_GRADCHECK:
            found.append(
                Problem(
                    "wrong-backward",
                    "error",
                    f"a Function of the script's own failed its gradient check in {name}: "
                    "open it and press Ctrl+G to see which, then fix its backward()",
                    index,
                )
            )
    return found


def mark_problems(reader: Any, graph: int = 0, gradient_check: Any = None) -> list[Problem]:
    """The marks of one graph (``reader``, a TraceReader, at ``graph`` in its source's list)
    as problems: its first NaN/Inf, its gradients carried over from an earlier backward (as
    the carried-gradient detector judges them), and the wrong backwards of
    ``gradient_check`` (a GradCheckReport of this graph, or None)."""
    found = []
    first = reader.first_nonfinite()
    if first is not None:
        op = str(getattr(first, "op", "") or "a Function")
        phase = "forward output" if first.phase == "forward" else "backward gradient"
        found.append(
            Problem(
                "nonfinite",
                "error",
                f"{op} produced the first NaN or Inf, in its {phase} (step {first.index + 1}): "
                "look at its inputs there (a log of 0, a division by 0, an overflow)",
                graph,
                int(first.index),
                (int(first.function),),
            )
        )
    found += _carried(reader, graph)
    if gradient_check is not None:
        for check in gradient_check.wrong_functions:
            error = check.error
            size = f" (relative error {error:.2g})" if math.isfinite(error) else ""
            found.append(
                Problem(
                    "wrong-backward",
                    "error",
                    f"{check.op}'s backward disagrees with central differences{size}: fix "
                    "its backward()",
                    graph,
                    None,
                    tuple(int(n) for n in check.node_ids),
                )
            )
    return found


def _carried(reader: Any, graph: int) -> list[Problem]:
    """The carried-gradient detector's findings on this graph: one rule for the mark and for
    ``--check`` (a parameter or a leaf the program updates between passes; the data's gradient
    is never used, so carrying it is no bug). Past ``_CARRIED_SCAN`` leaves, none: the
    detector, when it runs on the graph, covers it."""
    leaves = sum(1 for nid in reader.variables if reader.creator_of(nid) < 0)
    if leaves > _CARRIED_SCAN:
        return []
    try:
        return carried_gradient(GraphInput(reader, graph), Thresholds())
    except CannotRun:
        return []


def unify(
    found: Iterable[Problem], marks: Iterable[Problem], covers: Iterable[Problem] = ()
) -> list[Problem]:
    """``found`` (the detectors') and the ``marks``' problems, each finding once, most severe
    first: a mark's problem goes when a detector found the same kind on the same graph (in
    ``found``, or in ``covers``: the detectors' findings per graph that a grouped list names
    once, at their first graph), and of two marks' problems of one kind and graph the first
    given stays (give the graph's own marks, with nodes and a step, before the pass flags)."""
    kept = list(found)
    covered = {(p.kind, p.graph) for p in kept} | {(p.kind, p.graph) for p in covers}
    for mark in marks:
        if (mark.kind, mark.graph) not in covered:
            covered.add((mark.kind, mark.graph))
            kept.append(mark)
    big = 1 << 62
    kept.sort(
        key=lambda p: (
            p.rank,
            big if p.graph is None else p.graph,
            big if p.step is None else p.step,
        )
    )
    return kept


def mark_scene(scene: Any, problems: Iterable[Problem], graph: int) -> int:
    """Mark the nodes of ``problems`` that show in graph ``graph`` on ``scene`` (replacing the
    problem marks it had); returns how many nodes carry a problem's mark or note."""
    scene.clear_overlays(OVERLAY_KIND)
    palette = scene.palette
    notes: dict[int, list[Problem]] = {}
    for problem in problems:
        if problem.graph != graph:
            continue
        for nid in problem.nodes:
            if scene.index_of(int(nid)) >= 0:
                notes.setdefault(int(nid), []).append(problem)
    for nid, on_node in notes.items():
        own = {o.kind: o for o in scene.overlays.get(nid, ())}
        rest = []
        for problem in on_node:
            mark = own.get(_OWN_MARK.get(problem.kind, ""))
            if mark is None:
                rest.append(problem)
                continue
            note = f"problem {problem.kind}: listed in the Problems panel"
            if note not in mark.tooltip:
                tip = f"{mark.tooltip}; {note}" if mark.tooltip else note
                scene.set_overlay(nid, replace(mark, tooltip=tip))
        if rest:
            rest.sort(key=lambda p: p.rank)
            worst = rest[0]
            colour = problem_colour(worst.severity, palette.error, palette.edge)
            tip = "; ".join(f"{p.kind} ({p.severity}): {p.message}" for p in rest)
            scene.set_overlay(nid, Overlay(OVERLAY_KIND, worst.kind, colour, tip))
    return len(notes)
