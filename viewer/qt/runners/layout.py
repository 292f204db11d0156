"""Lays out big graphs off the GUI thread, with a progress dialog and a Cancel button.

The Document calls :meth:`LayoutRunner.start` (its ``layout_runner``) for graphs above its
synchronous limit; the runner computes ``compute_layout(trace, progress, should_cancel)`` and
the Scene in a :class:`~viewer.qt.runners.jobs.Job` and hands both back to the Document on the GUI
thread.
Until then the previous graph stays on screen and the window keeps responding.
"""

from __future__ import annotations

import functools
from typing import Any

from PySide6 import QtCore

from viewer.model.document.document import Document
from viewer.model.scene.build import first_scene
from viewer.model.scene.scene import Scene
from viewer.qt.runners.jobs import JobCancelled, JobRunner, Progress, job_dialog

__all__ = ["LayoutRunner", "lay_out"]


def lay_out(trace: Any, palette: str, progress: Progress, should_cancel: Any) -> Scene:
    """The worker's part: the Scene of ``trace`` laid out whole (plain data in, plain data
    out); building the scene of a big graph takes a while too, so it is done here, not on
    the GUI thread."""

    def report(fraction: float) -> None:
        progress(int(fraction * 900), 1000, "")

    try:
        scene = first_scene(
            trace, palette, scoped=False, progress=report, should_cancel=should_cancel
        )
    except Exception as exc:
        if should_cancel():
            raise JobCancelled() from exc
        raise
    if should_cancel():
        raise JobCancelled()
    progress(1000, 1000, "")
    return scene


class LayoutRunner(JobRunner):
    finished = QtCore.Signal(str)  # 'succeeded' | 'failed' | 'cancelled'

    document: Document

    def start(self, trace: Any) -> None:
        """Lay out ``trace`` in a worker (replacing a layout still running)."""
        self.cancel()
        job = self._new_job(functools.partial(lay_out, trace, self.document.palette), "layout")
        n = len(trace.variables) + len(trace.functions)
        if self.show_dialog and self._window is not None:
            dialog = job_dialog(
                self._window, f"Laying out {n:,} nodes…", "Layout", "layoutProgress", 1000
            )
            dialog.canceled.connect(job.cancel)
            job.progressed.connect(lambda done, total, _t: dialog.setValue(done))
            self.dialog = dialog
        job.succeeded.connect(lambda scene: self._succeeded(trace, scene))
        job.failed.connect(lambda exc, _tb: self._failed(trace, exc))
        job.cancelled.connect(lambda: self._cancelled(trace))
        job.start()

    def cancel(self) -> None:
        if self.job is not None and not self.job.done:
            self.job.cancel()

    def _succeeded(self, trace: Any, scene: Scene) -> None:
        self._close_dialog()
        self.document.apply_layout(trace, scene.layout, scene)
        self.finished.emit("succeeded")

    def _failed(self, trace: Any, exc: BaseException) -> None:
        self._close_dialog()
        self.document.layout_failed(trace, exc)
        self.finished.emit("failed")

    def _cancelled(self, trace: Any) -> None:
        self._close_dialog()
        self.document.cancel_layout()
        self.finished.emit("cancelled")
