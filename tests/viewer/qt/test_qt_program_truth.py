"""One truth across the program's panels, and nothing replaced without asking: a value set in
the variables table is an edit of the editor's text (undoable there), opening a program over an
edited one asks, and a page of prose is refused before it touches the editor."""

import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.qt.main_window import DEFAULT_PROGRAM

PROSE = (
    "Once upon a time, a student wanted to see backpropagation happen step by step. "
    "She wrote her notes in a plain text file, one long paragraph after another, about "
    "gradients, chain rules and the order in which a graph is walked backwards.\n\n"
) * 13


def _x_on_screen(doc):
    """Leaf x's value as the graph on screen holds it (its node in the trace)."""
    node_id = int(doc.scene.node_ids[doc.scene.names.index("x")])
    return np.asarray(doc.trace.node(node_id)["value"].array)


def _type_in_editor(qtbot, window, text):
    """Type ``text`` where the caret is (a newline as the Return key)."""
    editor = window.editor.editor
    editor.setFocus()
    for i, line in enumerate(text.split("\n")):
        if i:
            qtbot.keyClick(editor, QtCore.Qt.Key.Key_Return)
        if line:
            qtbot.keyClicks(editor, line)


# ---------------------------------------------------------------------------- item 5
def test_a_table_edit_rewrites_the_assignment_and_one_ctrl_z_takes_it_back(qtbot, window):
    doc, editor = window.document, window.editor
    assert editor.text() == DEFAULT_PROGRAM and "x = 0.5\n" in DEFAULT_PROGRAM
    doc.playback.to_end()
    window.variables.set_value_text("x", "2")
    # the right side of x's assignment, and nothing else, changed; the comment line stays
    assert editor.text() == DEFAULT_PROGRAM.replace("x = 0.5\n", "x = 2\n")
    assert doc.source == editor.text() == doc.program.source  # the text is what ran
    assert float(doc.evaluation.values["x"]) == 2.0 and float(_x_on_screen(doc)) == 2.0
    assert float(doc.evaluation.output.data) == pytest.approx(np.exp(8.0))
    assert window.variables.value_text("x") == "2.0"
    assert doc.playback.at_end  # the same program with another value: the step stays
    assert not editor.edited  # what the editor shows is what ran
    editor.editor.setFocus()
    qtbot.keyClick(editor.editor, QtCore.Qt.Key.Key_Z, QtCore.Qt.KeyboardModifier.ControlModifier)
    assert editor.text() == DEFAULT_PROGRAM  # x = 0.5 again, in one Ctrl+Z
    assert doc.source == DEFAULT_PROGRAM


def test_an_array_value_is_written_as_typed_and_matches_the_graph(qtbot, window):
    assert window.editor_binding.run("x = [1, 2]  # two points\ny = sum(x * x)\n")
    window.variables.set_value_text("x", "[3, 4]")
    assert window.editor.text() == "x = [3, 4]  # two points\ny = sum(x * x)\n"
    np.testing.assert_array_equal(_x_on_screen(window.document), [3.0, 4.0])
    assert float(window.document.evaluation.output.data) == 25.0
    assert window.variables.value_text("x") == "[3.0, 4.0]"


def test_a_leaf_without_an_assignment_gets_one(qtbot, window):
    assert window.editor_binding.run("square(x)")
    assert window.variables.value_text("x") == "1.0"  # the default of a free name
    window.variables.set_value_text("x", "2")
    assert window.editor.text() == "x = 2\nsquare(x)"
    assert float(window.document.evaluation.output.data) == 4.0
    assert window.variables.leaf_names() == ["x"]


def test_a_rejected_value_leaves_the_editor_as_it_was(qtbot, window):
    assert window.editor_binding.run("W = randn(2, 3)\nx = randn(3)\ny = sum(matmul(W, x))")
    before = window.editor.text()
    window.variables.set_value_text("x", "[1, 2]")  # parses, but cannot multiply W
    assert window.editor.text() == before and window.document.source == before
    assert "[1, 2]" in window.variables.message_text()


def test_unrun_edits_in_the_editor_run_with_the_table_edit(qtbot, window):
    editor = window.editor
    cursor = editor.editor.textCursor()
    cursor.movePosition(QtGui.QTextCursor.MoveOperation.End)
    editor.editor.setTextCursor(cursor)
    _type_in_editor(qtbot, window, "z = y * 3\n")  # typed, not run
    assert editor.edited
    window.variables.set_value_text("x", "1")
    assert editor.text() == DEFAULT_PROGRAM.replace("x = 0.5", "x = 1") + "z = y * 3\n"
    assert window.document.program.output_name == "z"  # the graph is the editor's text
    assert not editor.edited


