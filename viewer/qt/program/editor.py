"""The expression editor: a plain-text editor, a Run button and an error line.

An error never touches the text: it is shown under the editor and marked in place (a wavy
underline at the line and column the parser reported), and the cursor moves there.

When the window shows something that is not an expression (a script's graph, a saved trace) the
editor shows it read-only with a note above it; its Run button then reads "Edit" and asks for
the expression back (:attr:`EditorPanel.edit_requested`) instead of running the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.qt.drawing.icons import media_icon
from viewer.qt.drawing.plain_text import MAX_TOOLTIP, tooltip

__all__ = [
    "MAX_ERROR_LINES",
    "MAX_SHOWN_SOURCE",
    "EditorPanel",
    "ExpressionHighlighter",
    "read_source",
    "shorten_error",
]

MAX_SHOWN_SOURCE = 1_000_000  # characters of a script shown read-only


def _qt_position(text: str, index: int) -> int:
    """A Python string offset as a QTextDocument position, which counts UTF-16 units."""
    return index + sum(1 for c in text[:index] if ord(c) > 0xFFFF)


def read_source(path: Path) -> str | None:
    """A script's text to show read-only (cut after MAX_SHOWN_SOURCE characters); None when
    it cannot be read."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            text = f.read(MAX_SHOWN_SOURCE + 1)
    except OSError:
        return None
    if len(text) > MAX_SHOWN_SOURCE:
        text = text[:MAX_SHOWN_SOURCE] + "\n# … (the rest of the file is not shown)\n"
    return text


# An error under the editor shows at most this many lines, cut at a word, the rest on hover
# (and in the status bar): a long message must not squeeze the text being edited.
MAX_ERROR_LINES = 3


def shorten_error(text: str, fits: Callable[[str], bool]) -> str:
    """``text`` itself if it ``fits``, else its longest start cut at a word, with an ellipsis,
    that does."""
    if fits(text):
        return text
    low, high = 0, len(text)  # fits(text[:low] + ...) holds; text[:high] + ... does not
    while high - low > 1:
        mid = (low + high) // 2
        if fits(_cut(text, mid)):
            low = mid
        else:
            high = mid
    return _cut(text, low)


def _cut(text: str, n: int) -> str:
    head = text[:n]
    space = head.rfind(" ")
    if space > n // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "\u2026"


class _ErrorLabel(QtWidgets.QLabel):
    """The error under the editor: the whole message held, as much of it shown as fits in
    MAX_ERROR_LINES lines of the label's width (again at each resize), whole on hover."""

    def __init__(self, parent: QtWidgets.QWidget) -> None:
        super().__init__(parent)
        self._whole = ""

    def whole(self) -> str:
        return self._whole

    def set_message(self, text: str) -> None:
        self._whole = text
        self._fit()

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        if self._whole:
            self._fit()

    def _fit(self) -> None:
        metrics = self.fontMetrics()
        width = max(40, self.contentsRect().width())
        most = MAX_ERROR_LINES * metrics.lineSpacing()
        flags = int(QtCore.Qt.TextFlag.TextWordWrap)

        def fits(text: str) -> bool:  # a word longer than the width does not wrap: too wide
            box = metrics.boundingRect(0, 0, width, 100_000, flags, text)
            return box.height() <= most and box.width() <= width

        shown = shorten_error(self._whole, fits)
        if shown != self.text():
            self.setText(shown)
        # (at most MAX_TOOLTIP characters: a 15 000-character name covered the screen)
        self.setToolTip(tooltip(self._whole, MAX_TOOLTIP) if shown != self._whole else "")


class ExpressionHighlighter(QtGui.QSyntaxHighlighter):
    """Numbers, known function names and comments, in colours readable on both palettes."""

    _number = re.compile(r"\b\d+(\.\d*)?([eE][-+]?\d+)?\b|\.\d+\b")
    _word = re.compile(r"\b[A-Za-z_]\w*(?=\s*\()")
    _comment = re.compile(r"#.*$")

    def __init__(self, document: QtGui.QTextDocument, functions: Iterable[str] = ()) -> None:
        super().__init__(document)
        self._functions = set(functions)
        self._formats: dict[str, QtGui.QTextCharFormat] = {}
        self.set_dark(False)

    def set_functions(self, names: Iterable[str]) -> None:
        self._functions = set(names)
        self.rehighlight()

    def set_dark(self, dark: bool) -> None:
        colours = (
            {"number": "#f2a65a", "function": "#79b8ff", "comment": "#8b949e"}
            if dark
            else {"number": "#b35900", "function": "#1f5fbf", "comment": "#6a737d"}
        )
        self._formats = {}
        for key, colour in colours.items():
            fmt = QtGui.QTextCharFormat()
            fmt.setForeground(QtGui.QColor(colour))
            if key == "comment":
                fmt.setFontItalic(True)
            self._formats[key] = fmt
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:
        for m in self._number.finditer(text):
            self.setFormat(m.start(), m.end() - m.start(), self._formats["number"])
        for m in self._word.finditer(text):
            if not self._functions or m.group(0) in self._functions:
                self.setFormat(m.start(), m.end() - m.start(), self._formats["function"])
        m = self._comment.search(text)
        if m:
            self.setFormat(m.start(), m.end() - m.start(), self._formats["comment"])


