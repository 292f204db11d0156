"""``viewer.show(*variables)``: open the viewer on graphs built in your own code.

>>> import numpy as np, viewer
>>> from autodiff import Variable
>>> import autodiff.functions as F
>>> x = Variable(np.array(0.5), name="x")
>>> y = F.tanh(x) * x ** 2
>>> y.backward()
>>> viewer.show(y)            # doctest: +SKIP

Each argument is a Variable (the graph behind it is walked with
:func:`autodiff.trace.from_output`; gradients it holds show at the end) or a recorded
:class:`autodiff.trace.Trace` (``with trace.record() as t: ...``; forward and backward can then
be stepped through). One window opens per argument.

Like ``plt.show()``, it blocks in a plain script until the windows are closed, and returns at
once where a Qt event loop already runs (IPython after ``%gui qt``, or inside a Qt app): the
windows then live on and are returned. ``block`` forces either behaviour.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

from PySide6 import QtCore

__all__ = ["AUTOCLOSE_ENV", "show"]

# Milliseconds after which the windows close themselves (tests, demos). Each closing window
# prints one line with its graph's size first.
AUTOCLOSE_ENV = "VIEWER_SHOW_AUTOCLOSE_MS"

_open_windows: list[Any] = []  # non-blocking windows, kept alive until closed


def _traces(items: tuple[Any, ...]) -> list[tuple[Any, str]]:
    """(trace, title) for each argument; TypeError for anything else."""
    from autodiff import trace as trace_module
    from autodiff.core import Variable

    if not items:
        raise TypeError("show() needs at least one Variable (or a recorded Trace): viewer.show(y)")
    found = []
    for k, item in enumerate(items):
        if isinstance(item, Variable):
            title = item.name or (f"output {k + 1}" if len(items) > 1 else "output")
            found.append((trace_module.from_output(item), f"show: {title}"))
        elif hasattr(item, "steps") and hasattr(item, "graph"):
            found.append((item, "show: recorded trace"))
        else:
            raise TypeError(
                f"show() argument {k + 1} is a {type(item).__name__}; pass autodiff Variables "
                "(the output of your computation) or a Trace from autodiff.trace.record()"
            )
    return found


def _event_loop_running() -> bool:
    """True where a Qt event loop already serves the GUI: a running loop, or IPython with its
    Qt input hook (``%gui qt``), which runs the loop between the user's commands."""
    if QtCore.QCoreApplication.instance() is None:
        return False
    if QtCore.QThread.currentThread().loopLevel() > 0:
        return True
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None) if ipython is not None else None
    shell = get() if get is not None else None
    loop = getattr(shell, "active_eventloop", None) if shell is not None else None
    return isinstance(loop, str) and loop.startswith("qt")


def _summary(window: Any) -> str:
    doc = window.document
    scene = doc.scene
    if scene is None:
        return f"viewer.show: {doc.title}: no graph"
    return (
        f"viewer.show: {doc.title}: {scene.n_nodes} nodes, {scene.n_edges} edges, "
        f"{scene.n_steps} steps"
    )


def show(*variables: Any, block: bool | None = None, _autoclose_ms: int | None = None) -> list[Any]:
    """Open the viewer on the graph behind each of ``variables`` (see the module's doc).

    ``block``: None decides like ``plt.show()`` (block unless a Qt event loop already runs);
    True waits until every window is closed; False returns at once (the caller's event loop
    must run for the windows to respond). Returns the main windows.
    """
    items = _traces(variables)
    from viewer.app import build_window

    windows = []
    for trace, title in items:
        window = build_window([])
        window.document.load_trace(trace, title)
        window.show()
        windows.append(window)

    if _autoclose_ms is None and os.environ.get(AUTOCLOSE_ENV):
        _autoclose_ms = int(os.environ[AUTOCLOSE_ENV])
    if _autoclose_ms is not None:

        def close_all() -> None:
            for window in windows:
                print(_summary(window), flush=True)
                window.close()

        QtCore.QTimer.singleShot(int(_autoclose_ms), close_all)

    if block is None:
        block = not _event_loop_running()
    if not block:
        _keep_until_closed(windows)
        return windows
    _wait_until_closed(windows)
    return windows


class _CloseWatcher(QtCore.QObject):
    """Calls ``on_all_closed`` once every window was closed (hidden, not minimised)."""

    def __init__(self, windows: list[Any], on_all_closed: Any) -> None:
        super().__init__()
        self._open = {id(w) for w in windows}
        self._on_all_closed = on_all_closed
        for window in windows:
            window.installEventFilter(self)

    def eventFilter(self, obj: Any, event: QtCore.QEvent) -> bool:
        # A spontaneous hide is the window manager minimising the window: still open.
        if event.type() == QtCore.QEvent.Type.Hide and not event.spontaneous():
            self._open.discard(id(obj))
            if not self._open:
                self._on_all_closed()
        return False


def _wait_until_closed(windows: list[Any]) -> None:
    # A local event loop, not app.exec(): it also works when called from inside a running
    # loop (a nested exec() would return at once) and leaves the application alive.
    loop = QtCore.QEventLoop()
    watcher = _CloseWatcher(windows, loop.quit)
    if any(w.isVisible() for w in windows):
        loop.exec()
    for window in windows:
        window.removeEventFilter(watcher)


def _keep_until_closed(windows: list[Any]) -> None:
    _open_windows.extend(windows)

    def forget() -> None:
        for window in windows:
            if window in _open_windows:
                _open_windows.remove(window)

    watcher = _CloseWatcher(windows, forget)
    watcher.setParent(windows[0])  # lives as long as the first window


class _CallableModule(types.ModuleType):
    """``import viewer.show`` makes ``viewer.show`` this module (Python sets a submodule as an
    attribute of its package); calling it still opens the viewer."""

    def __call__(self, *variables: Any, **options: Any) -> list[Any]:
        return show(*variables, **options)


sys.modules[__name__].__class__ = _CallableModule
