"""The Script panel's graph list of a long run: labelled passes, a filter box, which passes it
shows."""

import textwrap

from PySide6 import QtWidgets

TRAIN = """
import numpy as np
from autodiff import Variable
w = Variable(np.array([1.0, 2.0]), name="w")
for epoch in range(120):
    w.cleargrad()
    loss = (w * w).sum()
    loss.name = "loss"
    loss.backward()
    w.data = w.data - 0.05 * w.grad.data
    if epoch == 90:
        w.data = np.array([np.nan, 1.0])
    if epoch == 91:
        w.data = np.array([1.0, 2.0])
"""


def test_the_filter_box_narrows_the_graph_list_and_keeps_the_selection(
    qtbot, window, wait_for_script, tmp_path
):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(TRAIN))
    window.document.script_max_passes = 20
    assert window.open_path(path, confirm_scripts=False)
    wait_for_script(window)
    doc, panel = window.document, window.script_panel
    result = doc.script_result
    box = panel.findChild(QtWidgets.QLineEdit, "graphFilter")
    count = panel.findChild(QtWidgets.QLabel, "graphCount")
    total = len(result.graphs)
    assert box is not None and box.isEnabled()
    assert 10 < total <= 20 + 1 + 100 and panel.graphs.count() == total
    assert count.text() == f"{total} of {total}"
    note = panel.findChild(QtWidgets.QLabel, "graphSampling")
    assert note.text().startswith(f"showing {total} of 120 passes: the first 10")
    assert not note.isHidden()
    last = panel.graphs.currentText()
    assert last.startswith("#120 · iter 119 · loss ") and doc.title.endswith(last)

    qtbot.keyClicks(box, "nan")
    assert panel.graphs.count() == 1 and count.text() == f"1 of {total}"
    assert "#92 · iter 91 · loss nan" in panel.graphs.itemText(0)
    assert panel.graphs.currentIndex() == -1  # the graph on screen is not listed...
    assert panel.graphs.placeholderText() == f"showing {last} (not in the filter)"  # ...named
    assert last in panel.graphs.toolTip()
    panel.graphs.activated.emit(0)  # the user picks the NaN pass
    assert doc.title.endswith(panel.graphs.itemText(0))
    assert result.graphs[panel.selected_graph()].number == 91
    assert panel.graphs.itemText(0) in panel.graphs.toolTip()  # the whole label, cut or not

    box.setText("ITER 9")  # substring, any case: iter 9, 90..99
    listed = [panel.graphs.itemText(k) for k in range(panel.graphs.count())]
    assert listed and all("iter 9" in t for t in listed)
    assert panel.graphs.currentText().startswith("#92 ")  # still selected
    box.setText("loss>1")
    shown = [result.graphs[panel.graphs.itemData(k)] for k in range(panel.graphs.count())]
    assert shown and all(g.loss > 1 for g in shown)
    box.clear()
    assert panel.graphs.count() == total and panel.graphs.currentText().startswith("#92 ")


def test_the_graph_list_opens_as_a_list_of_twenty_rows_as_wide_as_its_labels(
    qtbot, window, wait_for_script, tmp_path
):
    """QA: Fusion's popup filled the screen's height and hid its last row under a scroll
    arrow, and the closed box cut the labels."""
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(TRAIN))
    window.document.script_max_passes = 40
    assert window.open_path(path, confirm_scripts=False)
    wait_for_script(window)
    box = window.script_panel.graphs
    assert box.count() > 20 and box.maxVisibleItems() == 20
    hint = QtWidgets.QStyle.StyleHint.SH_ComboBox_Popup
    assert box.style().styleHint(hint, None, box) == 0  # a list, not a menu over the box
    view = box.view()
    longest = max(view.sizeHintForColumn(0), 1)
    assert view.minimumWidth() >= longest