class _CodeEdit(QtWidgets.QPlainTextEdit):
    run_requested = QtCore.Signal()

    def keyPressEvent(self, event: QtGui.QKeyEvent) -> None:
        enter = event.key() in (QtCore.Qt.Key.Key_Return, QtCore.Qt.Key.Key_Enter)
        if enter and event.modifiers() & QtCore.Qt.KeyboardModifier.ControlModifier:
            event.accept()
            self.run_requested.emit()
            return
        super().keyPressEvent(event)


class EditorPanel(QtWidgets.QWidget):
    """Edits the program; emits :attr:`run_requested` with the text on Run or Ctrl+Enter."""

    run_requested = QtCore.Signal(str)
    edit_requested = QtCore.Signal()  # Run (or Ctrl+Enter) while the editor is read-only

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.note_label = QtWidgets.QLabel(self)
        self.note_label.setObjectName("editorNote")
        self.note_label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.note_label.setWordWrap(True)
        self.note_label.hide()
        self.editor = _CodeEdit(self)
        self.editor.setObjectName("expressionEditor")
        font = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        font.setPointSizeF(max(font.pointSizeF(), 10.5))
        self.editor.setFont(font)
        self.editor.setTabChangesFocus(False)
        self.editor.setTabStopDistance(QtGui.QFontMetricsF(font).horizontalAdvance(" ") * 4)
        self.editor.setPlaceholderText("y = tanh(x) * x**2      (Ctrl+Enter runs)")
        self.editor.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        self.highlighter = ExpressionHighlighter(self.editor.document())

        self.run_button = QtWidgets.QPushButton("Run", self)
        self.run_button.setObjectName("runButton")
        self.run_button.setToolTip("Evaluate the program and run backward (Ctrl+Enter)")
        self.run_button.setIcon(
            media_icon("play", self.palette().color(QtGui.QPalette.ColorRole.ButtonText))
        )

        self.error_label = _ErrorLabel(self)
        self.error_label.setObjectName("editorError")
        self.error_label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(
            QtCore.Qt.TextInteractionFlag.TextSelectableByMouse
        )
        self.error_label.hide()

        self.position_label = QtWidgets.QLabel(self)
        self.position_label.setObjectName("editorPosition")

        row = QtWidgets.QHBoxLayout()
        row.addWidget(self.position_label, 1)
        row.addWidget(self.run_button)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.note_label)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.error_label)
        layout.addLayout(row)

        self.editor.run_requested.connect(self.request_run)
        self.run_button.clicked.connect(self.request_run)
        self.editor.cursorPositionChanged.connect(self._show_position)
        self._error_colour = QtGui.QColor("#c92a2a")
        self._draft = ""  # the expression while the editor shows something else read-only
        self._baseline = ""  # the program as last opened or run (see :attr:`edited`)
        self._read_only_key: object = None
        self._show_position()

    # ---------------------------------------------------------------- text
    def text(self) -> str:
        return self.editor.toPlainText()

    def set_text(self, text: str) -> None:
        """Replace the text as one undoable edit (so Ctrl+Z brings the old text back)."""
        if self.read_only:
            self.show_editable(text)
            return
        cursor = QtGui.QTextCursor(self.editor.document())
        cursor.select(QtGui.QTextCursor.SelectionType.Document)
        cursor.insertText(text)
        self.editor.moveCursor(QtGui.QTextCursor.MoveOperation.Start)
        self.clear_error()

    def replace_range(self, start: int, end: int, text: str) -> None:
        """Replace the characters ``start:end`` of :meth:`text` (Python string offsets) by
        ``text``, as one undoable edit: the rest of the text, the caret and the undo history
        stay."""
        current = self.text()
        cursor = QtGui.QTextCursor(self.editor.document())
        cursor.beginEditBlock()
        cursor.setPosition(_qt_position(current, start))
        cursor.setPosition(_qt_position(current, end), QtGui.QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(text)
        cursor.endEditBlock()

    @property
    def edited(self) -> bool:
        """Whether the program differs from what was last opened or run (replacing it would
        lose work)."""
        return self.program_text != self._baseline

    def mark_unedited(self) -> None:
        """The program as it is now was opened or run."""
        self._baseline = self.program_text

    @property
    def read_only(self) -> bool:
        return self.editor.isReadOnly()

    @property
    def program_text(self) -> str:
        """The expression: the text, or while read-only the text it had before (what Edit
        brings back and what is worth saving)."""
        return self._draft if self.read_only else self.text()

    def showing(self, key: object) -> bool:
        """Whether the editor shows ``key`` read-only (see :meth:`show_read_only`)."""
        return self.read_only and key is not None and key == self._read_only_key

    def show_read_only(self, text: str, note: str, key: object = None) -> None:
        """Show ``text`` (a script's source, or a one-line comment) that cannot be edited or
        run, with ``note`` above it; the expression is kept in :attr:`program_text`. Nothing
        happens when the editor already shows ``key`` (not None) read-only. The undo history
        is dropped: Ctrl+Z must not bring a script's text into the expression editor."""
        if self.showing(key):
            return
        if not self.read_only:
            self._draft = self.text()
        self._read_only_key = key
        self.clear_error()
        self.editor.setReadOnly(True)
        self.editor.setPlainText(text)
        self.editor.moveCursor(QtGui.QTextCursor.MoveOperation.Start)
        self.note_label.setText(note)
        self.note_label.show()
        self.run_button.setText("Edit")
        self.run_button.setToolTip("Back to the expression editor (Ctrl+Enter)")

    def show_editable(self, text: str) -> None:
        """Leave the read-only view: ``text`` (the expression) can be edited and run again."""
        self._draft = ""
        self._read_only_key = None
        self.editor.setReadOnly(False)
        self.editor.setPlainText(text)
        self.editor.moveCursor(QtGui.QTextCursor.MoveOperation.Start)
        self.note_label.clear()
        self.note_label.hide()
        self.run_button.setText("Run")
        self.run_button.setToolTip("Evaluate the program and run backward (Ctrl+Enter)")
        self.clear_error()

    def set_busy(self, busy: bool) -> None:
        """A script or a slow program is running (one run at a time): Run waits for it."""
        button = self.run_button
        button.setEnabled(not busy)
        if busy:
            button.setToolTip("A script is running: wait for it or Cancel it")
        elif self.read_only:
            button.setToolTip("Back to the expression editor (Ctrl+Enter)")
        else:
            button.setToolTip("Evaluate the program and run backward (Ctrl+Enter)")

    def request_run(self) -> None:
        if self.read_only:
            self.edit_requested.emit()
            return
        self.run_requested.emit(self.text())

    # ---------------------------------------------------------------- errors
    def set_error_colour(self, colour: str) -> None:
        self._error_colour = QtGui.QColor(colour)
        self.error_label.setStyleSheet(f"color: {colour};")

    def show_error(
        self,
        message: str,
        line: int | None = None,
        col: int | None = None,
        end_line: int | None = None,
        end_col: int | None = None,
    ) -> None:
        """Show ``message``; mark line/col (1-based) in the text without changing it."""
        where = f"line {line}, column {col}: " if line is not None and col is not None else ""
        self.error_label.set_message(where + message)
        self.error_label.setStyleSheet(f"color: {self._error_colour.name()};")
        self.error_label.show()
        if line is None:
            self.editor.setExtraSelections([])
            return
        doc = self.editor.document()
        start = self._position(doc, line, col or 1)
        end = self._position(doc, end_line or line, end_col or (col or 1))
        if end <= start:
            end = min(start + 1, max(0, doc.characterCount() - 1))
        cursor = QtGui.QTextCursor(doc)
        cursor.setPosition(start)
        cursor.setPosition(end, QtGui.QTextCursor.MoveMode.KeepAnchor)
        selection = QtWidgets.QTextEdit.ExtraSelection()
        selection.cursor = cursor
        fmt = QtGui.QTextCharFormat()
        fmt.setUnderlineStyle(QtGui.QTextCharFormat.UnderlineStyle.WaveUnderline)
        fmt.setUnderlineColor(self._error_colour)
        back = QtGui.QColor(self._error_colour)
        back.setAlpha(40)
        fmt.setBackground(back)
        selection.format = fmt
        self.editor.setExtraSelections([selection])
        caret = QtGui.QTextCursor(doc)
        caret.setPosition(start)
        self.editor.setTextCursor(caret)

    @staticmethod
    def _position(doc: QtGui.QTextDocument, line: int, col: int) -> int:
        block = doc.findBlockByNumber(max(0, line - 1))
        if not block.isValid():
            block = doc.lastBlock()
        return block.position() + min(max(0, col - 1), max(0, block.length() - 1))

    def clear_error(self) -> None:
        self.error_label.set_message("")
        self.error_label.clear()
        self.error_label.hide()
        self.editor.setExtraSelections([])

    def error_text(self) -> str:
        """The error shown, whole (the label may show it cut: :class:`_ErrorLabel`)."""
        return "" if self.error_label.isHidden() else self.error_label.whole()

    def _show_position(self) -> None:
        c = self.editor.textCursor()
        self.position_label.setText(f"Ln {c.blockNumber() + 1}, Col {c.positionInBlock() + 1}")
