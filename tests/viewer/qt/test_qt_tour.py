"""The first-run tour: shown on the first start, never again once finished or dismissed,
replayed by Help > Take the Tour; non-modal, each callout beside the part it explains."""

from __future__ import annotations

import pytest
from PySide6 import QtCore, QtWidgets

from viewer.qt.settings import AppSettings


def _first_start() -> None:
    settings = AppSettings()
    settings.store.remove("help/tourSeen")  # the test settings mark it seen; a new user's don't
    settings.sync()


def _window_rect(window, widget) -> QtCore.QRect:
    return QtCore.QRect(widget.mapTo(window, QtCore.QPoint(0, 0)), widget.size())


def test_the_tour_shows_on_the_first_start_and_points_at_each_part(qtbot, shown):
    _first_start()
    window = shown()
    tour = window.tour
    assert tour is not None and tour.running
    assert QtWidgets.QApplication.activeModalWidget() is None  # the window stays usable
    targets = [
        window.docks["editorDock"],
        window.graph_view,
        window.docks["playbackDock"],
        window.docks["inspectorDock"],
        window.docks["legendDock"],
    ]
    assert len(tour.stops) == len(targets)
    titles = []
    for i, target in enumerate(targets):
        assert tour.index == i
        assert tour.counter.text() == f"{i + 1} of {len(targets)}"
        titles.append(tour.title.text())
        assert target.isVisible()
        if target is not window.graph_view:  # a dock behind a tab is raised
            assert not target.visibleRegion().isEmpty()
        outlined = tour.outline.geometry()
        assert outlined.contains(_window_rect(window, target).intersected(window.rect()))
        callout = tour.geometry()
        assert window.rect().contains(callout)
        if target is not window.graph_view:  # beside a dock, not over it
            assert not callout.intersects(_window_rect(window, target))
        assert tour.next_button.text() == ("Done" if i == len(targets) - 1 else "Next")
        qtbot.mouseClick(tour.next_button, QtCore.Qt.MouseButton.LeftButton)
    assert titles[0] == "Your program" and titles[-1] == "The legend"
    assert not tour.running and not tour.outline.isVisible()
    assert window.settings.tour_seen()


def test_back_goes_back_and_esc_dismisses_for_good(qtbot, shown):
    _first_start()
    window = shown()
    tour = window.tour
    assert not tour.back_button.isEnabled()
    tour.next()
    tour.next()
    qtbot.mouseClick(tour.back_button, QtCore.Qt.MouseButton.LeftButton)
    assert tour.index == 1
    qtbot.keyClick(tour.next_button, QtCore.Qt.Key.Key_Escape)
    assert not tour.running
    window.close()

    again = shown()
    assert again.tour is None  # dismissed once is remembered


def test_skip_is_remembered_and_help_tour_replays_it(qtbot, shown):
    _first_start()
    window = shown()
    with qtbot.waitSignal(window.tour.finished):
        qtbot.mouseClick(window.tour.skip_button, QtCore.Qt.MouseButton.LeftButton)
    assert AppSettings().tour_seen()
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    assert window.actions["tour"] in help_menu.actions()
    window.actions["tour"].trigger()
    assert window.tour.running and window.tour.index == 0


def test_the_tour_follows_its_target_when_the_window_narrows(qtbot, shown):
    _first_start()
    window = shown()
    window.tour.next()
    window.tour.next()
    window.tour.next()  # the inspector, which folds into the left column at 800 px
    window.resize(800, 560)
    qtbot.waitUntil(lambda: window.dock_fit.folded)
    inspector = window.docks["inspectorDock"]
    qtbot.waitUntil(
        lambda: window.tour.outline.geometry().contains(_window_rect(window, inspector))
    )
    assert not inspector.visibleRegion().isEmpty()  # raised again in its new tab group
    assert window.rect().contains(window.tour.geometry())


def test_the_tour_stays_away_from_a_returning_user(qtbot, shown):
    window = shown()  # the test settings: tour seen
    assert window.tour is None


def test_esc_dismisses_the_tour_even_while_esc_cancels_a_run(qtbot, shown):
    _first_start()
    window = shown()
    window.run_gate.set_running(True)  # the window's Cancel action now answers Esc
    cancelled = []
    window.actions["cancel_run"].triggered.connect(lambda: cancelled.append(True))
    qtbot.keyClick(window.tour.next_button, QtCore.Qt.Key.Key_Escape)
    assert not window.tour.running
    assert cancelled == []  # the tour had the focus: Esc was its
    window.run_gate.set_running(False)


def test_the_callout_follows_a_theme_switch(qtbot, shown):
    from PySide6 import QtGui

    from viewer.qt.drawing.themes import qpalette, theme_named

    _first_start()
    window = shown()
    tour = window.tour
    for name in ("dark", "light"):
        window.set_theme(name)
        QtWidgets.QApplication.processEvents()
        base = qpalette(theme_named(name)).color(QtGui.QPalette.ColorRole.Base)
        inside = tour.grab().toImage().pixelColor(8, tour.height() // 2)
        assert inside.name() == base.name(), name


@pytest.mark.parametrize("size", [(1280, 800), (800, 560), (1600, 1000)])
def test_next_stays_under_the_pointer_from_stop_to_stop(qtbot, shown, size):
    """Beside each part in turn, the callout and its Next button moved between stops (from
    (475, 214) to (1173, 411) to (697, 654) at 1280 x 800): a user clicking Next again and
    again missed it. The callout stays in one place; the outline shows the part."""
    _first_start()
    window = shown(*size)
    tour = window.tour
    places = set()
    for i in range(len(tour.stops)):
        QtWidgets.QApplication.processEvents()
        places.add(_window_rect(window, tour.next_button).getRect())
        assert window.rect().contains(tour.geometry())
        assert tour.next_button.isVisible()
        assert tour.text.height() >= tour.text.heightForWidth(tour.text.width())  # text whole
        qtbot.mouseClick(tour.next_button, QtCore.Qt.MouseButton.LeftButton)
        assert tour.index == i + 1 or not tour.running
    assert not tour.running
    assert len(places) == 1, places
