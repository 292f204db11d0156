"""Binds the overview to the graph view and the Document: the graph shown, the view's
rectangle (pan, zoom, resize), the current step's nodes and the selection; a click in the
overview centres the view there."""

from __future__ import annotations

import numpy as np
from PySide6 import QtCore

from viewer.model.document.document import Document
from viewer.qt.graph.overview import Overview
from viewer.qt.graph.scene_binding import SceneBinding
from viewer.qt.graph.view import GraphView

__all__ = ["OverviewBinding"]


class OverviewBinding(QtCore.QObject):
    def __init__(
        self,
        document: Document,
        overview: Overview,
        view: GraphView,
        scene_binding: SceneBinding,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.overview = overview
        self.view = view
        self.scene_binding = scene_binding
        # connected after the SceneBinding's: the view already shows what these report
        document.graph_loaded.connect(self._on_graph_loaded)
        document.playback.step_changed.connect(self._on_step_changed)
        document.selection_changed.connect(self._on_selection_changed)
        scene_binding.scene_shown.connect(self._on_graph)
        view.view_changed.connect(self._on_view_changed)
        view.overlays_changed.connect(self._check_covering)
        overview.centre_requested.connect(view.center_at)
        self._on_graph()

    def _on_graph_loaded(self, _document: Document) -> None:
        self._on_graph()

    def _on_graph(self) -> None:
        self.overview.set_graph(self.view.geometry_data)
        self._on_view_changed()
        self._on_step_changed(self.document.playback.index)
        self._on_selection_changed(self.document.selection)

    def _on_view_changed(self) -> None:
        self.overview.set_view_rect(self.view.visible_rect())
        self._check_covering()

    def _on_step_changed(self, _index: int) -> None:
        frame = self.view.frame
        self.overview.set_active(frame.current_nodes if frame is not None else np.zeros(0, int))
        self._check_covering()

    def _check_covering(self) -> None:
        """Fade the overview while a box of the current step's nodes is under it, or a flagged
        node's ring or badge may be (a badge reaches out of its box: the reach is counted)."""
        overview, view, frame = self.overview, self.view, self.view.frame
        covering = False
        shown = view.visible_rect()
        port = view.viewport().geometry()
        if overview.isVisible() and shown.width() > 0 and shown.height() > 0:
            geo = view.geometry_data
            current = frame.current_nodes if frame is not None else np.zeros(0, np.intp)
            flagged, reach = view.flagged()
            nodes = np.concatenate([current, flagged]).astype(np.intp)
            keep = (nodes >= 0) & (nodes < geo.n_nodes)
            grow = np.concatenate([np.zeros(len(current)), np.full(len(flagged), reach)])[keep]
            nodes = nodes[keep]
            # From the view's range, not through the view box's transform: that is brought up
            # to date only when the view paints, and updating it here would zoom ahead of it.
            sx, sy = port.width() / shown.width(), port.height() / shown.height()
            lo = geo.positions[nodes] - geo.half_sizes[nodes]
            hi = geo.positions[nodes] + geo.half_sizes[nodes]
            area = overview.geometry()
            left = (lo[:, 0] - shown.left()) * sx + port.left() - grow
            right = (hi[:, 0] - shown.left()) * sx + port.left() + grow
            top = (lo[:, 1] - shown.top()) * sy + port.top() - grow  # y grows downwards
            bottom = (hi[:, 1] - shown.top()) * sy + port.top() + grow
            covering = bool(
                (
                    (right >= area.left())
                    & (left <= area.right())
                    & (bottom >= area.top())
                    & (top <= area.bottom())
                ).any()
            )
        overview.set_covering(covering)

    def _on_selection_changed(self, _node_id: int | None) -> None:
        self.overview.set_selected(self.scene_binding.selected_index())
