"""Where every Scene is built: a new graph's first scene, the scene of a given layout, and
the scene of the same trace after its scopes changed. The Document calls these on the GUI
thread; the Qt layout runner calls :func:`first_scene` on its worker over plain data (a trace,
a palette's name) and hands the Scene back to the Document.
"""

from __future__ import annotations

from collections.abc import Callable

from autodiff.trace import TraceReader
from viewer.model.layout.compute import GraphLayout, compute_layout
from viewer.model.scene.scene import Scene
from viewer.model.scopes.relayout import layout_visible, relayout
from viewer.model.scopes.tree import ScopeModel, VisibleGraph, has_scopes

__all__ = ["first_scene", "rescoped_scene", "scene_of"]


def first_scene(
    trace: TraceReader,
    palette: str,
    *,
    at_most: int | None = None,
    scoped: bool = True,
    by_generation: bool = False,
    progress: Callable[[float], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> Scene | None:
    """The scene ``trace`` opens with. A graph with scopes (and ``scoped``) opens at the
    deepest depth whose visible graph has at most
    :data:`~viewer.model.scopes.tree.MAX_FIRST_SCREEN` nodes; any other is laid out whole
    (:func:`~viewer.model.layout.compute.compute_layout` with ``by_generation``,
    ``progress`` and ``should_cancel``). None when that would lay out more than ``at_most``
    nodes: too many to lay out here, the caller's worker lays the whole graph out instead."""
    if scoped and has_scopes(trace):
        model = ScopeModel(trace)
        model.set_depth(model.choose_depth())
        vis = model.visible()
        if at_most is None or vis.n_nodes <= at_most:
            return scene_of(trace, layout_visible(trace, vis), palette, vis)
    # counted without building the networkx graph
    if at_most is not None and len(trace.variables) + len(trace.functions) > at_most:
        return None
    layout = compute_layout(
        trace, progress=progress, should_cancel=should_cancel, by_generation=by_generation
    )
    return scene_of(trace, layout, palette)


def scene_of(
    trace: TraceReader, layout: GraphLayout, palette: str, scopes: VisibleGraph | None = None
) -> Scene:
    """The Scene of ``trace`` laid out as ``layout`` (with ``scopes``: the visible graph of
    its scope model that ``layout`` lays out)."""
    return Scene(trace, layout, palette, scopes=scopes)


def rescoped_scene(old: Scene, palette: str) -> Scene:
    """The scene of ``old``'s trace once its scope model changed: its layout moved from
    ``old``'s (:func:`~viewer.model.scopes.relayout.relayout`), its overlays kept by node id
    (a hidden node's marks go on its box)."""
    vis = old.scopes.model.visible()
    layout = relayout(old.layout, old.scopes, vis)
    scene = scene_of(old.trace, layout, palette, vis)
    scene.overlays = old.overlays
    return scene
