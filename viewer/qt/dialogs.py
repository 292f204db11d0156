"""The window's dialogs: where File > Open, Save Trace and Export open and what they
remember, the question asked before a user's script runs, and the box that reports a problem.

Each file dialog returns the path the user chose ('' when cancelled); the window decides what
to do with it (open it, export to it), so nothing here knows the Document.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6 import QtCore, QtWidgets

from viewer.model import assets
from viewer.model.document import data_export
from viewer.qt.graph.image_export import EXPORT_FORMATS
from viewer.qt.settings import AppSettings

__all__ = [
    "EXPORT_FILTER",
    "OPEN_FILTER",
    "ask_export_path",
    "ask_open_path",
    "ask_trace_path",
    "chose_to_run",
    "documents_folder",
    "export_start_folder",
    "problem_box",
    "script_confirmation",
    "start_folder",
]

OPEN_FILTER = (
    "Everything it opens (*.expr *.txt *.json *.npz *.py);;Expressions (*.expr *.txt);;"
    "Traces (*.json *.npz);;Python scripts (*.py);;All files (*)"
)
EXPORT_FILTER = "PNG image (*.png);;SVG drawing (*.svg);;" + data_export.FILE_FILTER


def start_folder(*candidates: str | os.PathLike[str] | None) -> str:
    """Where a file dialog opens: the first candidate that is an existing folder (the last
    folder used, then the current document's), else the home folder; never the process's
    working directory, which for an app started from a menu means nothing to the user."""
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return str(Path(candidate))
    return str(Path.home())


def documents_folder() -> str:
    """The user's documents folder as the platform names it ('' when it has none)."""
    location = QtCore.QStandardPaths.StandardLocation.DocumentsLocation
    return QtCore.QStandardPaths.writableLocation(location)


def export_start_folder(
    last_export: str | os.PathLike[str] | None,
    documents: str | os.PathLike[str] | None,
    bundled: str | os.PathLike[str],
) -> str:
    """Where File > Export opens: the last folder exported to, else the documents folder, else
    home; never inside ``bundled`` (the app's own files: an example's folder is no place for
    the user's pictures, and may be read-only)."""
    inside = Path(bundled).resolve()

    def usable(folder: str | os.PathLike[str] | None) -> bool:
        if not folder:
            return False
        path = Path(folder).resolve()
        return path != inside and inside not in path.parents

    return start_folder(*(f for f in (last_export, documents) if usable(f)))


def ask_open_path(
    parent: QtWidgets.QWidget, settings: AppSettings, document_path: Path | None
) -> str:
    """File > Open: starts in the last folder opened from, else the document's; the folder of
    the file chosen is remembered."""
    document_folder = document_path.parent if document_path is not None else None
    folder = start_folder(settings.last_directory(), document_folder)
    path, _ = QtWidgets.QFileDialog.getOpenFileName(parent, "Open", folder, OPEN_FILTER)
    if path:
        settings.set_last_directory(Path(path).parent)
    return path


def ask_trace_path(parent: QtWidgets.QWidget, settings: AppSettings, stem: str = "trace") -> str:
    """File > Save Trace: a JSON file (the suffix added when not typed), ``stem``.json in
    the folder File > Export starts in (:func:`export_start_folder`; it opened in the
    process's working directory, the repository for an app started there); the folder chosen
    is remembered for both."""
    folder = export_start_folder(
        settings.last_export_directory(), documents_folder(), assets.root()
    )
    path, _ = QtWidgets.QFileDialog.getSaveFileName(
        parent, "Save the trace", str(Path(folder) / f"{stem}.json"), "Trace (*.json)"
    )
    if path:
        settings.set_last_export_directory(Path(path).parent)
        if not path.lower().endswith(".json"):
            path += ".json"
    return path


def ask_export_path(parent: QtWidgets.QWidget, settings: AppSettings, stem: str) -> str:
    """File > Export: ``stem``.png in the last folder exported to, else the documents folder
    (:func:`export_start_folder`); the folder chosen is remembered, and a name typed without a
    known suffix gets the chosen filter's."""
    folder = export_start_folder(
        settings.last_export_directory(), documents_folder(), assets.root()
    )
    start = str(Path(folder) / f"{stem}.png")
    path, chosen = QtWidgets.QFileDialog.getSaveFileName(
        parent, "Export the view, the graph or the trace", start, EXPORT_FILTER
    )
    if path:
        settings.set_last_export_directory(Path(path).parent)
        known = (*EXPORT_FORMATS, *data_export.DATA_FORMATS)
        if Path(path).suffix.lower() not in known:
            # no suffix typed: the one of the chosen filter, "PNG image (*.png)" -> .png
            path += chosen.split("(*", 1)[1].split()[0].rstrip(")") if "(*" in chosen else ""
    return path


def question(
    parent: QtWidgets.QWidget,
    name: str,
    title: str,
    text: str,
    act: tuple[str, QtWidgets.QMessageBox.ButtonRole],
    keep: str,
) -> tuple[QtWidgets.QMessageBox, QtWidgets.QAbstractButton]:
    """A question whose buttons say what they do: ``act`` (its text and role) and ``keep``,
    the default and the Escape answer (Return never does the act by accident); plain text.
    Returns the box (object name ``name``) and the act's button."""
    box = QtWidgets.QMessageBox(parent)
    box.setObjectName(name)
    box.setIcon(QtWidgets.QMessageBox.Icon.Question)
    box.setWindowTitle(title)
    box.setTextFormat(QtCore.Qt.TextFormat.PlainText)
    box.setText(text)
    button = box.addButton(*act)
    stay = box.addButton(keep, QtWidgets.QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(stay)
    box.setEscapeButton(stay)
    return box, button


def script_confirmation(parent: QtWidgets.QWidget, path: Path) -> QtWidgets.QMessageBox:
    """The question asked before a script runs: "Don't Run" the default."""
    box, run = question(
        parent,
        "scriptConfirmation",
        "Run this script?",
        f"{path.name} is Python code: opening it runs it, in a process of its own but with "
        f"your rights, while recording the graphs it builds.\n\n{path}",
        ("Run Script", QtWidgets.QMessageBox.ButtonRole.AcceptRole),
        "Don't Run",
    )
    box.setProperty("runButton", run)
    return box


def chose_to_run(box: QtWidgets.QMessageBox) -> bool:
    """Shows :func:`script_confirmation`'s ``box`` until answered: True for Run Script."""
    box.exec()
    clicked = box.clickedButton()
    role = box.buttonRole(clicked) if clicked is not None else None
    return role == QtWidgets.QMessageBox.ButtonRole.AcceptRole


def problem_box(parent: QtWidgets.QWidget, message: str) -> QtWidgets.QMessageBox:
    """A warning that does not block (``open()`` it) and deletes itself once closed."""
    box = QtWidgets.QMessageBox(
        QtWidgets.QMessageBox.Icon.Warning, "autodiff viewer", message, parent=parent
    )
    box.setObjectName("errorBox")
    box.setTextFormat(QtCore.Qt.TextFormat.PlainText)  # messages quote files and names
    box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
    return box
