"""Open modules in the window: framed and titled in both themes and in the exported picture;
a double-click on a folded run unfolds it and says so, one on a module expands it and says
so; a change of the depth fits the view to the new graph."""

import itertools

import numpy as np
import pytest
from PySide6 import QtCore, QtGui
from scoped_nets import Net

import autodiff.functions as F
from autodiff.trace import record
from viewer.model.document.document import Document
from viewer.qt.drawing.themes import DARK, LIGHT
from viewer.qt.graph.image_export import render_image
from viewer.qt.graph.scope_frames import frame_colours

TIMES = "\N{MULTIPLICATION SIGN}"


@pytest.fixture
def scoped(window):
    np.random.seed(0)
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((4, 2)), rng.standard_normal((4, 1))
    with record() as trace:
        F.mean_squared_error(Net(blocks=3)(x), t).backward()
    window.document.load_graph(trace, "net", "trace")
    return window


def _boxes(scene):
    return {scene.names[i]: i for i, k in enumerate(scene.kinds) if k == "module"}


def _viewport_point(view, xy):
    return view.mapFromScene(view.view_box.mapViewToScene(QtCore.QPointF(*xy)))


def _double_click_box(qtbot, win, name):
    view, doc = win.graph_view, win.document
    box = _boxes(doc.scene)[name]
    view.center_on(box)
    qtbot.wait(10)
    changed = []
    doc.scene_changed.connect(changed.append)
    point = _viewport_point(view, doc.scene.geometry.positions[box])
    qtbot.mouseDClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: changed == [doc])
    doc.scene_changed.disconnect(changed.append)


def test_double_clicks_unfold_the_run_then_expand_a_module_and_say_which(qtbot, scoped):
    win = scoped
    doc = win.document
    assert f"Block {TIMES} 3" in _boxes(doc.scene)
    _double_click_box(qtbot, win, f"Block {TIMES} 3")
    assert {"b0", "b1", "b2"} <= set(_boxes(doc.scene))  # only unfolded: three boxes
    assert win.statusBar().currentMessage().startswith(f"Unfolded the run Block {TIMES} 3: ")
    _double_click_box(qtbot, win, "b0")
    assert "b0" not in _boxes(doc.scene) and {"b1", "b2"} <= set(_boxes(doc.scene))
    assert win.statusBar().currentMessage().startswith("Expanded Net/b0: ")
    assert "Net/b0" in [f.path for f in win.graph_view.frame_layer.frames]


def _frame_title_point(win, path):
    """A point on the frame of ``path``, in its title strip: inside the frame, on no node."""
    (frame,) = [f for f in win.graph_view.frame_layer.frames if f.path == path]
    x0, y0, _, _ = frame.rect
    return frame, (x0 + 0.05, y0 + frame.title_height / 2)


def test_a_double_click_inside_an_open_modules_frame_collapses_it(qtbot, scoped):
    win = scoped
    doc, view = win.document, win.graph_view
    _double_click_box(qtbot, win, f"Block {TIMES} 3")
    _double_click_box(qtbot, win, "b0")
    _frame, xy = _frame_title_point(win, "Net/b0")
    assert view.frame_at(*xy) == "Net/b0"  # the innermost frame there, on no node
    geometry = doc.scene.geometry
    half = geometry.half_sizes
    on_node = np.abs(geometry.positions - np.asarray(xy)) <= half
    assert not on_node.all(axis=1).any()
    view.center_on(_boxes(doc.scene)["b1"])
    qtbot.wait(10)
    changed = []
    doc.scene_changed.connect(changed.append)
    qtbot.mouseDClick(
        view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=_viewport_point(view, xy)
    )
    qtbot.waitUntil(lambda: changed == [doc])
    assert "b0" in _boxes(doc.scene)  # a box again
    assert "Net/b0" not in [f.path for f in view.frame_layer.frames]
    assert win.statusBar().currentMessage().startswith("Collapsed Net/b0")


