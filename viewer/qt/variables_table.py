"""The leaf variables of the typed program: name, value (editable), shape.

Editing a value emits :attr:`VariablesTable.value_edited`; the main window re-runs the program
with it. A value the model rejects is shown in the row's tooltip and the cell keeps the text the
user typed, so nothing typed is lost.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6 import QtCore, QtGui, QtWidgets

__all__ = ["VariablesTable"]


class VariablesTable(QtWidgets.QTableWidget):
    value_edited = QtCore.Signal(str, str)  # leaf name, the text typed

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(0, 3, parent)
        self.setObjectName("variablesTable")
        self.setHorizontalHeaderLabels(["leaf", "value", "shape"])
        header = self.horizontalHeader()
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        self.verticalHeader().hide()
        self.setAlternatingRowColors(True)
        self.setEditTriggers(
            QtWidgets.QAbstractItemView.EditTrigger.DoubleClicked
            | QtWidgets.QAbstractItemView.EditTrigger.EditKeyPressed
            | QtWidgets.QAbstractItemView.EditTrigger.AnyKeyPressed
        )
        self.setToolTip("Leaf values: double-click a value to edit it; the program re-runs")
        self._filling = False
        self.itemChanged.connect(self._on_item_changed)

    def set_leaves(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """Show ``(name, value text, shape text)`` rows, replacing the old ones."""
        self._filling = True
        try:
            self.setRowCount(len(rows))
            for r, (name, value, shape) in enumerate(rows):
                for c, text in enumerate((name, value, shape)):
                    item = QtWidgets.QTableWidgetItem(text)
                    if c != 1:
                        item.setFlags(item.flags() & ~QtCore.Qt.ItemFlag.ItemIsEditable)
                    else:
                        item.setToolTip(f"value of {name}: a number or a nested list")
                    self.setItem(r, c, item)
        finally:
            self._filling = False

    def leaf_names(self) -> list[str]:
        return [self.item(r, 0).text() for r in range(self.rowCount()) if self.item(r, 0)]

    def value_text(self, name: str) -> str | None:
        row = self._row(name)
        return None if row is None else self.item(row, 1).text()

    def set_value_text(self, name: str, text: str) -> None:
        """Put ``text`` in ``name``'s value cell as if the user had typed it."""
        row = self._row(name)
        if row is None:
            raise ValueError(f"no leaf named {name!r}; leaves: {', '.join(self.leaf_names())}")
        self.item(row, 1).setText(text)

    def mark_error(self, name: str, message: str) -> None:
        row = self._row(name)
        if row is None:
            return
        item = self.item(row, 1)
        self._filling = True
        try:
            item.setToolTip(message)
            item.setForeground(QtGui.QBrush(QtGui.QColor("#c92a2a")))
        finally:
            self._filling = False

    def _row(self, name: str) -> int | None:
        for r in range(self.rowCount()):
            item = self.item(r, 0)
            if item is not None and item.text() == name:
                return r
        return None

    def _on_item_changed(self, item: QtWidgets.QTableWidgetItem) -> None:
        if self._filling or item.column() != 1:
            return
        name_item = self.item(item.row(), 0)
        if name_item is not None:
            self.value_edited.emit(name_item.text(), item.text())
