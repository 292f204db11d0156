"""Binds the Document's leaf values to the variables table: the table shows the accepted
values, and a value typed in a cell re-runs the program with it (a rejected one is put back,
with the reason under the table)."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6 import QtCore

from viewer.model.document.document import Document, LeafRow
from viewer.qt.program.variables import VariablesTable

__all__ = ["VariablesBinding"]


class VariablesBinding(QtCore.QObject):
    def __init__(
        self, document: Document, table: VariablesTable, parent: QtCore.QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.table = table
        self.editing: str | None = None  # the leaf whose new value is being run
        document.leaves_changed.connect(self._on_leaves_changed)
        table.value_edited.connect(self.set_leaf_value)

    def set_leaf_value(self, name: str, text: str) -> bool:
        """Re-run the program with ``name = text``; a rejected value is marked on its cell
        (its error is the table's to show, not the editor's)."""
        self.editing = name
        try:
            ok = self.document.set_leaf_value(name, text)
        finally:
            self.editing = None
        if not ok:
            self.table.mark_error(name, str(self.document.last_error))
        return ok

    def _on_leaves_changed(self, rows: Sequence[LeafRow]) -> None:
        self.table.set_leaves([(r.name, r.text, _shape_text(r.shape)) for r in rows])


def _shape_text(shape: tuple[int, ...]) -> str:
    return "scalar" if shape == () else " x ".join(str(d) for d in shape)
