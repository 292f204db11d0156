"""Binds the Document's explanations to the inspector's Explain section and the graph view.

At every step and selection change the section shows the current backward step's terms
(``Document.explain_step``) and, for a selected variable, the gradients summed into it so far
and its chain rule (``Document.chain``). A name in the section under the pointer rings its node
in the graph; a click selects it (through :meth:`SceneBinding.select_node_id`). With the View
menu's edge labels on, the step's edges carry the gradients they pass.
"""

from __future__ import annotations

import numpy as np
from PySide6 import QtCore

from viewer.model.document.document import Document
from viewer.model.explain import StepExplanation
from viewer.model.explain.chain import chain_ready_at
from viewer.model.panels.explain_view import (
    ExplainLine,
    chain_lines,
    edge_midpoints,
    explain_lines,
    focus_choice,
    step_edge_labels,
)
from viewer.model.scene.text import node_name
from viewer.qt.graph.scene_binding import SceneBinding
from viewer.qt.graph.view import GraphView
from viewer.qt.panels.explain import ExplainSection

__all__ = ["ExplainBinding"]


class ExplainBinding(QtCore.QObject):
    """Keeps ``section`` explaining the Document's current step and selection."""

    def __init__(
        self,
        document: Document,
        section: ExplainSection,
        view: GraphView,
        scene_binding: SceneBinding,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.section = section
        self.view = view
        self.scene_binding = scene_binding
        self._edge_labels = False
        self.explanation: StepExplanation | None = None
        self._chain: tuple[tuple, list[ExplainLine]] | None = None
        document.graph_loaded.connect(lambda _doc: self._on_graph())
        document.scene_changed.connect(lambda _doc: self.refresh())
        document.playback.step_changed.connect(lambda _index: self.refresh())
        document.selection_changed.connect(lambda _node: self.refresh())
        scene_binding.scene_shown.connect(self._send_edge_labels)  # new geometry, new places
        section.node_requested.connect(scene_binding.select_node_id)
        section.node_hovered.connect(self._on_hovered)
        section.focus_requested.connect(self.set_focus_element)
        self.refresh()

    @property
    def edge_labels_shown(self) -> bool:
        return self._edge_labels

    def set_edge_labels(self, on: bool) -> None:
        """Label the current backward step's edges with the gradients they carry."""
        self._edge_labels = bool(on)
        self._send_edge_labels()

    def set_focus_element(self, element: tuple[int, ...] | None) -> None:
        self.document.set_focus_element(element)
        self.refresh()

    # ---------------------------------------------------------------- model -> view
    def _on_graph(self) -> None:
        self._chain = None  # a re-run may keep the trace's numbering with new values
        self.refresh()

    def refresh(self) -> None:
        doc, scene = self.document, self.document.scene
        self.view.set_hovered(-1)
        if scene is None or doc.trace is None:
            self.explanation = None
            self.section.set_lines([])
            self.section.set_focus((), None)
            self._send_edge_labels()
            return
        step = doc.playback.index
        steps = scene.trace.steps
        backward = 0 <= step < len(steps) and steps[step].phase == "backward"
        self.explanation = doc.explain_step(step) if backward else None
        lines: list[ExplainLine] = []
        if self.explanation is not None:
            lines += explain_lines(self.explanation, self._name_of)
        selected = doc.selection
        index = scene.index_of(selected) if selected is not None else -1
        shape = None
        if index >= 0 and scene.module(index) is None and scene.kinds[index] == "variable":
            shape = scene.shapes[index]
            lines += self._selection_lines(int(selected))
        self.section.set_lines(lines)
        out_shape = None
        if self.explanation is not None and steps[step].outputs:
            out = scene.index_of(steps[step].outputs[0])
            out_shape = scene.shapes[out] if out >= 0 else None
        focus = doc.focus_element
        shape, element = focus_choice(self.explanation, out_shape, shape, focus)
        self.section.set_focus(shape, element, chosen=focus is not None)
        self._send_edge_labels()

    def _selection_lines(self, node_id: int) -> list[ExplainLine]:
        """The selected variable: the gradients summed into it up to this step (unless a term
        of the step already says so) and its chain rule from the output."""
        doc, scene = self.document, self.document.scene
        lines = [ExplainLine("title", (("selected: ", None), (self._name_of(node_id), node_id)))]
        said = self.explanation is not None and any(
            t.input == node_id and t.accumulation for t in self.explanation.terms
        )
        summed = scene.accumulation_text(node_id, doc.playback.index) if scene else ""
        if summed and not said:
            text = "gradients summed at this fan-out: " + summed
            lines.append(ExplainLine("detail", ((text, None),)))
        # the chain is the whole backward's total: shown once the program holds it, not at a
        # step before the pass has sent the node its last share
        ready = chain_ready_at(doc.trace, node_id, doc.playback.index)
        if ready is not None and doc.playback.index < ready:
            text = (
                f"chain rule: shown once the backward has given {self._name_of(node_id)} its "
                f"whole gradient (at step {ready + 1})"
            )
            lines.append(ExplainLine("detail", ((text, None),)))
            return lines
        # asked once per node, element and pass
        key = (id(doc.trace), node_id, doc.focus_element, ready)
        if self._chain is None or self._chain[0] != key:
            self._chain = (key, chain_lines(doc.chain(node_id)))
        lines += self._chain[1]
        return lines if len(lines) > 1 else []

    def _name_of(self, node_id: int) -> str:
        """A node's name; one inside a closed module box says which box holds it."""
        scene = self.document.scene
        index = scene.index_of(node_id) if scene is not None else -1
        if index < 0:
            return f"#{node_id}"
        box = scene.module(index)
        if box is not None:
            own = node_name(self.document.trace.graph.nodes[node_id]) or f"variable #{node_id}"
            return f"{own} in {scene.names[index]}"
        return scene.names[index] or scene.text.unnamed(index)

    def _send_edge_labels(self) -> None:
        scene = self.document.scene
        if not self._edge_labels or scene is None or scene is not self.scene_binding.shown_scene:
            self.view.set_edge_labels(np.zeros((0, 2)), [])
            return
        labels = step_edge_labels(scene, self.document.playback.index)
        edges = [e for e, _ in labels]
        self.view.set_edge_labels(edge_midpoints(scene, edges), [t for _, t in labels])

    # ---------------------------------------------------------------- view -> model
    def _on_hovered(self, node_id: int) -> None:
        scene = self.document.scene
        self.view.set_hovered(scene.index_of(node_id) if scene is not None and node_id >= 0 else -1)
