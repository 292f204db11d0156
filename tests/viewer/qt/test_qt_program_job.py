"""A typed program that may take a while runs off the GUI thread (issue 11): the window keeps
responding, Open and Run wait, Cancel stops it at its next operation and the previous graph
stays; a quick program still runs at once.

The program's worker waits for a gate the test opens (never for the clock): how long a program
takes on a busy machine decides nothing here. How soon Cancel ends a run is measured in
bench/cancel_latency.py."""

import threading

import pytest
from PySide6 import QtCore

from viewer.model.document import work
from viewer.qt.main_window import MainWindow

# five grad() calls: not quick, so it goes to the worker (its output g5 is 720 x = 1440)
NOT_QUICK = "x = 2.0\ny = x ** 6\n" + "\n".join(
    f"g{i} = grad({'y' if i == 1 else f'g{i - 1}'}, x)" for i in range(1, 6)
)


class Gate:
    """Holds the program's worker until :meth:`open`; ``started`` is set once the worker
    waits there (its ExpressionJob in ``job``)."""

    def __init__(self, monkeypatch) -> None:
        self.started = threading.Event()
        self._open = threading.Event()
        self.job = None
        run_program = work.run_program

        def held(expression_job, progress, should_cancel):
            self.job = expression_job
            self.started.set()
            assert self._open.wait(60), "the test never opened the gate"
            run_program(expression_job, progress, should_cancel)

        monkeypatch.setattr(work, "run_program", held)

    def open(self) -> None:
        self._open.set()


@pytest.fixture
def gate(monkeypatch):
    gate = Gate(monkeypatch)
    yield gate
    gate.open()  # a failed test must not leave its worker waiting


def _window(qtbot) -> MainWindow:
    window = MainWindow()
    qtbot.addWidget(window)
    window.runner.show_dialog = False
    return window


def test_a_quick_program_runs_at_once(qtbot):
    window = _window(qtbot)
    assert window.editor_binding.run("y = sin(x) * x")
    assert window.runner.jobs.get("program") is None
    assert window.document.trace.steps[0].op == "Sin"


def test_a_program_that_is_not_quick_runs_on_a_worker_and_shows_its_graph(qtbot, gate):
    window = _window(qtbot)
    before = window.document.trace
    assert window.editor_binding.run(NOT_QUICK)
    assert window.document.trace is before  # not yet: the worker runs it
    assert not window.actions["run"].isEnabled() and not window.actions["open"].isEnabled()
    assert gate.started.wait(30)
    # the event loop keeps running while the worker holds the program: a timer of the GUI
    # thread ticks five times, then opens the gate
    ticks = []

    def tick():
        ticks.append(window.document.trace is before)
        if len(ticks) == 5:
            gate.open()

    timer = QtCore.QTimer()
    timer.timeout.connect(tick)
    timer.start(10)
    qtbot.waitUntil(lambda: window.document.trace is not before, timeout=30_000)
    timer.stop()
    assert ticks[:5] == [True] * 5
    assert window.actions["run"].isEnabled()
    assert window.document.program.output_name == "g5"
    assert float(window.document.evaluation.output.data) == 1440.0


def test_cancel_stops_a_program_and_keeps_the_previous_graph(qtbot, gate):
    window = _window(qtbot)
    before = window.document.trace
    assert window.editor_binding.run(NOT_QUICK)
    assert gate.started.wait(30)  # the program is on the worker, before its first operation
    with qtbot.waitSignal(window.document.program_finished, timeout=30_000) as shown:
        window.document.cancel_expression()
        gate.open()
    assert shown.args == [False]  # the program's graph is not shown
    assert gate.job.cancelled and gate.job.evaluation is None
    assert "cancelled" in str(gate.job.error)
    assert window.runner.jobs.get("program") is None
    assert window.document.trace is before
    assert window.document.expression_job is None
    assert window.actions["run"].isEnabled()
    assert "Program cancelled" in window.statusBar().currentMessage()
    assert window.editor_binding.run("y = x * 2")  # and the next program runs
    assert window.document.trace.steps[0].op == "Mul"


def test_editing_a_leaf_of_a_slow_program_runs_on_the_worker(qtbot):
    window = _window(qtbot)
    assert window.editor_binding.run("W = ones(1000, 1000)\ny = sum(W * x)")
    qtbot.waitUntil(lambda: window.runner.jobs.get("program") is None, timeout=60_000)
    before = window.document.trace
    assert window.variables_binding.set_leaf_value("x", "3")
    assert window.document.trace is before and window.runner.jobs.get("program") is not None
    qtbot.waitUntil(lambda: window.document.trace is not before, timeout=60_000)
    assert float(window.document.evaluation.output.data) == 3_000_000.0
    assert window.actions["run"].isEnabled()
