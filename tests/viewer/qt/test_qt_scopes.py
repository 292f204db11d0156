"""Module boxes in the window: double-click and Enter expand one in place, the graph view's
context menu collapses, expands and sets the depth; boxes are drawn in the module colour."""

import numpy as np
import pytest
from PySide6 import QtCore
from scoped_nets import Net

import autodiff.functions as F
from autodiff.trace import record
from viewer.qt.drawing.themes import DARK, LIGHT
from viewer.qt.graph.items import MODULE

TIMES = "\N{MULTIPLICATION SIGN}"


@pytest.fixture
def scoped(window):
    np.random.seed(0)
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((4, 2)), rng.standard_normal((4, 1))
    model = Net(blocks=3)
    with record() as trace:
        F.mean_squared_error(model(x), t).backward()
    window.document.load_graph(trace, "net", "trace")
    window.document.set_depth(1)
    return window


def _boxes(scene):
    return {scene.names[i]: i for i, k in enumerate(scene.kinds) if k == "module"}


def _viewport_point(view, xy):
    scene_pos = view.view_box.mapViewToScene(QtCore.QPointF(*xy))
    return view.mapFromScene(scene_pos)


def test_double_click_on_a_box_expands_it_in_place(qtbot, scoped):
    win = scoped
    view, doc = win.graph_view, win.document
    box = _boxes(doc.scene)["inp"]
    view.center_on(box)
    qtbot.wait(10)
    rect = view.view_box.viewRect()
    point = _viewport_point(view, doc.scene.geometry.positions[box])
    changed = []
    doc.scene_changed.connect(changed.append)
    qtbot.mouseDClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: changed == [doc])
    assert "inp" not in _boxes(doc.scene)
    assert view.geometry_data is doc.scene.geometry  # the view shows the new scene
    assert view.view_box.viewRect() == rect  # in place: no fit, no zoom
    assert len(view._nodes._item.data) == doc.scene.n_nodes


def test_enter_on_the_selected_box_expands_it(qtbot, scoped):
    win = scoped
    view, doc = win.graph_view, win.document
    folded = _boxes(doc.scene)[f"Block {TIMES} 3"]
    doc.select_index(folded)
    assert view.selection == folded
    assert win.inspector.title.text() == "Net/b0 (Block module)"
    assert "double-click or Enter unfolds it into one box per repeat" in win.inspector._notes
    view.setFocus()
    changed = []
    doc.scene_changed.connect(changed.append)
    qtbot.keyClick(view, QtCore.Qt.Key.Key_Return)
    assert changed == [doc]
    assert {"b0", "b1", "b2"} <= set(_boxes(doc.scene))  # the run unfolded
    doc.select_index(_boxes(doc.scene)["b1"])
    assert "double-click or Enter expands it" in win.inspector._notes
    # Enter on a plain node does nothing
    plain = doc.scene.kinds.index("variable")
    doc.select_index(plain)
    n = doc.scene.n_nodes
    qtbot.keyClick(view, QtCore.Qt.Key.Key_Enter)
    assert doc.scene.n_nodes == n


def _action(menu, name):
    (act,) = [a for a in menu.actions() if a.objectName() == name]
    return act


def test_the_context_menu_collapses_expands_and_sets_the_depth(qtbot, scoped):
    win = scoped
    doc = win.document
    binding = win.scope_binding
    doc.unfold("Net/b0")
    doc.expand("Net/b1")
    fc1 = _boxes(doc.scene)["fc1"]
    menu = binding.context_menu(fc1)
    names = [a.objectName() for a in menu.actions() if a.objectName()]
    assert names == [
        "expand",
        "collapse",
        "collapse_siblings",
        "expand_all",
        "depth_0",
        "depth_1",
        "depth_2",
        "depth_3",
    ]
    assert _action(menu, "collapse").text() == "Collapse Net/b1"
    _action(menu, "collapse").trigger()
    assert "b1" in _boxes(doc.scene)
    menu = binding.context_menu(_boxes(doc.scene)["b1"])
    _action(menu, "expand").trigger()
    assert "b1" not in _boxes(doc.scene)
    fc1 = _boxes(doc.scene)["fc1"]
    _action(binding.context_menu(fc1), "collapse_siblings").trigger()
    tree = {n.path: n for n in _walk(doc.scope_tree())}
    assert tree["Net/b1/fc1"].collapsed and tree["Net/b1/fc2"].collapsed
    _action(binding.context_menu(-1), "depth_0").trigger()
    assert list(_boxes(doc.scene)) == ["Net"]
    _action(binding.context_menu(-1), "expand_all").trigger()
    assert "module" not in doc.scene.kinds
    _action(binding.context_menu(-1), "depth_2").trigger()
    assert all(n.collapsed == (n.depth > 2) for n in _walk(doc.scope_tree()))
    # a plain node's Collapse closes the scope it ran in
    f = next(i for i, k in enumerate(doc.scene.kinds) if k == "function")
    path = doc.scope_path_of(doc.scene.node_id(f))
    if path:
        _action(binding.context_menu(f), "collapse").trigger()
        assert path.rpartition("/")[2] in _boxes(doc.scene)


