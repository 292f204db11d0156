"""Collapsing, expanding and folding module scopes on the Document's graph.

:class:`ScopeControl` is composed by the Document (like its loaders): it builds the first
scene of a graph with scopes at the default depth, and on each change (a box expanded or
collapsed, a run unfolded, a new depth) computes the visible graph, moves the layout
(:func:`~viewer.model.scopes.relayout.relayout`) and installs a new scene of the same trace.
The playback position, the selection and the overlays stay; the Document emits
``scene_changed``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autodiff.trace import TraceReader
from viewer.model.layout.compute import GraphLayout
from viewer.model.scene.scene import Scene
from viewer.model.scopes.relayout import layout_visible, relayout
from viewer.model.scopes.tree import ScopeModel, ScopeNode, has_scopes

if TYPE_CHECKING:
    from viewer.model.document.document import Document

__all__ = ["ScopeControl", "scoped_scene"]


def scoped_scene(
    trace: TraceReader, palette: str, at_most: int | None = None
) -> tuple[GraphLayout, Scene] | None:
    """The layout and scene a graph with scopes opens with: the deepest depth whose visible
    graph has at most :data:`~viewer.model.scopes.tree.MAX_FIRST_SCREEN` nodes. None for a graph
    without scopes (it is laid out whole, as before scopes), and when even the shallowest
    depth shows more than ``at_most`` nodes (too many to lay out here: the caller's worker
    lays the whole graph out instead)."""
    if not has_scopes(trace):
        return None
    model = ScopeModel(trace)
    model.set_depth(model.choose_depth())
    vis = model.visible()
    if at_most is not None and vis.n_nodes > at_most:
        return None
    layout = layout_visible(trace, vis)
    return layout, Scene(trace, layout, palette, scopes=vis)


class ScopeControl:
    """The module operations of one Document (see :class:`~viewer.model.document.document.Document`
    for the contract)."""

    def __init__(self, document: Document) -> None:
        self.document = document

    @property
    def model(self) -> ScopeModel | None:
        scene = self.document.scene
        return scene.scopes.model if scene is not None and scene.scopes is not None else None

    def tree(self) -> list[ScopeNode]:
        model = self.model
        return model.tree() if model is not None else []

    def set_depth(self, depth: int) -> bool:
        model = self.model
        if model is None:
            return False
        model.set_depth(int(depth))
        return self._show(f"Depth {int(depth)}")

    def expand(self, path: str) -> bool:
        """Expand the instances at ``path``; a folded run is unfolded first."""
        model = self._model_with(path)
        if model is None:
            return False
        heads = [model.fold_head[s] for s in model.instances(path)]
        if model.folded[heads].any():
            model.set_folded(path, False)
        else:
            model.set_collapsed(path, False)
        return self._show(f"Expanded {path}")

    def collapse(self, path: str) -> bool:
        model = self._model_with(path)
        if model is None:
            return False
        model.set_collapsed(path, True)
        return self._show(f"Collapsed {path}")

    def collapse_siblings(self, path: str) -> bool:
        """Collapse every instance beside those at ``path`` (same parent), keeping them."""
        model = self._model_with(path)
        if model is None:
            return False
        mine = model.instances(path)
        parents = model.parent[mine]
        siblings = [
            s for s in range(1, len(model.rows)) if model.parent[s] in parents and s not in mine
        ]
        model.collapsed[siblings] = True
        return self._show(f"Collapsed the siblings of {path}")

    def fold(self, path: str, folded: bool) -> bool:
        model = self._model_with(path)
        if model is None or not model.set_folded(path, folded):
            return False
        return self._show(f"{'Folded' if folded else 'Unfolded'} {path}")

    def expand_all(self) -> bool:
        model = self.model
        if model is None:
            return False
        model.expand_all()
        return self._show("Expanded every module")

    def reveal(self, node_id: int) -> bool:
        model = self.model
        if model is None:
            return False
        try:
            changed = model.reveal(int(node_id))
        except KeyError:
            return False
        return self._show(f"Showing node #{int(node_id)}") if changed else False

    def scope_path_of(self, node_id: int) -> str:
        """The path of the scope ``node_id`` ran in ('' outside any; a Parameter: the scope
        of its first consumer)."""
        model = self.model
        if model is None:
            return ""
        try:
            s = model.scope_of(int(node_id))
        except KeyError:
            return ""
        local = int(model.local_of_id[int(node_id)])
        if s == 0 and model.is_param[local]:
            uses = model.use_fun[model.use_var == local]
            s = int(model.node_scope[uses[0]]) if len(uses) else 0
        return model.rows[s].path

    def _model_with(self, path: str) -> ScopeModel | None:
        """The scope model when it has instances at ``path``; else None (an unknown path is
        reported through the Document's error_raised, naming the known ones)."""
        model = self.model
        if model is None:
            return None
        try:
            model.instances(path)
        except KeyError as e:
            self.document.fail(e)
            return None
        return model

    def _show(self, message: str) -> bool:
        doc = self.document
        old = doc.scene
        model = self.model
        if old is None or model is None or doc.layout is None:
            return False
        vis = model.visible()
        try:
            layout = relayout(doc.layout, old.scopes, vis)
            scene = Scene(doc.trace, layout, doc.palette, scopes=vis)
        except Exception as e:  # a layout bug must not take the document down
            return doc.fail(e)
        scene.overlays = old.overlays  # by node id: a hidden node's marks go on its box
        doc.layout, doc.scene = layout, scene
        doc.scene_changed.emit(doc)
        doc.status_changed.emit(f"{message}: {scene.n_nodes} nodes")
        return True
