"""One run at a time, as the window shows it: while a typed program or a script runs, Open and
Run wait and the editor says why; Cancel (and so Esc) answers only then, otherwise Esc stays
the focused widget's. The Document refuses a second run itself; this keeps the window from
offering one."""

from __future__ import annotations

from collections.abc import Mapping

from PySide6 import QtGui

from viewer.model.document.document import Document
from viewer.model.scripts.run import ScriptResult
from viewer.qt.program.editor import EditorPanel

__all__ = ["RunGate"]


class RunGate:
    """Follows ``document``'s runs (``program_started`` / ``program_finished``,
    ``script_finished``) on the window's ``actions`` and ``editor``; a script the window starts
    itself is announced with :meth:`set_running`."""

    def __init__(
        self, document: Document, actions: Mapping[str, QtGui.QAction], editor: EditorPanel
    ) -> None:
        self._actions = actions
        self._editor = editor
        document.program_started.connect(self._program_started)
        document.program_finished.connect(self._program_finished)
        document.script_finished.connect(self._script_finished)

    def set_running(self, running: bool) -> None:
        for name in ("open", "run"):
            act = self._actions.get(name)
            if act is not None:
                act.setEnabled(not running)
        cancel = self._actions.get("cancel_run")
        if cancel is not None:
            cancel.setEnabled(running)
        self._editor.set_busy(running)

    def _program_started(self) -> None:
        self.set_running(True)

    def _program_finished(self, _shown: bool) -> None:
        self.set_running(False)

    def _script_finished(self, _result: ScriptResult) -> None:
        self.set_running(False)
