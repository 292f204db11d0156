"""The graph keeps the space: the side docks shrink, then fold into one column, before the
graph gets less than half the window's width; they come back at their widths when it grows;
their arrangement survives a restart, and one Qt cannot read falls back to the default."""

from __future__ import annotations

import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.app import build_window
from viewer.qt.dock_fit import GRAPH_SHARE
from viewer.qt.settings import AppSettings

LEFT = QtCore.Qt.DockWidgetArea.LeftDockWidgetArea
RIGHT = QtCore.Qt.DockWidgetArea.RightDockWidgetArea
RIGHT_DOCKS = (
    "inspectorDock",
    "scriptDock",
    "plotPanel",
    "leakPanel",
    "gradCheckPanel",
    "problemsDock",
)


def _resize(qtbot, window, width, height):
    window.resize(width, height)
    qtbot.waitUntil(lambda: window.width() == max(width, window.minimumSizeHint().width()))
    QtWidgets.QApplication.processEvents()


def _graph_share(window) -> float:
    return window.graph_view.width() / window.width()


def test_the_graph_keeps_half_the_width_of_a_small_window(qtbot, shown):
    window = shown()
    assert _graph_share(window) >= GRAPH_SHARE
    smallest = window.minimumSizeHint()
    for width, height in ((smallest.width(), smallest.height()), (800, 560), (1024, 700)):
        _resize(qtbot, window, width, height)
        # half: the graph is what the window is for; the docks share the other half
        assert _graph_share(window) >= GRAPH_SHARE, (width, window.graph_view.width())
        # every panel is still there, one click away
        assert all(not d.isHidden() for d in window.docks.values())


def test_a_window_opened_small_folds_at_once_and_keeps_the_size_asked(qtbot, shown):
    """Unfolded, the right column's panels need more height than 560 px; the window opened
    at 800 x 560 folds them into the left tabs and stays 560 high, playback and status bar
    on screen, instead of growing past the screen's bottom."""
    window = shown(800, 560)
    assert window.dock_fit.folded
    assert window.size() == QtCore.QSize(800, 560)
    playback = window.docks["playbackDock"]
    assert playback.geometry().bottom() < window.statusBar().geometry().top() <= 560


def test_a_narrow_window_folds_the_right_docks_into_the_left_tabs_and_unfolds(qtbot, shown):
    window = shown()
    window.docks["leakPanel"].hide()  # the user's choice survives folding
    _resize(qtbot, window, 800, 560)
    assert window.dock_fit.folded
    for name in RIGHT_DOCKS:
        assert window.dockWidgetArea(window.docks[name]) == LEFT
    assert window.docks["inspectorDock"] in window.tabifiedDockWidgets(
        window.docks["variablesDock"]
    )
    # the column's tabs (nine but the hidden Leaks) keep their whole names, none cut to "Va…"
    direct = QtCore.Qt.FindChildOption.FindDirectChildrenOnly
    bars = [b for b in window.findChildren(QtWidgets.QTabBar, options=direct) if b.isVisible()]
    assert max(bar.count() for bar in bars) == 8
    for bar in bars:
        for i in range(bar.count()):
            text = bar.tabText(i)
            assert bar.tabRect(i).width() > bar.fontMetrics().horizontalAdvance(text), text
    _resize(qtbot, window, 1280, 800)
    assert not window.dock_fit.folded
    for name in RIGHT_DOCKS:
        assert window.dockWidgetArea(window.docks[name]) == RIGHT
    # the tab groups as they were: the inspector with the script, the plots with the checks
    assert window.tabifiedDockWidgets(window.docks["inspectorDock"]) == [window.docks["scriptDock"]]
    assert window.docks["gradCheckPanel"] in window.tabifiedDockWidgets(window.docks["plotPanel"])
    assert window.docks["problemsDock"] in window.tabifiedDockWidgets(window.docks["plotPanel"])
    assert window.docks["leakPanel"].isHidden()
    assert window.docks["inspectorDock"].y() < window.docks["plotPanel"].y()


