"""The cycle collector runs on the GUI thread only.

Python's collector runs on whichever thread happens to allocate when a generation fills up: a
layout or a typed program on a worker thread could be the one to free a Qt object caught in a
reference cycle (a closed window's menus, a pyqtgraph item, a QTimer of a finished test), and
a Qt object released off its own thread can abort the process. The workers are given no Qt
object (:mod:`viewer.qt.runners.jobs`), but the garbage of the rest of the app is anyone's to
collect. So the app turns automatic collection off and a timer on the GUI thread collects
instead: the youngest generation at each tick where anything was allocated (a tick samples the
count, so it would miss the peaks Python collects at), an older one when its count passes
Python's threshold, as the interpreter escalates.
"""

from __future__ import annotations

import gc

from PySide6 import QtCore

__all__ = ["GuiThreadCollector"]

INTERVAL_MS = 500


class GuiThreadCollector(QtCore.QObject):
    """While started, automatic collection is off and the GUI thread collects every
    :data:`INTERVAL_MS`."""

    def __init__(self, parent: QtCore.QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(INTERVAL_MS)
        self._timer.timeout.connect(self.check)
        self._was_enabled = False
        self.collections = [0, 0, 0]  # per generation, since start()

    def start(self) -> None:
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        if self._was_enabled:
            gc.enable()

    def check(self) -> None:
        """Collect the oldest generation whose count passed its threshold (a younger one's
        collection is part of an older one's), else the youngest if anything was allocated."""
        thresholds = gc.get_threshold()
        counts = gc.get_count()
        generation = next((g for g in (2, 1) if counts[g] > thresholds[g]), 0)
        if generation == 0 and counts[0] <= 0:
            return
        gc.collect(generation)
        self.collections[generation] += 1
