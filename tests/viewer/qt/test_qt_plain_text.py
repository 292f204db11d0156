"""Strings from files and users are shown as plain text (issue 11): a node named with HTML,
in a saved trace, reads as typed in the tooltip, the labels and the error box."""

import json

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

import autodiff.functions as F
from autodiff import Variable, trace
from viewer.qt.drawing.plain_text import tooltip
from viewer.qt.main_window import MainWindow

HOSTILE = '<h1 style="font-size:90px">BIG</h1><img src="x.png">'


def test_tooltip_text_reads_as_typed():
    doc = QtGui.QTextDocument()
    doc.setHtml(tooltip(HOSTILE + "\nsecond line"))
    assert doc.toPlainText() == HOSTILE + "\nsecond line"
    assert tooltip("") == ""


def test_a_hostile_name_from_a_file(qtbot, tmp_path):
    x = Variable(np.array(0.5), name=HOSTILE)
    with trace.record() as t:
        y = F.sin(x)
        y.backward()
    path = tmp_path / "hostile.json"
    t.to_json(path)
    window = MainWindow()
    qtbot.addWidget(window)
    assert window.open_path(path)
    scene = window.document.scene
    i = scene.names.index(HOSTILE)
    text = scene.node_tooltip(i, 0)
    shown = QtGui.QTextDocument()
    shown.setHtml(tooltip(text))
    assert HOSTILE in shown.toPlainText()
    for label in (window.status_label, window.playback_bar.position_label):
        assert label.textFormat() == QtCore.Qt.TextFormat.PlainText
    window.document.select(int(scene.node_ids[i]))
    inspector = window.findChild(QtWidgets.QWidget, "inspector")
    assert inspector.title.text().startswith(HOSTILE)
    assert inspector.title.textFormat() == QtCore.Qt.TextFormat.PlainText
    # a broken file whose message quotes the hostile text
    bad = tmp_path / "bad.json"
    data = json.loads(path.read_text())
    data["graph"]["nodes"][0]["kind"] = HOSTILE
    bad.write_text(json.dumps(data))
    assert window.open_path(bad) is False
    box = window.findChild(QtWidgets.QMessageBox, "errorBox")
    assert box is not None and box.textFormat() == QtCore.Qt.TextFormat.PlainText


def test_a_status_message_longer_than_the_bar_is_whole_on_hover_as_typed(qtbot, tmp_path):
    # at 800 px "…built 2 graphs: showing the last; choose another in the Script panel" was
    # cut at "in th…" with no way to read the rest; a file's name may look like HTML
    window = MainWindow()
    qtbot.addWidget(window)
    bar = window.statusBar()
    message = f"Exported the graph to {tmp_path / (HOSTILE + '.png')} " + "and more " * 40
    bar.showMessage(message)
    shown = QtGui.QTextDocument()
    shown.setHtml(bar.toolTip())
    assert shown.toPlainText() == message
    bar.showMessage("x" * 20_000)  # a hostile length: the tooltip holds 2 000 characters
    shown.setHtml(bar.toolTip())
    assert len(shown.toPlainText()) == 2_000 and shown.toPlainText().endswith("\u2026")
    bar.clearMessage()
    assert bar.toolTip() == ""
