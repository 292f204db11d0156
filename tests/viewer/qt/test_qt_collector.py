"""The app's cycle collector runs on the GUI thread: garbage made anywhere is freed there,
never on a worker thread that happens to allocate."""

from __future__ import annotations

import gc
import threading

from viewer.qt.collector import GuiThreadCollector


class _Cycle:
    """A reference cycle that records the thread it was freed on."""

    freed_on: list[int] = []  # noqa: RUF012

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        _Cycle.freed_on.append(threading.get_ident())


def _allocate_on_a_worker() -> None:
    """What a layout does: many container objects, enough to fill every generation."""

    def work() -> None:
        kept = []
        for i in range(200_000):
            kept.append([i])
            if len(kept) > 1000:
                kept.clear()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()


def test_garbage_is_freed_on_the_gui_thread_while_a_worker_allocates(qtbot):
    gc.collect()
    collector = GuiThreadCollector()
    collector.start()
    try:
        assert not gc.isenabled()
        _Cycle.freed_on.clear()
        for _ in range(50):
            _Cycle()
        _allocate_on_a_worker()
        assert _Cycle.freed_on == []  # the worker collected nothing
        gui = threading.get_ident()
        qtbot.waitUntil(lambda: len(_Cycle.freed_on) == 50, timeout=30_000)
        assert set(_Cycle.freed_on) == {gui}
        assert sum(collector.collections) >= 1
    finally:
        collector.stop()
    assert gc.isenabled()


def test_without_it_a_worker_can_be_the_one_to_collect():
    """The control: with automatic collection on, the same garbage is freed on the worker."""
    gc.collect()
    assert gc.isenabled()
    _Cycle.freed_on.clear()
    for _ in range(50):
        _Cycle()
    _allocate_on_a_worker()
    assert _Cycle.freed_on and threading.get_ident() not in _Cycle.freed_on
    gc.collect()


def test_the_app_starts_it(qtbot, monkeypatch):
    from viewer import app

    started = []
    monkeypatch.setattr(GuiThreadCollector, "start", lambda self: started.append(self))
    monkeypatch.setattr(app, "finish", lambda code: code)
    monkeypatch.setattr(app, "_no_display", lambda: False)
    from PySide6 import QtCore, QtWidgets

    QtCore.QTimer.singleShot(0, QtWidgets.QApplication.instance().closeAllWindows)
    QtCore.QTimer.singleShot(50, QtWidgets.QApplication.instance().quit)
    assert app.main([]) == 0
    assert len(started) == 1
