"""Binds the find bar to the Document: a query searches the graph shown (a
:class:`~viewer.model.find.FindCursor`), and the current match is selected and centred.

A match inside a collapsed module box is revealed first, through ``Document.reveal(node_id)``
when the Document has it (module collapse). The graph is indexed when the bar is open, on the
first query: loading a graph with the bar closed costs nothing.
"""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

from viewer.model.document import Document
from viewer.model.find import FindCursor
from viewer.qt.find_bar import FindBar
from viewer.qt.scene_binding import SceneBinding

__all__ = ["FindBinding"]


class FindBinding(QtCore.QObject):
    def __init__(
        self,
        document: Document,
        bar: FindBar,
        scene_binding: SceneBinding,
        status_bar: QtWidgets.QStatusBar | None = None,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.bar = bar
        self.scene_binding = scene_binding
        self.status_bar = status_bar
        self.cursor = FindCursor()
        document.graph_loaded.connect(self._on_graph_loaded)
        self.cursor.matches_changed.connect(self._on_matches_changed)
        bar.query_edited.connect(self.find)
        bar.next_requested.connect(self.next_match)
        bar.previous_requested.connect(self.previous_match)

    # ---------------------------------------------------------------- commands
    def open(self) -> None:
        """Ctrl+F: show the bar with the cursor in its field."""
        self._use_document_graph()
        self.bar.open_bar()

    def find(self, query: str) -> int | None:
        """Search for ``query`` and show its first match (None: no match)."""
        self._use_document_graph()
        return self._show(self.cursor.search(query))

    def next_match(self) -> int | None:
        return self._show(self.cursor.next())

    def previous_match(self) -> int | None:
        return self._show(self.cursor.previous())

    # ---------------------------------------------------------------- model -> bar
    def _use_document_graph(self) -> None:
        doc = self.document
        self.cursor.set_source(doc.trace, doc.scene)

    def _on_graph_loaded(self, document: Document) -> None:
        if self.bar.isVisible():
            self._use_document_graph()

    def _on_matches_changed(self, cursor: FindCursor) -> None:
        self.bar.set_count(cursor.summary(), cursor.count > 0)

    def _show(self, node_id: int | None) -> int | None:
        self.bar.set_count(self.cursor.summary(), self.cursor.count > 0)
        if node_id is None:
            return None
        reveal = getattr(self.document, "reveal", None)
        if reveal is not None:
            reveal(node_id)  # expands the collapsed modules around it (it may rebuild the scene)
        self.scene_binding.show_node(node_id)
        return node_id
