"""Binds the Document's scene and playback cursor to the graph view and the inspector.

One step change is one ``GraphView.set_frame`` call with the scene's precomputed frame; the
inspector is refreshed with the Document's ``inspect()``. Clicks and tooltips go through the
scene's hit tests. :meth:`SceneBinding.show_node` is how the other panels (leaks, gradient
check, NaN jumps) show a node: selected and centred, in whichever of a script's graphs holds it.
"""

from __future__ import annotations

import numpy as np
from PySide6 import QtCore, QtWidgets

from autodiff.trace import TraceReader
from viewer.model.document.document import Document
from viewer.model.scene.scene import Scene
from viewer.qt.graph.view import GraphView, empty_geometry
from viewer.qt.panels.inspector import InspectorPanel

__all__ = ["SceneBinding", "scene_overlays"]


def scene_overlays(scene: Scene) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Every overlay of ``scene``, all kinds together: (node indexes, RGBA colours, badges)."""
    kinds = sorted({o.kind for overlays in scene.overlays.values() for o in overlays})
    nodes, colours, badges = [np.zeros(0, np.intp)], [np.zeros((0, 4), np.uint8)], []
    for kind in kinds:
        n, c, b = scene.overlay_arrays(kind)
        nodes.append(n)
        colours.append(c)
        badges += b
    return np.concatenate(nodes), np.concatenate(colours), badges


class SceneBinding(QtCore.QObject):
    """Keeps the view and the inspector showing ``document.scene`` at the current step."""

    scene_shown = QtCore.Signal()  # a new graph was put in the view

    def __init__(
        self,
        document: Document,
        view: GraphView,
        inspector: InspectorPanel,
        status_bar: QtWidgets.QStatusBar | None = None,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.view = view
        self.inspector = inspector
        self.status_bar = status_bar
        self._shown: Scene | None = None
        document.graph_loaded.connect(self._on_graph_loaded)
        document.scene_changed.connect(self._on_scene_changed)
        document.overlays_changed.connect(self._on_overlays_changed)
        document.playback.step_changed.connect(self._on_step_changed)
        document.selection_changed.connect(self._on_selection_changed)
        view.node_clicked.connect(document.select_index)
        inspector.node_requested.connect(self.select_node_id)
        view.set_hit_test(self._node_at, self._tooltip_at)
        view.view_box.sigResized.connect(self._on_resized)

    @property
    def shown_scene(self) -> Scene | None:
        return self._shown

    # ---------------------------------------------------------------- model -> view
    def _ensure_scene(self) -> bool:
        """Put the document's scene in the view if it is not there yet (the Document moves
        the cursor of a new graph before it announces the graph)."""
        scene = self.document.scene
        if scene is None:
            if self._shown is not None:
                self._shown = None
                self.view.set_graph(empty_geometry())
            return False
        if scene is not self._shown:
            scene.wrap_to(*self.view.viewport_size())
            old = self._shown.geometry if self._shown is not None else None
            same_place = (
                old is not None
                and old.positions.shape == scene.geometry.positions.shape
                and np.allclose(old.positions, scene.geometry.positions)
            )
            # A re-run with new leaf values keeps the same layout: keep the user's zoom too.
            self.view.set_graph(
                scene.geometry, fit=not same_place, label_lines=scene.max_label_lines()
            )
            self._shown = scene
            self._send_overlays()
            self.scene_shown.emit()
        return True

    def fit(self) -> None:
        """Fit the graph in the view (F), its rows first set in as many side-by-side bands as
        draw it biggest in the view's shape (``Scene.wrap_to``)."""
        scene = self._shown
        if (
            scene is not None
            and scene is self.document.scene
            and scene.wrap_to(*self.view.viewport_size())
        ):
            self._redraw_geometry(scene)
        self.view.fit()

    def _on_resized(self, *args: object) -> None:
        # A view still showing the whole graph as fitted follows a new shape of the window;
        # one the user zoomed or panned keeps what they chose.
        if self.view.is_fitted:
            self.fit()

    def _redraw_geometry(self, scene: Scene) -> None:
        self.view.set_graph(scene.geometry, fit=True, label_lines=scene.max_label_lines())
        self._send_overlays()
        self.view.set_frame(self.document.frame())
        self.view.set_selection(self.selected_index())
        self.scene_shown.emit()

    def _on_graph_loaded(self, document: Document) -> None:
        self.refresh()

    def _on_scene_changed(self, document: Document) -> None:
        """A module opened or closed: the same graph, so the zoom and the place stay."""
        scene = document.scene
        if scene is not None and scene is not self._shown:
            self.view.set_graph(scene.geometry, fit=False, label_lines=scene.max_label_lines())
            self._shown = scene
            self._send_overlays()
            self.scene_shown.emit()
        self.refresh()

    def refresh(self) -> None:
        """Redraw the current frame and the inspector (after a palette or overlay change)."""
        if self._ensure_scene():
            self.view.set_frame(self.document.frame())
            self.view.set_selection(self.selected_index())
        self._refresh_inspector()

    def _on_overlays_changed(self) -> None:
        self._send_overlays()
        self.refresh()

    def _send_overlays(self) -> None:
        scene = self.document.scene
        if scene is not None:
            self.view.set_overlays(*scene_overlays(scene))

    def _on_step_changed(self, index: int) -> None:
        if self._ensure_scene():
            self.view.set_frame(self.document.frame())
        self._refresh_inspector()

    def _on_selection_changed(self, node_id: int | None) -> None:
        if self._ensure_scene():
            self.view.set_selection(self.selected_index())
        self._refresh_inspector()

    def selected_index(self) -> int:
        scene, node_id = self.document.scene, self.document.selection
        if scene is None or node_id is None:
            return -1
        return scene.index_of(node_id)

    def _refresh_inspector(self) -> None:
        doc = self.document
        # A new graph moves the cursor before it clears the selection: the selected node may
        # belong to the previous graph for a moment.
        shown = doc.scene is not None and self.selected_index() >= 0
        info = doc.inspect() if shown else None
        notes = []
        box = doc.scene.module(self.selected_index()) if shown else None
        if box is not None:
            notes.append(
                "double-click or Enter unfolds it into one box per repeat"
                if box.count > 1
                else "double-click or Enter expands it"
            )
        if info is not None and doc.scene is not None:
            # the gradients summed at a fan-out are the Explain section's (ExplainBinding)
            for overlay in doc.scene.overlays.get(info.node_id, ()):
                if overlay.tooltip:
                    notes.append(f"{overlay.kind}: {overlay.tooltip}")
        self.inspector.show_node(info, notes)

    # ---------------------------------------------------------------- view -> model
    def select_node_id(self, node_id: int) -> None:
        """Select a node by trace id and bring it into view."""
        scene = self.document.scene
        if scene is None:
            return
        index = scene.index_of(node_id)
        if index >= 0:
            self.document.select(int(node_id))
            self.view.center_on(index)

    def show_node(self, node_id: int, trace: TraceReader | None = None) -> bool:
        """Select ``node_id`` and centre the view on it. A script's survivor in another of
        its graphs switches to that graph first. ``trace``: the trace ``node_id`` is a node
        of (the run's audited one, for a leak), when it may not be the graph shown's: a pass
        of a long run recorded on its own numbers its nodes afresh."""
        scene = self.document.scene
        if scene is None:
            return False
        shown = self.document.trace
        elsewhere = trace is not None and getattr(shown, "base", shown) is not trace
        if (elsewhere or scene.index_of(node_id) < 0) and not self._show_graph_with(node_id, trace):
            if self.status_bar is not None:
                self.status_bar.showMessage(f"Node #{node_id} is not in the graph shown")
            return False
        self.select_node_id(int(node_id))
        return True

    def _show_graph_with(self, node_id: int, trace: TraceReader | None = None) -> bool:
        doc = self.document
        result = doc.script_result
        if doc.kind != "script" or result is None:
            return False
        for index in range(len(result.graphs)):
            if trace is not None and not result.holds(index, trace):
                continue  # another trace's node of the same number
            try:
                view = result.view(index)
            except Exception:  # a broken graph: look at the others
                continue
            if node_id in view.graph:
                doc.show_script_graph(index)
                return doc.scene is not None and doc.scene.index_of(node_id) >= 0
        return False

    def _node_at(self, x: float, y: float) -> int:
        scene = self._shown
        return -1 if scene is None else scene.node_at(x, y)

    def _tooltip_at(self, x: float, y: float) -> str | None:
        scene = self._shown
        if scene is None:
            return None
        return scene.tooltip_at(x, y, self.document.playback.index)
