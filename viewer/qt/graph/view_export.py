"""File > Export's picture of the window's graph: the Document's scene at the current step,
with the selection and overlays the view shows, captioned with where playback stands.

``headless.export_file`` makes the same picture of a file, with no window.
"""

from __future__ import annotations

from pathlib import Path

from viewer.model.document.document import Document
from viewer.qt.drawing.themes import Theme
from viewer.qt.graph.image_export import export_graph
from viewer.qt.graph.scene_binding import scene_overlays

__all__ = ["export_view", "view_caption"]


def view_caption(document: Document) -> str:
    """The graph's title and the step shown: "y = ... — step 3/8 · forward · Mul"."""
    playback = document.playback
    step = playback.current_step
    where = (
        "before any step"
        if step is None
        else f"step {playback.index + 1}/{playback.n_steps} · {step.phase} · {step.op}"
    )
    return f"{document.title or 'graph'} — {where}"


def export_view(path: str | Path, document: Document, theme: Theme, selected: int) -> Path:
    """Writes ``document``'s scene as the view shows it (``selected``: the selected node's
    index, -1 for none) to ``path`` (PNG, SVG or PDF by its suffix) and returns the path
    written. Raises ``ValueError`` without a graph or for an unknown suffix, ``OSError`` when
    the file cannot be written."""
    scene = document.scene
    if scene is None:
        raise ValueError("there is no graph to export")
    return export_graph(
        path,
        scene.geometry,
        document.frame(),
        theme,
        caption=view_caption(document),
        selected=selected,
        overlays=scene_overlays(scene),
    )
