"""Runs a typed program that may take a while off the GUI thread, with a Cancel button.

The Document hands :meth:`ExpressionRunner.start` (its ``expression_runner``) every
:class:`~viewer.model.document.expression_loader.ExpressionJob` whose program is not
``Program.quick()``
(nested ``grad()``, many statements, big leaves): the program runs in a
:class:`~viewer.qt.runners.jobs.Job`, the window keeps responding, and Cancel (or ``Esc``) stops the
run at its next engine operation. The result goes back to the Document on the GUI thread; until
then the previous graph stays on screen.
"""

from __future__ import annotations

import functools
from typing import Any

from PySide6 import QtCore

from viewer.model.document.document import Document, ExpressionJob
from viewer.qt.runners.jobs import JobRunner, Progress, job_dialog

__all__ = ["ExpressionRunner", "run_program"]


def run_program(expression_job: ExpressionJob, _progress: Progress, _should_cancel: Any) -> None:
    """The worker's part: the job holds the program, its values and its budget (Cancel
    reaches the run through the budget), and keeps what the run made."""
    expression_job.run()


class ExpressionRunner(JobRunner):
    finished = QtCore.Signal(bool)  # whether the program's graph is on screen

    document: Document

    def start(self, expression_job: ExpressionJob) -> None:
        job = self._new_job(functools.partial(run_program, expression_job), "program")
        if self.show_dialog and self._window is not None:
            dialog = job_dialog(
                self._window, "Running the program…", "Program", "programProgress", 0
            )
            dialog.canceled.connect(self.cancel)
            self.dialog = dialog
        job.finished.connect(lambda: self._done(expression_job))
        job.start()

    def cancel(self) -> None:
        """Stop the program at its next operation (its result then shows as cancelled)."""
        self.document.cancel_expression()

    def _done(self, expression_job: ExpressionJob) -> None:
        self._close_dialog()
        self.job = None
        self.finished.emit(self.document.apply_expression(expression_job))
