"""The variables table: a rejected value goes back to the last accepted one, and the reason is
shown under the table (not only in a tooltip) until a value is accepted."""

import pytest
from PySide6 import QtCore, QtWidgets

from viewer.qt.program.variables import VariablesTable


def test_a_rejected_value_reverts_and_the_reason_is_shown_under_the_table(qtbot, window):
    doc = window.document
    table = window.variables
    assert table.value_text("x") == "0.5"
    assert table.message_text() == "" and table.message.isHidden()
    scene = doc.scene
    table.set_value_text("x", "abc")
    assert doc.scene is scene  # nothing re-ran
    assert table.value_text("x") == "0.5"  # the last accepted value, not "abc"
    message = table.message_text()
    assert "abc" in message and "must be a constant" in message and "x keeps 0.5" in message
    assert table.message.isVisible()
    # under the table, inside the Variables dock, not over the rows
    table_rect = table.table.geometry()
    assert table.message.geometry().top() >= table_rect.bottom()
    assert window.docks["variablesDock"].isAncestorOf(table.message)
    row = table._row("x")
    assert "abc" in table.table.item(row, 1).toolTip()
    # the next accepted value clears the message
    table.set_value_text("x", "0.25")
    assert float(doc.evaluation.values["x"]) == pytest.approx(0.25)
    assert table.value_text("x") == "0.25"
    assert table.message_text() == "" and table.message.isHidden()


def test_a_value_that_parses_but_fails_to_run_reverts_too(qtbot, window):
    assert window.editor_binding.run("W = randn(2, 3)\nx = randn(3)\ny = sum(matmul(W, x))")
    table = window.variables
    before = table.value_text("x")
    table.set_value_text("x", "[1, 2]")  # a (2,) vector cannot multiply a 2x3 matrix
    assert table.value_text("x") == before
    assert "[1, 2]" in table.message_text()


def test_the_table_reverts_on_its_own_and_edits_emit_the_typed_text(qtbot):
    table = VariablesTable()
    qtbot.addWidget(table)
    table.set_leaves([("a", "1.0", "scalar"), ("b", "[1, 2]", "2")])
    with qtbot.waitSignal(table.value_edited) as blocker:
        table.set_value_text("b", "[1, 2")
    assert blocker.args == ["b", "[1, 2"]
    assert table.value_text("b") == "[1, 2"  # typed, not judged yet
    table.mark_error("b", "line 1, column 1: '[' was never closed")
    assert table.value_text("b") == "[1, 2]" and table.value_text("a") == "1.0"
    assert "was never closed" in table.message_text()
    assert table.message.textFormat() == QtCore.Qt.TextFormat.PlainText
    flags = table.table.item(0, 0).flags()
    assert not flags & QtCore.Qt.ItemFlag.ItemIsEditable
    assert isinstance(table.table, QtWidgets.QTableWidget)
