"""File > Open opens in the last folder used, else the document's folder; File > Export in
the last folder exported to, else the documents folder; never the process's working
directory."""

from pathlib import Path

import pytest
from PySide6 import QtCore, QtWidgets

from viewer.model import assets
from viewer.model.document.examples import find_example
from viewer.qt.dialogs import export_start_folder, start_folder


def test_start_folder_takes_the_first_existing_folder_else_home(tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    there = tmp_path / "there"
    there.mkdir()
    assert start_folder(str(tmp_path / "gone"), there) == str(there)
    assert start_folder("", None) == str(Path.home())
    assert start_folder(None, tmp_path / "gone") != str(cwd)


class _Dialogs:
    """Stands in for the native dialogs: records where each one opened."""

    def __init__(self, monkeypatch, answer=""):
        self.opened: list[str] = []
        self.answer = answer
        monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileName", self._open)
        monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", self._open)

    def _open(self, parent, caption, folder, filters):
        self.opened.append(folder)
        return self.answer, ""


def test_open_starts_in_the_last_folder_used_else_the_documents(window, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dialogs = _Dialogs(monkeypatch)
    window.open_dialog()  # nothing opened yet and the expression has no file: home
    assert dialogs.opened[-1] == str(Path.home())
    window.load_example("diamond")
    window.open_dialog()  # the document's folder
    assert dialogs.opened[-1] == str(find_example("diamond").path.parent)
    folder = tmp_path / "programs"
    folder.mkdir()
    expr = folder / "mine.expr"
    expr.write_text("y = cos(x)\n")
    dialogs.answer = str(expr)
    window.open_dialog()
    assert window.document.path == expr
    dialogs.answer = ""
    window.load_example("diamond")
    window.open_dialog()  # the last folder used wins over the document's
    assert dialogs.opened[-1] == str(folder)
    assert window.settings.last_directory() == str(folder)


def test_export_starts_in_the_last_export_folder(window, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    documents = tmp_path / "Documents"
    documents.mkdir()
    monkeypatch.setattr("viewer.qt.dialogs.documents_folder", lambda: str(documents))
    dialogs = _Dialogs(monkeypatch)
    window.export_dialog()  # nothing exported yet: the user's documents folder
    assert Path(dialogs.opened[-1]).parent == documents
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    dialogs.answer = str(pictures / "mine.png")
    window.export_dialog()
    assert (pictures / "mine.png").exists()
    dialogs.answer = ""
    window.export_dialog()
    assert Path(dialogs.opened[-1]).parent == pictures


def test_the_export_folder_is_the_last_used_else_documents_never_the_bundled_one(tmp_path):
    last, documents = tmp_path / "last", tmp_path / "Documents"
    last.mkdir()
    documents.mkdir()
    bundled = assets.root()
    examples = find_example("diamond").path.parent
    assert export_start_folder(last, documents, bundled) == str(last)
    assert export_start_folder("", documents, bundled) == str(documents)
    assert export_start_folder(tmp_path / "gone", documents, bundled) == str(documents)
    assert export_start_folder(examples, documents, bundled) == str(documents)
    assert export_start_folder(bundled, "", bundled) == str(Path.home())
    assert export_start_folder("", tmp_path / "no Documents", bundled) == str(Path.home())


@pytest.fixture
def documents(tmp_path, monkeypatch):
    folder = tmp_path / "Documents"
    folder.mkdir()
    real = QtCore.QStandardPaths.writableLocation

    def writable(location):
        if location == QtCore.QStandardPaths.StandardLocation.DocumentsLocation:
            return str(folder)
        return real(location)

    monkeypatch.setattr(QtCore.QStandardPaths, "writableLocation", writable)
    return folder


def _saves(monkeypatch, opened: list[str], answer: str = "") -> None:
    """The save dialog stands in: records where it opened, answers ``answer``."""
    monkeypatch.setattr(
        QtWidgets.QFileDialog,
        "getSaveFileName",
        lambda parent, caption, start, filters: (opened.append(start), (answer, ""))[1],
    )


def test_export_opens_in_documents_not_beside_a_bundled_example(window, documents, monkeypatch):
    opened: list[str] = []
    _saves(monkeypatch, opened)
    assert window.load_example("diamond")
    window.export_dialog()
    assert Path(opened[-1]) == documents / "diamond.png"


def test_save_trace_opens_where_export_does_never_in_the_working_directory(
    window, documents, tmp_path, monkeypatch
):
    # it opened "trace.json" in the process's working directory: the repository, for an app
    # started there, where a saved trace lands among the project's files
    monkeypatch.chdir(tmp_path)
    opened: list[str] = []
    _saves(monkeypatch, opened)
    assert window.load_example("diamond")
    window.save_trace_dialog()
    assert Path(opened[-1]) == documents / "diamond.json"
    chosen = tmp_path / "traces"
    chosen.mkdir()
    _saves(monkeypatch, opened, str(chosen / "t"))
    window.save_trace_dialog()
    assert (chosen / "t.json").is_file()  # the suffix added, the trace written
    window.export_dialog()  # the folder chosen is remembered, for Export too
    assert Path(opened[-1]).parent == chosen
