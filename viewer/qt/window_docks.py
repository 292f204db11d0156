"""The window's docks: which dock sits in which area and tab group, their default heights, and
the window's size and dock arrangement restored at the start and saved at close.

How wide the side docks may be as the window is resized is :class:`~viewer.qt.dock_fit.DockFit`'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from PySide6 import QtCore, QtWidgets

from viewer.qt.dock_fit import DockFit
from viewer.qt.settings import AppSettings

__all__ = ["DOCKS", "place_docks", "restore_window", "save_window", "size_docks"]

_AREA = QtCore.Qt.DockWidgetArea
# Each dock's object name (what a saved arrangement and the tour know it by), its title and
# its area, in the View menu's order.
DOCKS: tuple[tuple[str, str, QtCore.Qt.DockWidgetArea], ...] = (
    ("editorDock", "Program", _AREA.LeftDockWidgetArea),
    ("variablesDock", "Variables", _AREA.LeftDockWidgetArea),
    ("examplesDock", "Examples", _AREA.LeftDockWidgetArea),
    ("legendDock", "Legend", _AREA.LeftDockWidgetArea),
    ("inspectorDock", "Inspector", _AREA.RightDockWidgetArea),
    ("scriptDock", "Script", _AREA.RightDockWidgetArea),
    ("plotPanel", "Plots", _AREA.RightDockWidgetArea),
    ("leakPanel", "Leaks", _AREA.RightDockWidgetArea),
    ("gradCheckPanel", "Gradients", _AREA.RightDockWidgetArea),
    ("problemsDock", "Problems", _AREA.RightDockWidgetArea),
    ("playbackDock", "Playback", _AREA.BottomDockWidgetArea),
)


def place_docks(
    window: QtWidgets.QMainWindow, panels: Mapping[str, QtWidgets.QWidget]
) -> dict[str, QtWidgets.QDockWidget]:
    """Each panel (keyed by its dock's name in :data:`DOCKS`) in its dock: the left and right
    tab groups, playback at the bottom. The docks by name, in :data:`DOCKS`' order."""
    docks: dict[str, QtWidgets.QDockWidget] = {}
    for name, title, area in DOCKS:
        dock = QtWidgets.QDockWidget(title, window)
        dock.setObjectName(name)
        dock.setWidget(panels[name])
        window.addDockWidget(area, dock)
        docks[name] = dock
    window.tabifyDockWidget(docks["variablesDock"], docks["examplesDock"])
    window.tabifyDockWidget(docks["examplesDock"], docks["legendDock"])
    docks["variablesDock"].raise_()
    window.tabifyDockWidget(docks["inspectorDock"], docks["scriptDock"])
    docks["inspectorDock"].raise_()
    # the debugging panels share a second tab group, below the inspector's
    for name in ("leakPanel", "gradCheckPanel", "problemsDock"):
        window.tabifyDockWidget(docks["plotPanel"], docks[name])
    docks["plotPanel"].raise_()
    docks["playbackDock"].setFeatures(QtWidgets.QDockWidget.DockWidgetFeature.DockWidgetMovable)
    return docks


def size_docks(
    window: QtWidgets.QMainWindow,
    docks: Mapping[str, QtWidgets.QDockWidget],
    fit: DockFit,
    settings: AppSettings,
    restored: bool,
) -> None:
    """The docks' sizes once the window is shown (Qt ignores them before): the side columns'
    default heights unless a saved arrangement was ``restored``, and the widths ``fit`` keeps
    (the saved ones with a restored arrangement)."""
    if not restored:
        vertical = QtCore.Qt.Orientation.Vertical
        window.resizeDocks([docks["editorDock"], docks["variablesDock"]], [260, 300], vertical)
        window.resizeDocks([docks["inspectorDock"], docks["plotPanel"]], [45, 55], vertical)
    fit.start(keep_current=restored, preferred=settings.dock_widths() if restored else None)


def restore_window(window: QtWidgets.QMainWindow, settings: AppSettings) -> bool:
    """The saved size and docks; one Qt cannot read is refused (``settings`` names it in the
    status bar) and the default takes its place. True when a saved arrangement was restored."""
    geometry = settings.geometry()
    if geometry is None or not window.restoreGeometry(geometry):
        if geometry is not None:
            settings.refuse("window/geometry", "not a window geometry Qt can read")
        window.resize(1280, 800)
    state = settings.window_state()
    if state is None:
        return False
    restored = window.restoreState(state)
    if not restored:
        settings.refuse("window/state", "not a dock layout Qt can read")
    return restored


def save_window(window: QtWidgets.QMainWindow, settings: AppSettings, fit: DockFit) -> None:
    """The window's size, its docks' arrangement and the side columns' widths, as the user
    made them rather than as a narrow window folded or squeezed them."""
    settings.set_geometry(window.saveGeometry())
    with fit.unfolded():
        settings.set_window_state(window.saveState())
    if fit.preferred is not None:
        settings.set_dock_widths(fit.preferred)