def test_a_right_click_inside_a_frame_offers_to_collapse_that_module(scoped):
    win = scoped
    doc, view = win.document, win.graph_view
    doc.expand("Net/b1")
    _, xy = _frame_title_point(win, "Net/b1")
    view.context_point = xy
    view._on_right_clicked(QtCore.QPointF(*xy), QtCore.QPoint(0, 0))
    menu = win.scope_binding.last_menu
    menu.close()
    (collapse,) = [a for a in menu.actions() if a.objectName() == "collapse"]
    assert collapse.text() == "Collapse Net/b1" and collapse.isEnabled()
    collapse.trigger()
    assert "b1" in _boxes(doc.scene)
    # outside every frame, the background's menu has no module to collapse
    assert not next(
        a for a in win.scope_binding.context_menu(-1).actions() if a.objectName() == "collapse"
    ).isEnabled()


def test_the_menu_of_a_folded_run_unfolds_it(scoped):
    win = scoped
    doc = win.document
    run = _boxes(doc.scene)[f"Block {TIMES} 3"]
    menu = win.scope_binding.context_menu(run)
    (act,) = [a for a in menu.actions() if a.objectName() == "expand"]
    assert act.text() == f"Unfold Block {TIMES} 3"
    act.trigger()
    assert {"b0", "b1", "b2"} <= set(_boxes(doc.scene))


def _pixel(image, view, xy):
    p = _viewport_point(view, xy)
    ratio = image.devicePixelRatio()
    return QtGui.QColor(image.pixel(int(p.x() * ratio), int(p.y() * ratio)))


@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
def test_an_open_module_is_drawn_as_a_light_titled_frame(qtbot, scoped, theme):
    win = scoped
    view, doc = win.graph_view, win.document
    win.set_theme(theme.name)
    doc.expand("Net/b0")
    qtbot.wait(50)  # the window settles (its docks are sized once shown: the view refits)
    frames = {f.path: f for f in doc.scene.geometry.frames}
    assert view.frame_layer.frames == doc.scene.geometry.frames
    b0 = frames["Net/b0"]
    x0, y0, x1, y1 = b0.rect
    view.view_box.setRange(rect=QtCore.QRectF(x0, y0, x1 - x0, y1 - y0), padding=0.05)
    qtbot.wait(20)
    view.grab()
    assert view.frame_layer.painted_titles >= 1
    # the outermost frame's left side, beside b0: inside it, left of every node (the pad),
    # and outside it (nothing but the background): a faint tint
    x0 = frames["Net"].rect[0]
    view.view_box.setRange(rect=QtCore.QRectF(x0 - 0.5, y0, x1 - x0, y1 - y0), padding=0.05)
    qtbot.wait(20)
    image = view.grab().toImage()
    back = QtGui.QColor(theme.graph_background)
    middle = (y0 + y1) / 2
    tint = _pixel(image, view, (x0 + 0.03, middle))
    outside = _pixel(image, view, (x0 - 0.2, middle))
    assert outside == back
    assert tint != back
    assert max(abs(a - b) for a, b in zip(tint.getRgb()[:3], back.getRgb()[:3], strict=True)) < 40
    colours = frame_colours(theme)
    assert colours.fill.rgb() != QtGui.QColor(theme.error).rgb()
    assert colours.title.rgb() != colours.fill.rgb()


def test_the_exported_picture_draws_the_frames(qtbot, scoped):
    doc = scoped.document
    doc.expand("Net/b0")
    geometry = doc.scene.geometry
    assert geometry.frames
    framed = render_image(geometry, doc.frame(), LIGHT, legend=False)
    frames, geometry.frames = geometry.frames, ()
    try:
        bare = render_image(geometry, doc.frame(), LIGHT, legend=False)
    finally:
        geometry.frames = frames
    # the frames drawn (they may widen the picture: a frame is padded around its nodes)
    assert framed.width() >= bare.width() and framed.height() >= bare.height()
    assert framed != bare


