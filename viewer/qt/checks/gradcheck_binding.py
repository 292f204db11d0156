"""Binds the gradient check to its panel: Check gradients, the report, and a click on a row
showing its node.

The check forwards to ``gradient_checks.check_document``, which colours the scene through
``Document.show_gradient_check``; the binding keeps the document's scripts sampling
(``gradient_checks.watch_scripts``) so that a script's Functions can be checked after it ran, and
says so when the graph changes after a check.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets

from viewer.model.document import gradient_checks
from viewer.model.document.document import Document
from viewer.qt.checks.gradcheck import GradCheckPanel
from viewer.qt.graph.scene_binding import SceneBinding
from viewer.qt.panels.panel_binding import PanelBinding

__all__ = ["GradCheckBinding"]


class GradCheckBinding(PanelBinding):
    def __init__(
        self,
        document: Document,
        panel: GradCheckPanel,
        dock: QtWidgets.QDockWidget,
        scene: SceneBinding,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(document, panel, dock, parent)
        self._checked_scene: Any = None
        self.last_check: Any = None
        # the document's scripts keep samples for a later check
        self.script_sampling = gradient_checks.watch_scripts(document)
        document.graph_loaded.connect(self._on_graph_loaded)
        panel.node_requested.connect(scene.show_node)

    def check_gradients(self) -> Any:
        """Run the gradient check on what the document shows; the report or None."""
        doc = self.document
        self.dock.show()
        self.dock.raise_()
        QtWidgets.QApplication.setOverrideCursor(QtCore.Qt.CursorShape.WaitCursor)
        try:
            report = gradient_checks.check_document(doc)
        finally:
            QtWidgets.QApplication.restoreOverrideCursor()
        if report is None:
            self.last_check = None
            error = doc.last_error
            message = str(error) if error is not None else "the check did not run"
            self.panel.show_message(f"No check: {message}.")
            return None
        self.last_check = report
        self._checked_scene = doc.scene
        self.panel.show_report(report)
        return report

    def _on_graph_loaded(self, document: Document) -> None:
        if self.last_check is not None and document.scene is not self._checked_scene:
            self.last_check = None
            self.panel.show_message(
                "The graph changed since the last check: press Check gradients to check it."
            )
