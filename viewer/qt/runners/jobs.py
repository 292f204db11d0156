"""Long work off the GUI thread: a job runs on a plain worker thread and reports to the GUI
thread, where its Qt signals fire.

A :class:`Job` is one piece of work handed to a worker thread: it wraps a plain callable
``work(progress, should_cancel)``; ``progress(done, total, text)`` may be called from the worker
at any rate (the GUI sees the latest report, a few dozen times a second), ``should_cancel()``
turns True once the user cancels. The result, the exception or the cancellation is reported on
the GUI thread, so slots may touch widgets. The Document's work goes to Jobs through
:class:`~viewer.qt.runners.runner.ThreadRunner`.

Nothing of Qt reaches the worker. Its thread is a ``threading.Thread`` running :func:`_run`
with the work, a ``threading.Event`` and an :class:`Outbox`; a timer of the Job, on the GUI
thread, takes the reports out of the Outbox. A Qt object the worker could reach might be
released on the worker's thread (when its frames end, or when the cycle collector happens to
run there), and Qt objects must die on their own thread: a QThread whose Python wrapper is
collected while it runs aborts the process. So the work is a module-level function over plain
data (a trace, a palette's name, a program), never a widget's method or a closure over one.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6 import QtCore, QtWidgets

from viewer.model.document.work import JobCancelled, Progress, ShouldCancel

__all__ = [
    "POLL_MS",
    "Job",
    "Outbox",
    "close_dialog",
    "job_dialog",
]

JobFunction = Callable[[Progress, ShouldCancel], Any]

POLL_MS = 20  # how often the GUI thread takes a worker's reports while it runs


class Outbox:
    """What a worker thread leaves for the GUI thread: plain values behind a lock.

    :meth:`post` queues an item; :meth:`keep_latest` keeps only the newest item of its kind (a
    progress report), delivered before the queued ones. :meth:`take`, called by a timer on the
    GUI thread, empties the box.
    """

    __slots__ = ("_items", "_latest", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[tuple[Any, ...]] = []
        self._latest: dict[str, tuple[Any, ...]] = {}

    def post(self, *item: Any) -> None:
        with self._lock:
            self._items.append(item)

    def keep_latest(self, kind: str, *values: Any) -> None:
        with self._lock:
            self._latest[kind] = (kind, *values)

    def take(self) -> list[tuple[Any, ...]]:
        with self._lock:
            items = [*self._latest.values(), *self._items]
            self._latest.clear()
            self._items = []
        return items


def _run(work: JobFunction, cancel: threading.Event, outbox: Outbox) -> None:
    """The worker thread's whole life: ``work`` and plain objects, no Qt."""

    def progress(done: int, total: int, text: str = "") -> None:
        outbox.keep_latest("progressed", int(done), int(total), str(text))

    try:
        result = work(progress, cancel.is_set)
    except JobCancelled:
        outbox.post("cancelled")
        return
    except BaseException as exc:  # report everything: the app must stay up
        if cancel.is_set():
            outbox.post("cancelled")
        else:
            outbox.post("failed", exc, traceback.format_exc())
        return
    if cancel.is_set():
        outbox.post("cancelled")
    else:
        outbox.post("succeeded", result)


class Job(QtCore.QObject):
    """One piece of work on its own worker thread. Signals fire on the GUI thread."""

    progressed = QtCore.Signal(int, int, str)
    succeeded = QtCore.Signal(object)
    failed = QtCore.Signal(object, str)  # the exception, its formatted traceback
    cancelled = QtCore.Signal()
    finished = QtCore.Signal()  # after any of the three outcomes

    def __init__(self, work: JobFunction, name: str = "job", parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.name = name
        self._work: JobFunction | None = work
        self._cancel = threading.Event()
        self._outbox = Outbox()
        self._thread: threading.Thread | None = None
        self._timer = QtCore.QTimer(self)  # takes the worker's reports on the GUI thread
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._take_reports)
        self._done = False
        self.outcome: str | None = None  # 'succeeded' | 'failed' | 'cancelled'
        self.result: Any = None
        self.error: BaseException | None = None
        self.traceback = ""

    def start(self) -> None:
        work, self._work = self._work, None
        if work is None:
            raise RuntimeError(f"job {self.name!r} was already started")
        # A daemon: work nobody waits for any more must not keep the process alive.
        self._thread = threading.Thread(
            target=_run, args=(work, self._cancel, self._outbox), name=self.name, daemon=True
        )
        self._timer.start()
        self._thread.start()

    def cancel(self) -> None:
        """Ask the work to stop; it is reported as cancelled once it returns."""
        self._cancel.set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    @property
    def done(self) -> bool:
        """Whether the outcome was reported (on the GUI thread)."""
        return self._done

    def wait(self, timeout_ms: int = 30_000) -> bool:
        """Block until the worker thread has ended (for shutdown and tests); its outcome is
        reported once the GUI thread's event loop runs."""
        if self._thread is None:
            return True
        self._thread.join(timeout_ms / 1000)
        return not self._thread.is_alive()

    def _take_reports(self) -> None:
        for kind, *values in self._outbox.take():
            if kind == "progressed":
                self.progressed.emit(*values)
                continue
            self._timer.stop()
            self.outcome = kind
            if kind == "succeeded":
                (self.result,) = values
                self.succeeded.emit(self.result)
            elif kind == "failed":
                self.error, self.traceback = values
                self.failed.emit(self.error, self.traceback)
            else:
                self.cancelled.emit()
            self._done = True
            self.finished.emit()
            return


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
