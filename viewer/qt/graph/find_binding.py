"""Binds the find bar to the Document: a query searches the graph shown (a
:class:`~viewer.model.panels.find.FindCursor`), and the current match is selected and centred.

A match inside a collapsed module box is revealed first, through ``Document.reveal(node_id)``
when the Document has it (module collapse). While the user types, the count follows each key
but the first match is shown only once typing pauses (:data:`SHOW_DELAY_MS`): the matches of
"b" on the way to "b3/fc1" open no module. The graph is indexed when the bar is open, on the
first query: loading a graph with the bar closed costs nothing.
"""

from __future__ import annotations

from PySide6 import QtCore

from viewer.model.document.document import Document
from viewer.model.panels.find import FindCursor
from viewer.qt.graph.find_bar import FindBar
from viewer.qt.graph.scene_binding import SceneBinding

__all__ = ["SHOW_DELAY_MS", "FindBinding"]

SHOW_DELAY_MS = 150


class FindBinding(QtCore.QObject):
    def __init__(
        self,
        document: Document,
        bar: FindBar,
        scene_binding: SceneBinding,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.bar = bar
        self.scene_binding = scene_binding
        self.cursor = FindCursor()
        self._typed = QtCore.QTimer(self)
        self._typed.setSingleShot(True)
        self._typed.setInterval(SHOW_DELAY_MS)
        self._typed.timeout.connect(self._show_current)
        document.graph_loaded.connect(self._on_graph_loaded)
        self.cursor.matches_changed.connect(self._on_matches_changed)
        bar.query_edited.connect(self._on_typed)
        bar.closed.connect(self._typed.stop)
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
        if self._typed.isActive():  # Enter right after typing: the first match
            self._typed.stop()
            return self._show(self.cursor.current)
        return self._show(self.cursor.next())

    def previous_match(self) -> int | None:
        self._typed.stop()
        return self._show(self.cursor.previous())

    def _on_typed(self, query: str) -> None:
        self._use_document_graph()
        self.cursor.search(query)
        self._show_count()
        if self.cursor.count:
            self._typed.start()
        else:
            self._typed.stop()

    def _show_current(self) -> None:
        self._show(self.cursor.current)

    # ---------------------------------------------------------------- model -> bar
    def _use_document_graph(self) -> None:
        doc = self.document
        self.cursor.set_source(doc.trace, doc.scene)

    def _on_graph_loaded(self, document: Document) -> None:
        if self.bar.isVisible():
            self._use_document_graph()

    def _on_matches_changed(self, cursor: FindCursor) -> None:
        self._show_count()

    def _show_count(self) -> None:
        cursor = self.cursor
        error = cursor.error
        self.bar.set_count(cursor.summary(), cursor.count > 0, "" if error is None else str(error))

    def _show(self, node_id: int | None) -> int | None:
        self._show_count()
        if node_id is None:
            return None
        reveal = getattr(self.document, "reveal", None)
        if reveal is not None:
            reveal(node_id)  # expands the collapsed modules around it (it may rebuild the scene)
        self.scene_binding.show_node(node_id)
        return node_id
