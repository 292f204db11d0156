"""A typed program that may take a while runs off the GUI thread (issue 11): the window keeps
responding, Open and Run wait, Cancel stops it at its next operation and the previous graph
stays; a quick program still runs at once."""

import time

from PySide6 import QtCore

from viewer.qt.main_window import MainWindow

# nested grad(): the graph doubles with each level (about 2 s here at 9 levels)
SLOW = "y = tanh(x)\n" + "\n".join(
    f"g{i} = grad({'y' if i == 1 else f'g{i - 1}'}, x)" for i in range(1, 10)
)


def _window(qtbot) -> MainWindow:
    window = MainWindow()
    qtbot.addWidget(window)
    window.program_runner.show_dialog = False
    return window


def test_a_quick_program_runs_at_once(qtbot):
    window = _window(qtbot)
    assert window.run_program("y = sin(x) * x")
    assert window.program_runner.job is None
    assert window.document.trace.steps[0].op == "Sin"


def test_a_slow_program_runs_on_a_worker_and_shows_its_graph(qtbot):
    window = _window(qtbot)
    before = window.document.trace
    assert window.run_program(SLOW)
    assert window.document.trace is before  # not yet: the worker runs it
    assert not window.actions["run"].isEnabled() and not window.actions["open"].isEnabled()
    ticks = []
    timer = QtCore.QTimer()
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start(10)
    qtbot.waitUntil(lambda: window.document.trace is not before, timeout=60_000)
    timer.stop()
    assert len(ticks) > 5  # the event loop kept running meanwhile
    assert window.actions["run"].isEnabled()
    assert window.document.program.output_name == "g9"


def test_cancel_stops_a_slow_program_and_keeps_the_previous_graph(qtbot):
    window = _window(qtbot)
    before = window.document.trace
    assert window.run_program(SLOW)
    qtbot.wait(100)
    began = time.perf_counter()
    window.program_runner.cancel()
    qtbot.waitUntil(lambda: window.program_runner.job is None, timeout=10_000)
    assert time.perf_counter() - began < 1.0
    assert window.document.trace is before
    assert window.document.expression_job is None
    assert window.actions["run"].isEnabled()
    assert window.run_program("y = x * 2")  # and the next program runs


def test_editing_a_leaf_of_a_slow_program_runs_on_the_worker(qtbot):
    window = _window(qtbot)
    assert window.run_program("W = ones(1000, 1000)\ny = sum(W * x)")
    qtbot.waitUntil(lambda: window.program_runner.job is None, timeout=60_000)
    before = window.document.trace
    assert window.set_leaf_value("x", "3")
    assert window.document.trace is before and window.program_runner.job is not None
    qtbot.waitUntil(lambda: window.document.trace is not before, timeout=60_000)
    assert float(window.document.evaluation.output.data) == 3_000_000.0
    assert window.actions["run"].isEnabled()
