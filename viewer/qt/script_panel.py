"""The script panel: a running script's output, its traceback when it fails, a Cancel button,
and the graphs it built to choose from. What it shows comes from its
:class:`~viewer.qt.script_binding.ScriptBinding`.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6 import QtCore, QtGui, QtWidgets

__all__ = ["NO_SCRIPT", "ScriptPanel"]

NO_SCRIPT = "No script is shown. File > Open a .py file to run one and see its graphs."


class ScriptPanel(QtWidgets.QWidget):
    cancel_requested = QtCore.Signal()
    graph_chosen = QtCore.Signal(int)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("scriptPanel")
        self.status = QtWidgets.QLabel(NO_SCRIPT, self)
        self.status.setObjectName("scriptStatus")
        self.status.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)
        self.cancel_button = QtWidgets.QPushButton("Cancel", self)
        self.cancel_button.setObjectName("scriptCancelButton")
        self.cancel_button.setEnabled(False)
        self.graphs = QtWidgets.QComboBox(self)
        self.graphs.setObjectName("scriptGraphs")
        self.graphs.setToolTip("The graphs the script built: choose one to show it")
        self.graphs.setEnabled(False)
        self.graphs.setPlaceholderText("choose a graph to show it")
        self.output = QtWidgets.QPlainTextEdit(self)
        self.output.setObjectName("scriptOutput")
        self.output.setReadOnly(True)
        self.output.setFont(
            QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        )
        self.output.setMaximumBlockCount(20_000)
        row = QtWidgets.QHBoxLayout()
        row.addWidget(QtWidgets.QLabel("Graph:", self))
        row.addWidget(self.graphs, 1)
        row.addWidget(self.cancel_button)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.status)
        layout.addLayout(row)
        layout.addWidget(self.output, 1)
        self.cancel_button.clicked.connect(self.cancel_requested)
        self.graphs.activated.connect(self.graph_chosen)
        self._error_colour = QtGui.QColor("#c92a2a")
        self._running = ""

    def set_error_colour(self, colour: str) -> None:
        self._error_colour = QtGui.QColor(colour)

    def started(self, name: str) -> None:
        self.output.clear()
        self._running = name
        self.status.setText(f"Running {name} in a process of its own… (Cancel stops it)")
        self.cancel_button.setEnabled(True)
        self.graphs.clear()
        self.graphs.setEnabled(False)

    def show_stage(self, text: str) -> None:
        """What the run is doing now that the script ended ("sending the recording")."""
        if self.cancel_button.isEnabled():
            self.status.setText(f"{self._running}: {text}…")

    def append_output(self, text: str) -> None:
        cursor = self.output.textCursor()
        cursor.movePosition(QtGui.QTextCursor.MoveOperation.End)
        cursor.insertText(text, QtGui.QTextCharFormat())
        self.output.setTextCursor(cursor)
        self.output.ensureCursorVisible()

    def append_error(self, text: str) -> None:
        fmt = QtGui.QTextCharFormat()
        fmt.setForeground(self._error_colour)
        cursor = self.output.textCursor()
        cursor.movePosition(QtGui.QTextCursor.MoveOperation.End)
        if not self.output.document().isEmpty():
            cursor.insertText("\n")
        cursor.insertText(text, fmt)
        self.output.setTextCursor(cursor)
        self.output.ensureCursorVisible()

    def finished(self, summary: str, graph_titles: Sequence[str], shown: int) -> None:
        """The run ended: ``shown`` is the index of its graph on screen, -1 when none is (a
        failed run keeps the previous graph: the list offers what it built before the
        error)."""
        self.status.setText(summary)
        self.cancel_button.setEnabled(False)
        self.graphs.clear()
        self.graphs.addItems(list(graph_titles))
        on_screen = 0 <= shown < len(graph_titles)
        # enabled whenever one of its graphs is not on screen
        self.graphs.setEnabled(len(graph_titles) > (1 if on_screen else 0))
        self.graphs.setCurrentIndex(shown if on_screen else -1)

    def clear(self) -> None:
        """What is on screen is not a script's: forget the last run's status and output."""
        self.status.setText(NO_SCRIPT)
        self.cancel_button.setEnabled(False)
        self.graphs.clear()
        self.graphs.setEnabled(False)
        self.output.clear()

    def error_text(self) -> str:
        return self.output.toPlainText()
