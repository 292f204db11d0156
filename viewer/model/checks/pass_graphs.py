"""A recording of several backward passes, looked at pass by pass: the same in ``--check`` and in
the app's Problems panel.

A saved trace (or a typed program) that ran ``backward()`` several times is one recording. The
detectors look at each pass's graph on its own (:func:`pass_inputs`: a view per backward root,
as a script's run gives them its passes), so a bug repeated in every pass is one problem saying
"(in 3 of 3 kept passes, first in pass #1)", and redundant-computation compares within a pass.

``--check`` prints the report as it is: the pass's graph index and its step in that view. The
app shows the whole recording as one graph: :func:`onto_one_graph` moves each problem onto it
(graph 0, the step of the whole recording), the same problems with the same messages and nodes.
Plain Python: no Qt.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from autodiff.trace import Trace, view_for_root
from viewer.model.checks.problems import GraphInput, Problem, ProblemReport

__all__ = ["onto_one_graph", "pass_inputs"]


def pass_inputs(
    trace: Any, title: str, source: str, script: str | None = None
) -> tuple[Iterator[GraphInput], int]:
    """The graphs of a recording to check, and how many: one per backward pass when an engine
    :class:`~autodiff.trace.Trace` holds several (each its own view, made when the detectors
    get to it, titled "<title> · backward #k"), else the whole recording as graph 0."""
    roots = list(trace.backward_roots) if isinstance(trace, Trace) else []
    if len(roots) <= 1:
        return iter([GraphInput(trace, 0, title, source, script)]), 1
    views = (
        GraphInput(view_for_root(trace, root, k), k, f"{title} · backward #{k + 1}", source, script)
        for k, root in enumerate(roots)
    )
    return views, len(roots)


def onto_one_graph(report: ProblemReport, readers: Mapping[int, Any]) -> ProblemReport:
    """``report`` (over the passes of one recording, ``readers``: graph index -> the view the
    detectors read) with every problem on graph 0, the whole recording: its step the
    recording's (``TraceView.global_step``), its kind, severity, message and nodes as found.
    The graph's own list is the report's list (each pass's own findings are in the grouped
    problem's count), so the graph shows each bug once, as ``--check`` prints it."""

    def moved(p: Problem) -> Problem:
        if p.graph is None:
            return p
        reader = readers.get(p.graph)
        step = p.step
        if step is not None and reader is not None:
            step = int(reader.global_step(step))
        return replace(p, graph=0, step=step)

    problems = [moved(p) for p in report.problems]
    return ProblemReport(
        problems,
        list(report.ran),
        dict(report.skipped),
        report.graphs,
        report.graphs_total,
        {0: [p for p in problems if p.graph == 0]},
    )
