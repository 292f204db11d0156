"""Truncated backprop on screen: the history unchain_backward cut before a graph is drawn
greyed (faded fills, borders and text) with faint dashed edges, in both themes; the legend
names it; an exported picture draws it the same way."""

import textwrap

import numpy as np
import pytest
from PySide6 import QtCore, QtGui

from viewer.model.document.document import Document
from viewer.model.scene.colours import faded
from viewer.qt.drawing.themes import DARK, LIGHT
from viewer.qt.graph.image_export import _legend_rows, render_image
from viewer.qt.graph.view import GraphView

_WINDOWS = """
import numpy as np
from autodiff import Variable
import autodiff.functions as F

w = Variable(np.array(0.7), name="w")
h = Variable(np.array(0.1), name="h0")
for k in range(2):
    loss = 0
    for t in range(3):
        h = F.tanh(h * w + 0.5)
        loss = loss + h * h
    w.cleargrad()
    loss.backward()
    loss.unchain_backward()
"""


@pytest.fixture
def document(tmp_path):
    path = tmp_path / "windows.py"
    path.write_text(textwrap.dedent(_WINDOWS))
    doc = Document()
    assert doc.run_script(path), doc.last_error
    assert doc.show_script_graph(1)
    return doc


def _pixels(image: QtGui.QImage) -> np.ndarray:
    image = image.convertToFormat(QtGui.QImage.Format.Format_RGBA8888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), -1)
    return rows[:, : 4 * image.width()].reshape(image.height(), image.width(), 4)[..., :3].copy()


def _centre(view, scene, node):
    x, y = scene.geometry.positions[node]
    point = view.mapFromScene(view.view_box.mapViewToScene(QtCore.QPointF(x, y)))
    return point.y(), point.x()


@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
def test_the_cut_off_history_is_drawn_greyed_with_dashed_edges(qtbot, document, theme):
    scene = document.scene
    scene.set_palette(theme.graph)
    detached = scene.detached
    assert detached.any() and not detached.all()
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(700, 900)
    view.show()
    qtbot.waitExposed(view)
    view.set_theme(theme)
    view.set_graph(scene.geometry)
    view.set_follow(False)
    frame = scene.frame(scene.n_steps - 1)
    view.set_frame(frame)
    assert view.detached_edge_count == int(scene.geometry.detached_edges.sum()) > 0
    pixels = _pixels(view.grab().toImage())
    plain_fill = scene.palette.variable_fill[frame.state_codes]
    for node in np.flatnonzero(~scene.geometry.is_function):
        y, x = _centre(view, scene, node)
        shown = pixels[y, x].astype(int)
        if detached[node]:  # the frame's fill is the greyed one, and that is what is painted
            expected = faded(plain_fill[node : node + 1], scene.palette.background)[0, :3]
            assert np.abs(frame.fill[node, :3].astype(int) - expected).max() == 0
        else:
            expected = plain_fill[node, :3]
        # a label's text can cross the centre: most of a small patch has the fill
        patch = pixels[y - 2 : y + 3, x - 12 : x + 13].reshape(-1, 3).astype(int)
        near = (np.abs(patch - expected.astype(int)).max(axis=1) <= 6).mean()
        assert near > 0.5, (node, shown, expected)
    back = np.array(scene.palette.background[:3], dtype=float)
    some = np.flatnonzero(detached & ~scene.geometry.is_function)[0]
    plain = plain_fill[some, :3].astype(float)
    greyed = frame.fill[some, :3].astype(float)
    assert np.linalg.norm(greyed - back) < np.linalg.norm(plain - back)  # toward the page


def test_the_legend_and_the_export_show_the_detached_history(qtbot, window, document):
    legend = window.legend
    assert "mark:detached" in legend.keys
    assert "unchain_backward" in legend.label_text("mark:detached")
    scene = document.scene
    rows = dict(_legend_rows(LIGHT, None, scene.geometry))
    assert [e.key for e in rows["marks"]] == ["mark:detached"]
    assert "marks" not in dict(_legend_rows(LIGHT, None, None))
    frame = scene.frame(scene.n_steps - 1)
    image = render_image(scene.geometry, frame, LIGHT, legend=False)
    plain = render_image(_without_detached(scene.geometry), frame, LIGHT, legend=False)
    assert image.size() == plain.size()
    assert not np.array_equal(_pixels(image), _pixels(plain))  # the dashed edges differ


def _without_detached(geometry):
    import dataclasses

    return dataclasses.replace(geometry, detached=None, detached_edges=None)


def test_a_detached_module_box_says_it_ran_before_this_graph(qtbot, window, wait_for_script):
    """The box said 'ran before this graph (cut off)' while the inspector said 'not run
    yet'; and its name stayed drawn zoomed out, as loud as the graph's own boxes."""
    from viewer.model.panels.inspector import DETACHED_HISTORY, inspect_module

    window.load_example("rnn_bptt")
    wait_for_script(window)
    doc = window.document
    assert doc.show_script_graph(2)
    scene = doc.scene
    boxes = [i for i in scene.modules if scene.detached[i]]
    live_boxes = [i for i in scene.modules if not scene.detached[i]]
    assert boxes and live_boxes
    for step in (-1, scene.n_steps - 1):
        rows = dict(inspect_module(scene, boxes[0], step).module_rows)
        assert rows["ran"] == "before this graph" and rows["history"] == DETACHED_HISTORY
        assert "ran before this graph (cut off)" in scene.module_text(boxes[0], step)
    window.graph_view.set_selection(boxes[0])
    window.inspector.show_node(inspect_module(scene, boxes[0], scene.n_steps - 1))
    assert window.inspector.subtitle.text().startswith("cut off before this graph")
    named = window.graph_view._labels._named
    assert not named[boxes].any() and named[live_boxes].all()
