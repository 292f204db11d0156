"""Work off the GUI thread reaches nothing of Qt (issue 21): a layout's, a program's and a
script's thread hold and hand back plain data only, so nothing of Qt can be released there; and
layouts and programs run back to back while the cycle collector runs on their worker threads,
also while the job of a runner deleted mid-layout is garbage (a Job once held a running
QThread, and collecting it aborted the process)."""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
import types

import numpy as np
from PySide6 import QtCore
from shiboken6 import Shiboken

from viewer.model.document.document import Document
from viewer.qt.main_window import MainWindow
from viewer.qt.runners import jobs as workers
from viewer.qt.runners.jobs import Job
from viewer.qt.runners.runner import ThreadRunner


def _grads(x: float, levels: int = 5) -> str:
    """A program that is not quick (five grad() calls), so it runs on the worker; its output
    g5 is 720 x."""
    lines = [f"x = {x}", "y = x ** 6"]
    lines += [f"g{i} = grad({'y' if i == 1 else f'g{i - 1}'}, x)" for i in range(1, levels + 1)]
    return "\n".join(lines)


def qt_objects_reachable(*roots: object, limit: int = 2_000_000) -> list[str]:
    """The type names of the Qt objects (PySide wrappers, bound signals) that ``roots`` reach
    through their references; modules' globals and classes are not followed (a function
    reaches its closure and defaults, not its module)."""
    module_dicts = {id(vars(m)) for m in list(sys.modules.values()) if hasattr(m, "__dict__")}
    qt_types = (Shiboken.Object, QtCore.SignalInstance, QtCore.Signal)
    seen: set[int] = set()
    stack = list(roots)
    found = []
    while stack:
        o = stack.pop()
        if id(o) in seen or id(o) in module_dicts:
            continue
        if isinstance(o, (type, types.ModuleType, types.CodeType)):
            continue
        seen.add(id(o))
        assert len(seen) < limit, "the walk found more objects than any job holds"
        if isinstance(o, qt_types):
            found.append(type(o).__qualname__)
        elif isinstance(o, types.FunctionType):
            for cell in o.__closure__ or ():
                with contextlib.suppress(ValueError):  # an empty cell has no contents
                    stack.append(cell.cell_contents)
            stack.extend(o.__defaults__ or ())
            stack.extend((o.__kwdefaults__ or {}).values())
        else:
            stack.extend(gc.get_referents(o))
    return found


class _Workers:
    """Wraps :func:`viewer.qt.runners.jobs._run`: keeps what each worker thread was given and what
    its work returned, and runs the cycle collector on the worker (at its start and at each
    progress report) when ``collect`` is set."""

    def __init__(self, monkeypatch, collect: bool) -> None:
        self.given: list[tuple] = []
        self.returned: list[object] = []
        self.threads: list[str] = []
        self.collect = collect
        run = workers._run

        def wrapped(work, cancel, outbox):
            self.given.append((work, cancel, outbox))
            self.threads.append(threading.current_thread().name)
            if self.collect:
                gc.collect()

            def work_here(progress, should_cancel):
                def report(done, total, text=""):
                    if self.collect:
                        gc.collect(0)
                    progress(done, total, text)

                result = work(report, should_cancel)
                self.returned.append(result)
                return result

            run(work_here, cancel, outbox)

        monkeypatch.setattr(workers, "_run", wrapped)


def _window(qtbot) -> MainWindow:
    window = MainWindow(restore=False)
    qtbot.addWidget(window)
    window.runner.show_dialog = False
    return window


def _idle(window: MainWindow) -> bool:
    return not window.runner.running


def test_what_a_layout_and_a_program_worker_hold_and_return_reaches_no_qt_object(
    qtbot, monkeypatch
):
    seen = _Workers(monkeypatch, collect=False)
    window = _window(qtbot)
    window.document.sync_layout_limit = 0  # the program's graph is laid out on a worker too
    assert window.editor_binding.run(_grads(2.0))
    qtbot.waitUntil(lambda: window.document.scene is not None and _idle(window), timeout=30_000)
    qtbot.waitUntil(lambda: window.document.program.output_name == "g5", timeout=30_000)
    assert float(window.document.evaluation.output.data) == 1440.0
    assert sorted(seen.threads) == ["layout", "problems", "program"]  # detectors: big graph
    for given in seen.given:
        assert qt_objects_reachable(*given) == []
    for returned in seen.returned:
        assert qt_objects_reachable(returned) == []


