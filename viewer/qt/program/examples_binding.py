"""Binds the bundled examples to the example library: the library lists them, and the one
chosen is opened by the window (an example script is the user's to run, like a file)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6 import QtCore

from viewer.model.document.examples import list_examples
from viewer.qt.program.examples import ExampleLibrary

__all__ = ["ExampleBinding"]


class ExampleBinding(QtCore.QObject):
    def __init__(
        self,
        library: ExampleLibrary,
        open_example: Callable[[str], bool],
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.library = library
        library.example_chosen.connect(open_example)
        library.set_examples([(e.stem, e.title, e.description) for e in list_examples()])
