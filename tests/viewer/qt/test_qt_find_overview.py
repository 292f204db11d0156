"""Ctrl+F finds nodes (selects and centres the match, Enter cycles, Esc closes) and the
overview shows the whole graph, follows pan and zoom, and a click in it moves the view."""

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets
from scoped_nets import Net

import autodiff.functions as F
from autodiff.trace import record
from viewer.model.panels.overview import overview_map, rasterise
from viewer.qt.graph.find_bar import FindBar
from viewer.qt.graph.find_binding import SHOW_DELAY_MS
from viewer.qt.graph.overview import Overview
from viewer.qt.settings import AppSettings

PROGRAM = "x = 0.5\nw = 2.0\ny = square(exp(square(x))) * w + square(w)"


def _squares(window):
    scene = window.document.scene
    return [int(n) for n, name in zip(scene.node_ids, scene.names, strict=True) if name == "Square"]


def _centre(window):
    return window.graph_view.visible_rect().center()


def _at(window, node_id):
    scene = window.document.scene
    x, y = scene.geometry.positions[scene.index_of(node_id)]
    c = _centre(window)
    return abs(c.x() - x) < 1e-6 and abs(c.y() - y) < 1e-6


def _open_find(qtbot, window):
    window.graph_view.setFocus()
    qtbot.keyClick(
        window.graph_view, QtCore.Qt.Key.Key_F, QtCore.Qt.KeyboardModifier.ControlModifier
    )
    field = window.findChild(QtWidgets.QLineEdit, "findField")
    assert field is not None and field.isVisible() and field.hasFocus()
    return field


def test_ctrl_f_opens_the_bar_typing_selects_and_centres_enter_cycles(qtbot, window):
    assert window.editor_binding.run(PROGRAM)
    window.graph_view.zoom_by(4.0)
    squares = _squares(window)
    assert len(squares) == 3
    field = _open_find(qtbot, window)
    count = window.findChild(QtWidgets.QLabel, "findCount")
    qtbot.keyClicks(field, "squ")
    assert count.text() == "1 of 3"  # at once; the match is shown once typing pauses
    qtbot.waitUntil(lambda: window.document.selection == squares[0])
    assert _at(window, squares[0])
    assert count.text() == "1 of 3"
    qtbot.keyClick(field, QtCore.Qt.Key.Key_Return)
    assert window.document.selection == squares[1] and _at(window, squares[1])
    assert count.text() == "2 of 3"
    qtbot.keyClick(field, QtCore.Qt.Key.Key_Return)
    qtbot.keyClick(field, QtCore.Qt.Key.Key_Return)  # wraps around
    assert window.document.selection == squares[0] and count.text() == "1 of 3"
    qtbot.keyClick(field, QtCore.Qt.Key.Key_Return, QtCore.Qt.KeyboardModifier.ShiftModifier)
    assert window.document.selection == squares[2] and count.text() == "3 of 3"
    # the playback keys are the field's while it has the focus
    index = window.document.playback.index
    qtbot.keyClick(field, QtCore.Qt.Key.Key_Left)
    qtbot.keyClick(field, QtCore.Qt.Key.Key_Space)
    assert window.document.playback.index == index and not window.document.playback.playing
    qtbot.keyClick(field, QtCore.Qt.Key.Key_Escape)
    assert not window.find_bar.isVisible()
    assert window.document.selection == squares[2]  # the last match stays selected


def test_the_buttons_no_match_and_a_new_graph(qtbot, window):
    assert window.editor_binding.run(PROGRAM)
    field = _open_find(qtbot, window)
    bar = window.find_bar
    qtbot.keyClicks(field, "w")
    qtbot.waitUntil(lambda: window.document.selection is not None)
    (w,) = [
        int(n)
        for n, name in zip(window.document.scene.node_ids, window.document.scene.names, strict=True)
        if name == "w"
    ]
    assert window.document.selection == w
    qtbot.keyClicks(field, "zz")
    assert bar.count_label.text() == "no match"
    assert not bar.next_button.isEnabled()
    assert window.document.selection == w  # nothing found: the selection stays
    field.clear()
    qtbot.keyClicks(field, "exp")
    assert bar.count_label.text() == "1 of 1"
    qtbot.mouseClick(bar.next_button, QtCore.Qt.MouseButton.LeftButton)
    assert bar.count_label.text() == "1 of 1"
    # another graph: the query runs again there
    assert window.editor_binding.run("x = 0.5\ny = exp(x) + exp(x * x)")
    assert bar.count_label.text() == "1 of 2"
    qtbot.mouseClick(bar.close_button, QtCore.Qt.MouseButton.LeftButton)
    assert not bar.isVisible()


