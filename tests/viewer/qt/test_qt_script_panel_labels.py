"""The Script panel's closed graph box shortens a long label by whole parts: a label clipped
at the box's edge once read ``loss 0`` for a loss of 0.246."""

from PySide6 import QtGui

from viewer.qt.panels import script
from viewer.qt.panels.script import ScriptPanel, fit_label

TITLE = "#1973 · iter 1972 · loss 0.246"


def _metrics():
    return QtGui.QFontMetrics(QtGui.QFont())


def test_a_label_is_kept_whole_or_cut_at_a_part_never_inside_a_number(qapp):
    m = _metrics()
    full = m.horizontalAdvance(TITLE)
    assert fit_label(TITLE, full, m) == TITLE
    assert fit_label(TITLE, full - 1, m) == "#1973 · iter 1972 · …"
    two = m.horizontalAdvance("#1973 · iter 1972 · …")
    assert fit_label(TITLE, two - 1, m) == "#1973 · …"
    tiny = fit_label(TITLE, m.horizontalAdvance("#19"), m)
    assert tiny.endswith("…") and m.horizontalAdvance(tiny) <= m.horizontalAdvance("#19")


def test_the_closed_box_draws_its_label_fitted_to_its_width(qtbot, monkeypatch):
    panel = ScriptPanel()
    qtbot.addWidget(panel)
    panel.finished("done", ["#1 · iter 0 · loss 0.5", TITLE], 1)
    seen = []
    real = script.fit_label

    def spy(text, width, metrics):
        fitted = real(text, width, metrics)
        seen.append((text, width, fitted))
        return fitted

    monkeypatch.setattr(script, "fit_label", spy)
    box = panel.graphs
    box.setFixedWidth(box.fontMetrics().horizontalAdvance("#1973 · iter 1972 · lo") + 40)
    box.grab()
    assert seen and seen[-1][0] == TITLE
    _, width, fitted = seen[-1]
    assert width < box.fontMetrics().horizontalAdvance(TITLE)
    assert fitted == "#1973 · iter 1972 · …"
    assert TITLE in box.toolTip()  # whole there


def test_the_boxs_style_leaves_the_applications_own_alone(qtbot):
    """A QProxyStyle owns the style it is given: given the application's, it spoke for every
    widget and took the application's style with it when it was deleted (the next window
    crashed in QMainWindow's constructor)."""
    from PySide6 import QtCore, QtWidgets
    from shiboken6 import Shiboken

    app_style = QtWidgets.QApplication.style()
    panel = ScriptPanel()
    qtbot.addWidget(panel)
    proxy = panel._list_popup
    assert app_style.proxy() is app_style and app_style.parent() is not proxy
    assert proxy.baseStyle() is not app_style
    assert proxy.baseStyle().name() == app_style.name()  # looks the same
    proxy.deleteLater()
    QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    assert Shiboken.isValid(app_style) and QtWidgets.QApplication.style() is app_style
    window = QtWidgets.QMainWindow()
    qtbot.addWidget(window)
    window.show()
