"""A finished script's result, read for the Document: which of its graphs to show, what to
say, and the error to report. The Document prepares runs (:class:`ScriptProcess`), keeps the
run in progress and the last result, and installs what these functions return; nothing here
reads or writes the Document.
"""

from __future__ import annotations

from dataclasses import dataclass

from viewer.model.document.pending import PendingGraph
from viewer.model.scripts.run import ScriptResult

__all__ = ["ScriptError", "ScriptOutcome", "outcome", "script_graph"]


class ScriptError(Exception):
    """A script failed; ``traceback`` is its traceback text, ``result`` the ScriptResult."""

    def __init__(self, message: str, result: ScriptResult) -> None:
        super().__init__(message)
        self.message = message
        self.result = result
        self.traceback = result.error or ""


@dataclass(frozen=True)
class ScriptOutcome:
    """What to show of a finished run: graph ``graph`` (None: none), then the status line
    ``shown`` or ``not_shown`` (by whether the graph could be shown; None: the graph's own);
    ``error`` to report instead of a graph (the graph on screen and every panel about it
    stay as they were: a failed run's audit is of its own objects, not of the graph drawn)."""

    graph: int | None = None
    shown: str | None = None
    not_shown: str | None = None
    error: BaseException | None = None


def outcome(result: ScriptResult) -> ScriptOutcome:
    """A cancelled run shows what it built up to the cancel; a failed run shows nothing (the
    graphs it built before the error can still be shown); a run that recorded nothing is an
    error; else its last graph (the others are in ``result.graphs``)."""
    last = len(result.graphs) - 1
    if result.cancelled:
        return ScriptOutcome(
            last if result.graphs else None,
            shown=f"{result.summary}: showing what it built until then",
            not_shown=f"{result.summary}, before it built a graph",
        )
    if not result.ok:
        return ScriptOutcome(error=ScriptError(result.summary, result))
    if not result.graphs:
        error = ValueError(
            f"{result.path.name} ran but recorded no graph: it must call autodiff "
            "functions on Variables outside no_grad (and ideally backward)"
        )
        return ScriptOutcome(error=error)
    if result.never_called_backward:
        note = (
            f"{result.path.name} never called backward: showing the forward graph of its "
            "last outputs. Call loss.backward() to see gradients"
        )
        return ScriptOutcome(last, shown=note, not_shown=note)
    return ScriptOutcome(last)


def script_graph(result: ScriptResult | None, index: int) -> PendingGraph:
    """Graph ``index`` of ``result``; ValueError when it has none of that number (or the
    error its trace raised when read)."""
    if result is None or not 0 <= index < len(result.graphs):
        raise ValueError(f"no script graph number {index}")
    graph = result.graphs[index]
    view = result.view(index)
    return PendingGraph(
        view, f"{result.path.name}: {graph.title}", "script", result.path, run=result
    )
