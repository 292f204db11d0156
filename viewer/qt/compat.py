"""Workarounds for bugs in the Qt bindings, each detected by behaviour, never by version alone.

PySide6 6.12.0 on CPython 3.11 returns ``None`` from every void method (``painter.setPen``,
``painter.save``, ...) and ``True`` from ``SignalInstance.emit`` without taking a reference to
it. Each call then drops one reference the interpreter owns, and after some thousands of calls
(a few seconds of painting) the process aborts with "none_dealloc: deallocating None" or
"bool_dealloc: deallocating True or False". CPython 3.12+ makes these singletons immortal and
PySide6 6.11 does not have the bug; pinning ``PySide6-Essentials != 6.12.0`` (or running on
Python >= 3.12) is the real fix. Until then, when the probe below sees the leak, None, True and
False get a reserve of 2**40 references, which no session can use up: the same thing CPython
3.12 does by making them immortal.
"""

from __future__ import annotations

import ctypes
import sys

from PySide6 import QtCore

__all__ = ["bindings_leak_singletons", "guard_signal_refcount"]

_RESERVE = 1 << 40
_applied = False


class _Probe(QtCore.QObject):
    fired = QtCore.Signal()


def bindings_leak_singletons(calls: int = 8) -> bool:
    """Whether calling the bindings from Python drops references to None, True or False."""
    probe = _Probe()
    singletons = (None, True, False)
    before = [sys.getrefcount(s) for s in singletons]
    for _ in range(calls):
        probe.fired.emit()
        probe.setObjectName("probe")
    after = [sys.getrefcount(s) for s in singletons]
    return any(a < b for a, b in zip(after, before, strict=True))


def guard_signal_refcount() -> bool:
    """Give None/True/False their reserve once if the leak is present; returns whether it is."""
    global _applied
    if _applied or sys.implementation.name != "cpython" or not bindings_leak_singletons():
        return _applied
    for singleton in (None, True, False):
        # ob_refcnt is the first field of every CPython object.
        refcount = ctypes.c_ssize_t.from_address(id(singleton))
        refcount.value += _RESERVE
    _applied = True
    return True
