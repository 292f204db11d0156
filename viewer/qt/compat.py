"""Workarounds for bugs in the Qt bindings, each detected by behaviour, never by version alone.

PySide6 6.12.0 on CPython 3.11: ``SignalInstance.emit()`` returns ``True`` without taking a
reference to it, so every emit from Python drops one reference to ``True``. After a few
thousand emits (pyqtgraph emits on every repaint) the interpreter aborts with "bool_dealloc:
deallocating True or False". CPython 3.12+ makes the bools immortal and PySide6 6.11 is not
affected; pinning ``PySide6-Essentials != 6.12.0`` is the real fix. Until then, when the probe
below sees the leak, the bools get a reserve of references that no session can use up.
"""

from __future__ import annotations

import ctypes
import sys

from PySide6 import QtCore

__all__ = ["guard_signal_refcount", "signal_emit_leaks_bool"]

_RESERVE = 1 << 40
_applied = False


class _Probe(QtCore.QObject):
    fired = QtCore.Signal()


def signal_emit_leaks_bool(emits: int = 8) -> bool:
    """Whether emitting a Qt signal from Python drops references to True or False."""
    probe = _Probe()
    before = sys.getrefcount(True), sys.getrefcount(False)
    for _ in range(emits):
        probe.fired.emit()
    after = sys.getrefcount(True), sys.getrefcount(False)
    return after[0] < before[0] or after[1] < before[1]


def guard_signal_refcount() -> bool:
    """Apply the reserve once if the leak is present; returns whether it was applied."""
    global _applied
    if _applied or sys.implementation.name != "cpython" or not signal_emit_leaks_bool():
        return _applied
    for obj in (True, False):
        # ob_refcnt is the first field of every CPython object.
        refcount = ctypes.c_ssize_t.from_address(id(obj))
        refcount.value += _RESERVE
    _applied = True
    return True
