"""Wires the debugging tools to the Document: the leak audit and its panel, the gradient check
and its panel, the jumps to NaN/Inf, and the exports of the graph as data.

Every action forwards to a model call (``Document.release_graph``,
``gradcheck.check_document``, ``PlaybackState.first_nonfinite``, ``Document.export_data``) and
shows what came back; a request that does not apply is answered with a message and leaves
the document as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtWidgets

from viewer.model import gradcheck
from viewer.model.document import TRACE_SUFFIXES, Document
from viewer.qt.gradcheck_panel import GradCheckPanel
from viewer.qt.leak_panel import LeakPanel

__all__ = ["DebugBinding"]


class DebugBinding(QtCore.QObject):
    def __init__(
        self,
        document: Document,
        leak_panel: LeakPanel,
        gradcheck_panel: GradCheckPanel,
        select_node: Callable[[int], None],
        report: Callable[[str], None],
        raise_dock: Callable[[str], None],
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.leak_panel = leak_panel
        self.gradcheck_panel = gradcheck_panel
        self._select_node = select_node
        self._report = report  # a status-bar line
        self._raise_dock = raise_dock
        self._checked_scene: Any = None
        self.last_check: Any = None
        # the document's scripts keep samples for a later check
        self.script_sampling = gradcheck.watch_scripts(document)
        document.leaks_found.connect(self._on_leaks_found)
        document.graph_loaded.connect(self._on_graph_loaded)
        leak_panel.node_requested.connect(self.show_node)
        gradcheck_panel.node_requested.connect(self.show_node)

    # ---------------------------------------------------------------- leaks
    def release_graph(self) -> Any:
        """Release the expression's objects and audit them (a script was audited when it
        ended: its report is shown again). Returns the LeakReport or None."""
        doc = self.document
        self._raise_dock("leakPanel")
        if doc.scene is None:
            self.leak_panel.show_message("There is no graph to release: type an expression.")
            return None
        if doc.kind == "script":
            result = doc.script_result
            report = doc.leak_report or (result.leak_report if result is not None else None)
            if report is None:
                error = getattr(result, "leak_error", None) or "the audit did not run"
                self.leak_panel.show_message(f"This script was not audited: {error}.")
                return None
            self._on_leaks_found(report)
            self._report(
                f"{doc.path.name if doc.path else 'The script'} was audited when it ended: "
                f"{_count(report)}"
            )
            return report
        if doc.kind == "trace" and doc.path is not None and doc.path.suffix in TRACE_SUFFIXES:
            self.leak_panel.show_message(
                f"{doc.path.name} is a saved trace: it holds copies of the values, no live "
                "objects, so nothing can leak. Open the script that built it (.py) to audit it."
            )
            return None
        report = doc.release_graph()
        if report is None:
            if doc.last_error is not None:
                self.leak_panel.show_message(f"The audit failed: {doc.last_error}")
            else:
                self.leak_panel.show_message("This graph has no recording to audit.")
            return None
        self._report(f"Released the graph: {_count(report)}")
        return report

    def _on_leaks_found(self, report: Any) -> None:
        doc = self.document
        scene = doc.scene
        in_graph = None if scene is None else {int(n) for n in scene.node_ids}
        script = doc.kind == "script" and doc.path is not None
        title = doc.path.name if script else doc.title  # type: ignore[union-attr]
        when = "the end of the script" if script else "the release"
        self.leak_panel.show_report(report, title, in_graph, when)

    def _on_graph_loaded(self, document: Document) -> None:
        if document.leak_report is None:
            result = document.script_result
            if document.kind != "script":
                self.leak_panel.show_message("")
            elif result is None or result.leak_report is None:
                self.leak_panel.show_message("This script's run was not audited.")
            # else: another graph of the same run, flagged from its audit right after this
        if self.last_check is not None and document.scene is not self._checked_scene:
            self.last_check = None
            self.gradcheck_panel.show_message(
                "The graph changed since the last check: press Check gradients to check it."
            )

    # ---------------------------------------------------------------- gradient check
    def check_gradients(self) -> Any:
        """Run the gradient check on what the document shows; the report or None."""
        doc = self.document
        self._raise_dock("gradCheckPanel")
        QtWidgets.QApplication.setOverrideCursor(QtCore.Qt.CursorShape.WaitCursor)
        try:
            report = gradcheck.check_document(doc)
        finally:
            QtWidgets.QApplication.restoreOverrideCursor()
        if report is None:
            self.last_check = None
            error = doc.last_error
            message = str(error) if error is not None else "the check did not run"
            self.gradcheck_panel.show_message(f"No check: {message}.")
            return None
        self.last_check = report
        self._checked_scene = doc.scene
        self.gradcheck_panel.show_report(report)
        return report

    # ---------------------------------------------------------------- NaN / Inf
    def first_nonfinite(self) -> int | None:
        return self._jump_nonfinite(self.document.playback.first_nonfinite)

    def next_nonfinite(self) -> int | None:
        return self._jump_nonfinite(self.document.playback.next_nonfinite)

    def _jump_nonfinite(self, jump: Callable[[], int | None]) -> int | None:
        playback = self.document.playback
        if self.document.scene is None:
            self._report("There is no graph: type an expression or open a file")
            return None
        if not playback.nonfinite_steps:
            self._report("No step produced NaN or Inf: every value and gradient is finite")
            return None
        index = jump()
        if index is None:
            self._report("No later step produced NaN or Inf (Jump to First NaN/Inf goes back)")
            return None
        step = playback.current_step
        if step is not None:
            self.show_node(int(step.function))
            first = self.document.trace.first_nonfinite()
            flagged = first is not None and first.function == step.function
            where = (
                "it is the first, flagged on the graph"
                if flagged
                else "the first one is the Function with the NaN/Inf badge"
            )
            self._report(
                f"Step {index + 1}/{playback.n_steps}: {step.op} ({step.phase}) produced NaN "
                f"or Inf; {where}"
            )
        return index

    # ---------------------------------------------------------------- exports
    def export_data(self, path: str | Path) -> bool:
        """The graph as DOT or GraphML, or the trace as JSON (by the suffix)."""
        return self.document.export_data(path)

    # ---------------------------------------------------------------- selection
    def show_node(self, node_id: int) -> bool:
        """Select ``node_id`` and centre the view on it. A script's survivor in another of
        its graphs switches to that graph first."""
        doc = self.document
        scene = doc.scene
        if scene is None:
            return False
        if scene.index_of(node_id) < 0 and not self._show_graph_with(node_id):
            self._report(f"Node #{node_id} is not in the graph shown")
            return False
        self._select_node(int(node_id))
        return True

    def _show_graph_with(self, node_id: int) -> bool:
        doc = self.document
        result = doc.script_result
        if doc.kind != "script" or result is None:
            return False
        for index in range(len(result.graphs)):
            try:
                view = result.view(index)
            except Exception:  # a broken graph: look at the others
                continue
            if node_id in view.graph:
                doc.show_script_graph(index)
                return doc.scene is not None and doc.scene.index_of(node_id) >= 0
        return False


def _count(report: Any) -> str:
    survivors = getattr(report, "survivors", ()) or ()
    if not survivors:
        return "nothing survived, no leaks"
    return f"{len(survivors)} object(s) survived (red leak badges; see the Leaks panel)"