def test_docks_come_back_at_their_widths_after_a_shrink_and_a_grow(qtbot, shown):
    window = shown()
    left, right = window.docks["editorDock"], window.docks["inspectorDock"]
    before = (left.width(), right.width())
    smallest = window.minimumSizeHint()
    _resize(qtbot, window, smallest.width(), smallest.height())
    _resize(qtbot, window, 800, 560)
    _resize(qtbot, window, 1280, 800)
    assert left.width() == pytest.approx(before[0], abs=4)
    assert right.width() == pytest.approx(before[1], abs=4)
    legend = window.docks["legendDock"]
    window.raise_dock("legendDock")
    QtWidgets.QApplication.processEvents()
    assert legend.widget().width() >= legend.widget().minimumSizeHint().width()  # not clipped


def test_a_dragged_width_is_kept_across_a_shrink(qtbot, shown):
    window = shown()
    left = window.docks["editorDock"]
    start = left.width()
    # the separator between the left column and the graph, dragged 40 px to the right (both
    # columns still fit in half the window)
    x = (left.geometry().right() + window.centralWidget().geometry().left()) // 2
    grab = QtCore.QPoint(x, left.geometry().center().y())
    button = QtCore.Qt.MouseButton.LeftButton
    qtbot.mousePress(window, button, pos=grab)
    for dx in (20, 40):
        point = QtCore.QPointF(grab + QtCore.QPoint(dx, 0))
        move = QtGui.QMouseEvent(
            QtCore.QEvent.Type.MouseMove,
            point,
            QtCore.QPointF(window.mapToGlobal(point)),
            QtCore.Qt.MouseButton.NoButton,
            button,
            QtCore.Qt.KeyboardModifier.NoModifier,
        )
        QtWidgets.QApplication.sendEvent(window, move)
        qtbot.waitUntil(lambda dx=dx: left.width() >= start + dx - 4)  # moved on a timer
    qtbot.mouseRelease(window, button, pos=grab + QtCore.QPoint(40, 0))
    assert left.width() == pytest.approx(start + 40, abs=4)
    qtbot.waitUntil(lambda: window.dock_fit.preferred[0] == left.width())
    _resize(qtbot, window, 800, 560)
    _resize(qtbot, window, 1280, 800)
    assert left.width() == pytest.approx(start + 40, abs=4)


def test_the_dock_layout_survives_a_restart_even_when_closed_narrow(qtbot, shown):
    first = shown()
    first.docks["scriptDock"].hide()
    first.removeDockWidget(first.docks["leakPanel"])
    first.addDockWidget(QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, first.docks["leakPanel"])
    first.docks["leakPanel"].show()
    _resize(qtbot, first, 800, 560)
    assert first.dock_fit.folded
    first.close()  # saves the settings: the arrangement unfolded

    second = build_window([])
    qtbot.addWidget(second)
    assert second.settings.problems == ()
    assert second.dockWidgetArea(second.docks["leakPanel"]) == (
        QtCore.Qt.DockWidgetArea.BottomDockWidgetArea
    )
    assert second.docks["scriptDock"].isHidden()
    assert second.dockWidgetArea(second.docks["inspectorDock"]) == RIGHT
    second.show()
    qtbot.waitExposed(second)
    qtbot.waitUntil(lambda: second.dock_fit.preferred is not None)
    QtWidgets.QApplication.processEvents()
    assert second.width() == pytest.approx(first.width(), abs=4)  # the screen is 800 px wide
    assert second.height() == first.height()
    assert second.dock_fit.folded  # the window is as narrow as it was
    assert _graph_share(second) >= GRAPH_SHARE


@pytest.mark.parametrize("key", ["window/state", "window/geometry"])
def test_a_layout_qt_cannot_read_falls_back_to_the_default_and_says_so(qtbot, key, shown):
    settings = AppSettings()
    settings.store.setValue(key, QtCore.QByteArray(b"\x00\xff not a layout at all"))
    settings.sync()
    window = shown()
    assert [p.key for p in window.settings.problems] == [key]
    qtbot.waitUntil(lambda: key in window.statusBar().currentMessage())
    assert "ignored" in window.statusBar().currentMessage()
    assert window.dockWidgetArea(window.docks["inspectorDock"]) == RIGHT
    assert window.dockWidgetArea(window.docks["editorDock"]) == LEFT
    assert _graph_share(window) >= GRAPH_SHARE


