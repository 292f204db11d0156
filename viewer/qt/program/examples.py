"""The example library panel: a filterable list; activating an entry loads that example."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6 import QtCore, QtWidgets

__all__ = ["ExampleLibrary"]


class ExampleLibrary(QtWidgets.QWidget):
    example_chosen = QtCore.Signal(str)  # the example's name

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("exampleLibrary")
        self.filter_edit = QtWidgets.QLineEdit(self)
        self.filter_edit.setObjectName("exampleFilter")
        self.filter_edit.setPlaceholderText("Filter examples")
        self.filter_edit.setClearButtonEnabled(True)
        self.list = QtWidgets.QListWidget(self)
        self.list.setObjectName("exampleList")
        self.list.setWordWrap(True)
        self.list.setAlternatingRowColors(True)
        self.open_button = QtWidgets.QPushButton("Open example", self)
        self.open_button.setObjectName("openExampleButton")
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.filter_edit)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.open_button)
        self.filter_edit.textChanged.connect(self._filter)
        self.list.itemActivated.connect(self._activate)
        self.open_button.clicked.connect(self._open_current)

    def set_examples(self, entries: Sequence[tuple[str, str, str]]) -> None:
        """``(name, title, description)`` per example, in the order to show them."""
        self.list.clear()
        for name, title, description in entries:
            item = QtWidgets.QListWidgetItem(title or name)
            item.setData(QtCore.Qt.ItemDataRole.UserRole, name)
            item.setToolTip(description or name)
            self.list.addItem(item)
        self._filter(self.filter_edit.text())

    def names(self) -> list[str]:
        return [
            self.list.item(i).data(QtCore.Qt.ItemDataRole.UserRole)
            for i in range(self.list.count())
        ]

    def _filter(self, text: str) -> None:
        needle = text.strip().lower()
        for i in range(self.list.count()):
            item = self.list.item(i)
            hay = f"{item.text()} {item.toolTip()}".lower()
            item.setHidden(bool(needle) and needle not in hay)

    def _activate(self, item: QtWidgets.QListWidgetItem) -> None:
        self.example_chosen.emit(str(item.data(QtCore.Qt.ItemDataRole.UserRole)))

    def _open_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self._activate(item)
