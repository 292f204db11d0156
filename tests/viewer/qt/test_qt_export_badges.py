"""An exported picture holds every flagged node's ring and badge whole: a badge beside a node
at the graph's edge grows the picture instead of being cut off at its border."""

import numpy as np
import pytest
from PySide6 import QtGui

from viewer.model.document.document import Document
from viewer.qt.drawing.themes import LIGHT
from viewer.qt.graph.image_export import MARGIN, render_image

BADGE_RGB = (200, 0, 200)  # a colour nothing else in the picture has


def _pixels(image: QtGui.QImage) -> np.ndarray:
    image = image.convertToFormat(QtGui.QImage.Format.Format_RGBA8888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), -1)
    return rows[:, : 4 * image.width()].reshape(image.height(), image.width(), 4)[..., :3].copy()


def _edge_nodes(scene) -> list[int]:
    """The leftmost, rightmost, topmost and bottommost nodes."""
    pos = scene.geometry.positions
    return sorted(
        {
            int(pos[:, 0].argmin()),
            int(pos[:, 0].argmax()),
            int(pos[:, 1].argmin()),
            int(pos[:, 1].argmax()),
        }
    )


@pytest.mark.parametrize("badge", ["held", "exploding gradient, layer 12 of 12"])
def test_badges_at_the_graphs_edges_are_whole_in_the_export(qtbot, badge):
    doc = Document()
    assert doc.load_example("goldstein") is True
    scene = doc.scene
    nodes = np.array(_edge_nodes(scene), dtype=np.intp)
    colours = np.tile(np.array([*BADGE_RGB, 255], dtype=np.uint8), (len(nodes), 1))
    overlays = (nodes, colours, [badge] * len(nodes))
    frame = scene.frame(scene.n_steps - 1)
    plain = render_image(scene.geometry, frame, LIGHT, legend=False)
    image = render_image(scene.geometry, frame, LIGHT, legend=False, overlays=overlays)
    px = _pixels(image).astype(int)
    marked = np.abs(px - np.array(BADGE_RGB)).max(axis=2) <= 8
    ys, xs = np.nonzero(marked)
    assert len(xs) > 0
    # the rings and pills keep a few pixels from every border of the picture
    assert xs.min() >= 4 and ys.min() >= 4
    assert xs.max() <= image.width() - 5 and ys.max() <= image.height() - 5
    # the picture grew by what the badges reach past its margin, not more than they need
    assert image.width() >= plain.width() and image.height() >= plain.height()
    assert image.width() - plain.width() <= 2 * (len(badge) * 12 + 24)
    assert MARGIN > 4
