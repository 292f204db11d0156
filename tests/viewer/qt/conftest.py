"""Qt tests run on the offscreen platform with settings isolated in a temporary folder."""

import gc
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6 import QtCore


@pytest.fixture(autouse=True)
def earlier_qt_garbage_dies_on_the_gui_thread(qapp):
    """The windows of the tests before this one are in reference cycles by now (pytest-qt
    closed them; their Python parts hold each other, and Python owns a few live parts:
    pyqtgraph's menus, pixmaps). Collected here, on the GUI thread: else the cycle collector
    could free them on this test's worker thread (it runs on whichever thread allocates when
    it triggers), and a Qt object must die on its own thread. The app's one window ends with
    the app."""
    QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    gc.collect()


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path_factory, monkeypatch):
    """Every test gets its own QSettings folder: the user's settings are never read or written."""
    folder = tmp_path_factory.mktemp("settings")
    for scope in (QtCore.QSettings.Scope.UserScope, QtCore.QSettings.Scope.SystemScope):
        QtCore.QSettings.setPath(QtCore.QSettings.Format.IniFormat, scope, str(folder))
        QtCore.QSettings.setPath(QtCore.QSettings.Format.NativeFormat, scope, str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    # A returning user's settings: the first-run tour (non-modal, so it would block nothing)
    # stays away from tests that do not ask for it; its own tests remove this key.
    from viewer.qt.settings import AppSettings

    seen = AppSettings()
    seen.set_tour_seen(True)
    seen.sync()
    return folder


def _stacked_positions(t):
    """Test-only positions: one row per generation-ordered node, spread sideways."""
    import numpy as np

    ids = sorted(t.graph.nodes)
    depth = {}
    for nid in ids:
        preds = list(t.graph.predecessors(nid))
        depth[nid] = 1 + max((depth[p] for p in preds), default=-1)
    rows = {}
    pos = []
    for nid in ids:
        k = rows.setdefault(depth[nid], 0)
        rows[depth[nid]] = k + 1
        pos.append((1.4 * k, 0.9 * depth[nid]))
    return ids, np.array(pos, dtype=float)


@pytest.fixture
def seed_trace():
    """The seeds' example, y = square(exp(square(x))) at x = 0.5, recorded with backward."""
    import numpy as np

    import autodiff.functions as F
    from autodiff import Variable, trace

    with trace.record() as t:
        x = Variable(np.array(0.5), name="x")
        y = F.square(F.exp(F.square(x)))
        y.name = "y"
        y.backward()
    t._keep = (x, y)  # keep the graph alive for the test (no FREED states)
    return t


@pytest.fixture
def seed_scene(seed_trace):
    from viewer.model.layout.compute import layout_from_positions
    from viewer.model.scene.scene import Scene

    ids, pos = _stacked_positions(seed_trace)
    return Scene(seed_trace, layout_from_positions(seed_trace, ids, pos))


@pytest.fixture
def wait_for_script(qtbot):
    """``wait_for_script(window, timeout=120_000)``: wait until the window's script run has
    ended, its Cancel button is disabled again, and the graph it brought is laid out and on
    screen (the document takes a run as its ``script_result`` only then)."""

    def wait(window, timeout=120_000):
        qtbot.waitUntil(
            lambda: (
                window.document.script_run is None
                and not window.script_panel.cancel_button.isEnabled()
                and not window.document.layout_pending
            ),
            timeout=timeout,
        )

    return wait


@pytest.fixture
def window(qtbot):
    """A main window with the default program loaded, shown offscreen, isolated settings."""
    from viewer.app import build_window

    win = build_window([])
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    qtbot.waitExposed(win)
    # Scripts are the user's code: tests run them without the confirmation dialog.
    win.confirm_script = lambda path: True
    yield win
    win.document.playback.pause()
    if win.document.script_run is not None:
        win.document.cancel_script()
        win.document.script_run.wait(10)


@pytest.fixture
def shown(qtbot):
    """``shown(width=1280, height=800)``: a new main window of the default program, shown
    at that size once its docks were fitted (each call makes another, e.g. a restart)."""
    from PySide6 import QtWidgets

    from viewer.app import build_window

    def make(width=1280, height=800):
        window = build_window([])
        qtbot.addWidget(window)
        window.resize(width, height)
        window.show()
        qtbot.waitExposed(window)
        qtbot.waitUntil(lambda: window.dock_fit.preferred is not None)
        QtWidgets.QApplication.processEvents()  # the layout the fit asked for
        return window

    return make