def test_the_walk_finds_a_qt_object_behind_a_closure_a_bound_signal_and_a_partial():
    import functools

    job = Job(lambda progress, cancel: None)
    holder = types.SimpleNamespace(emit=job.finished.emit)
    assert qt_objects_reachable(lambda: job) == ["Job"]
    assert qt_objects_reachable(holder)  # the bound signal's emit
    assert qt_objects_reachable(functools.partial(print, [{"x": (job,)}])) == ["Job"]
    assert qt_objects_reachable(np.ones(3), {"a": (1, "b")}) == []


def test_what_a_scripts_thread_holds_reaches_no_qt_object(qtbot, window, tmp_path):
    script = tmp_path / "quiet.py"
    script.write_text("print('hello')\n")
    run = window.document.load_path(script)
    assert window.start_script(run, confirm=False)
    # the script's supervising thread holds the run: its signals' slots and all
    assert qt_objects_reachable(run) == []
    with qtbot.waitSignal(window.script_binding.finished, timeout=60_000) as finished:
        pass
    assert finished.args[0].ok
    assert "hello" in window.script_panel.error_text()


def test_a_job_reports_on_the_gui_thread_from_a_plain_thread(qtbot):
    gui = threading.get_ident()
    seen = []
    job = Job(lambda progress, cancel: (progress(1, 2, "half"), threading.get_ident())[1])
    job.progressed.connect(lambda *args: seen.append(("progressed", threading.get_ident())))
    job.succeeded.connect(lambda r: seen.append(("succeeded", threading.get_ident())))
    with qtbot.waitSignal(job.finished, timeout=30_000):
        job.start()
    assert job.outcome == "succeeded" and job.result != gui
    assert seen == [("progressed", gui), ("succeeded", gui)]
    assert not isinstance(job._thread, QtCore.QThread) and job.wait(30_000)


def _big_trace():
    import autodiff.functions as F
    from autodiff import Variable, trace

    with trace.record() as t:
        x = Variable(np.linspace(-1.0, 1.0, 4), name="x")
        y = x
        for _ in range(400):
            y = F.tanh(y) * 1.01
        F.sum(y).backward()
    return t


def test_layouts_and_programs_back_to_back_survive_the_collector_on_their_workers(
    qtbot, monkeypatch
):
    seen = _Workers(monkeypatch, collect=True)
    thresholds = gc.get_threshold()
    gc.set_threshold(50, 5, 5)  # automatic collections often, on whichever thread allocates
    try:
        window = _window(qtbot)
        doc = window.document
        doc.sync_layout_limit = 0  # every graph is laid out on a worker
        big = _big_trace()
        for i in range(30):
            if i % 3 == 0:
                # a runner deleted while its layout runs: its job is garbage, collected on
                # the next worker thread while this job's thread may still run
                orphan = ThreadRunner()
                orphan_doc = Document()
                orphan_doc.runner = orphan
                orphan_doc.sync_layout_limit = 0
                orphan_doc.load_trace(big)
                orphan.cancel("layout")
                orphan.deleteLater()
                QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
                del orphan, orphan_doc
            x = float(i + 1)
            assert window.editor_binding.run(_grads(x) if i % 2 else f"x = {x}\ny = x * x")
            qtbot.waitUntil(lambda: _idle(window) and not doc.layout_pending, timeout=30_000)
            expected = 720.0 * x if i % 2 else x * x
            assert float(doc.evaluation.output.data) == expected, i
            assert doc.scene is not None and doc.scene.trace is doc.trace, i
            assert window.scene_binding.shown_scene is doc.scene, i
    finally:
        gc.set_threshold(*thresholds)
    assert seen.threads.count("program") == 15 and seen.threads.count("layout") >= 30
    # finished jobs are deleted, by the GUI thread's event loop
    runners = (window.runner,)
    qtbot.waitUntil(lambda: not any(r.findChildren(Job) for r in runners), timeout=30_000)
    alive = [t for t in threading.enumerate() if t.name in ("layout", "program")]
    for thread in alive:
        thread.join(30)
        assert not thread.is_alive()


def test_closing_the_window_stops_every_kind_of_its_background_work(window, monkeypatch):
    """A closed window's program, layout and detectors must not go on computing in its
    process (each on a thread of its own)."""
    window.runner.show_dialog = False
    assert window.editor_binding.run("W = ones(1000, 1000)\ny = sum(W * x)")
    job = window.document.expression_job  # on the worker (not quick)
    assert job is not None and not job.done
    cancelled = []
    monkeypatch.setattr(window.runner, "cancel", cancelled.append)
    window.close()
    assert {"layout", "problems"} <= set(cancelled)
    assert job.cancelled  # the program stops at its next operation
