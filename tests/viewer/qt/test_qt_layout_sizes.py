"""A window keeps the size it was given: what its panels show (the Explain section's lines,
the element chooser's label) scrolls, wraps or elides inside them instead of growing their
docks and the window."""

from __future__ import annotations

from pathlib import Path

from PySide6 import QtCore, QtWidgets

from viewer.model.panels.explain_view import ExplainLine
from viewer.qt.panels.explain import ExplainSection
from viewer.qt.settings import AppSettings

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def _settle(qtbot, ms=200):
    qtbot.wait(ms)
    QtWidgets.QApplication.processEvents()


def test_stepping_with_the_inspector_in_front_keeps_the_window_800_by_560(qtbot, shown):
    """Goldstein's backward steps explain in more lines than a 560 px window's inspector
    holds: the section scrolls; it used to be as tall as three quarters of the panel at
    least, which with the details below made the window 615 px high."""
    window = shown(800, 560)
    assert window.open_path(EXAMPLES / "goldstein.expr")
    qtbot.waitUntil(
        lambda: window.document.scene is not None and not window.document.layout_pending
    )
    window.raise_dock("inspectorDock")
    scene = window.document.scene
    window.document.select_index(scene.n_nodes // 2)
    playback = window.document.playback
    playback.to_end()
    _settle(qtbot)
    assert window.size() == QtCore.QSize(800, 560)
    for _ in range(3):
        playback.step_back()
        _settle(qtbot, 50)
    _settle(qtbot)
    assert window.inspector.explain.text()  # a backward step is explained
    assert window.size() == QtCore.QSize(800, 560)
    dock = window.docks["inspectorDock"]
    assert dock.minimumSizeHint().height() <= dock.height()
    # closing saves the docks unfolded, which need more height than 560 px: moving them
    # back resized the window, whose fit folded them again inside addDockWidget (a crash)
    window.close()
    assert AppSettings().window_state() is not None


def test_the_explain_section_scrolls_its_lines_in_a_short_panel(qtbot):
    section = ExplainSection()
    qtbot.addWidget(section)
    section.resize(300, 400)
    section.set_max_height(400)
    section.set_lines([ExplainLine("detail", ((f"line {k}", None),)) for k in range(40)])
    section.show()
    _settle(qtbot, 20)
    tall = section.sizeHint().height()
    assert tall >= 300  # it asks for its room when there is some
    assert section.minimumSizeHint().height() <= 120  # and needs a few lines of it


def test_the_element_chooser_wraps_its_label_in_a_narrow_dock(qtbot):
    """'element (each term's largest)' beside two spin boxes (a Linear's weight) made the
    section 390 px wide at least: the inspector's dock widened past the right column's
    300 px (torch_mlp.py's backward steps)."""
    section = ExplainSection()
    qtbot.addWidget(section)
    section.set_lines([ExplainLine("title", (("step 5: backward of Mul", None),))])
    section.set_focus((16, 8), None, chosen=False)
    section.show()
    _settle(qtbot, 20)
    assert section.chooser_label.text() == "element (each term's largest)"
    assert section.minimumSizeHint().width() <= 300


def test_a_four_axis_element_chooser_fits_the_right_column(qtbot):
    """A convolution's weight has four axes: their spin boxes go in a row under the label
    instead of widening the inspector's dock (289 to 345 px at cnn_step.py's step 9; the
    right column is 300 px wide at most windows' sizes, its dock's frame included)."""
    section = ExplainSection()
    qtbot.addWidget(section)
    section.set_lines([ExplainLine("title", (("step 9: backward of Conv2d", None),))])
    section.set_focus((16, 8, 3, 3), (15, 7, 2, 2), chosen=True)
    section.show()
    _settle(qtbot, 20)
    assert all(spin.isVisible() for spin in section.spins)
    assert section.minimumSizeHint().width() <= 280
    assert _box(section, section.spins[0]).top() > _box(section, section.largest).bottom()
    section.set_focus((16, 8), None, chosen=False)  # two: beside the label again
    _settle(qtbot, 20)
    assert section.minimumSizeHint().width() <= 280
    spin, button = _box(section, section.spins[0]), _box(section, section.largest)
    assert spin.top() <= button.center().y() <= spin.bottom()


def _box(section, widget):
    """``widget``'s rectangle in ``section``'s coordinates."""
    return QtCore.QRect(widget.mapTo(section, QtCore.QPoint(0, 0)), widget.size())


def test_the_inspector_dock_keeps_its_width_as_steps_change_the_element_chooser(qtbot, shown):
    """Stepping through cnn_step.py at 1024 x 700 widened the inspector's dock from 289 to
    345 px when a four-axis weight's spin boxes showed beside the label (a shown spin box
    lays the window out at once, so even one shown before it moved counted)."""
    window = shown(1024, 700)
    assert not window.dock_fit.folded
    dock = window.raise_dock("inspectorDock")
    section = window.inspector.explain
    section.set_lines([ExplainLine("title", (("step 9: backward of Conv2d", None),))])
    _settle(qtbot, 50)
    width = dock.width()
    widths = []
    watcher = _WidthWatcher(widths)
    dock.installEventFilter(watcher)
    for shape in [(16, 8, 3, 3), (16, 8), (), (16, 8, 3, 3), (5,), (100, 10, 3), (16, 8)]:
        section.set_focus(shape, None, chosen=False)
        _settle(qtbot, 20)
        assert dock.width() == width, shape
    assert widths == []


class _WidthWatcher(QtCore.QObject):
    """Records every width its widget is resized to."""

    def __init__(self, widths):
        super().__init__()
        self.widths = widths

    def eventFilter(self, watched, event):
        resized = event.type() == QtCore.QEvent.Type.Resize
        if resized and event.size().width() != event.oldSize().width():
            self.widths.append(event.size().width())
        return False


def test_a_wide_short_window_keeps_its_size_with_both_columns(qtbot, shown):
    """At 1280 x 560 the right column stays unfolded, and its panels' least heights summed to
    more than the window had: it became 1280 x 572 (the Plots panel alone needed 218 px, its
    three plots' rows, values and clip note; they scroll now in a shorter dock)."""
    window = shown(1280, 560)
    # the seeds' program plotted: the Plots panel needs its most height
    qtbot.waitUntil(lambda: window.plot_panel.function_plot.isVisible())
    _settle(qtbot, 50)
    assert window.size() == QtCore.QSize(1280, 560)
    assert not window.dock_fit.folded
    for width, height in ((1600, 560), (1024, 560), (1280, 800), (800, 560), (1280, 560)):
        window.resize(width, height)
        _settle(qtbot, 50)
        assert window.size() == QtCore.QSize(width, height)
        # the panels fit in the room the window gave them
        assert window.minimumSizeHint().height() <= height
    assert not window.dock_fit.folded
    window.raise_dock("plotPanel")
    _settle(qtbot, 50)
    plots = window.plot_panel.function_plot
    assert plots.isVisible() and plots.height() >= plots.minimumHeight()
