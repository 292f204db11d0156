"""Binds a script's run to the script panel: its output and stages while it runs, Cancel, what
it built when it ends, and the choice of another of its graphs.

A :class:`~viewer.model.scripts.process.ScriptProcess`'s signals fire on the script's
supervising thread; :meth:`ScriptBinding.attach` connects them to an
:class:`~viewer.qt.runners.jobs.Outbox` (plain data: that thread reaches nothing of Qt), and a timer
on the GUI thread emits what it holds as the binding's own Qt signals; the result is applied to
the Document there.
"""

from __future__ import annotations

import functools

from PySide6 import QtCore, QtWidgets

from viewer.model.document.document import Document
from viewer.model.scripts.pass_sampling import filter_entries
from viewer.model.scripts.process import ScriptProcess
from viewer.model.scripts.run import ScriptResult
from viewer.qt.panels.panel_binding import PanelBinding
from viewer.qt.panels.script import ScriptPanel
from viewer.qt.runners.jobs import POLL_MS, Outbox

__all__ = ["ScriptBinding"]


class ScriptBinding(PanelBinding):
    """Lives on the GUI thread; ``output``, ``stage`` and ``finished`` carry what the script's
    thread reported, emitted on the GUI thread."""

    output = QtCore.Signal(str)
    stage = QtCore.Signal(str)  # what the run does after the script ended
    finished = QtCore.Signal(object)  # the ScriptResult
    shown = QtCore.Signal(object, bool)  # the ScriptResult applied; whether its graph is shown

    def __init__(
        self,
        document: Document,
        panel: ScriptPanel,
        dock: QtWidgets.QDockWidget,
        status_bar: QtWidgets.QStatusBar,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(document, panel, dock, parent)
        self.status_bar = status_bar
        self._outbox = Outbox()  # the running script's reports (one script runs at a time)
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._take_reports)
        panel.cancel_requested.connect(document.cancel_script)
        # the run whose graphs the list holds: the one on screen, or a failed run's graphs
        # built before its error (offered while the previous graph stays on screen)
        self._listed: ScriptResult | None = None
        panel.graph_chosen.connect(self._show_graph)
        panel.filter_changed.connect(self._on_filter_changed)
        self.output.connect(panel.append_output)
        self.stage.connect(panel.show_stage)
        self.finished.connect(self._on_finished)
        document.graph_loaded.connect(self._on_graph_loaded)
        document.problems_changed.connect(self._on_problems_changed)

    def attach(self, run: ScriptProcess) -> None:
        """Show ``run`` as running in the panel and carry its signals over (the caller starts
        it)."""
        # The model holds these callables strongly; they die with the run, maybe on its
        # thread: they hold the outbox only.
        outbox = self._outbox = Outbox()
        run.output_written.connect(functools.partial(outbox.post, "output"))
        run.stage_changed.connect(functools.partial(outbox.post, "stage"))
        run.finished.connect(functools.partial(outbox.post, "finished"))
        self._timer.start()
        self.panel.started(run.path.name)
        self._raise_dock()

    def _take_reports(self) -> None:
        for kind, value in self._outbox.take():
            if kind == "output":
                self.output.emit(value)
            elif kind == "stage":
                self.stage.emit(value)
            else:
                self._timer.stop()
                self.finished.emit(value)
                return

    def show_error(self, error_text: str) -> None:
        self.panel.append_error(error_text)

    def _raise_dock(self) -> None:
        self.dock.show()
        self.dock.raise_()

    # ---------------------------------------------------------------- the run ended
    def _show_graph(self, index: int) -> None:
        self.document.show_script_graph(index, self._listed)

    def _on_finished(self, result: ScriptResult) -> None:
        # A failure's traceback reaches the panel once, through error_raised (the window's).
        doc = self.document
        before = doc.title if doc.scene is not None else ""
        ok = doc.apply_script_result(result)
        titles = [g.title for g in result.graphs]
        summary = result.summary
        if not ok and before:
            summary += f". The graph on screen is still the one before: {before}"
        on_screen = doc.script_result
        if ok or titles or on_screen is None:
            # ok: its last graph is on screen (or being laid out); else the previous graph
            # stays and the list offers the graphs a failed run built before its error
            self._listed = result
            shown = len(titles) - 1 if ok else -1
            self.panel.finished(summary, titles, shown, result.sampling)
        else:
            # a failed run that built nothing: the list stays the on-screen run's
            self._listed = on_screen
            on_screen_titles = [g.title for g in on_screen.graphs]
            index = on_screen.graph_index(doc.trace)
            self.panel.finished(summary, on_screen_titles, index, on_screen.sampling)
        if not result.ok and not result.cancelled:
            self._raise_dock()
        if ok and len(titles) > 1:
            self.status_bar.showMessage(
                f"{result.summary}: showing the last; choose another in the Script panel"
            )
        if ok and result.never_called_backward:
            self.panel.append_error(
                f"Note: {result.path.name} never called backward(), so the graph shows its "
                "forward pass only, without gradients. Call loss.backward() to see them."
            )
        self.shown.emit(result, ok)

    def _on_graph_loaded(self, document: Document) -> None:
        if document.scene is None:
            return
        if document.kind != "script" and document.script_run is None:
            self.panel.clear()  # the last script's output belongs to no graph shown
            self._listed = None  # nor its graphs: its run (and the run's folder) may go
        result = document.script_result
        if document.kind == "script" and result is not None:
            # the graph may have been chosen elsewhere (a leak in another graph)
            index = result.graph_index(document.trace)
            if self._listed is not result:  # the list held another run's graphs
                self._listed = result
                titles = [g.title for g in result.graphs]
                self.panel.finished(result.summary, titles, index, result.sampling)
            elif index >= 0:
                self.panel.select_graph(index)

    def _on_filter_changed(self, text: str) -> None:
        doc = self.document
        result = doc.script_result
        graphs = result.graphs if result is not None else []
        kinds = doc.problem_kinds() if result is not None else {}
        self.panel.show_entries(filter_entries(graphs, text, kinds))

    def _on_problems_changed(self, document: Document) -> None:
        # a filter by kind lists what the run's report now says
        text = self.panel.filter.text()
        if text and self._listed is document.script_result:
            self._on_filter_changed(text)
