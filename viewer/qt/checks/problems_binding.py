"""Binds the Document's problems to the Problems panel, and a chosen problem to the graph.

The panel shows the Document's :meth:`~viewer.model.document.document.Document.problems` as
:func:`~viewer.model.checks.problem_list.problem_rows` orders them, under the report's summary
(``Document.problem_summary``), again each time ``problems_changed`` fires. A problem chosen
(a click, Enter) shows its graph (a script's pass: the graph list follows), moves playback to
its step and selects its first node, centred in the view (its nodes carry the problem's mark).
A graph laid out on the runner arrives later: the step and node are applied once it is shown.
"""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from viewer.model.checks.problem_list import problem_rows, report_lines
from viewer.model.checks.problems import Problem
from viewer.model.document.document import Document
from viewer.qt.checks.problems import ProblemsPanel
from viewer.qt.graph.scene_binding import SceneBinding
from viewer.qt.panels.panel_binding import PanelBinding

__all__ = ["ProblemsBinding"]

TITLE = "Problems"


class ProblemsBinding(PanelBinding):
    def __init__(
        self,
        document: Document,
        panel: ProblemsPanel,
        dock: QtWidgets.QDockWidget | None,
        scene: SceneBinding,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(document, panel, dock, parent)
        self.scene = scene
        self._waiting: Problem | None = None  # chosen, its graph still being laid out
        self._raised_for: object | None = None  # the report whose problems brought it forward
        document.problems_changed.connect(self._on_problems_changed)
        document.graph_loaded.connect(self._on_graph_loaded)
        panel.problem_chosen.connect(self.go_to)
        self.refresh()

    def refresh(self) -> None:
        doc = self.document
        summary_report = doc.problem_summary()
        rows = problem_rows(doc.problems(), doc.shown_graph(), doc.problem_titles())
        summary, details = report_lines(summary_report)
        details = f"{details} {doc.problem_note}".strip()
        if doc.problems_running:
            # no verdict yet: what the graph's own marks found so far, never "no problems"
            found = [r for r in rows if r.severity != "info"]
            so_far = f" ({len(found)} found so far)" if found else ""
            summary = f"Looking for problems…{so_far}"
            details = "The detectors are still running; the list fills in when they end."
        self.panel.show_rows(rows, summary, details)
        if self.dock is not None:
            worst = [r for r in rows if r.severity != "info"]
            self.dock.setWindowTitle(f"{TITLE} ({len(worst)})" if worst else TITLE)
            report = doc.problem_report
            if worst and report is not None and report is not self._raised_for:
                # a source that opens with a bug shows it: the panel comes to the front of
                # its tab group once per report (a dock the user closed stays closed)
                self._raised_for = report
                if self.dock.isVisible():
                    self.dock.raise_()

    def _on_problems_changed(self, _document: Document) -> None:
        self.refresh()

    # ---------------------------------------------------------------- a problem chosen
    def go_to(self, problem: Problem) -> bool:
        """Show ``problem``: its graph, its step, its nodes; False when its graph is not
        there to show."""
        doc = self.document
        graph = problem.graph
        if graph is not None and graph != doc.shown_graph():
            if doc.kind != "script" or doc.script_result is None:
                return False
            self._waiting = problem
            if not doc.show_script_graph(graph):
                self._waiting = None
                return False
            if self._waiting is None or doc.layout_pending:
                return True  # shown (_on_graph_loaded), or once it is laid out
            self._waiting = None
        self._show_in_graph(problem)
        return True

    def _on_graph_loaded(self, document: Document) -> None:
        waiting, self._waiting = self._waiting, None
        if waiting is not None and document.shown_graph() == waiting.graph:
            self._show_in_graph(waiting)

    def _show_in_graph(self, problem: Problem) -> None:
        doc = self.document
        if problem.step is not None and doc.playback.n_steps:
            doc.playback.pause()
            doc.playback.seek(problem.step)
        scene = doc.scene
        for nid in problem.nodes:
            if scene is not None and scene.index_of(nid) < 0:
                doc.reveal(nid)  # inside a collapsed module: open it
            if doc.scene is not None and doc.scene.index_of(nid) >= 0:
                self.scene.select_node_id(nid)
                return