def test_a_match_is_revealed_first_when_the_document_can(qtbot, window):
    assert window.editor_binding.run(PROGRAM)
    revealed = []
    window.document.reveal = lambda nid: revealed.append(nid) or True
    field = _open_find(qtbot, window)
    qtbot.keyClicks(field, "exp")
    qtbot.waitUntil(lambda: window.document.selection is not None)
    qtbot.wait(2 * SHOW_DELAY_MS)
    assert revealed == [window.document.selection]  # once typing paused, not per key


def test_find_bar_keys_alone(qtbot):
    host = QtWidgets.QWidget()
    qtbot.addWidget(host)
    host.resize(500, 300)
    host.show()
    bar = FindBar(host)
    bar.open_bar()
    assert bar.isVisible() and bar.geometry().right() <= host.width()
    seen = []
    bar.next_requested.connect(lambda: seen.append("next"))
    bar.previous_requested.connect(lambda: seen.append("previous"))
    bar.closed.connect(lambda: seen.append("closed"))
    qtbot.keyClick(bar.field, QtCore.Qt.Key.Key_Enter)
    qtbot.keyClick(bar.field, QtCore.Qt.Key.Key_Return, QtCore.Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClick(bar.field, QtCore.Qt.Key.Key_Escape)
    assert seen == ["next", "previous", "closed"]
    # a narrow host: the field shrinks, the buttons stay inside and apart from it
    host.resize(230, 200)
    bar.open_bar()
    assert bar.geometry().left() >= 0 and bar.geometry().right() <= host.width()
    assert bar.field.geometry().right() < bar.count_label.geometry().left()
    assert bar.close_button.geometry().right() <= bar.width()


# ------------------------------------------------------------------ the overview
def test_overview_shows_while_part_of_the_graph_is_out_of_view_and_follows_pan_and_zoom(
    qtbot, window
):
    assert window.load_example("goldstein") is True
    overview = window.findChild(Overview, "overview")
    assert overview is not None
    view = window.graph_view
    assert not overview.isVisible()  # the whole graph is in view: nothing to add
    view.zoom_by(2.0)
    qtbot.waitUntil(overview.isVisible)
    r = overview.geometry()
    assert r.right() <= view.width() and r.bottom() <= view.height()
    overview.repaint()
    before = overview.viewport_pixels()
    view.zoom_by(2.0)
    zoomed = overview.viewport_pixels()
    assert zoomed.width() < before.width() * 0.6
    rect = view.visible_rect()
    view.view_box.translateBy(x=rect.width() / 2, y=0)
    moved = overview.viewport_pixels()
    assert moved.center().x() > zoomed.center().x() + 1
    image = overview.grab().toImage()
    assert not image.isNull()


def test_a_click_in_the_overview_centres_the_view_there(qtbot, window):
    assert window.load_example("goldstein") is True
    overview = window.overview
    window.graph_view.zoom_by(4.0)
    qtbot.waitUntil(overview.isVisible)
    overview.repaint()
    point = QtCore.QPoint(overview.width() // 5, overview.height() // 2)
    qtbot.mouseClick(overview, QtCore.Qt.MouseButton.LeftButton, pos=point)
    x, y = overview.map.to_layout(point.x(), point.y())
    c = window.graph_view.visible_rect().center()
    assert abs(c.x() - x) < 1e-3 and abs(c.y() - y) < 1e-3
    qtbot.mousePress(overview, QtCore.Qt.MouseButton.LeftButton, pos=point)
    end = QtCore.QPoint(overview.width() * 4 // 5, overview.height() // 2)
    qtbot.mouseMove(overview, end)
    qtbot.mouseRelease(overview, QtCore.Qt.MouseButton.LeftButton, pos=end)
    assert window.graph_view.visible_rect().center().x() > c.x()


def test_overview_marks_the_step_and_the_toggle_is_remembered(qtbot, window):
    assert window.load_example("goldstein") is True
    overview = window.overview
    window.document.playback.to_end()
    assert len(overview._active) > 0
    act = window.actions["overview"]
    assert act.shortcut().toString() == "Ctrl+M" and act.isChecked()
    act.trigger()
    assert not overview.isVisible() and not AppSettings().overview_shown()
    window.graph_view.zoom_by(3.0)
    assert not overview.isVisible()
    act.trigger()
    assert overview.isVisible() and AppSettings().overview_shown()
    window.graph_view.fit()
    assert not overview.isVisible()


def test_rasterise_covers_boxes_and_edges():
    positions = np.array([[0.0, 0.0], [10.0, 5.0]])
    half = np.array([[0.5, 0.25], [0.5, 0.25]])
    omap = overview_map((-0.5, -0.25, 10.5, 5.25), 110, 55, margin=0)
    points = np.array([[0.0, 0.0], [10.0, 5.0]])
    nodes, edges = rasterise(omap, positions, half, points, np.array([0, 2]))
    assert nodes.shape == (55, 110)
    assert nodes[2, 5] and nodes[52, 104] and not nodes[27, 55]
    assert edges[27, 55]
    # 100 000 nodes rasterise at once, every box at least a pixel
    many = np.random.default_rng(0).uniform(0, 1000, (100_000, 2))
    omap = overview_map((0, 0, 1000, 1000), 200, 200)
    nodes, _ = rasterise(omap, many, np.full((100_000, 2), 0.1))
    assert 0.5 < nodes.mean() <= 1.0


# ------------------------------------------------------------------ names at far zoom
def _far_view(qtbot, scene):
    from viewer.qt.graph.view import GraphView

    view = GraphView()
    qtbot.addWidget(view)
    view.resize(640, 480)
    view.show()
    qtbot.waitExposed(view)
    view.set_graph(scene.geometry)
    view.set_frame(scene.frame(scene.n_steps - 1))
    view.zoom_by(0.25)
    qtbot.wait(10)
    assert view.pixels_per_unit() < 25  # past labels: label_detail 0
    return view


def test_zoomed_out_only_the_nodes_named_at_any_zoom_keep_a_name(qtbot, seed_scene):
    view = _far_view(qtbot, seed_scene)
    labels = view._labels
    view.viewport().repaint()
    assert labels.painted_names == 0  # no module in the seeds' example: no text at all
    mask = np.zeros(seed_scene.n_nodes, dtype=bool)
    mask[0] = True
    plain = view.grab().toImage()
    view.set_named_nodes(mask)
    view.viewport().repaint()
    assert labels.painted_names == 1
    assert view.grab().toImage() != plain
    view.zoom_by(8.0)  # near: every node has its label again, drawn the usual way
    view.viewport().repaint()
    assert labels.painted_pixel_size > 0


# ------------------------------------------------------------------ with module boxes


@pytest.fixture
def scoped(window):
    np.random.seed(0)
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((4, 2)), rng.standard_normal((4, 1))
    with record() as trace:
        F.mean_squared_error(Net(blocks=3)(x), t).backward()
    window.document.load_graph(trace, "net", "trace")
    window.document.set_depth(1)  # inp, Block x 3 (folded), out: boxes
    return window


def test_find_reveals_a_node_hidden_in_a_folded_module_and_centres_it(qtbot, scoped):
    win, doc = scoped, scoped.document
    hidden = {int(n) for n in doc.trace.functions} - set(doc.scene.node_ids.tolist())
    assert hidden  # the boxes hide Functions
    field = _open_find(qtbot, win)
    qtbot.keyClicks(field, "net/b1/fc2")
    qtbot.keyClick(field, QtCore.Qt.Key.Key_Return)  # Enter at once: the first match
    node = doc.selection
    assert node is not None and doc.trace.node(node)["scope"] == "Net/b1/fc2"
    index = doc.scene.index_of(node)
    assert index >= 0 and doc.scene.kinds[index] != "module"  # shown as itself, not its box
    assert _at(win, node)
    count = win.find_bar.count_label.text()
    assert count.startswith("1 of ")
    qtbot.keyClick(field, QtCore.Qt.Key.Key_Return)  # then the next one
    assert doc.trace.node(doc.selection)["scope"] == "Net/b1/fc2"
    assert win.find_bar.count_label.text().startswith("2 of ")


def test_module_boxes_keep_their_names_zoomed_out(qtbot, scoped):
    view, scene = scoped.graph_view, scoped.document.scene
    boxes = [i for i, k in enumerate(scene.kinds) if k == "module"]
    assert boxes and view.geometry_data.modules.sum() == len(boxes)
    view.fit()
    view.zoom_by(0.2)
    qtbot.wait(10)
    assert view.pixels_per_unit() < 25
    view.viewport().repaint()
    assert 0 < view._labels.painted_names <= len(boxes)


def test_ctrl_f_from_the_editor_opens_the_bar_and_esc_gives_the_keys_back(qtbot, window):
    editor = window.editor.editor
    editor.setFocus()
    qtbot.waitUntil(editor.hasFocus)
    qtbot.keyClick(editor, QtCore.Qt.Key.Key_F, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert window.find_bar.isVisible() and window.find_bar.field.hasFocus()
    qtbot.keyClick(window.find_bar.field, QtCore.Qt.Key.Key_Escape)
    assert not window.find_bar.isVisible()
    playback = window.document.playback
    playback.to_start()
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_Right)  # the graph has the keys again
    assert playback.index == 0


def test_the_overview_follows_a_new_graph_and_the_theme(qtbot, window):
    assert window.load_example("goldstein") is True
    overview = window.overview
    window.graph_view.zoom_by(3.0)
    qtbot.waitUntil(overview.isVisible)
    overview.repaint()
    light = overview.grab().toImage()
    first = overview.map
    window.set_theme("dark")
    overview.repaint()
    assert overview.grab().toImage() != light
    assert window.editor_binding.run("x = 0.5\ny = sin(x) * cos(x) + exp(x) * x")
    window.graph_view.zoom_by(4.0)
    qtbot.waitUntil(overview.isVisible)
    overview.repaint()
    assert overview.map != first  # the new graph's bounds


def test_an_id_query_of_thousands_of_digits_says_so_in_the_bar(qtbot, window):
    assert window.editor_binding.run(PROGRAM)
    field = _open_find(qtbot, window)
    bar = window.find_bar
    QtWidgets.QApplication.clipboard().setText("#" + "9" * 5000)
    field.paste()  # as a user pastes it: one edit
    assert bar.count_label.text() == "id too long"
    assert "5,000 digits" in bar.count_label.toolTip()
    assert not bar.next_button.isEnabled()
    field.clear()
    qtbot.keyClicks(field, "#1")
    assert bar.count_label.text() == "1 of 1"
    assert bar.count_label.toolTip() == ""


def _boxes_px(view, nodes):
    """The nodes' boxes in the view's pixels (left, top, right, bottom), from its range."""
    geo, shown, port = view.geometry_data, view.visible_rect(), view.viewport().geometry()
    sx, sy = port.width() / shown.width(), port.height() / shown.height()
    lo = geo.positions[nodes] - geo.half_sizes[nodes]
    hi = geo.positions[nodes] + geo.half_sizes[nodes]
    return np.stack(
        [
            (lo[:, 0] - shown.left()) * sx + port.left(),
            (lo[:, 1] - shown.top()) * sy + port.top(),
            (hi[:, 0] - shown.left()) * sx + port.left(),
            (hi[:, 1] - shown.top()) * sy + port.top(),
        ],
        axis=1,
    )


def test_the_overview_fades_while_a_flagged_nodes_badge_may_be_under_it(qtbot, window):
    assert window.load_example("goldstein") is True
    doc, view, overview = window.document, window.graph_view, window.overview
    doc.playback.seek(0)  # no current step's node to fade for
    view.zoom_by(3.0)
    qtbot.waitUntil(overview.isVisible)
    area = overview.geometry()
    geo = view.geometry_data
    every = np.arange(geo.n_nodes)
    boxes = _boxes_px(view, every)
    clear = (boxes[:, 2] < area.left() - 2) | (boxes[:, 3] < area.top() - 2)
    # the node nearest the overview whose own box is clear of it
    gap = np.maximum(area.left() - boxes[:, 2], area.top() - boxes[:, 3])
    gap[~clear] = np.inf
    near = int(np.argmin(gap))
    assert np.isfinite(gap[near])
    overview.set_covering(False)
    view.set_overlays(np.array([near]), np.array([[220, 40, 40, 255]], np.uint8), ["x" * 40])
    _, reach = view.flagged()
    assert gap[near] < reach  # (goldstein zoomed in: some box is that close)
    assert overview.opacity < 1.0  # its badge may be under the overview
    view.set_overlays(np.zeros(0, np.intp), np.zeros((0, 4), np.uint8), [])
    assert overview.opacity == 1.0
