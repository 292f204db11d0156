"""The Document's runner in the app: its work on worker threads, with a progress dialog.

The Document names the work (:class:`~viewer.model.document.work.Work`: a big graph's layout, a
slow typed program) and handles its outcome; :class:`ThreadRunner` only supplies the threads.
Each work runs on a :class:`~viewer.qt.runners.jobs.Job`, one of each kind at a time (a new
layout replaces the one still running), with a window-modal progress dialog whose Cancel does
what the work says. The outcome goes back to ``work.finish`` on the GUI thread; until then the
previous graph stays on screen and the window keeps responding.
"""

from __future__ import annotations

import functools

from PySide6 import QtCore, QtWidgets

from viewer.model.document.work import Outcome, Work
from viewer.qt.runners.jobs import Job, close_dialog, job_dialog

__all__ = ["ThreadRunner"]


class ThreadRunner(QtCore.QObject):
    """Runs :class:`~viewer.model.document.work.Work` on worker threads (the
    :class:`~viewer.model.document.work.Runner` the window gives its Document)."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._window = parent
        self.jobs: dict[str, Job] = {}  # the job running for each kind of work
        self._works: dict[str, Work] = {}
        self._dialogs: dict[str, QtWidgets.QProgressDialog] = {}
        self.show_dialog = True

    @property
    def running(self) -> bool:
        """Whether any work runs."""
        return any(not job.done for job in self.jobs.values())

    def submit(self, work: Work) -> None:
        self.cancel(work.kind)
        self._forget(work.kind)
        # The worker gets the function and its arguments only: never the Work, whose
        # finish and cancel are the Document's (which reaches the views).
        job = Job(functools.partial(work.function, *work.args), name=work.kind, parent=self)
        job.finished.connect(job.deleteLater)  # a child: it dies on the GUI thread
        job.succeeded.connect(lambda result: self._finished(work, Outcome("succeeded", result)))
        job.failed.connect(lambda error, _tb: self._finished(work, Outcome("failed", error=error)))
        job.cancelled.connect(lambda: self._finished(work, Outcome("cancelled")))
        self.jobs[work.kind] = job
        self._works[work.kind] = work
        if self.show_dialog and self._window is not None and not work.quiet:
            dialog = job_dialog(
                self._window, work.text, work.title, f"{work.kind}Progress", work.steps
            )
            dialog.canceled.connect(work.cancel)
            if work.steps:
                job.progressed.connect(lambda done, _total, _text: dialog.setValue(done))
            self._dialogs[work.kind] = dialog
        job.start()

    def cancel(self, kind: str) -> None:
        job = self.jobs.get(kind)
        if job is not None and not job.done:
            job.cancel()

    def _finished(self, work: Work, outcome: Outcome) -> None:
        if self._works.get(work.kind) is work:  # not a job this kind's next one replaced
            self._forget(work.kind)
        work.finish(outcome)

    def _forget(self, kind: str) -> None:
        self.jobs.pop(kind, None)
        self._works.pop(kind, None)
        close_dialog(self._dialogs.pop(kind, None))
