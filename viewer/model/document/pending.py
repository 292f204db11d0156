"""What a loader returns: a graph to show, which the Document lays out and installs.

A loader never touches the Document: it reads a file, runs a program or picks a script's
graph, and returns a :class:`PendingGraph` (or raises); the Document keeps the graph on
screen until the pending one is laid out, then installs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autodiff.trace import TraceReader
from viewer.model.expression.program import Evaluation, Program
from viewer.model.scripts.run import ScriptResult

__all__ = ["PendingGraph"]


@dataclass
class PendingGraph:
    """A graph of ``kind`` ('expression', 'trace' or 'script') waiting to be shown. A typed
    program's graph brings its ``evaluation`` and ``program``; ``keep_step`` (a re-run of the
    same program) keeps the playback position and the selection; ``note`` is a status line
    to show once it is loaded (None: the usual summary). A script's graph brings ``run``,
    its ScriptResult: the document takes the run as its own only when the graph is on
    screen, so the panels never describe a run whose graph is not drawn."""

    trace: TraceReader
    title: str
    kind: str
    path: Path | None = None
    evaluation: Evaluation | None = None
    program: Program | None = None
    keep_step: bool = False
    note: str | None = None
    run: ScriptResult | None = None
