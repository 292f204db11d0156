"""viewer.qt: the PySide6 + pyqtgraph views. Importing it applies :mod:`viewer.qt.compat`."""

from viewer.qt.compat import guard_signal_refcount

guard_signal_refcount()
