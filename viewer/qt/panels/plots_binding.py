"""Decides what the plot panel shows and when it is computed.

Only the visible tab of a visible panel is computed, and only when its input changed: the
function plot when the program, a leaf value or the chosen leaf changes; the training curves
once per script run or trace; the histograms when the selection or the step changes.

The training curves mark the pass whose graph is on screen, whichever way it was opened; a
click on them opens the pass clicked, or the nearest one whose graph the run kept, as the
Script panel's graph list would, and the status line says which.

The function plot re-runs the expression about 100 times (~0.2 s). It is computed in slices
between events on the GUI thread (a zero-interval timer). The engine's observers and
``Config`` are each thread's own, so this work is never recorded into a graph a worker
thread builds meanwhile, nor does it switch that work. A newer request replaces a
computation under way.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from PySide6 import QtCore, QtWidgets

from viewer.model.document.document import Document
from viewer.model.panels import plots
from viewer.qt.panels.panel_binding import PanelBinding
from viewer.qt.panels.plots import PlotPanel

__all__ = ["PlotBinding"]

CHUNK = 8  # points per slice: ~15 ms of engine work between two looks at the event queue


class PlotBinding(PanelBinding):
    function_plotted = QtCore.Signal(object)  # the FunctionPlot just shown (tests wait on it)

    def __init__(
        self,
        document: Document,
        panel: PlotPanel,
        dock: QtWidgets.QDockWidget | None = None,
        status_bar: QtWidgets.QStatusBar | None = None,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(document, panel, dock, parent)
        self.status_bar = status_bar
        self.leaf: str | None = None  # chosen by the user; None: the first scalar leaf
        self._function_key: Any = None
        self._training_key: Any = None
        self._job: Iterator[Any] | None = None
        self._job_key: Any = None
        self._done_points = 0
        self._leaf_computing: str | None = None
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._work)
        self._last_kind = ""
        document.graph_loaded.connect(self._on_graph_loaded)
        document.script_finished.connect(self._on_script_finished)
        document.playback.step_changed.connect(self._on_step_changed)
        document.selection_changed.connect(self._on_selection_changed)
        panel.leaf_chosen.connect(self.choose_leaf)
        panel.pass_clicked.connect(self.open_pass)
        panel.tab_changed.connect(lambda _name: self.refresh())
        if dock is not None:
            dock.visibilityChanged.connect(lambda visible: visible and self.refresh())

    # ---------------------------------------------------------------- state
    @property
    def busy(self) -> bool:
        """A function plot is being computed."""
        return self._job is not None

    def visible(self) -> bool:
        if self.dock is not None:
            return self.dock.isVisible() and not self.dock.visibleRegion().isEmpty()
        return self.panel.isVisible()

    def choose_leaf(self, name: str) -> None:
        self.leaf = name or None
        self.refresh()

    def refresh(self, force: bool = False) -> None:
        """Compute the visible tab if its input changed (``force``: even when hidden)."""
        if not force and not self.visible():
            return
        tab = self.panel.current_tab
        if tab == "function":
            self._refresh_function()
        elif tab == "training":
            self._refresh_training()
        else:
            self._refresh_histograms()

    # ---------------------------------------------------------------- model events
    def _on_graph_loaded(self, document: Document) -> None:
        if document.kind != self._last_kind:
            self._last_kind = document.kind
            if document.kind == "expression":
                self.panel.set_current_tab("function")
            elif document.kind == "script":
                self.panel.set_current_tab("training")
        self.panel.show_pass(plots.document_shown_pass(document))
        self.refresh()

    def _on_script_finished(self, _result: Any) -> None:
        self._training_key = None
        self.panel.show_pass(plots.document_shown_pass(self.document))
        self.refresh()

    def _on_step_changed(self, _index: int) -> None:
        if self.panel.current_tab == "histogram":
            self.refresh()

    def _on_selection_changed(self, _node: Any) -> None:
        if self.panel.current_tab == "histogram":
            self.refresh()

    # ---------------------------------------------------------------- f, df/dx, d2f/dx2
    def _script_running(self) -> bool:
        run = self.document.script_run
        return run is not None and run.running

    def _choose_leaf(self) -> str | None:
        rows = self.document.leaf_rows() if self.document.kind == "expression" else []
        names = [r.name for r in rows]
        leaf = self.leaf if self.leaf in names else None
        if leaf is None:
            scalars = [r.name for r in rows if r.value.size == 1]
            leaf = scalars[0] if scalars else (names[0] if names else None)
        self.panel.set_leaves(names, leaf)
        return leaf

    def _refresh_function(self) -> None:
        doc = self.document
        if self._script_running():
            self._wait_for_script()
            return
        leaf = self._choose_leaf()
        evaluation = doc.evaluation if doc.kind == "expression" else None
        values = getattr(evaluation, "values", None) or {}
        key = (
            doc.kind,
            doc.source if doc.kind == "expression" else id(doc.trace),
            leaf,
            tuple((k, v.tobytes(), v.shape) for k, v in sorted(_arrays(values).items())),
        )
        if key == self._function_key or (self._job is not None and key == self._job_key):
            return
        self._stop()
        try:
            job = plots.iter_document_function_plot(doc, leaf, chunk=CHUNK)
        except ValueError as e:
            self._function_key = key
            self.panel.show_function_message(_sentence(str(e)))
            return
        self._job, self._job_key = job, key
        self._done_points = 0
        self._leaf_computing = leaf
        self.panel.show_function_progress(f"Computing f, f' and f'' along {leaf}…")
        self._timer.start()

    def _work(self) -> None:
        job = self._job
        if job is None:
            self._timer.stop()
            return
        if self._script_running():  # a script started meanwhile: its recorder would see us
            self._wait_for_script()  # says why nothing is computed rather than "Computing…"
            return
        try:
            item = next(job)
        except StopIteration:
            self._stop()
            return
        except Exception as e:  # a plot must never take the window down
            key = self._job_key
            self._stop()
            self._function_key = key
            self.panel.show_function_message(f"The plot failed: {e}")
            return
        if item is None:
            self._done_points += CHUNK
            self.panel.show_function_progress(
                f"Computing f, f' and f'' along {self._leaf_computing}… "
                f"({self._done_points} of {plots.DEFAULT_POINTS} points)"
            )
            return
        key = self._job_key
        self._stop()
        self._function_key = key
        self.panel.show_function_plot(item)
        self.function_plotted.emit(item)

    def _wait_for_script(self) -> None:
        self._stop()
        self._function_key = None
        self.panel.show_function_message(
            "A script is running: the plot is drawn once it ends (the engine records the "
            "script meanwhile)."
        )

    def _stop(self) -> None:
        self._timer.stop()
        self._job = None
        self._job_key = None

    def wait(self, timeout_ms: int = 30_000) -> bool:
        """Finish a computation under way now (tests, exports)."""
        timer = QtCore.QElapsedTimer()
        timer.start()
        while self._job is not None and timer.elapsed() < timeout_ms:
            self._work()
        return self._job is None

    # ---------------------------------------------------------------- training curves
    def _refresh_training(self) -> None:
        doc = self.document
        if self._script_running():
            self._training_key = None
            self.panel.show_training_message(
                "A script is running: its loss curve is drawn once it ends."
            )
            return
        result = doc.script_result if doc.kind == "script" else None
        key = (doc.kind, id(result) if result is not None else id(doc.trace))
        if key == self._training_key:
            return
        self._training_key = key
        if doc.kind == "expression":
            self.panel.show_training_message(
                "Training curves are drawn for scripts that call backward() once per step "
                "(open linear_regression.py or sine_regression.py from the Examples). A typed "
                "expression has one backward pass: see the f(x) tab."
            )
            return
        QtWidgets.QApplication.setOverrideCursor(QtCore.Qt.CursorShape.WaitCursor)
        try:
            curves = plots.document_training_curves(doc)
        except ValueError as e:
            self.panel.show_training_message(_sentence(str(e)))
            return
        finally:
            QtWidgets.QApplication.restoreOverrideCursor()
        self.panel.show_training(curves)

    def open_pass(self, number: int) -> bool:
        """Show the graph of pass ``number`` (from 0), or of the kept pass nearest it; the
        status line says which. False when the document has no pass's graph to show."""
        doc = self.document
        result = doc.script_result if doc.kind == "script" else None
        choice = None if result is None else plots.nearest_kept_pass(result, number)
        if choice is None:
            self._say(
                f"Backward #{number + 1} has no graph of its own to open: the graph shown "
                "holds every pass"
                if doc.trace is not None
                else "There is no graph to open"
            )
            return False
        on_screen = choice.index == result.graph_index(doc.trace)
        if not on_screen and not doc.show_script_graph(choice.index):
            return False  # the Document reported why
        self._say(choice.note(on_screen))
        return True

    def _say(self, text: str) -> None:
        if self.status_bar is not None:
            self.status_bar.showMessage(text)

    # ---------------------------------------------------------------- histograms
    def _refresh_histograms(self) -> None:
        doc = self.document
        if doc.selection is None or doc.trace is None:
            self.panel.show_histogram_message("")
            return
        try:
            data = plots.document_histograms(doc)
        except (ValueError, KeyError, IndexError) as e:
            self.panel.show_histogram_message(_sentence(str(e)))
            return
        if data is None:
            self.panel.show_histogram_message("")
        else:
            self.panel.show_histograms(data)


def _arrays(values: dict[str, Any]) -> dict[str, Any]:
    return {k: np.asarray(v) for k, v in values.items()}


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?", ")")) else text + "."
