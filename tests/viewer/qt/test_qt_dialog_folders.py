"""File > Open and File > Export open in the last folder used, else the document's folder,
never the process's working directory."""

from pathlib import Path

from PySide6 import QtWidgets

from viewer.model.document.examples import find_example
from viewer.qt.main_window import start_folder


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
    dialogs = _Dialogs(monkeypatch)
    window.export_dialog()
    assert Path(dialogs.opened[-1]).parent == Path.home()
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    dialogs.answer = str(pictures / "mine.png")
    window.export_dialog()
    assert (pictures / "mine.png").exists()
    dialogs.answer = ""
    window.export_dialog()
    assert Path(dialogs.opened[-1]).parent == pictures
