"""Binds the Document's program to the editor: Run (Ctrl+Enter) runs the editor's text, Edit
brings the expression back from a script's or a trace's read-only view, and the editor shows
what is on screen (the expression, editable; a script's source or a note for a saved trace,
read-only) and the program's errors in place.

The text the user typed is kept in the settings whatever happens, so that it comes back at the
next start. The editor's text is the Document's :attr:`~Document.source` as it is typed; a leaf
value set in the variables table comes back as an edit of that text (undoable with Ctrl+Z), and
a program file or example replaces a program edited since it was last opened or run only when
the user says so (:meth:`EditorBinding.may_replace`).
"""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from viewer.model.document.document import Document
from viewer.model.document.expression_loader import SourceEdit, leaf_edit
from viewer.model.document.file_loader import ProgramText
from viewer.model.expression.program import ExpressionError
from viewer.model.expression.rules import KNOWN_CALLABLES
from viewer.qt.dialogs import question
from viewer.qt.program.editor import EditorPanel, read_source
from viewer.qt.settings import AppSettings

__all__ = ["EditorBinding"]


class EditorBinding(QtCore.QObject):
    def __init__(
        self,
        document: Document,
        editor: EditorPanel,
        dock: QtWidgets.QDockWidget,
        settings: AppSettings,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.editor = editor
        self.dock = dock
        self.settings = settings
        editor.highlighter.set_functions(KNOWN_CALLABLES)  # the language's own list
        editor.run_requested.connect(self.run)
        editor.edit_requested.connect(self.edit)
        editor.editor.textChanged.connect(self._on_text_changed)
        document.graph_loaded.connect(self._on_graph_loaded)
        document.source_edited.connect(self._on_source_edited)

    # ---------------------------------------------------------------- editor -> document
    def run(self, text: str | None = None) -> bool:
        """Run the editor's program (Ctrl+Enter), or ``text``, which the editor then shows.
        The text is kept whatever happens."""
        if text is None:
            if self.editor.read_only:  # a script or a trace is shown: its text is no program
                return self.edit()
            text = self.editor.text()
        elif text != self.editor.text() or self.editor.read_only:
            self.editor.set_text(text)  # what runs is what the editor shows
        self.settings.set_editor_text(text)
        self.editor.clear_error()
        self.editor.mark_unedited()
        return self.document.run_expression(text)

    def edit(self) -> bool:
        """Back from a script's or a trace's read-only view (the editor's Edit button): the
        expression that was in the editor, editable again, and run."""
        self.editor.show_editable(self.editor.program_text or self.document.source)
        return self.run(self.editor.text())

    def load_initial(self, default: str) -> None:
        """The first program: ``default``, or the text saved at the last exit."""
        saved = self.settings.editor_text()
        if saved is not None and saved.strip() and saved != default:
            # The default first; the saved text runs once the event loop is up, like any
            # program the user runs: whatever it does, the window is already there.
            self.document.run_expression(default)
            self.editor.set_text(saved)
            self.editor.mark_unedited()
            self.document.source = saved
            QtCore.QTimer.singleShot(0, lambda: self._run_saved(saved))
            return
        self.editor.set_text(default)
        self.run(default)

    def _run_saved(self, saved: str) -> None:
        if (
            self.editor.text() != saved
            or self.document.kind != "expression"
            or self.document.script_run is not None
        ):
            return  # the user (or a file argument: a script running) replaced it meanwhile
        if self.run(saved):
            return
        # The saved text does not run: keep it with its error; the example stays on screen.
        self.document.source = saved
        error = self.document.last_error
        if isinstance(error, ExpressionError):
            self.show_error(error)

    # ---------------------------------------------------------------- document -> editor
    def show_error(self, error: ExpressionError) -> None:
        self.editor.show_error(error.message, error.line, error.col, error.end_line, error.end_col)
        self.dock.show()

    def sync(self, ok: bool) -> None:
        """After an expression file or example: the editor shows the document's text (an
        undoable replacement) and the error, if it failed."""
        if self.editor.text() != self.document.source:
            self.editor.set_text(self.document.source)
            self.settings.set_editor_text(self.document.source)
        error = self.document.last_error
        if ok or isinstance(error, ExpressionError):  # the file's text is in (it may not run)
            self.editor.mark_unedited()
        if not ok and isinstance(error, ExpressionError):
            self.show_error(error)

    def may_replace(self, opened: ProgramText) -> bool:
        """Whether ``opened`` (a program file or example) may replace the editor's program:
        yes when it is as it was last opened or run, else the user says."""
        return not self.editor.edited or self.confirm_replace(opened.path.name)

    def confirm_replace(self, name: str) -> bool:
        """Ask before an edited program is replaced (tests replace this)."""
        box, replace = question(
            self.editor.window(),
            "replaceConfirmation",
            "Replace the edited program?",
            "The program in the editor was changed since it was last opened or run. "
            f"Opening {name} replaces it.",
            ("Replace", QtWidgets.QMessageBox.ButtonRole.DestructiveRole),
            "Cancel",
        )
        box.exec()
        return box.clickedButton() is replace

    def _on_text_changed(self) -> None:
        self.document.source = self.editor.program_text

    def _on_source_edited(self, edit: SourceEdit) -> None:
        """A leaf's value was written into the program and that text ran: the editor makes
        the same edit (one Ctrl+Z takes it back). Typed since the run started, the editor's
        text gets the leaf set in it if it still parses."""
        editor = self.editor
        if editor.read_only:
            return
        ran = edit.after
        text = editor.text()
        if text != edit.before:
            try:
                edit = leaf_edit(text, edit.name, edit.value)
            except ExpressionError:
                return
        editor.replace_range(edit.start, edit.end, edit.replacement)
        editor.clear_error()
        if editor.text() == ran:
            editor.mark_unedited()
        self.settings.set_editor_text(editor.text())

    def _on_graph_loaded(self, document: Document) -> None:
        if document.scene is not None:
            self._show_program(document)

    def _show_program(self, document: Document) -> None:
        """The editor shows what is on screen: the expression (editable), a script's source or
        a note for a saved trace (both read-only)."""
        editor = self.editor
        if document.kind == "expression":
            if editor.read_only:  # an expression file or example after a script or a trace
                editor.show_editable(document.source)
                editor.mark_unedited()
                self.settings.set_editor_text(document.source)
            return
        path = document.path
        if document.kind == "script" and path is not None:
            key: tuple = ("script", path)  # every graph of one script shows the same source
            if editor.showing(key):
                return
            text = read_source(path)
            if text is None:
                text = f"# graph of {path.name} — scripts are shown read-only (cannot read it)\n"
            note = f"{path.name}, read-only: the graph is the script's. Edit goes back to the "
            note += "expression."
        else:
            name = path.name if path is not None else document.title
            key = ("trace", path, document.title)
            text = f"# graph of {name} — a saved trace: there is no program to edit\n"
            note = f"{name} is a saved trace. Edit goes back to the expression."
        editor.show_read_only(text, note, key)