def test_a_depth_change_fits_the_view_to_the_new_graph(qtbot, window):
    doc = Document()
    result = doc.load_example("cnn_step").run()
    assert result.ok, result.error
    win = window
    assert win.document.apply_script_result(result)
    view = win.graph_view
    view.zoom_by(4.0)
    view.center_at(-50.0, -50.0)  # the user looked elsewhere
    menu = win.scope_binding.context_menu(-1)
    (depth_1,) = [a for a in menu.actions() if a.objectName() == "depth_1"]
    depth_1.trigger()
    qtbot.wait(20)
    assert win.statusBar().currentMessage().startswith("Depth 1: ")
    geometry = win.document.scene.geometry
    assert view.geometry_data is geometry
    shown = view.visible_rect()
    x0, y0, x1, y1 = geometry.bounds()
    for x, y in geometry.positions:
        assert shown.contains(QtCore.QPointF(x, y))
    centre = shown.center()
    tolerance = 0.05 * max(shown.width(), shown.height())
    assert abs(centre.x() - (x0 + x1) / 2) < tolerance
    assert abs(centre.y() - (y0 + y1) / 2) < tolerance


@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
def test_a_frames_title_stays_readable_over_an_edge_running_under_it(qapp, theme):
    from viewer.model.scene.geometry import ScopeFrame
    from viewer.qt.graph.scope_frames import paint_frame_titles, paint_frames

    frame = ScopeFrame(1, "Net/b0", "b0 \N{MIDDLE DOT} Block", 2, (0.0, 0.0, 4.0, 2.0), 0.24)
    scale = 100.0  # pixels per layout unit: a 24-pixel strip, a 13-pixel title
    image = QtGui.QImage(440, 240, QtGui.QImage.Format.Format_ARGB32)
    image.fill(QtGui.QColor(theme.graph_background))
    colours = frame_colours(theme)
    painter = QtGui.QPainter(image)

    def to_px(r):
        return QtCore.QRectF(r[0] * scale + 20, r[1] * scale + 20, (r[2] - r[0]) * scale,
                             (r[3] - r[1]) * scale)  # fmt: skip

    paint_frames(painter, [frame], to_px, colours, scale)
    painter.setPen(QtGui.QPen(QtGui.QColor(theme.edge), 3.0))  # an edge entering the frame
    painter.drawLine(QtCore.QPointF(20, 20 + 12), QtCore.QPointF(420, 20 + 12))
    drawn = paint_frame_titles(painter, [frame], to_px, colours, scale)
    painter.end()
    assert drawn == 1
    metrics = QtGui.QFontMetrics(_font(13))
    # just past the title's text, still on its plate: the plate's colour, not the edge's
    right = 20 + 6 + metrics.horizontalAdvance(frame.title) + 1
    plate = QtGui.QColor(image.pixel(int(right), 20 + 12))
    assert plate.rgb() == colours.plate(2).rgb()
    # past the plate, the edge
    assert QtGui.QColor(image.pixel(400, 20 + 12)).rgb() != colours.plate(2).rgb()


def _font(px):
    font = QtGui.QFont(QtGui.QGuiApplication.font())
    font.setPixelSize(px)
    return font


