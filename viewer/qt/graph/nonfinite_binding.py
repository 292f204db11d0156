"""Binds the jumps to NaN/Inf (Jump to First / Next NaN/Inf) to the playback cursor, the scene
and the status bar.

A jump moves the cursor with ``PlaybackState.first_nonfinite`` / ``next_nonfinite``, shows the
step's Function and says on the status bar what produced the NaN or Inf; a jump that does not
apply says why and leaves the cursor where it was.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6 import QtCore, QtWidgets

from viewer.model.document.document import Document
from viewer.qt.graph.scene_binding import SceneBinding

__all__ = ["NonfiniteBinding"]


class NonfiniteBinding(QtCore.QObject):
    def __init__(
        self,
        document: Document,
        scene: SceneBinding,
        status_bar: QtWidgets.QStatusBar,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.scene = scene
        self.status_bar = status_bar
        # (the message about a step, that step): cleared once playback leaves the step, so
        # the status bar never describes another step than the one shown
        self._about: tuple[str, int] | None = None
        document.playback.step_changed.connect(self._on_step_changed)

    def _on_step_changed(self, *args: object) -> None:
        about = self._about
        if about is None or self.document.playback.index == about[1]:
            return
        self._about = None
        if self.status_bar.currentMessage() == about[0]:
            self.status_bar.clearMessage()

    def first_nonfinite(self) -> int | None:
        return self._jump(self.document.playback.first_nonfinite)

    def next_nonfinite(self) -> int | None:
        return self._jump(self.document.playback.next_nonfinite)

    def _jump(self, jump: Callable[[], int | None]) -> int | None:
        playback = self.document.playback
        report = self.status_bar.showMessage
        if self.document.scene is None:
            report("There is no graph: type an expression or open a file")
            return None
        if not playback.nonfinite_steps:
            report("No step produced NaN or Inf: every value and gradient is finite")
            return None
        index = jump()
        if index is None:
            report("No later step produced NaN or Inf (Jump to First NaN/Inf goes back)")
            return None
        step = playback.current_step
        if step is not None:
            self.scene.show_node(int(step.function))
            first = self.document.trace.first_nonfinite()
            flagged = first is not None and first.function == step.function
            where = (
                "it is the first, flagged on the graph"
                if flagged
                else "the first one is the Function with the NaN/Inf badge"
            )
            message = (
                f"Step {index + 1}/{playback.n_steps}: {step.op} ({step.phase}) produced NaN "
                f"or Inf; {where}"
            )
            report(message)
            self._about = (message, playback.index)
        return index
