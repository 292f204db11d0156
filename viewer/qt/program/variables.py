"""The leaf variables of the typed program: name, value (editable), shape.

Editing a value emits :attr:`VariablesTable.value_edited`; its VariablesBinding re-runs the
program with it. A value the model rejects is not kept in the cell: the cell goes back to the last
accepted value (what the graph shows), and the reason, with the text that was typed, appears
in a message under the table (and in the cell's tooltip) until a value is accepted.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6 import QtCore, QtWidgets

from viewer.qt.drawing.plain_text import tooltip

__all__ = ["VariablesTable"]

_ACCEPTED_ROLE = QtCore.Qt.ItemDataRole.UserRole  # the value text the model last accepted


class VariablesTable(QtWidgets.QWidget):
    """The table of leaves, and under it the message of the last rejected value."""

    value_edited = QtCore.Signal(str, str)  # leaf name, the text typed

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("variablesPanel")
        self.table = QtWidgets.QTableWidget(0, 3, self)
        table = self.table
        table.setObjectName("variablesTable")
        table.setHorizontalHeaderLabels(["leaf", "value", "shape"])
        header = table.horizontalHeader()
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        table.verticalHeader().hide()
        table.setAlternatingRowColors(True)
        table.setEditTriggers(
            QtWidgets.QAbstractItemView.EditTrigger.DoubleClicked
            | QtWidgets.QAbstractItemView.EditTrigger.EditKeyPressed
            | QtWidgets.QAbstractItemView.EditTrigger.AnyKeyPressed
        )
        table.setToolTip("Leaf values: double-click a value to edit it; the program re-runs")

        self.message = QtWidgets.QLabel(self)
        self.message.setObjectName("variablesMessage")
        self.message.setWordWrap(True)
        self.message.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.message.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setContentsMargins(4, 2, 4, 4)
        self.message.hide()

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(table, 1)
        layout.addWidget(self.message)

        self._filling = False
        table.itemChanged.connect(self._on_item_changed)

    def set_leaves(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """Show ``(name, value text, shape text)`` rows, replacing the old ones; the values are
        the accepted ones, so a message about a rejected value is cleared."""
        self._filling = True
        try:
            self.table.setRowCount(len(rows))
            for r, (name, value, shape) in enumerate(rows):
                for c, text in enumerate((name, value, shape)):
                    item = QtWidgets.QTableWidgetItem(text)
                    if c != 1:
                        item.setFlags(item.flags() & ~QtCore.Qt.ItemFlag.ItemIsEditable)
                    else:
                        item.setToolTip(f"value of {name}: a number or a nested list")
                        item.setData(_ACCEPTED_ROLE, text)
                    self.table.setItem(r, c, item)
        finally:
            self._filling = False
        self.clear_message()

    def leaf_names(self) -> list[str]:
        table = self.table
        return [table.item(r, 0).text() for r in range(table.rowCount()) if table.item(r, 0)]

    def value_text(self, name: str) -> str | None:
        row = self._row(name)
        return None if row is None else self.table.item(row, 1).text()

    def set_value_text(self, name: str, text: str) -> None:
        """Put ``text`` in ``name``'s value cell as if the user had typed it."""
        row = self._row(name)
        if row is None:
            raise ValueError(f"no leaf named {name!r}; leaves: {', '.join(self.leaf_names())}")
        self.table.item(row, 1).setText(text)

    def mark_error(self, name: str, message: str) -> None:
        """The value typed for ``name`` was rejected: put the last accepted value back in the
        cell and say why under the table."""
        row = self._row(name)
        if row is None:
            return
        item = self.table.item(row, 1)
        typed = item.text()
        accepted = item.data(_ACCEPTED_ROLE)
        accepted = typed if accepted is None else str(accepted)
        text = f"{name} = {typed} was not accepted: {message}"
        if accepted != typed:
            text += f". {name} keeps {accepted}."
        self._filling = True
        try:
            item.setText(accepted)
            item.setToolTip(tooltip(text))
        finally:
            self._filling = False
        self.message.setText(text)
        self.message.show()

    def message_text(self) -> str:
        """The message under the table ('' when none is shown)."""
        return self.message.text() if not self.message.isHidden() else ""

    def clear_message(self) -> None:
        self.message.clear()
        self.message.hide()

    def _row(self, name: str) -> int | None:
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            if item is not None and item.text() == name:
                return r
        return None

    def _on_item_changed(self, item: QtWidgets.QTableWidgetItem) -> None:
        if self._filling or item.column() != 1:
            return
        name_item = self.table.item(item.row(), 0)
        if name_item is not None:
            self.value_edited.emit(name_item.text(), item.text())