def test_a_click_that_is_no_drag_teaches_no_width(qtbot, shown):
    window = shown()
    preferred = window.dock_fit.preferred
    wanted = window.dock_fit.wanted(1280)
    _resize(qtbot, window, 1024, 700)  # the columns squeezed below what the user wants
    assert window.docks["editorDock"].width() < wanted[0]
    # a click over a child that ignores it reaches the window too, as a separator's does
    inside = window.graph_view.mapTo(window, window.graph_view.rect().center())
    qtbot.mouseClick(window, QtCore.Qt.MouseButton.LeftButton, pos=inside)
    qtbot.mouseClick(window.status_label, QtCore.Qt.MouseButton.LeftButton)
    qtbot.wait(20)
    assert window.dock_fit.preferred == preferred
    _resize(qtbot, window, 1280, 800)
    assert window.docks["editorDock"].width() == pytest.approx(wanted[0], abs=4)


def test_unfolding_keeps_the_order_and_the_tabs_in_front(qtbot, shown):
    window = shown()
    window.raise_dock("scriptDock")
    window.raise_dock("leakPanel")
    QtWidgets.QApplication.processEvents()
    _resize(qtbot, window, 800, 560)
    assert window.dock_fit.folded
    _resize(qtbot, window, 1280, 800)
    assert not window.dock_fit.folded
    QtWidgets.QApplication.processEvents()
    script, leaks = window.docks["scriptDock"], window.docks["leakPanel"]
    for dock in (script, leaks):
        assert not dock.visibleRegion().isEmpty()  # still the tab in front
    assert 0 <= script.y() < leaks.y()  # the inspector's group above the plots'


@pytest.mark.parametrize("narrow", [(800, 560), (600, 572)])
def test_closed_narrow_reopened_and_grown_the_docks_have_their_widths_back(qtbot, narrow, shown):
    first = shown()
    wanted = (first.docks["editorDock"].width(), first.docks["inspectorDock"].width())
    _resize(qtbot, first, *narrow)
    first.close()

    second = shown(*narrow)
    _resize(qtbot, second, 1280, 800)
    got = (second.docks["editorDock"].width(), second.docks["inspectorDock"].width())
    assert got == pytest.approx(wanted, abs=4)


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ([256, 320], (256, 320)),
        (["256", "320"], (256, 320)),
        ("300,400", (300, 400)),
        ("300", None),
        ([1, 2, 3], None),
        (["-1", "5"], None),
        (["abc", "5"], None),
        ([5, 10**9], None),
    ],
)
def test_saved_dock_widths_are_checked(stored, expected):
    settings = AppSettings()
    settings.store.setValue("window/dockWidths", stored)
    assert settings.dock_widths() == expected
    assert ([p.key for p in settings.problems] == ["window/dockWidths"]) == (expected is None)


@pytest.mark.parametrize("first", [(800, 560), (1600, 1000)])
def test_a_larger_window_gives_the_editor_no_less_room(qtbot, shown, first):
    """Shown at 800 x 560 (folded: the editor's column 300 px wide), the window kept that
    size's defaults, 220 and 300 px, at any size: the editor was 220 px wide at 1400 x 700
    and 1600 x 1000. Untouched columns follow the window's width (folded, the left column
    holds the right one's panels too, and is as wide as they want)."""
    window = shown(*first)
    editor = window.docks["editorDock"]
    widths = {}
    for size in ((800, 560), (1024, 700), (1280, 800), (1400, 700), (1600, 1000)):
        _resize(qtbot, window, *size)
        widths[size[0]] = editor.width()
        assert _graph_share(window) >= GRAPH_SHARE, size
    assert widths[800] == 300
    assert widths[1024] <= widths[1280] <= widths[1400] <= widths[1600]
    assert widths[1400] == 1400 // 5
    assert widths[1600] == 1600 // 5
    assert window.docks["inspectorDock"].width() == 1600 // 4
    assert window.dock_fit.preferred == (0, 0)  # nothing learnt: no separator was dragged
