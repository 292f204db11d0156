"""One truth across the program's panels: a value set in the variables table is an edit of the
editor's text (undoable there), and that text is what ran."""

import numpy as np
import pytest
from PySide6 import QtCore, QtGui

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
    window.variables.set_value_text("x", "1")
    assert editor.text() == DEFAULT_PROGRAM.replace("x = 0.5", "x = 1") + "z = y * 3\n"
    assert window.document.program.output_name == "z"  # the graph is the editor's text
