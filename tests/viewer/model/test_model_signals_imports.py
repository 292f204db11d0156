"""The Signal helper, and viewer.model's promise: no Qt anywhere below it."""

import gc
import subprocess
import sys

from viewer.model.signals import Signal


def test_connect_emit_disconnect():
    signal = Signal("step_changed")
    seen = []
    signal.connect(seen.append)
    signal.connect(seen.append)  # no duplicate
    signal.emit(3)
    signal.disconnect(seen.append)
    signal.emit(4)
    signal.disconnect(seen.append)  # unknown: ignored
    assert seen == [3]


def test_bound_methods_are_held_weakly():
    class View:
        def __init__(self):
            self.seen = []

        def on_step(self, index):
            self.seen.append(index)

    signal = Signal()
    view = View()
    signal.connect(view.on_step)
    signal.emit(1)
    assert view.seen == [1] and signal.receivers() == 1
    del view
    gc.collect()
    signal.emit(2)  # the dead slot is skipped and dropped
    assert signal.receivers() == 0


def test_blocked_and_decorator():
    signal = Signal()
    seen = []

    @signal.connect
    def slot(value):
        seen.append(value)

    with signal.blocked():
        signal.emit(1)
    signal.emit(2)
    assert seen == [2]
    signal.disconnect()
    signal.emit(3)
    assert seen == [2]


def test_a_slot_may_disconnect_itself_while_emitting():
    signal = Signal()
    seen = []

    def once(value):
        seen.append(value)
        signal.disconnect(once)

    signal.connect(once)
    signal.connect(lambda v: seen.append(-v))
    signal.emit(1)
    signal.emit(2)
    assert seen == [1, -1, -2]


def test_viewer_model_imports_no_qt():
    code = (
        "import sys, viewer.model, viewer.model.document.document, viewer.model.scene.scene, "
        "viewer.model.scripts.run, viewer.model.document.examples, viewer.model.panels.inspector\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'PyQt5',"
        " 'PyQt6', 'shiboken6')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
