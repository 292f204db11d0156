"""Binds the graph view's module interactions to the Document's scope operations.

A double-click on a module box, or Enter with one selected, expands it in place; on a folded
run ("Block \u00d7 6") it unfolds the run into one box per repeat; a double-click inside an
open module's frame, on no node, collapses it. A right-click on the graph opens
:meth:`ScopeBinding.context_menu`: Collapse (the scope of the node clicked; for a box, the
scope around it; on no node, the frame there), Collapse siblings, Expand all, and Depth 0 /
1 / 2 / 3. Everything is a call of a Document method; the scene binder redraws on
``scene_changed``, in place. A change of the whole graph (a depth, Expand all) then fits the
view to it.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.document.document import Document
from viewer.qt.graph.view import GraphView

__all__ = ["DEPTHS", "ScopeBinding"]

DEPTHS = (0, 1, 2, 3)


class ScopeBinding(QtCore.QObject):
    """Module boxes: expand on double-click or Enter; the graph view's context menu."""

    def __init__(
        self, document: Document, view: GraphView, parent: QtCore.QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.view = view
        self.last_menu: QtWidgets.QMenu | None = None
        view.node_activated.connect(self.activate)
        view.frame_activated.connect(self.collapse_frame)
        view.context_requested.connect(self._on_context_requested)

    def activate(self, index: int) -> bool:
        """Expand the module box at node ``index`` (nothing for another node)."""
        scene = self.document.scene
        box = scene.module(index) if scene is not None else None
        if box is None:
            return False
        if box.count > 1:
            return self.document.unfold(box.path)
        return self.document.expand(box.path)

    def collapse_frame(self, path: str) -> bool:
        """Collapse the open module ``path`` (a double-click inside its frame, on no node)."""
        return bool(path) and self.document.collapse(path)

    def set_depth(self, depth: int) -> bool:
        """Show every scope down to ``depth`` and fit the view to the graph it gives."""
        return self._refit(self.document.set_depth(depth))

    def expand_all(self) -> bool:
        """Show the whole graph and fit the view to it."""
        return self._refit(self.document.expand_all())

    def _refit(self, changed: bool) -> bool:
        if changed:
            self.view.fit()
        return changed

    def _scope_around(self, index: int) -> str:
        """The path the menu's Collapse acts on for node ``index``: a box's parent scope, or
        the scope a node ran in ('' when there is none)."""
        doc = self.document
        scene = doc.scene
        if scene is None or index < 0:
            return ""
        box = scene.module(index)
        if box is not None:
            parent, _, _ = box.path.rpartition("/")
            return parent
        node_id = scene.node_id(index)
        return doc.scope_path_of(node_id) if node_id is not None else ""

    def context_menu(self, index: int, frame: str = "") -> QtWidgets.QMenu:
        """The graph view's menu for a right-click on node ``index`` (-1: on the background,
        inside the open module ``frame`` if not ''). Its actions are named ``collapse``,
        ``collapse_siblings``, ``expand``, ``expand_all`` and ``depth_N``."""
        doc = self.document
        menu = QtWidgets.QMenu(self.view)
        menu.setObjectName("graphContextMenu")
        has_scopes = doc.scene is not None and doc.scene.scopes is not None
        path = self._scope_around(index) if has_scopes else ""
        if index < 0 and has_scopes:
            path = frame
        scene = doc.scene
        box = scene.module(index) if scene is not None and index >= 0 else None

        def add(name: str, text: str, slot, enabled: bool = True) -> QtGui.QAction:
            act = menu.addAction(text)
            act.setObjectName(name)
            act.setEnabled(enabled)
            act.triggered.connect(slot)
            return act

        if box is not None and box.count > 1:
            add("expand", f"Unfold {scene.names[index]}", lambda: doc.unfold(box.path))
        elif box is not None:
            add("expand", f"Expand {box.path}", lambda: doc.expand(box.path))
        add(
            "collapse",
            f"Collapse {path}" if path else "Collapse",
            lambda: doc.collapse(path),
            bool(path),
        )
        sibling = box.path if box is not None else path
        add(
            "collapse_siblings",
            "Collapse siblings",
            lambda: doc.collapse_siblings(sibling),
            bool(sibling),
        )
        add("expand_all", "Expand all", self.expand_all, has_scopes)
        menu.addSeparator()
        for depth in DEPTHS:
            add(
                f"depth_{depth}",
                f"Depth {depth}",
                lambda _=False, d=depth: self.set_depth(d),
                has_scopes,
            )
        self.last_menu = menu
        return menu

    def _on_context_requested(self, index: int, screen: QtCore.QPoint) -> None:
        if index >= 0 and self.document.scene is not None:
            # the node right-clicked is the one the menu is about: the inspector shows it
            # (it kept showing the one clicked before)
            self.document.select_index(index)
        point = self.view.context_point
        frame = self.view.frame_at(*point) if index < 0 and point is not None else ""
        menu = self.context_menu(index, frame)
        menu.popup(screen)
