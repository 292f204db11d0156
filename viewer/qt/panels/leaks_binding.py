"""Binds the leak audit to the leak panel: Release graph, the report of what survived, and a
click on a survivor showing its node.

Release forwards to ``Document.release_graph`` (a script was audited when it ended: its report
is shown again); a release that does not apply is answered in the panel and leaves the document
as it was.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets

from viewer.model.document.document import TRACE_SUFFIXES, Document
from viewer.model.scripts.run import GraphUnavailable, ScriptResult
from viewer.qt.graph.scene_binding import SceneBinding
from viewer.qt.panels.leaks import LeakPanel
from viewer.qt.panels.panel_binding import PanelBinding

__all__ = ["LeakBinding"]


class LeakBinding(PanelBinding):
    def __init__(
        self,
        document: Document,
        panel: LeakPanel,
        dock: QtWidgets.QDockWidget,
        scene: SceneBinding,
        status_bar: QtWidgets.QStatusBar,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(document, panel, dock, parent)
        self.status_bar = status_bar
        document.leaks_found.connect(self._on_leaks_found)
        document.graph_loaded.connect(self._on_graph_loaded)
        self.scene_binding = scene
        panel.node_requested.connect(self._show_survivor)

    def release_graph(self) -> Any:
        """Release the expression's objects and audit them (a script was audited when it
        ended: its report is shown again). Returns the LeakReport or None."""
        doc = self.document
        self.dock.show()
        self.dock.raise_()
        if doc.scene is None:
            self.panel.show_message("There is no graph to release: type an expression.")
            return None
        if doc.kind == "script":
            result = doc.script_result
            report = doc.leak_report or (result.leak_report if result is not None else None)
            if report is None:
                error = getattr(result, "leak_error", None) or "the audit did not run"
                self.panel.show_message(f"This script was not audited: {error}.")
                return None
            self._on_leaks_found(report)
            self.status_bar.showMessage(
                f"{doc.path.name if doc.path else 'The script'} was audited when it ended: "
                f"{_count(report)}"
            )
            return report
        if doc.kind == "trace" and doc.path is not None and doc.path.suffix in TRACE_SUFFIXES:
            self.panel.show_message(
                f"{doc.path.name} is a saved trace: it holds copies of the values, no live "
                "objects, so nothing can leak. Open the script that built it (.py) to audit it."
            )
            return None
        report = doc.release_graph()
        if report is None:
            if doc.last_error is not None:
                self.panel.show_message(f"The audit failed: {doc.last_error}")
            else:
                self.panel.show_message("This graph has no recording to audit.")
            return None
        self.status_bar.showMessage(f"Released the graph: {_count(report)}")
        return report

    def script_shown(self, result: ScriptResult, ok: bool) -> None:
        """A script's graph is shown (``ScriptBinding.shown``): what outlived the script is
        said on the status line, and this panel is raised to list it."""
        survivors = getattr(result.leak_report, "survivors", None)
        if ok and survivors:
            self.status_bar.showMessage(
                f"{result.path.name}: {len(survivors)} object(s) survived the end of the script "
                "(red leak badges; see the Leaks panel)"
            )
            self.dock.show()
            self.dock.raise_()

    def _show_survivor(self, node_id: int) -> bool:
        """A survivor's node: of the run's audited trace for a script (its first passes),
        never a node of the same number in a pass recorded on its own."""
        if node_id < 0:  # a torch object (its loss): in no graph's numbering
            return False
        doc = self.document
        result = doc.script_result
        try:  # (read from the run's folder if no graph of it was shown yet)
            audited = result.trace if doc.kind == "script" and result is not None else None
        except GraphUnavailable as e:
            self.status_bar.showMessage(str(e))
            return False
        return self.scene_binding.show_node(node_id, audited)

    def _audited_shown(self) -> bool:
        """Whether the graph shown is of the audited trace (for a script: one of its first
        passes, not one recorded on its own, whose node ids are another trace's)."""
        doc = self.document
        result = doc.script_result
        if doc.kind != "script" or result is None:
            return True
        return result.is_head(doc.trace)

    def _on_leaks_found(self, report: Any) -> None:
        doc = self.document
        scene = doc.scene
        in_graph = None if scene is None else {int(n) for n in scene.node_ids}
        script = doc.kind == "script" and doc.path is not None
        title = doc.path.name if script else doc.title  # type: ignore[union-attr]
        if not self._audited_shown():
            in_graph = set()  # the same numbers name other nodes here
            if not getattr(report, "survivors", None):
                # the audit found nothing in the recording it covered, which is not this
                # pass: no all-clear for a graph that was not audited
                self.panel.show_message(
                    f"The leak audit of {title} found no leaks in the graphs of its recording. "
                    "The graph on screen is a pass recorded on its own: it was not audited."
                )
                return
        when = "the end of the script" if script else "the release"
        self.panel.show_report(report, title, in_graph, when)

    def _on_graph_loaded(self, document: Document) -> None:
        if document.leak_report is None:
            result = document.script_result
            if (
                document.kind == "script"
                and result is not None
                and result.leak_report is not None
                and not self._audited_shown()
            ):
                self._on_leaks_found(result.leak_report)  # listed; their graphs are others
            elif document.kind != "script":
                self.panel.show_message("")
            elif result is None or result.leak_report is None:
                self.panel.show_message("This script's run was not audited.")
            # else: another graph of the same run, flagged from its audit right after this


def _count(report: Any) -> str:
    survivors = getattr(report, "survivors", ()) or ()
    if not survivors:
        return "nothing survived, no leaks"
    return f"{len(survivors)} object(s) survived (red leak badges; see the Leaks panel)"
