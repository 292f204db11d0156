"""The panels on their own: editor, playback bar, inspector, layout worker, compat guard."""

import sys
import threading

from PySide6 import QtCore, QtWidgets

from viewer.model.document.document import Document
from viewer.model.document.playback import PlaybackState
from viewer.model.document.work import JobCancelled
from viewer.qt.compat import bindings_leak_singletons
from viewer.qt.panels.inspector import InspectorPanel
from viewer.qt.panels.playback import PlaybackBar
from viewer.qt.panels.playback_binding import PlaybackBinding
from viewer.qt.program.editor import EditorPanel
from viewer.qt.runners.jobs import Job


def test_editor_marks_the_error_and_keeps_the_text(qtbot):
    panel = EditorPanel()
    qtbot.addWidget(panel)
    panel.set_text("x = 1\ny = exp(x) +\n")
    panel.show_error("syntax error: invalid syntax", 2, 12)
    assert panel.text() == "x = 1\ny = exp(x) +\n"
    assert panel.error_text().startswith("line 2, column 12")
    cursor = panel.editor.textCursor()
    assert cursor.blockNumber() == 1
    assert len(panel.editor.extraSelections()) == 1
    panel.clear_error()
    assert panel.error_text() == "" and not panel.editor.extraSelections()
    # set_text is one undoable edit: Ctrl+Z brings the old text back
    panel.set_text("y = sin(x)")
    panel.editor.undo()
    assert panel.text() == "x = 1\ny = exp(x) +\n"


def test_editor_run_button_and_ctrl_enter_emit_the_text(qtbot):
    panel = EditorPanel()
    qtbot.addWidget(panel)
    panel.set_text("y = x")
    with qtbot.waitSignal(panel.run_requested) as blocker:
        qtbot.mouseClick(panel.run_button, QtCore.Qt.MouseButton.LeftButton)
    assert blocker.args == ["y = x"]
    with qtbot.waitSignal(panel.run_requested):
        qtbot.keyClick(
            panel.editor, QtCore.Qt.Key.Key_Return, QtCore.Qt.KeyboardModifier.ControlModifier
        )
    assert panel.text() == "y = x"  # Ctrl+Enter runs, it does not insert a line


class _Step:
    def __init__(self, index, phase):
        self.index, self.phase, self.op = index, phase, "Op"
        self.backward_pass = -1 if phase == "forward" else 0
        self.nonfinite = index == 4


def test_playback_bar_mirrors_and_drives_the_state(qtbot):
    state = PlaybackState()
    bar = PlaybackBar()
    PlaybackBinding(state, bar)
    qtbot.addWidget(bar)
    state.set_steps([_Step(i, "forward" if i < 3 else "backward") for i in range(6)])
    assert bar.slider.minimum() == -1 and bar.slider.maximum() == 5
    qtbot.mouseClick(bar.forward_button, QtCore.Qt.MouseButton.LeftButton)
    assert state.index == 0 and bar.slider.value() == 0
    assert "step 1 / 6" in bar.position_label.text()
    qtbot.mouseClick(bar.end_button, QtCore.Qt.MouseButton.LeftButton)
    assert state.at_end
    qtbot.mouseClick(bar.start_button, QtCore.Qt.MouseButton.LeftButton)
    assert state.at_start
    assert bar.phase_button.text() == "→ backward"
    bar.jump_next_phase()
    assert state.index == 3  # the first backward step is shown
    assert "step 4 / 6 · backward" in bar.position_label.text()
    assert bar.phase_button.text() == "Phases"
    bar.jump_next_phase()
    assert state.index == 3  # no later phase: B stays put
    state.seek(1)
    bar.jump_next_phase()
    assert state.index == 3  # from inside the forward phase too
    bar.phase_menu.actions()[0].trigger()
    assert state.index == 0  # a phase from the menu: its first step
    bar.speed_box.setCurrentIndex(bar.speed_box.findData(16.0))
    assert state.speed == 16.0 and bar.timer.interval() == state.interval_ms
    qtbot.mouseClick(bar.play_button, QtCore.Qt.MouseButton.LeftButton)
    assert state.playing and bar.timer.isActive()
    qtbot.waitUntil(lambda: not state.playing, timeout=30_000)
    assert state.at_end and not bar.timer.isActive()
    assert len(bar.phase_menu.actions()) == 2
    bar.strip.repaint()


def test_inspector_shows_values_links_and_a_histogram_for_big_arrays(qtbot):
    doc = Document()
    assert doc.run_expression("W = randn(20, 30)\ny = sum(tanh(W))")
    panel = InspectorPanel()
    qtbot.addWidget(panel)
    doc.playback.to_end()
    w_id = next(n for n in doc.trace.variables if doc.trace.node(n)["name"] == "W")
    panel.show_node(doc.inspect(w_id), ["a note"])
    text = panel.text()
    assert "W (variable" in text and "a note" in text
    assert not panel.plot.isHidden()  # 600 elements: summary + histogram
    assert "consumers" in panel.links.text()
    with qtbot.waitSignal(panel.node_requested) as blocker:
        panel.links.linkActivated.emit(f"node:{w_id}")
    assert blocker.args == [w_id]
    panel.show_node(None)
    assert "Click a node" in panel.text()


