"""The main window end to end: type, run, step, inspect; errors keep the graph; shortcuts."""

import numpy as np
import pytest
from PySide6 import QtCore, QtWidgets

from viewer.qt.main_window import DEFAULT_PROGRAM
from viewer.qt.panels.playback import SPEEDS

REQUIRED_NAMES = (
    "expressionEditor",
    "runButton",
    "graphView",
    "stepBackButton",
    "stepForwardButton",
    "playButton",
    "timelineSlider",
    "inspector",
)


def _find(window, name):
    widget = window.findChild(QtWidgets.QWidget, name)
    assert widget is not None, f"no widget named {name!r}"
    return widget


def test_build_window_has_every_required_object_name(window):
    for name in REQUIRED_NAMES:
        _find(window, name)
    assert isinstance(_find(window, "expressionEditor"), QtWidgets.QPlainTextEdit)


def test_starts_with_the_seeds_example_loaded(window):
    doc = window.document
    assert doc.scene is not None
    assert window.editor.text() == DEFAULT_PROGRAM
    assert doc.trace is not None and len(doc.trace.functions) == 3  # square, exp, square
    ops = [s.op for s in doc.trace.steps if s.phase == "forward"]
    assert ops == ["Square", "Exp", "Square"]
    assert window.graph_view.frame is not None


def _click_node(qtbot, window, index):
    view = window.graph_view
    xy = window.document.scene.geometry.positions[index]
    point = view.mapFromScene(view.view_box.mapViewToScene(QtCore.QPointF(*xy)))
    qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=point)


def test_type_run_step_to_the_end_and_the_inspector_shows_x_gradient(qtbot, window):
    editor = _find(window, "expressionEditor")
    editor.clear()
    qtbot.keyClicks(editor, "y = tanh(x) * x**2")
    qtbot.mouseClick(_find(window, "runButton"), QtCore.Qt.MouseButton.LeftButton)
    doc = window.document
    assert doc.program is not None and doc.program.leaves == ("x",)
    assert doc.playback.index == -1  # a new graph starts before its first step
    forward = _find(window, "stepForwardButton")
    for _ in range(doc.playback.n_steps):
        qtbot.mouseClick(forward, QtCore.Qt.MouseButton.LeftButton)
    assert doc.playback.at_end
    assert doc.playback.phase == "backward"
    x_index = doc.scene.names.index("x")
    _click_node(qtbot, window, x_index)
    assert doc.selection == int(doc.scene.node_ids[x_index])
    text = window.inspector.text()
    # x = 1 (a free name): dy/dx = (1 - tanh(1)^2) + 2 tanh(1) = 1.9432
    expected = (1 - np.tanh(1.0) ** 2) + 2 * np.tanh(1.0)
    assert f"{expected:.4f}"[:5] in text
    assert "grad" in text


def test_bad_input_shows_the_error_in_the_editor_and_keeps_the_graph(qtbot, window):
    doc = window.document
    scene_before = doc.scene
    bad = "y = exp(x) +\n"
    window.editor.set_text(bad)
    qtbot.mouseClick(_find(window, "runButton"), QtCore.Qt.MouseButton.LeftButton)
    assert doc.scene is scene_before
    assert window.editor.text() == bad  # nothing the user typed is lost
    assert "line 1" in window.editor.error_text()
    assert window.editor.editor.extraSelections()  # the error is marked in place
    # rejected before anything runs: attributes
    window.editor.set_text("import os\ny = x")
    window.editor_binding.run()
    assert doc.scene is scene_before
    assert window.editor.error_text()
    # fixing it clears the error and shows the new graph
    window.editor.set_text("y = sin(x)")
    assert window.editor_binding.run()
    assert doc.scene is not scene_before
    assert window.editor.error_text() == ""


def test_editing_a_leaf_value_reruns_and_a_bad_value_reverts_with_a_message(qtbot, window):
    doc = window.document
    table = window.variables
    assert table.leaf_names() == ["x"]
    table.set_value_text("x", "0.7")
    assert float(doc.evaluation.values["x"]) == pytest.approx(0.7)
    scene = doc.scene
    table.set_value_text("x", "0.7 +")
    assert doc.scene is scene
    assert table.value_text("x") == "0.7"  # the value the graph shows
    assert "0.7 +" in table.message_text() and table.message.isVisible()
    assert window.editor.error_text() == ""  # the error belongs to the table, not the editor


def test_playback_shortcuts(qtbot, window):
    playback = window.document.playback
    window.activateWindow()
    window.graph_view.setFocus()
    qtbot.waitUntil(lambda: QtWidgets.QApplication.activeWindow() is window)
    playback.to_start()
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_Right)
    assert playback.index == 0
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_Right)
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_Left)
    assert playback.index == 0
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_End)
    assert playback.at_end
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_Home)
    assert playback.at_start
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_B)
    assert playback.index == 3  # the first backward step, its gradient shown
    assert playback.current_step.phase == "backward"
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_Space)
    assert playback.playing
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_Space)
    assert not playback.playing
    before = window.graph_view.pixels_per_unit()
    window.graph_view.zoom_by(3)
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_F)
    assert window.graph_view.pixels_per_unit() == pytest.approx(before, rel=0.05)


