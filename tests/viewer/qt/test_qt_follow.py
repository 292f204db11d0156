"""The graph view follows the step: when a step's nodes are out of view it pans to them, in a
short animation, zooming only to draw their labels or to fit them; View > Follow the Active
Step turns that off, and the choice is kept in the settings."""

import numpy as np
import pytest
from PySide6 import QtCore

from viewer.model.document.document import Document
from viewer.qt.graph.view import FOLLOW_DURATION_MS, FOLLOW_MARGIN_PX, GraphView, follow_shift
from viewer.qt.settings import AppSettings


@pytest.fixture
def wide_scene():
    doc = Document()
    assert doc.load_example("goldstein") is True  # ~30 layout units wide
    return doc.scene


def _view(qtbot, scene):
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(600, 450)
    view.show()
    qtbot.waitExposed(view)
    view.set_graph(scene.geometry)
    view.set_frame(scene.frame(-1))
    qtbot.wait(10)
    return view


def _boxes(scene, nodes):
    half = scene.geometry.half_sizes[nodes]
    pos = scene.geometry.positions[nodes]
    return pos - half, pos + half


def _inside(view, scene, nodes) -> bool:
    lo, hi = _boxes(scene, nodes)
    r = view.view_box.viewRect()
    return bool(
        (lo[:, 0] >= r.left()).all()
        and (hi[:, 0] <= r.right()).all()
        and (lo[:, 1] >= r.top()).all()
        and (hi[:, 1] <= r.bottom()).all()
    )


def _outside(view, scene, nodes) -> bool:
    """No box of ``nodes`` overlaps the view."""
    lo, hi = _boxes(scene, nodes)
    r = view.view_box.viewRect()
    overlap = (
        (hi[:, 0] >= r.left())
        & (lo[:, 0] <= r.right())
        & (hi[:, 1] >= r.top())
        & (lo[:, 1] <= r.bottom())
    )
    return not overlap.any()


def _zoomed_in(qtbot, view, scene):
    """Zoom in on the first node, so most of the graph is off screen."""
    view.zoom_by(5.0)
    view.center_on(0)
    qtbot.wait(10)
    assert view.view_box.viewRect().width() < 0.3 * (scene.geometry.bounds()[2] + 1)


def _step_out_of_view(view, scene, after=-1):
    for step in range(after + 1, scene.n_steps):
        nodes = scene.frame(step).current_nodes
        if len(nodes) and _outside(view, scene, nodes):
            return step
    raise AssertionError("no step of the example has its nodes out of view")


def _rect(view):
    r = view.view_box.viewRect()
    return np.array([r.left(), r.top(), r.width(), r.height()])


def test_the_view_glides_to_a_step_out_of_view_without_zooming(qtbot, wide_scene):
    scene = wide_scene
    view = _view(qtbot, scene)
    assert view.follows_step
    _zoomed_in(qtbot, view, scene)
    before, ppu = _rect(view), view.pixels_per_unit()
    step = _step_out_of_view(view, scene)
    frame = scene.frame(step)
    view.set_frame(frame)
    assert view.is_panning, "the view should glide to the step, not jump"
    assert 150 <= FOLLOW_DURATION_MS <= 250
    qtbot.waitUntil(lambda: not view.is_panning, timeout=30_000)
    after = _rect(view)
    assert _inside(view, scene, frame.current_nodes)
    assert not np.allclose(after[:2], before[:2])
    np.testing.assert_allclose(after[2:], before[2:], rtol=1e-9)  # the zoom is untouched
    assert np.isclose(view.pixels_per_unit(), ppu, rtol=1e-9)