def test_job_reports_result_failure_and_cancellation_on_the_gui_thread(qtbot):
    gui = threading.get_ident()
    seen = []

    def ok(progress, cancelled):
        progress(1, 2, "half")
        return threading.get_ident()

    job = Job(ok)
    job.succeeded.connect(lambda r: seen.append(threading.get_ident()))
    with qtbot.waitSignal(job.finished, timeout=30_000):
        job.start()
    assert job.outcome == "succeeded" and job.result != gui and seen == [gui]

    def boom(progress, cancelled):
        raise ValueError("bad layout")

    job = Job(boom)
    with qtbot.waitSignal(job.finished, timeout=30_000):
        job.start()
    assert job.outcome == "failed" and "bad layout" in job.traceback

    started = threading.Event()

    def slow(progress, cancelled):
        started.set()
        while not cancelled():
            pass
        raise JobCancelled()

    job = Job(slow)
    job.start()
    assert started.wait(30)
    with qtbot.waitSignal(job.finished, timeout=30_000):
        job.cancel()
    assert job.outcome == "cancelled"


def test_big_graph_layout_runs_in_the_worker_and_can_be_cancelled(qtbot, window):
    doc = window.document
    runner = window.runner
    runner.show_dialog = False
    doc.sync_layout_limit = 0  # every graph goes to the worker
    old_scene = doc.scene
    with qtbot.waitSignal(doc.layout_finished, timeout=30_000) as blocker:
        assert window.editor_binding.run("y = sum(tanh(randn(4, 4) * x))")
    assert blocker.args == ["succeeded"]
    assert doc.scene is not old_scene and window.scene_binding.shown_scene is doc.scene
    # a cancelled layout keeps the graph on screen
    scene = doc.scene
    window.editor_binding.run("y = exp(x) * x")
    doc.cancel_layout()
    qtbot.waitUntil(lambda: not runner.running, timeout=30_000)
    assert doc.scene in (scene,) or doc.scene.trace.steps[0].op == "Exp"
    assert window.scene_binding.shown_scene is doc.scene


def test_calls_into_the_bindings_cannot_drain_none_true_or_false():
    # viewer.qt.compat gives the singletons a reserve when the bindings leak them
    leaking = bindings_leak_singletons()
    for _ in range(20_000):
        bindings_leak_singletons(1)
    for singleton in (None, True, False):
        count = sys.getrefcount(singleton)
        assert count > 1_000 and (not leaking or count > 2**39)


def test_the_editor_highlights_every_name_the_language_knows(qtbot):
    from viewer.model.expression.rules import KNOWN_CALLABLES
    from viewer.qt.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    assert window.editor.highlighter._functions == set(KNOWN_CALLABLES)
    assert {"linspace", "arange", "grad", "sum"} <= window.editor.highlighter._functions


def test_placeholders_are_readable_in_both_themes_enabled_or_not():
    from PySide6 import QtGui

    from viewer.qt.drawing.themes import THEMES, qpalette

    role, group = QtGui.QPalette.ColorRole, QtGui.QPalette.ColorGroup
    for theme in THEMES.values():
        pal = qpalette(theme)
        window = pal.color(group.Active, role.Window)
        for g in (group.Active, group.Disabled):
            hint = pal.color(g, role.PlaceholderText)
            gap = abs(hint.lightnessF() - window.lightnessF())
            assert gap > 0.25, (theme.name, g, hint.name(), window.name())


def test_a_panels_message_stays_at_its_top(qtbot):
    """QA: with no rows, the Gradients and Leaks panels' message floated mid-panel."""
    from viewer.qt.checks.gradcheck import GradCheckPanel
    from viewer.qt.panels.leaks import LeakPanel

    for cls in (GradCheckPanel, LeakPanel):
        panel = cls()
        qtbot.addWidget(panel)
        panel.resize(320, 500)
        panel.show()
        qtbot.waitExposed(panel)
        panel.show_message("The graph changed since the last check: press Check gradients.")
        qtbot.wait(10)
        assert panel.summary.geometry().top() < 20, cls.__name__
        assert panel.summary.geometry().height() < 120, cls.__name__


def test_the_playback_bar_keeps_its_minimum_width_from_phase_to_phase(qtbot):
    """The phase button's text goes from "→ backward" to "→ backward 2" to "Phases" as the
    cursor passes each phase: its width (555 to 584 px for the bar's minimum) followed it,
    and the step label and speed box after it moved with every phase."""
    state = PlaybackState()
    bar = PlaybackBar()
    PlaybackBinding(state, bar)
    qtbot.addWidget(bar)
    bar.resize(900, bar.sizeHint().height())
    bar.show()
    qtbot.waitExposed(bar)
    steps = [_Step(i, "forward" if i < 3 else "backward") for i in range(9)]
    for step in steps[6:]:
        step.backward_pass = 1  # a second backward pass
    state.set_steps(steps)
    minimums, buttons, texts = set(), set(), set()
    for index in range(-1, len(steps)):
        state.seek(index)
        QtWidgets.QApplication.processEvents()
        minimums.add(bar.minimumSizeHint().width())
        buttons.add(bar.phase_button.width())
        texts.add(bar.phase_button.text())
    assert texts == {"→ backward", "→ backward 2", "Phases"}
    assert len(minimums) == 1, minimums
    assert len(buttons) == 1, buttons
    # every text shows whole
    metrics = bar.phase_button.fontMetrics()
    assert bar.phase_button.width() > metrics.horizontalAdvance("→ backward 2")