# ---------------------------------------------------------------------------- item 6
def _asked(window, answer):
    asked = []

    def confirm(name):
        asked.append(name)
        return answer

    window.editor_binding.confirm_replace = confirm
    return asked


def test_opening_a_file_over_an_edited_program_asks_and_cancel_keeps_it(qtbot, window, tmp_path):
    path = tmp_path / "other.expr"
    path.write_text("y = cos(x)\n")
    _type_in_editor(qtbot, window, "# mine\n")
    typed = window.editor.text()
    trace = window.document.trace
    asked = _asked(window, False)
    assert not window.open_path(path)
    assert asked == ["other.expr"]
    assert window.editor.text() == typed and window.document.trace is trace
    assert "was not opened" in window.statusBar().currentMessage()
    asked = _asked(window, True)
    assert window.open_path(path)
    assert asked == ["other.expr"]
    assert window.editor.text() == "y = cos(x)\n"
    assert window.document.trace.steps[0].op == "Cos"
    assert not window.editor.edited


def test_an_example_or_a_dropped_file_asks_too(qtbot, window, tmp_path):
    _type_in_editor(qtbot, window, "# mine\n")
    typed = window.editor.text()
    asked = _asked(window, False)
    assert not window.load_example("diamond")
    path = tmp_path / "dropped.expr"
    path.write_text("y = cos(x)\n")
    mime = QtCore.QMimeData()
    mime.setUrls([QtCore.QUrl.fromLocalFile(str(path))])
    drop = QtGui.QDropEvent(
        QtCore.QPointF(10, 10),
        QtCore.Qt.DropAction.CopyAction,
        mime,
        QtCore.Qt.MouseButton.LeftButton,
        QtCore.Qt.KeyboardModifier.NoModifier,
    )
    window.dropEvent(drop)
    assert asked == ["diamond.expr", "dropped.expr"]
    assert window.editor.text() == typed


def test_an_unedited_program_is_replaced_without_asking(qtbot, window, tmp_path):
    path = tmp_path / "other.expr"
    path.write_text("y = cos(x)\n")
    asked = _asked(window, False)
    assert window.open_path(path)
    assert window.load_example("diamond")
    window.variables.set_value_text(window.variables.leaf_names()[0], "3")  # a table edit
    assert window.open_path(path)  # ran, so not edited
    _type_in_editor(qtbot, window, "# typed")
    qtbot.keyClick(
        window.editor.editor, QtCore.Qt.Key.Key_Z, QtCore.Qt.KeyboardModifier.ControlModifier
    )
    assert window.editor.text() == "y = cos(x)\n"  # typed and undone: as it was opened
    assert window.open_path(path)
    assert asked == []


def test_the_question_is_a_dialog_whose_default_is_cancel(qtbot, window, tmp_path):
    path = tmp_path / "other.expr"
    path.write_text("y = cos(x)\n")
    _type_in_editor(qtbot, window, "# mine\n")
    seen = []

    def answer(button_text):
        box = QtWidgets.QApplication.activeModalWidget()
        assert isinstance(box, QtWidgets.QMessageBox)
        seen.append((box.text(), [b.text() for b in box.buttons()], box.defaultButton().text()))
        next(b for b in box.buttons() if b.text() == button_text).click()

    QtCore.QTimer.singleShot(0, lambda: answer("Cancel"))
    assert not window.open_path(path)
    QtCore.QTimer.singleShot(0, lambda: answer("Replace"))
    assert window.open_path(path)
    assert window.editor.text() == "y = cos(x)\n"
    text, buttons, default = seen[0]
    assert "other.expr" in text and sorted(buttons) == ["Cancel", "Replace"]
    assert default == "Cancel"