def test_zoomed_out_a_frames_title_stands_above_it_and_no_two_titles_cover_each_other(qapp):
    """Past the zoom at which the title strip reads, a module stays named: its title stands
    on the frame's top edge in small text, outer modules first, none covering another; a
    frame too narrow for a few letters has none."""
    from viewer.model.scene.geometry import ScopeFrame
    from viewer.qt.graph.scope_frames import ABOVE_PX, title_plates

    net = ScopeFrame(1, "Net", "Net", 1, (0.0, 0.0, 40.0, 20.0), 0.24)
    # b0's top-left is just inside Net's: its title would cover Net's
    b0 = ScopeFrame(2, "Net/b0", "b0 \N{MIDDLE DOT} Block", 2, (0.2, 0.3, 20.0, 10.0), 0.24)
    b1 = ScopeFrame(3, "Net/b1", "b1 \N{MIDDLE DOT} Block", 2, (0.2, 11.0, 20.0, 19.0), 0.24)
    thin = ScopeFrame(4, "Net/t", "t \N{MIDDLE DOT} Tanh", 2, (30.0, 2.0, 30.5, 4.0), 0.24)
    frames = [net, b0, b1, thin]

    def plates_at(scale):
        def to_px(r):
            return QtCore.QRectF(r[0] * scale, r[1] * scale, (r[2] - r[0]) * scale,
                                 (r[3] - r[1]) * scale)  # fmt: skip

        return title_plates(frames, to_px, scale, _font(13))

    near = plates_at(100.0)  # a 24-pixel strip: every title in its frame
    assert [p.frame.path for p in near] == ["Net", "Net/b0", "Net/b1", "Net/t"]
    assert not any(p.above for p in near)
    for p in near:  # inside its frame, under its top edge
        assert p.plate.top() >= p.frame.rect[1] * 100.0

    far = plates_at(10.0)  # a 2.4-pixel strip: the titles stand above their frames
    # b0's edge is nearly Net's: its title stands beside Net's, past it (it had none, and
    # the first child of a torch Sequential went unnamed)
    assert [p.frame.path for p in far] == ["Net", "Net/b0", "Net/b1"]
    for p in far:
        assert p.above and p.px == ABOVE_PX
        assert p.plate.bottom() <= p.frame.rect[1] * 10.0  # on the top edge, outside
        assert p.text == p.frame.title  # not elided: the frame is wide enough
    assert far[1].plate.left() > far[0].plate.right()
    for a, b in itertools.combinations(far, 2):
        assert not a.plate.intersects(b.plate)
    # a parent's title as wide as the child: the child's title goes just inside its frame
    wide = ScopeFrame(1, "Net", "Net " + "· Sequential" * 3, 1, net.rect, 0.24)
    frames[0] = wide
    far = plates_at(10.0)
    b0_plate = next(p for p in far if p.frame.path == "Net/b0")
    assert b0_plate.plate.top() >= b0.rect[1] * 10.0 and b0_plate.text.startswith("b0")
    for a, b in itertools.combinations(far, 2):
        assert not a.plate.intersects(b.plate)


def test_zoomed_out_titles_are_painted(qapp):
    """The painted count follows the plates: a zoomed-out view still names its modules."""
    from viewer.model.scene.geometry import ScopeFrame
    from viewer.qt.graph.scope_frames import paint_frame_titles, title_plates

    frame = ScopeFrame(1, "Net", "Net \N{MIDDLE DOT} Sequential", 1, (0.0, 2.0, 30.0, 10.0), 0.24)
    image = QtGui.QImage(400, 200, QtGui.QImage.Format.Format_ARGB32)
    image.fill(QtGui.QColor(LIGHT.graph_background))
    painter = QtGui.QPainter(image)
    scale = 10.0

    def to_px(r):
        return QtCore.QRectF(r[0] * scale, r[1] * scale, (r[2] - r[0]) * scale,
                             (r[3] - r[1]) * scale)  # fmt: skip

    drawn = paint_frame_titles(painter, [frame], to_px, frame_colours(LIGHT), scale)
    painter.end()
    assert drawn == 1
    (plate,) = title_plates([frame], to_px, scale, _font(13))
    assert plate.above and plate.plate.bottom() <= 20  # the frame's top edge
    # inside the plate (its border left out), the title's ink on the background's colour
    background = QtGui.QColor(LIGHT.graph_background).rgb()
    inside = plate.plate.adjusted(2, 2, -2, -2)
    colours = {
        QtGui.QColor(image.pixel(x, y)).rgb()
        for x in range(int(inside.left()), int(inside.right()))
        for y in range(int(inside.top()), int(inside.bottom()))
    }
    assert background in colours and len(colours) > 3
