"""Binds the overview to the graph view and the Document: the graph shown, the view's
rectangle (pan, zoom, resize), the current step's nodes and the selection; a click in the
overview centres the view there."""

from __future__ import annotations

import numpy as np
from PySide6 import QtCore

from viewer.model.document import Document
from viewer.qt.graph_view import GraphView
from viewer.qt.overview import Overview
from viewer.qt.scene_binding import SceneBinding

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
        """Fade the overview while a box of the current step's nodes is under it."""
        overview, view, frame = self.overview, self.view, self.view.frame
        covering = False
        if overview.isVisible() and frame is not None and len(frame.current_nodes):
            geo = view.geometry_data
            nodes = frame.current_nodes[frame.current_nodes < geo.n_nodes][:64]
            lo = (geo.positions[nodes] - geo.half_sizes[nodes]).tolist()
            hi = (geo.positions[nodes] + geo.half_sizes[nodes]).tolist()
            area = overview.geometry()
            offset = view.viewport().pos()
            box = view.view_box
            for (x0, y0), (x1, y1) in zip(lo, hi, strict=True):
                rect = box.mapViewToScene(QtCore.QRectF(x0, y0, x1 - x0, y1 - y0))
                on_screen = view.mapFromScene(rect).boundingRect().translated(offset)
                if area.intersects(on_screen):
                    covering = True
                    break
        overview.set_covering(covering)

    def _on_selection_changed(self, _node_id: int | None) -> None:
        self.overview.set_selected(self.scene_binding.selected_index())