def test_a_step_already_in_view_does_not_move_it(qtbot, wide_scene):
    scene = wide_scene
    view = _view(qtbot, scene)
    _zoomed_in(qtbot, view, scene)
    step = _step_out_of_view(view, scene)
    view.set_frame(scene.frame(step))
    qtbot.waitUntil(lambda: not view.is_panning, timeout=30_000)
    settled = _rect(view)
    view.set_frame(scene.frame(step))  # the same step again (a redraw): nothing moves
    view.set_theme(view.theme)
    assert not view.is_panning
    np.testing.assert_allclose(_rect(view), settled)
    # Another step, its Function centred by hand: well inside, so the view keeps still.
    other = _step_out_of_view(view, scene, after=step)
    frame = scene.frame(other)
    view.center_on(int(frame.current_function))
    qtbot.wait(10)
    assert _inside(view, scene, frame.current_nodes)
    centred = _rect(view)
    view.set_frame(frame)
    assert not view.is_panning
    np.testing.assert_allclose(_rect(view), centred)


def test_with_follow_off_the_view_stays_put(qtbot, wide_scene):
    scene = wide_scene
    view = _view(qtbot, scene)
    _zoomed_in(qtbot, view, scene)
    view.set_follow(False)
    before = _rect(view)
    step = _step_out_of_view(view, scene)
    view.set_frame(scene.frame(step))
    assert not view.is_panning
    qtbot.wait(FOLLOW_DURATION_MS + 100)
    np.testing.assert_allclose(_rect(view), before)
    assert _outside(view, scene, scene.frame(step).current_nodes)


def test_without_animation_the_view_jumps_at_once(qtbot, wide_scene):
    scene = wide_scene
    view = _view(qtbot, scene)
    _zoomed_in(qtbot, view, scene)
    view.set_follow(True, animated=False)
    width = _rect(view)[2]
    step = _step_out_of_view(view, scene)
    view.set_frame(scene.frame(step))
    assert not view.is_panning
    assert _inside(view, scene, scene.frame(step).current_nodes)
    assert np.isclose(_rect(view)[2], width, rtol=1e-9)


def test_a_drag_stops_the_glide(qtbot, wide_scene):
    scene = wide_scene
    view = _view(qtbot, scene)
    _zoomed_in(qtbot, view, scene)
    view.set_frame(scene.frame(_step_out_of_view(view, scene)))
    assert view.is_panning
    corner = QtCore.QPoint(5, 5)
    qtbot.mousePress(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=corner)
    qtbot.mouseRelease(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=corner)
    assert not view.is_panning


def test_follow_shift_pans_only_the_axes_that_need_it():
    view = (0.0, 0.0, 10.0, 6.0)
    assert follow_shift((4, 2, 5, 3), view, 0.5, (4.5, 2.5)) == (0.0, 0.0)
    # Out to the right: centred along x, y untouched.
    assert follow_shift((12, 2, 13, 3), view, 0.5, (12.5, 2.5)) == (7.5, 0.0)
    # Within the margin of the bottom edge: centred along y.
    assert follow_shift((4, 5.2, 5, 5.8), view, 0.5, (4.5, 5.5)) == (0.0, 2.5)
    # Too tall to fit: the focus point is brought in, not the middle of the box.
    assert follow_shift((4, -10, 5, 20), view, 0.5, (4.5, 15.0)) == (0.0, 12.0)
    assert follow_shift((4, -10, 5, 20), view, 0.5, (4.5, 2.0)) == (0.0, 0.0)
    # The pan stops at the graph's edge (plus the margin)...
    assert follow_shift((12, 2, 13, 3), view, 0.5, (12.5, 2.5), (0, 0, 13, 6)) == (3.5, 0.0)
    # ... and a graph seen whole, its nodes near the edge of the view, does not move at all.
    whole = (0.2, 0.2, 9.8, 5.8)
    assert follow_shift((0.2, 0.2, 1.2, 1.2), view, 0.5, (0.7, 0.7), whole) == (0.0, 0.0)
    # Where the graph goes on past the edge, the margin counts.
    past = (-5, 0.2, 9.8, 5.8)
    assert follow_shift((0.2, 0.2, 1.2, 1.2), view, 0.5, (0.7, 0.7), past) == pytest.approx(
        (-4.3, 0.0)
    )


