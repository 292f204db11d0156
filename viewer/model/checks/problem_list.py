"""What the Problems panel shows, without Qt: its rows, their order and text, and its header.

The panel lists the problems of the graph on screen first, then those of the run's other graphs
and of the whole run, each group most severe first (:func:`problem_rows`). Its header is the
report's one-line summary and, below it, which detectors ran and which could not, with why
(:func:`report_lines`): a clean run says what was looked at. Every text here is plain: a
message quotes the user's own names, which the panel must show as typed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from viewer.model.checks.problems import Problem, ProblemReport

__all__ = [
    "ProblemRow",
    "kinds_by_graph",
    "problem_rows",
    "report_lines",
]


@dataclass(frozen=True)
class ProblemRow:
    """One row: ``problem``; ``here``: it shows in the graph on screen; ``severity``,
    ``kind``, ``message`` and ``where`` ("step 12" on the graph on screen, the graph's title
    and step elsewhere, "the whole run") as the columns read; ``tooltip`` all of it."""

    problem: Problem
    here: bool
    severity: str
    kind: str
    message: str
    where: str
    tooltip: str


def problem_rows(
    problems: Iterable[Problem], graph: int | None, titles: Sequence[str] = ()
) -> list[ProblemRow]:
    """The rows of ``problems``: those of graph ``graph`` (the one on screen; None: none is)
    first, then the others, each group most severe first, then by graph and step. ``titles``:
    the source's graph titles, by index (a pass's ``#12 · iter 11 · loss 0.42``)."""
    big = 1 << 62

    def order(p: Problem) -> tuple[int, int, int, int]:
        here = graph is not None and p.graph == graph
        return (
            0 if here else 1,
            p.rank,
            big if p.graph is None else p.graph,
            big if p.step is None else p.step,
        )

    rows = []
    for p in sorted(problems, key=order):
        here = graph is not None and p.graph == graph
        where = _where(p, here, titles)
        full = titles[p.graph] if p.graph is not None and 0 <= p.graph < len(titles) else where
        tooltip = f"{p.kind} ({p.severity}): {p.message}\n{full if not here else where}"
        if p.nodes:
            shown = ", ".join(f"#{n}" for n in p.nodes[:8])
            tooltip += f"\nnodes {shown}{' …' if len(p.nodes) > 8 else ''}"
        rows.append(ProblemRow(p, here, p.severity, p.kind, p.message, where, tooltip))
    return rows


def _where(p: Problem, here: bool, titles: Sequence[str]) -> str:
    step = "" if p.step is None else f"step {p.step + 1}"
    if p.graph is None:
        return "the whole run"
    if here:
        return step or "this graph"
    title = titles[p.graph] if 0 <= p.graph < len(titles) else f"graph {p.graph + 1}"
    title = title.split(" · ")[0]  # a pass's number ("#12"); its whole title is the tooltip's
    return f"{title}, {step}" if step else title


def report_lines(report: ProblemReport | None) -> tuple[str, str]:
    """(the summary line, the details: which detectors ran and which could not, and why)."""
    if report is None:
        return ("No problems looked for yet: open a program, a trace or a script.", "")
    summary = report.summary()
    ran = ", ".join(report.ran) if report.ran else "none"
    details = [f"Ran: {ran}."]
    never, partly = report.not_run()
    if never:
        details.append(f"Could not run: {'; '.join(f'{k} ({why})' for k, why in never.items())}.")
    if partly:
        # they ran, and looked at every graph they could: say which graphs they could not
        words = "; ".join(f"{k} ({why})" for k, why in partly.items())
        details.append(f"Ran, but not on every graph: {words}.")
    if report.graphs < report.graphs_total:
        details.append(
            f"The time budget stopped the detectors after {report.graphs} of "
            f"{report.graphs_total} graphs."
        )
    return summary, " ".join(details)


def kinds_by_graph(problems: Iterable[Problem]) -> dict[int, set[str]]:
    """graph index -> the kinds of problem it shows (the graph list's filter by kind)."""
    kinds: dict[int, set[str]] = {}
    for p in problems:
        if p.graph is not None:
            kinds.setdefault(p.graph, set()).add(p.kind)
    return kinds
