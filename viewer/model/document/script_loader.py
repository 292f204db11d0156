"""Scripts into the Document: a run prepared in its worker process (:class:`ScriptProcess`),
started by the UI once the user confirmed, and its result shown on the GUI thread: the last
graph it built (the others on demand), or its error with the previous graph left on screen.

The run in progress and the last result are the document's state (``script_run``,
``script_result``); this module only moves runs and results in and out of it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from viewer.model.scripts.process import ScriptProcess
from viewer.model.scripts.run import ScriptResult

if TYPE_CHECKING:
    from pathlib import Path

    from viewer.model.document.document import Document

__all__ = ["ScriptError", "ScriptLoader"]


class ScriptError(Exception):
    """A script failed; ``traceback`` is its traceback text, ``result`` the ScriptResult."""

    def __init__(self, message: str, result: ScriptResult) -> None:
        super().__init__(message)
        self.message = message
        self.result = result
        self.traceback = result.error or ""


class ScriptLoader:
    """The script runs of one Document."""

    def __init__(self, document: Document) -> None:
        self.document = document

    def prepare(self, path: str | os.PathLike[str], argv: list[str] | None = None) -> ScriptProcess:
        """A run of ``path`` in a worker process (:class:`ScriptProcess`), registered as the
        document's run. The UI confirms, then starts it (``run.start()``) and, on the GUI
        thread, passes ``run.result`` to :meth:`apply_result`."""
        doc = self.document
        run = ScriptProcess(
            path,
            argv,
            max_array_size=doc.max_array_size,
            memory_mb=doc.script_memory_mb,
            max_passes=doc.script_max_passes,
        )
        doc.script_run = run
        run.finished.connect(self._ran)
        doc.script_started.emit(run)
        doc.status_changed.emit(f"Ready to run {run.path.name}")
        return run

    def open(self, path: Path) -> ScriptProcess | bool:
        """:meth:`prepare` ``path``, unless a run is in progress: then False, and
        ``error_raised`` says which run to wait for."""
        doc = self.document
        if doc.busy_error() is not None:
            # One run at a time: a second one's result would land on the first's, and a typed
            # program meanwhile would compete with the run for the machine.
            if doc.script_run is not None:
                running = doc.script_run.path.name
            else:
                running = "a script" if doc.expression_job is None else "the typed program"
            return doc.fail(
                RuntimeError(
                    f"cannot run {path.name} while {running} is running: wait for it or "
                    "cancel it first"
                )
            )
        return self.prepare(path)

    def run(self, path: str | os.PathLike[str], argv: list[str] | None = None) -> bool:
        """Run a script (in its worker process, as the app does) and show its graphs; this
        thread waits for it."""
        run = self.prepare(path, argv)
        return self.apply_result(run.run())

    def cancel(self) -> None:
        run = self.document.script_run  # once: the run may end (and go) while it is cancelled
        if run is not None:
            run.cancel()
            self.document.status_changed.emit(f"Cancelling {run.path.name}…")

    def apply_result(self, result: ScriptResult) -> bool:
        """Show what a finished script built (call on the GUI thread). Loads its last graph;
        the others are in ``script_result.graphs`` (see :meth:`show_graph`).

        A cancelled run shows what it built up to the cancel (True when there was a graph);
        a failed run keeps the previous graph and reports the error (False), and the graphs
        it built before the error can still be shown with :meth:`show_graph`."""
        doc = self.document
        if doc.script_run is not None and doc.script_run.result is result:
            doc.script_run = None
        doc.script_result = result
        doc.script_finished.emit(result)
        if result.cancelled:
            shown = bool(result.graphs) and self.show_graph(len(result.graphs) - 1)
            if shown:
                doc.status_changed.emit(f"{result.summary}: showing what it built until then")
            else:
                doc.status_changed.emit(f"{result.summary}, before it built a graph")
            return shown
        if not result.ok:
            doc.fail(ScriptError(result.summary, result))
            return False
        if not result.graphs:
            if result.leak_report is not None:
                doc.flag_leaks(result.leak_report)
            return doc.fail(
                ValueError(
                    f"{result.path.name} ran but recorded no graph: it must call autodiff "
                    "functions on Variables outside no_grad (and ideally backward)"
                )
            )
        self.show_graph(len(result.graphs) - 1)
        # (its leaks are flagged by Document.apply_layout, on the new scene, once installed)
        if result.graphs[0].backward_pass < 0:
            doc.status_changed.emit(
                f"{result.path.name} never called backward: showing the forward graph of its "
                "last outputs. Call loss.backward() to see gradients"
            )
        return True

    def show_graph(self, index: int) -> bool:
        """Show graph ``index`` of the last script result."""
        doc = self.document
        result = doc.script_result
        if result is None or not 0 <= index < len(result.graphs):
            return doc.fail(ValueError(f"no script graph number {index}"))
        graph = result.graphs[index]
        try:
            view = result.view(index)
        except Exception as e:  # a broken trace must not take the document down
            return doc.fail(e)
        doc.load_graph(view, f"{result.path.name}: {graph.title}", "script", result.path)
        return True

    def _ran(self, result: ScriptResult) -> None:
        # Emitted on the script's thread: only bookkeeping here, no view work.
        doc = self.document
        if doc.script_run is not None and doc.script_run.result is result:
            doc.script_run = None