def test_a_graph_seen_whole_with_its_labels_never_moves(qtbot):
    doc = Document()
    assert doc.load_example("sphere") is True
    scene = doc.scene
    view = _view(qtbot, scene)
    view.set_graph(scene.geometry, label_lines=scene.max_label_lines())
    qtbot.wait(10)
    assert view.label_detail() == 2, "the fitted graph must draw its labels for this test"
    view.set_follow(True, animated=False)
    fitted = _rect(view)
    for step in range(scene.n_steps):
        view.set_frame(scene.frame(step))
    np.testing.assert_allclose(_rect(view), fitted)


def test_a_step_whose_labels_are_not_drawn_is_panned_to_at_the_same_zoom(qtbot, wide_scene):
    """Zoomed out past goldstein's labels, the follow pans to a step out of view and keeps
    the zoom the user chose: it zoomed in to 11 px labels (sine_regression.py: 3.6 times,
    torch_resnet_block.py: 9.5 times), leaving a node or two on screen."""
    scene = wide_scene
    view = _view(qtbot, scene)
    view.set_graph(scene.geometry, label_lines=scene.max_label_lines())
    view.zoom_by(2.5)
    x0, y0, _, y1 = scene.geometry.bounds()
    view.center_at(x0, (y0 + y1) / 2)  # the graph's left edge in the middle: half is out
    qtbot.wait(10)
    assert view.label_detail() < 2, "the labels must not be drawn at this zoom for this test"
    view.set_follow(True, animated=False)
    width = _rect(view)[2]
    room = np.array([view.viewport().width(), view.viewport().height()]) - 2 * FOLLOW_MARGIN_PX
    ppu = view.pixels_per_unit()
    moved = 0
    after = -1
    while True:
        try:
            step = _step_out_of_view(view, scene, after)
        except AssertionError:
            break
        frame = scene.frame(step)
        view.set_frame(frame)
        qtbot.wait(1)
        assert np.isclose(_rect(view)[2], width, rtol=1e-9), f"step {step}: the zoom changed"
        lo, hi = _boxes(scene, frame.current_nodes)
        if ((hi.max(axis=0) - lo.min(axis=0)) * ppu <= room).all():
            assert _inside(view, scene, frame.current_nodes), f"step {step}: out of view"
            moved += 1
        else:  # too far apart for this zoom: the step's Function is in view
            x, y = scene.geometry.positions[frame.current_function]
            assert view.visible_rect().contains(QtCore.QPointF(x, y)), f"step {step}"
        after = step
    assert moved >= 1


def test_the_view_menu_toggle_drives_the_view_and_persists(qtbot, window):
    action = window.actions["follow_step"]
    view_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    assert action in view_menu.actions()
    assert action.isCheckable() and action.isChecked()
    assert window.graph_view.follows_step
    action.trigger()  # off
    assert not action.isChecked()
    assert not window.graph_view.follows_step
    assert window.settings.follow_active_step() is False
    window.settings.sync()
    assert AppSettings().follow_active_step() is False  # a fresh store reads it back
    action.trigger()  # on again
    assert window.graph_view.follows_step
    window.settings.sync()
    assert AppSettings().follow_active_step() is True


def test_a_window_starts_with_the_saved_choice(qtbot):
    from viewer.app import build_window

    settings = AppSettings()
    assert settings.follow_active_step() is True  # the default
    settings.set_follow_active_step(False)
    settings.sync()
    window = build_window([])
    qtbot.addWidget(window)
    assert not window.actions["follow_step"].isChecked()
    assert not window.graph_view.follows_step


def test_playing_in_the_window_keeps_the_step_in_view(qtbot, window):
    assert window.document.load_example("goldstein") is True
    view = window.graph_view
    scene = window.document.scene
    qtbot.waitUntil(lambda: view.frame is not None)
    _zoomed_in(qtbot, view, scene)
    width = _rect(view)[2]
    step = _step_out_of_view(view, scene)
    window.document.playback.seek(step)  # a click in the timeline, End, N, B: a jump
    qtbot.waitUntil(lambda: not view.is_panning, timeout=30_000)
    assert _inside(view, scene, scene.frame(step).current_nodes)
    assert np.isclose(_rect(view)[2], width, rtol=1e-9)
