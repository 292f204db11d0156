"""Long work off the GUI thread: a job runs in a QThread and reports through Qt signals.

A :class:`Job` is one piece of work handed to a worker thread: it wraps a plain callable
``work(progress, should_cancel)``, which its ``_Worker`` calls on the thread; ``progress(done,
total, text)`` may be called from the worker at any rate (reports are throttled to the GUI),
``should_cancel()`` turns True once the user cancels. The result, the exception or the
cancellation comes back as a queued signal, so slots run on the GUI thread and may touch
widgets. A :class:`JobRunner` runs the document's jobs of one kind (the layout, a typed
program), one at a time, each on a Job with its progress dialog.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from PySide6 import QtCore, QtWidgets

__all__ = ["Job", "JobCancelled", "JobRunner", "close_dialog", "job_dialog"]

Progress = Callable[[int, int, str], None]
Work = Callable[[Progress, Callable[[], bool]], Any]


class JobCancelled(Exception):
    """Raised by work that noticed ``should_cancel()``; reported as :attr:`Job.cancelled`."""


class _Worker(QtCore.QObject):
    """Lives on the job's thread and calls its work there."""

    progressed = QtCore.Signal(int, int, str)
    succeeded = QtCore.Signal(object)
    failed = QtCore.Signal(object, str)  # the exception, its formatted traceback
    cancelled = QtCore.Signal()

    def __init__(self, work: Work, cancel_event: threading.Event) -> None:
        super().__init__()
        self._work = work
        self._cancel = cancel_event
        self._last_report = 0.0

    def _progress(self, done: int, total: int, text: str = "") -> None:
        now = time.monotonic()
        if now - self._last_report >= 0.05 or done >= total:
            self._last_report = now
            self.progressed.emit(int(done), int(total), str(text))

    @QtCore.Slot()
    def run(self) -> None:
        try:
            result = self._work(self._progress, self._cancel.is_set)
        except JobCancelled:
            self.cancelled.emit()
            return
        except BaseException as exc:  # report everything: the app must stay up
            if self._cancel.is_set():
                self.cancelled.emit()
                return
            self.failed.emit(exc, traceback.format_exc())
            return
        if self._cancel.is_set():
            self.cancelled.emit()
        else:
            self.succeeded.emit(result)


class Job(QtCore.QObject):
    """One piece of work on its own QThread. Signals arrive on the GUI thread."""

    progressed = QtCore.Signal(int, int, str)
    succeeded = QtCore.Signal(object)
    failed = QtCore.Signal(object, str)
    cancelled = QtCore.Signal()
    finished = QtCore.Signal()  # after any of the three outcomes

    def __init__(self, work: Work, name: str = "job", parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.name = name
        self._cancel = threading.Event()
        self._thread = QtCore.QThread()
        self._thread.setObjectName(name)
        self._worker = _Worker(work, self._cancel)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.progressed.connect(self.progressed)
        self._worker.succeeded.connect(self._on_succeeded)
        self._worker.failed.connect(self._on_failed)
        self._worker.cancelled.connect(self._on_cancelled)
        self._done = False
        self.outcome: str | None = None  # 'succeeded' | 'failed' | 'cancelled'
        self.result: Any = None
        self.error: BaseException | None = None
        self.traceback = ""

    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        """Ask the work to stop; it is reported as cancelled once it returns."""
        self._cancel.set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    @property
    def done(self) -> bool:
        return self._done

    def wait(self, timeout_ms: int = 30_000) -> bool:
        """Block until the thread has finished (for shutdown and tests)."""
        return self._thread.wait(timeout_ms)

    def _finish(self) -> None:
        self._done = True
        self._thread.quit()
        self._thread.wait(5_000)
        self.finished.emit()

    def _on_succeeded(self, result: Any) -> None:
        self.outcome, self.result = "succeeded", result
        self.succeeded.emit(result)
        self._finish()

    def _on_failed(self, exc: BaseException, text: str) -> None:
        self.outcome, self.error, self.traceback = "failed", exc, text
        self.failed.emit(exc, text)
        self._finish()

    def _on_cancelled(self) -> None:
        self.outcome = "cancelled"
        self.cancelled.emit()
        self._finish()


def job_dialog(
    parent: QtWidgets.QWidget, text: str, title: str, name: str, maximum: int
) -> QtWidgets.QProgressDialog:
    """The window-modal progress dialog of a long job, shown only if it lasts past 300 ms
    (``maximum`` 0: a busy indicator); the caller connects its ``canceled``."""
    dialog = QtWidgets.QProgressDialog(text, "Cancel", 0, maximum, parent)
    dialog.setObjectName(name)
    dialog.setWindowTitle(title)
    dialog.setMinimumDuration(300)
    dialog.setWindowModality(QtCore.Qt.WindowModality.WindowModal)
    dialog.setAutoClose(False)
    dialog.setAutoReset(False)
    return dialog


def close_dialog(dialog: QtWidgets.QProgressDialog | None) -> None:
    if dialog is not None:
        dialog.reset()
        dialog.hide()
        dialog.deleteLater()


class JobRunner(QtCore.QObject):
    """Runs a document's jobs of one kind, each on a :class:`Job` with its progress dialog: what
    the layout and expression runners share (each starts its own jobs and reports their
    outcome)."""

    def __init__(self, document: Any, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self._window = parent
        self.job: Job | None = None
        self.dialog: QtWidgets.QProgressDialog | None = None
        self.show_dialog = True

    @property
    def running(self) -> bool:
        return self.job is not None and not self.job.done

    def _close_dialog(self) -> None:
        close_dialog(self.dialog)
        self.dialog = None