def test_arrow_keys_in_the_editor_edit_text_and_ctrl_enter_runs(qtbot, window):
    playback = window.document.playback
    window.activateWindow()
    editor = window.editor.editor
    editor.setFocus()
    qtbot.waitUntil(lambda: editor.hasFocus())
    playback.seek(1)
    qtbot.keyClick(editor, QtCore.Qt.Key.Key_Right)
    qtbot.keyClick(editor, QtCore.Qt.Key.Key_Space)
    assert playback.index == 1 and not playback.playing  # the editor kept the keys
    window.editor.set_text("y = cos(x)")
    scene = window.document.scene
    qtbot.keyClick(editor, QtCore.Qt.Key.Key_Return, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert window.document.scene is not scene
    assert window.document.trace.steps[0].op == "Cos"


def test_play_runs_to_the_end_on_the_timer(qtbot, window):
    playback = window.document.playback
    playback.set_speed(60)
    qtbot.mouseClick(_find(window, "playButton"), QtCore.Qt.MouseButton.LeftButton)
    assert playback.playing
    qtbot.waitUntil(lambda: playback.at_end and not playback.playing, timeout=30_000)
    slider = _find(window, "timelineSlider")
    assert slider.value() == playback.index
    slider.setValue(1)
    assert playback.index == 1
    qtbot.mouseClick(_find(window, "stepBackButton"), QtCore.Qt.MouseButton.LeftButton)
    assert playback.index == 0


def test_faster_and_slower_step_through_the_speeds_and_stop_at_either_end(window):
    playback = window.document.playback
    playback.set_speed(SPEEDS[0])
    window.actions["slower"].trigger()
    assert playback.speed == SPEEDS[0]
    window.actions["faster"].trigger()
    assert playback.speed == SPEEDS[1]
    assert window.statusBar().currentMessage() == f"Speed: {SPEEDS[1]:g} steps/s"
    playback.set_speed(3.0)  # between two of the steps
    window.actions["slower"].trigger()
    assert playback.speed == 2.0
    window.actions["faster"].trigger()
    assert playback.speed == 4.0
    playback.set_speed(SPEEDS[-1])
    window.actions["faster"].trigger()
    assert playback.speed == SPEEDS[-1]


def test_dark_theme_switch_keeps_the_graph(window):
    scene = window.document.scene
    window.actions["theme_dark"].trigger()
    assert window.theme.name == "dark"
    assert window.document.scene is scene
    assert window.document.frame().fill is not None
    from viewer.qt.drawing.themes import DARK, LIGHT

    # every plot follows, the inspector's histogram too (it stayed white)
    brush = window.inspector.plot.backgroundBrush().color()
    assert brush.name() == DARK.base
    window.actions["theme_light"].trigger()
    assert window.theme.name == "light"
    assert window.inspector.plot.backgroundBrush().color().name() == LIGHT.base


def test_menus_have_the_standard_actions(window):
    for name in ("open", "export", "quit", "run", "fit", "play", "shortcuts", "about"):
        assert name in window.actions
    assert window.actions["open"].shortcut().toString() == "Ctrl+O"
    assert window.actions["quit"].shortcut().toString() == "Ctrl+Q"
    assert any(name.startswith("example_") for name in window.actions)


def test_shortcuts_dialog_lists_the_keys(qtbot, window):
    from viewer.qt.menus import show_shortcuts

    dialog = show_shortcuts(window)
    text = dialog.findChild(QtWidgets.QLabel).text()
    for key in ("Ctrl+O", "Space", "Left", "Right", "Home", "End"):
        assert key in text
    dialog.close()


def test_export_from_the_window(tmp_path, window):
    assert window.export_view(tmp_path / "view.png")
    assert window.export_view(tmp_path / "view.svg")
    assert (tmp_path / "view.png").stat().st_size > 1000
    assert "<svg" in (tmp_path / "view.svg").read_text()
    assert not window.export_view(tmp_path / "view.bmp")


def test_hover_texts_come_from_the_scene(window):
    window.editor_binding.run("y = x * x")
    scene = window.document.scene
    tooltip = window.scene_binding._tooltip_at
    x = scene.names.index("x")
    assert tooltip(*scene.geometry.positions[x]).startswith("x (variable")
    # an edge, hit halfway along its polyline: x * x has two, one per argument slot
    texts = set()
    for e in range(scene.n_edges):
        points = scene.edge_polyline(e)
        middle = points[len(points) // 2] if len(points) > 2 else points.mean(axis=0)
        text = tooltip(*middle)
        if text and "argument" in text:
            texts.add(text)
    assert any("argument 0" in t for t in texts) and any("argument 1" in t for t in texts)


def test_the_first_non_finite_function_is_flagged(window, tmp_path):
    assert window.load_example("nan_log")
    assert window.graph_view.overlay_count >= 1
    assert window.export_view(tmp_path / "nan.png")
    window.document.playback.to_start()
    window.actions["first_nonfinite"].trigger()
    assert window.document.playback.index == window.document.playback.nonfinite_steps[0]


def test_the_window_fits_800_by_560_with_a_script_shown(qtbot, window, wait_for_script):
    """QA: with a script's panels filled the window would not go below 626 px tall."""
    window.load_example("rnn_bptt")
    wait_for_script(window)
    assert window.minimumSizeHint().height() <= 560  # its panels fit: nothing is clipped
    window.resize(800, 560)
    qtbot.wait(50)
    assert window.height() <= 560 and window.width() <= 800
    assert window.graph_view.height() > 100  # the graph keeps room


def test_hovering_menu_entries_keeps_the_status_line(qtbot):
    """A menu entry without a status tip (the theme switch, most entries) sends an empty one
    when hovered; the status line keeps what it said."""
    from PySide6 import QtGui, QtWidgets

    from viewer.app import build_window

    window = build_window([])
    qtbot.addWidget(window)
    window.statusBar().showMessage("Exported the graph to /tmp/graph.png")
    QtWidgets.QApplication.sendEvent(window, QtGui.QStatusTipEvent(""))
    assert window.statusBar().currentMessage() == "Exported the graph to /tmp/graph.png"
    window.set_theme("dark")
    assert window.statusBar().currentMessage() == "Exported the graph to /tmp/graph.png"
    QtWidgets.QApplication.sendEvent(window, QtGui.QStatusTipEvent("Open a file"))
    assert window.statusBar().currentMessage() == "Open a file"  # a real tip still shows


def test_an_unknown_function_points_to_the_language_reference_which_lists_it_all(qtbot, window):
    from viewer.model.expression.rules import KNOWN_CALLABLES
    from viewer.qt.menus import show_language

    window.editor.set_text("y = frobnicate(x)")
    window.editor_binding.run()
    message = window.editor.error_text()
    assert "unknown function frobnicate()" in message
    assert "Help > Expression Language" in message
    assert len(message) < 160  # a hint, not the 40 names (it was 397 characters)
    assert "Expression &Language" in [a.text() for a in window.actions.values()]
    dialog = show_language(window)
    text = dialog.findChild(QtWidgets.QTextBrowser, "languageText").toPlainText()
    for name in KNOWN_CALLABLES:
        assert f"{name}(" in text, name
    dialog.close()


def test_a_long_error_is_cut_under_the_editor_and_whole_on_hover(qtbot, window):
    from viewer.qt.program.editor import MAX_ERROR_LINES

    window.resize(800, 560)
    window.show()
    qtbot.waitExposed(window)
    label = window.editor.error_label
    long = "the shapes (2, 3) and (4, 5) do not broadcast " * 12 + "<b>end</b>"
    window.editor.show_error(long, 1, 1)
    QtWidgets.QApplication.processEvents()
    shown = label.text()
    assert shown.endswith("\u2026") and shown.startswith("line 1, column 1: the shapes")
    metrics = label.fontMetrics()
    box = metrics.boundingRect(
        0, 0, label.contentsRect().width(), 10_000, int(QtCore.Qt.TextFlag.TextWordWrap), shown
    )
    assert box.height() <= MAX_ERROR_LINES * metrics.lineSpacing()
    assert window.editor.error_text() == "line 1, column 1: " + long  # the whole message
    assert "&lt;b&gt;end&lt;/b&gt;" in label.toolTip()  # on hover, as plain text
    # a short one is shown whole, with no tooltip
    window.editor.show_error("short", 1, 1)
    assert label.text() == "line 1, column 1: short"
    assert label.toolTip() == ""


def test_shorten_error_keeps_the_longest_start_that_fits_cut_at_a_word():
    from viewer.qt.program.editor import shorten_error

    text = "alpha beta gamma delta epsilon zeta eta theta"
    assert shorten_error(text, lambda t: True) == text
    for most in (12, 20, 30):
        shown = shorten_error(text, lambda t, most=most: len(t) <= most)
        assert len(shown) <= most and shown.endswith("\u2026")
        assert text.startswith(shown[:-1])
        assert text[len(shown) - 1] == " "  # cut at a word


def test_an_error_with_a_word_longer_than_the_editor_is_cut_and_the_window_keeps_its_size(
    qtbot, window
):
    """A 15 000-character function name does not wrap: shown whole, it made the window
    110 252 px wide."""
    window.resize(800, 560)
    window.show()
    qtbot.waitExposed(window)
    window.editor.set_text("y = " + "a" * 15_000 + "(x)")
    window.editor_binding.run()
    QtWidgets.QApplication.processEvents()
    label = window.editor.error_label
    assert label.text().endswith("\u2026") and len(label.text()) < 300
    assert "a" * 15_000 in window.editor.error_text()  # the whole message is kept
    assert len(label.toolTip()) < 2_200
    assert window.width() == 800
