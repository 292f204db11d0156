"""Every panel shows the document on screen: the editor, the Script panel, the graph list and
the title follow a script, a trace, a cancel and a failure; a click brings the Inspector."""

import textwrap

from PySide6 import QtCore

from viewer.model.document.examples import find_example
from viewer.qt.panels.script import NO_SCRIPT
from viewer.qt.settings import AppSettings

EXPRESSION = "y = sin(x) * x\n"

GOOD = """\
import numpy as np
import autodiff.functions as F
from autodiff import Variable
print("hello from the script")
x = Variable(np.array(0.5), name="x")
y = F.exp(F.square(x))
y.name = "y"
y.backward()
"""

# builds and back-propagates one graph, says so in a file, then loops until cancelled
SLOW = """\
import pathlib
import numpy as np
import autodiff.functions as F
from autodiff import Variable
x = Variable(np.array(0.5), name="x")
loss = F.tanh(x) * x
loss.name = "loss"
loss.backward()
pathlib.Path("built").write_text("yes")
while True:
    z = x * x
"""

BROKEN = """\
import numpy as np
import autodiff.functions as F
from autodiff import Variable
x = Variable(np.array(0.5), name="x")
y = F.exp(x)
y.name = "y"
y.backward()
print(1 / 0)
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def _run(window, wait_for_script, path):
    assert window.open_path(path, confirm_scripts=False)
    wait_for_script(window)


def _trace_file(window, tmp_path):
    path = tmp_path / "saved.json"
    assert window.document.save_trace(path)
    return path


def _click_node(qtbot, window, index):
    view = window.graph_view
    xy = window.document.scene.geometry.positions[index]
    point = view.mapFromScene(view.view_box.mapViewToScene(QtCore.QPointF(*xy)))
    qtbot.mouseClick(view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=point)


def _in_front(dock):
    return dock.isVisible() and not dock.visibleRegion().isEmpty()


# ---------------------------------------------------------------------------- the editor
def test_a_script_is_shown_read_only_and_edit_brings_the_expression_back(
    qtbot, window, wait_for_script, tmp_path
):
    assert window.editor_binding.run(EXPRESSION)
    window.editor.set_text(EXPRESSION)
    script = _write(tmp_path, "good.py", GOOD)
    _run(window, wait_for_script, script)
    assert window.document.kind == "script"
    editor = window.editor
    assert editor.editor.isReadOnly()
    assert editor.text() == script.read_text()
    # Run reads Edit: it brings back the expression, editable, and runs it
    qtbot.mouseClick(editor.run_button, QtCore.Qt.MouseButton.LeftButton)
    assert not editor.editor.isReadOnly()
    assert editor.text() == EXPRESSION
    assert window.document.kind == "expression"
    assert window.document.trace.steps[0].op == "Sin"


def test_an_example_after_a_script_is_editable_with_its_text(
    qtbot, window, wait_for_script, tmp_path
):
    _run(window, wait_for_script, _write(tmp_path, "good.py", GOOD))
    assert window.editor.editor.isReadOnly()
    window.load_example("diamond")
    assert not window.editor.editor.isReadOnly()
    assert window.editor.text() == find_example("diamond").read()
    qtbot.keyClicks(window.editor.editor, "# typed")  # editable again
    assert window.editor.text().startswith("# typed# The diamond")


def test_a_trace_clears_the_editor_with_a_one_line_note(qtbot, window, tmp_path):
    assert window.editor_binding.run(EXPRESSION)
    window.editor.set_text(EXPRESSION)
    assert window.open_path(_trace_file(window, tmp_path))
    editor = window.editor
    assert window.document.kind == "trace"
    assert editor.editor.isReadOnly()
    lines = editor.text().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("#") and "saved.json" in lines[0]
    expr = tmp_path / "again.expr"
    expr.write_text("y = cos(x)\n")
    assert window.open_path(expr)
    assert not editor.editor.isReadOnly() and editor.text() == "y = cos(x)\n"


def test_the_saved_editor_text_is_never_a_script_or_the_note(
    qtbot, window, wait_for_script, tmp_path
):
    assert window.editor_binding.run(EXPRESSION)
    window.editor.set_text(EXPRESSION)
    trace = _trace_file(window, tmp_path)
    script = _write(tmp_path, "good.py", GOOD)
    _run(window, wait_for_script, script)
    assert window.editor.text() == script.read_text()
    window.save_settings()
    assert AppSettings().editor_text() == EXPRESSION
    assert window.open_path(trace)
    assert window.editor.editor.isReadOnly()
    window.close()  # saves the settings
    assert AppSettings().editor_text() == EXPRESSION


def test_run_while_a_script_is_shown_runs_the_expression_not_the_script(
    qtbot, window, wait_for_script, tmp_path
):
    assert window.editor_binding.run(EXPRESSION)
    window.editor.set_text(EXPRESSION)
    _run(window, wait_for_script, _write(tmp_path, "good.py", GOOD))
    window.actions["run"].trigger()  # Edit > Run, as its shortcut does
    assert window.document.kind == "expression"
    assert window.document.trace.steps[0].op == "Sin"
    assert AppSettings().editor_text() == EXPRESSION


# ---------------------------------------------------------------------------- the Script panel
def test_the_script_panel_is_emptied_for_an_expression_and_for_a_trace(
    qtbot, window, wait_for_script, tmp_path
):
    panel = window.script_panel
    trace = _trace_file(window, tmp_path)
    script = _write(tmp_path, "good.py", GOOD)
    _run(window, wait_for_script, script)
    assert "hello from the script" in panel.error_text()
    assert "good.py" in panel.status.text() and panel.graphs.count() == 1
    assert window.editor_binding.run(EXPRESSION)
    assert panel.error_text() == ""
    assert panel.status.text() == NO_SCRIPT and panel.graphs.count() == 0

    _run(window, wait_for_script, script)
    assert "hello from the script" in panel.error_text()
    assert window.open_path(trace)
    assert panel.error_text() == "" and panel.status.text() == NO_SCRIPT


def test_after_a_cancel_the_graph_title_and_list_are_the_cancelled_runs(
    qtbot, window, wait_for_script, tmp_path
):
    _run(window, wait_for_script, _write(tmp_path, "first.py", GOOD))
    assert window.document.title.startswith("first.py")
    slow = _write(tmp_path, "slow.py", SLOW)
    assert window.open_path(slow, confirm_scripts=False)
    qtbot.waitUntil((tmp_path / "built").exists, timeout=30_000)
    qtbot.mouseClick(window.script_panel.cancel_button, QtCore.Qt.MouseButton.LeftButton)
    wait_for_script(window, timeout=30_000)
    doc = window.document
    assert doc.script_result.cancelled
    assert doc.kind == "script" and doc.path == slow.resolve()
    assert doc.title.startswith("slow.py: ")
    assert "slow.py" in window.windowTitle() and "first.py" not in window.windowTitle()
    graphs = window.script_panel.graphs
    assert graphs.count() == len(doc.script_result.graphs) >= 1
    assert doc.title == f"slow.py: {graphs.currentText()}"
    assert "cancelled" in window.script_panel.status.text()
    assert window.editor.text() == slow.read_text()
    assert doc.playback.n_steps > 0


def test_a_failed_scripts_traceback_is_printed_once(qtbot, window, wait_for_script, tmp_path):
    _run(window, wait_for_script, _write(tmp_path, "broken.py", BROKEN))
    output = window.script_panel.error_text()
    assert output.count("Traceback (most recent call last)") == 1
    assert output.count("ZeroDivisionError: division by zero") == 1
    assert "broken.py failed" in window.script_panel.status.text()


def test_a_failed_scripts_graphs_can_be_opened(qtbot, window, wait_for_script, tmp_path):
    scene = window.document.scene
    _run(window, wait_for_script, _write(tmp_path, "broken.py", BROKEN))
    doc, panel = window.document, window.script_panel
    assert doc.scene is scene  # the previous graph stays
    assert panel.graphs.isEnabled() and panel.graphs.count() == 1
    panel.graphs.activated.emit(0)  # the user picks the graph built before the error
    assert doc.kind == "script" and doc.scene is not scene
    assert doc.title == "broken.py: " + doc.script_result.graphs[0].title
    assert doc.playback.n_steps == 2  # exp forward, exp backward


# ---------------------------------------------------------------------------- the Inspector
def test_clicking_a_node_raises_the_inspector_over_the_script_tab(
    qtbot, window, wait_for_script, tmp_path
):
    _run(window, wait_for_script, _write(tmp_path, "good.py", GOOD))
    inspector, script = window.docks["inspectorDock"], window.docks["scriptDock"]
    script.raise_()
    qtbot.waitUntil(lambda: _in_front(script))
    assert not _in_front(inspector)
    x = window.document.scene.names.index("x")
    _click_node(qtbot, window, x)
    assert window.document.selection == int(window.document.scene.node_ids[x])
    qtbot.waitUntil(lambda: _in_front(inspector))
    assert not _in_front(script)


def test_open_and_run_wait_while_a_script_runs(qtbot, tmp_path, wait_for_script):
    from viewer.qt.main_window import MainWindow

    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(0.8)\n")
    window = MainWindow()
    qtbot.addWidget(window)
    assert window.open_path(script, confirm_scripts=False)
    assert not window.actions["open"].isEnabled() and not window.actions["run"].isEnabled()
    assert not window.editor.run_button.isEnabled()
    wait_for_script(window)
    assert window.actions["open"].isEnabled() and window.actions["run"].isEnabled()
    assert window.editor.run_button.isEnabled()


def test_the_script_question_names_its_buttons_and_defaults_to_not_running(qtbot, tmp_path):
    from PySide6 import QtCore, QtWidgets

    from viewer.qt.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    path = tmp_path / "<b>odd</b>.py"
    box = window.script_confirmation(path)
    texts = sorted(b.text() for b in box.buttons())
    assert texts == ["Don't Run", "Run Script"]
    assert box.defaultButton().text() == "Don't Run"
    assert box.textFormat() == QtCore.Qt.TextFormat.PlainText and "<b>odd</b>.py" in box.text()
    assert isinstance(box.property("runButton"), QtWidgets.QPushButton)
    box.deleteLater()