def test_right_click_pops_the_menu(qtbot, scoped):
    win = scoped
    view = win.graph_view
    qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.RightButton, pos=QtCore.QPoint(5, 5))
    menu = win.scope_binding.last_menu
    assert menu is not None and menu.objectName() == "graphContextMenu"
    menu.close()


def _walk(nodes):
    for n in nodes:
        yield n
        yield from _walk(n.children)


@pytest.mark.parametrize("theme", [LIGHT, DARK])
def test_boxes_are_drawn_as_modules_in_both_themes(qtbot, scoped, theme):
    win = scoped
    view, doc = win.graph_view, win.document
    view.set_theme(theme)
    doc.playback.seek(doc.playback.n_steps - 1)
    view.viewport().repaint()
    box = _boxes(doc.scene)["inp"]
    keys = view._nodes.style_keys(doc.frame().state_codes)
    assert keys[box] // 1000 == MODULE
    style = theme.node_style("module", "grad")
    assert style.fill != theme.node_style("function", "grad").fill
    assert style.fill != theme.node_style("variable", "grad").fill

    def lum(hex_colour):
        rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    for state in ("not_computed", "value", "grad"):
        s = theme.node_style("module", state)
        hi, lo = sorted((lum(s.fill), lum(s.text)), reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5  # the label reads on the fill


def test_the_status_bar_counts_what_is_shown_after_a_box_opens(scoped):
    window = scoped
    before = window.status_label.text()
    assert before.startswith(f"{window.document.scene.n_nodes} nodes")
    assert window.document.expand("Net/b0")  # the run unfolds and b0 opens
    after = window.status_label.text()
    assert after != before and after.startswith(f"{window.document.scene.n_nodes} nodes")


def test_a_box_opened_in_place_draws_none_of_the_old_edges(qtbot, scoped):
    """The base edges are painted from a device cache; opening a box keeps the zoom, and the
    cache once kept showing the previous graph's edges beside the new ones."""
    win = scoped
    view, doc = win.graph_view, win.document
    doc.unfold("Net/b0")
    view.fit()
    qtbot.wait(20)
    view.grab()  # paints (and caches) the unfolded graph's edges
    doc.expand("Net/b1")
    qtbot.wait(20)
    shown = view.grab().toImage()
    edges = view._edges  # a fresh cache: what the edges look like drawn from scratch
    edges.setCacheMode(edges.CacheMode.NoCache)
    edges.setCacheMode(edges.CacheMode.DeviceCoordinateCache)
    edges.update()
    qtbot.wait(20)
    assert view.grab().toImage() == shown


def test_a_right_click_selects_the_node_its_menu_is_about(qtbot, scoped):
    """QA: right-clicking b1 opened b1's menu while the inspector still showed b0."""
    win = scoped
    doc = win.document
    doc.unfold("Net/b0")
    boxes = _boxes(doc.scene)
    doc.select_index(boxes["b0"])
    win.graph_view.context_requested.emit(boxes["b1"], QtCore.QPoint(10, 10))
    menu = win.scope_binding.last_menu
    assert menu is not None
    menu.close()
    assert win.graph_view.selection == boxes["b1"]
    assert win.inspector.title.text().startswith("Net/b1")
    win.graph_view.context_requested.emit(-1, QtCore.QPoint(10, 10))  # on the background
    win.scope_binding.last_menu.close()
    assert win.graph_view.selection == boxes["b1"]  # the selection stays