def test_a_page_of_prose_is_refused_and_nothing_changes(qtbot, window, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text(PROSE)
    assert 3000 <= notes.stat().st_size < 4000
    _type_in_editor(qtbot, window, "# mine\n")  # even edited: refused before any question
    typed = window.editor.text()
    trace, scene = window.document.trace, window.document.scene
    asked = _asked(window, True)
    assert not window.open_path(notes)
    assert asked == []
    box = window.findChild(QtWidgets.QMessageBox, "errorBox")
    assert box is not None and box.textFormat() == QtCore.Qt.TextFormat.PlainText
    message = box.text()
    assert message.startswith("not a program: line 1"), message
    assert "Once upon a time" in message and "notes.txt" in message
    assert message in window.statusBar().currentMessage()
    assert window.editor.text() == typed and window.document.source == typed
    assert window.document.trace is trace and window.document.scene is scene


def test_a_program_with_an_error_on_line_3_still_opens(qtbot, window, tmp_path):
    path = tmp_path / "broken.expr"
    text = "# almost right\nx = 0.5\ny = exp(x +\n"
    path.write_text(text)
    assert not window.open_path(path)  # it does not run...
    assert window.editor.text() == text  # ...but it is in the editor to be fixed
    assert window.editor.error_text().startswith("line 3")


def test_a_table_edit_while_the_editor_does_not_parse_is_refused_in_the_table(qtbot, window):
    editor = window.editor
    _type_in_editor(qtbot, window, "y = (")  # at the start: the text no longer parses
    typed = editor.text()
    trace = window.document.trace
    window.variables.set_value_text("x", "2")
    assert editor.text() == typed and window.document.trace is trace
    message = window.variables.message_text()
    assert "does not parse" in message and "x keeps 0.5" in message
    assert editor.error_text() == ""  # the table's error, not the editor's


def test_a_function_plot_computed_while_a_leaf_edit_runs_stays_out_of_its_graph(
    qtbot, window, monkeypatch
):
    """The function plot re-runs the program on the GUI thread while a slow program records
    on the worker (once made its graph 664 variables and its output x = 1's): the run's
    graph holds its own operations only."""
    import threading

    from viewer.model.expression.interpreter import Budget
    from viewer.model.expression.program import parse
    from viewer.model.panels.plots import function_plot

    window.runner.show_dialog = False
    slow = "W = ones(1000, 1000)\ny = sum(W * x)"
    assert window.editor_binding.run(slow)
    qtbot.waitUntil(lambda: window.runner.jobs.get("program") is None, timeout=60_000)
    before = window.document.trace
    # The leaf edit's run waits at its first operation, inside its recording, until the GUI
    # thread has computed a plot of the program.
    gui, inside, go_on = threading.get_ident(), threading.Event(), threading.Event()
    real = Budget.on_forward

    def on_forward(self, *args):
        if threading.get_ident() != gui and not inside.is_set():
            inside.set()
            go_on.wait(30)
        return real(self, *args)

    monkeypatch.setattr(Budget, "on_forward", on_forward)
    try:
        assert window.variables_binding.set_leaf_value("x", "3")
        assert inside.wait(30)  # the run records now
        plot = function_plot(parse(slow), {"x": np.array(1.0)}, "x", n_points=11)
        assert plot.f0 == 1_000_000.0
    finally:
        go_on.set()
    qtbot.waitUntil(lambda: window.document.trace is not before, timeout=60_000)
    assert float(window.document.evaluation.output.data) == 3_000_000.0
    trace = window.document.trace
    assert sorted(trace.node(f)["op"] for f in trace.functions) == ["Mul", "Sum"]


def test_text_typed_while_a_slow_leaf_edit_runs_keeps_and_gets_the_value(qtbot, window):
    window.runner.show_dialog = False
    slow = "W = ones(1000, 1000)\ny = sum(W * x)"
    assert window.editor_binding.run(slow)
    qtbot.waitUntil(lambda: window.runner.jobs.get("program") is None, timeout=60_000)
    before = window.document.trace
    assert window.variables_binding.set_leaf_value("x", "3")
    assert window.runner.jobs.get("program") is not None  # on the worker
    cursor = window.editor.editor.textCursor()
    cursor.movePosition(QtGui.QTextCursor.MoveOperation.End)
    window.editor.editor.setTextCursor(cursor)
    _type_in_editor(qtbot, window, "  # typed meanwhile")
    qtbot.waitUntil(lambda: window.document.trace is not before, timeout=60_000)
    assert float(window.document.evaluation.output.data) == 3_000_000.0
    expected = "W = ones(1000, 1000)\nx = 3\ny = sum(W * x)  # typed meanwhile"
    assert window.editor.text() == expected
    assert window.editor.edited  # the comment typed meanwhile has not run
