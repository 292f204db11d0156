"""The inspector panel shows the model's NodeDisplay: a carried-over gradient says so, a
previous one the program empties says that, a constant's passing gradient is marked as not
stored, and names from files are plain text."""

import numpy as np
from PySide6 import QtCore

import autodiff.functions as F
from autodiff import Variable, trace
from viewer.model.panels.inspector import inspect
from viewer.qt.panels.inspector import InspectorPanel


def _text(panel: InspectorPanel) -> str:
    rows = [
        f"{panel.fields.item(r, 0).text()}: {panel.fields.item(r, 1).text()}"
        for r in range(panel.fields.rowCount())
    ]
    notes = [panel.notes.text()] if panel.notes.isVisibleTo(panel) else []
    return "\n".join([panel.title.text(), panel.subtitle.text(), *rows, *notes])


def test_carried_gradient_and_rich_text_name(qtbot):
    x = Variable(np.array(2.0), name="<h1>BIG</h1>")
    with trace.record() as t:
        for _ in range(2):  # cleargrad forgotten
            y = F.square(x) * 3.0
            y.backward()
    panel = InspectorPanel()
    qtbot.addWidget(panel)
    first_forward_of_second = len(t.steps) // 2
    panel.show_node(inspect(t, 0, first_forward_of_second))
    text = _text(panel)
    assert "grad carried" in text and "carried over from backward #1" in text
    # the note is prose: word-wrapped in full below the table, never elided in a cell
    assert "note: carried over from backward #1" in panel.notes.text()
    assert panel.notes.wordWrap()
    assert panel.notes.textFormat() == QtCore.Qt.TextFormat.PlainText
    assert panel.title.textFormat() == QtCore.Qt.TextFormat.PlainText
    assert panel.title.text().startswith("<h1>BIG</h1>")
    constant = next(n for n in t.variables if t.node(n)["constant"])
    last = len(t.steps) - 1
    shown = [inspect(t, constant, step) for step in range(len(t.steps))]
    assert all(info.grad is None for info in shown)
    step = next(i for i, info in enumerate(shown) if info.passing)
    panel.show_node(inspect(t, constant, step))
    assert "(not stored)" in _text(panel)
    assert step <= last


def test_a_previous_gradient_the_program_empties_says_so(qtbot):
    x = Variable(np.array(2.0), name="x")
    with trace.record() as t:
        for _ in range(2):
            y = F.square(x) * 3.0
            x.cleargrad()  # the book's place: after the forward, before backward
            y.backward()
    panel = InspectorPanel()
    qtbot.addWidget(panel)
    panel.show_node(inspect(t, 0, len(t.steps) // 2))  # the second forward
    text = _text(panel)
    assert "grad previous" in text and "carried" not in text
    assert "note: previous gradient, from backward #1; the program empties it" in text
