"""The graph view draws the model's arrays, selects by click and reports tooltips."""

import numpy as np
from PySide6 import QtCore

from viewer.qt.drawing.themes import DARK
from viewer.qt.graph.view import GraphView


def _view(qtbot, scene):
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(640, 480)
    view.show()
    qtbot.waitExposed(view)
    view.set_graph(scene.geometry)
    view.set_hit_test(scene.node_at, lambda x, y: scene.tooltip_at(x, y, scene.n_steps - 1))
    return view


def _viewport_point(view, xy):
    scene_pos = view.view_box.mapViewToScene(QtCore.QPointF(*xy))
    return view.mapFromScene(scene_pos)


def test_every_step_draws_and_keeps_one_spot_per_node(qtbot, seed_scene):
    view = _view(qtbot, seed_scene)
    for step in range(-1, seed_scene.n_steps):
        view.set_frame(seed_scene.frame(step))
        view.viewport().repaint()
    assert view.objectName() == "graphView"
    assert len(view._nodes._item.data) == seed_scene.n_nodes
    image = view.grab().toImage()
    assert not image.isNull() and image.width() > 0


def test_click_on_a_node_emits_its_index_and_background_emits_minus_one(qtbot, seed_scene):
    view = _view(qtbot, seed_scene)
    view.set_frame(seed_scene.frame(seed_scene.n_steps - 1))
    target = 0
    point = _viewport_point(view, seed_scene.geometry.positions[target])
    with qtbot.waitSignal(view.node_clicked) as blocker:
        qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=point)
    assert blocker.args == [target]
    corner = QtCore.QPoint(2, 2)
    with qtbot.waitSignal(view.node_clicked) as blocker:
        qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=corner)
    assert blocker.args == [-1]


def test_zoom_changes_spot_size_and_fit_restores_it(qtbot, seed_scene):
    view = _view(qtbot, seed_scene)
    view.set_frame(seed_scene.frame(-1))
    before = view.pixels_per_unit()
    view.zoom_by(2.0)
    qtbot.wait(10)
    assert view.pixels_per_unit() > before * 1.5
    view.fit()
    qtbot.wait(10)
    assert np.isclose(view.pixels_per_unit(), before, rtol=0.05)


def test_selection_and_theme_switch(qtbot, seed_scene):
    view = _view(qtbot, seed_scene)
    view.set_frame(seed_scene.frame(2))
    view.set_selection(1)
    assert view.selection == 1
    view.set_theme(DARK)
    view.viewport().repaint()
    assert view.theme is DARK


def test_labels_paint_when_zoomed_in(qtbot, seed_scene):
    view = _view(qtbot, seed_scene)
    view.set_frame(seed_scene.frame(seed_scene.n_steps - 1))
    view.zoom_by(3.0)
    view.center_on(0)
    qtbot.wait(10)
    assert view.pixels_per_unit() > 70
    image = view.grab().toImage()
    assert image.width() > 0
