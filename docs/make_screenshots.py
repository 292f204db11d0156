"""Make the pictures of README.md and docs/*.md again, the same way each time.

    QT_QPA_PLATFORM=offscreen python docs/make_screenshots.py [NAME ...]

NAME is one of screenshot, leak, window, modules, training, explain (default: all). It lives beside the
pictures it writes, is not part of the installed package, and needs no display: the two graph
pictures are the headless export (``--export``, the commands the docs quote), the window
pictures are the window at a fixed size in the light theme, drawn with ``QWidget.grab()``
(on a real X display the same code gives the same picture; a screenshot of the screen would
add whatever else is on it). Settings live in a temporary folder: the user's are never read
or written, and the first-run tour stays away.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "resources" / "examples"
WINDOW_SIZE = (1280, 800)  # the window's own default size
MAX_BYTES = 250_000


def _export(out: Path, *args: str) -> None:
    """The headless export, as a user runs it (a process of its own: it makes its own
    QApplication)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    command = [sys.executable, "-m", "viewer", "--export", str(out), *args]
    subprocess.run(command, check=True, cwd=ROOT, env=env)


def screenshot() -> Path:
    out = DOCS / "screenshot.png"
    _export(out, "--phase", "backward", "resources/examples/tanh_x2.expr")
    return out


def leak() -> Path:
    out = DOCS / "leak_screenshot.png"
    _export(out, "--yes", "resources/examples/leaks/global_list.py")
    return out


# ---------------------------------------------------------------- window pictures
def _isolate_settings(folder: str) -> None:
    from PySide6 import QtCore

    for scope in (QtCore.QSettings.Scope.UserScope, QtCore.QSettings.Scope.SystemScope):
        for fmt in (QtCore.QSettings.Format.IniFormat, QtCore.QSettings.Format.NativeFormat):
            QtCore.QSettings.setPath(fmt, scope, folder)
    from viewer.qt.settings import AppSettings

    seen = AppSettings()
    seen.set_tour_seen(True)  # the pictures show the window, not the tour
    seen.sync()


def _pump(seconds: float) -> None:
    from PySide6 import QtWidgets

    app = QtWidgets.QApplication.instance()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.01)


def _wait(done: Callable[[], bool], what: str, timeout: float = 300.0) -> None:
    from PySide6 import QtWidgets

    app = QtWidgets.QApplication.instance()
    end = time.monotonic() + timeout
    while not done():
        if time.monotonic() > end:
            raise TimeoutError(f"waiting for {what}")
        app.processEvents()
        time.sleep(0.02)
    _pump(0.5)  # the frame, the fitted view and the panels follow the last signal


def _window(size: tuple[int, int] = WINDOW_SIZE):
    from viewer.app import build_window

    window = build_window(["--theme", "light"])
    window.resize(*size)
    window.show()
    _pump(1.0)  # the docks' default sizes are set once shown
    return window


def _settled(window) -> bool:
    doc = window.document
    return (
        doc.script_run is None
        and not doc.layout_pending
        and not window.script_panel.cancel_button.isEnabled()
    )


def _open(window, path: Path) -> None:
    assert window.open_path(path, confirm_scripts=False), path
    _pump(0.3)
    _wait(lambda: _settled(window), f"{path.name} to open")


def _save(window, widget, name: str) -> Path:
    _pump(0.8)
    out = DOCS / name
    if not widget.grab().save(str(out)):
        raise OSError(f"cannot write {out}")
    return out


def _node(window, name: str) -> int:
    return list(window.document.scene.names).index(name)


def window_picture() -> Path:
    """The window at the first backward step of y = tanh(x) * x**2, the Legend dock raised,
    the inspector on x."""
    window = _window()
    _open(window, EXAMPLES / "tanh_x2.expr")
    window.document.playback.to_start()
    window.playback_bar.jump_next_phase()
    window.document.select_index(_node(window, "x"))
    window.raise_dock("legendDock")
    return _save(window, window, "window.png")


def modules() -> Path:
    """residual_mlp.py in its last backward pass: the six Blocks unfolded, b3 expanded, the
    step shown one of b2's Functions running backward, the inspector on b2's box."""
    window = _window()
    doc = window.document
    _open(window, EXAMPLES / "residual_mlp.py")
    doc.expand("ResidualMLP/b3")  # unfolds the run of six Blocks around it
    _pump(0.5)
    inside_b2 = [
        i
        for i, step in enumerate(doc.playback.steps)
        if step.phase == "backward"
        and doc.scope_path_of(step.function).startswith("ResidualMLP/b2/")
    ]
    doc.playback.seek(inside_b2[len(inside_b2) // 2])
    _pump(0.5)
    # b2's lit box and the open b3 below it, at a zoom where the labels read
    scene, view = doc.scene, window.graph_view
    b2 = _node(window, "b2")
    in_b3 = [
        i
        for i in range(len(scene.names))
        if doc.scope_path_of(scene.node_id(i)).startswith("ResidualMLP/b3/")
    ]
    view.center_on(b2)  # readable full labels: closer than the picture needs
    view.zoom_by(0.4)
    positions = view.geometry_data.positions
    top = positions[b2][1]
    bottom = max(positions[i][1] for i in in_b3)
    left = min(positions[i][0] for i in in_b3)
    right = max(positions[i][0] for i in in_b3)
    view.center_at(float(left + right) / 2, float(top + bottom) / 2)
    doc.select_index(b2)  # the inspector on the lit box (the Script tab would add a timing)
    window.raise_dock("inspectorDock")
    window.raise_dock("plotPanel")
    window.plot_panel.set_current_tab("training")
    return _save(window, window, "modules.png")


def training() -> Path:
    """The Training plot of linear_regression.py: every pass's loss and gradient norms, the
    pass shown marked."""
    window = _window()
    _open(window, EXAMPLES / "linear_regression.py")
    window.raise_dock("plotPanel")
    window.plot_panel.set_current_tab("training")
    dock = window.docks["plotPanel"]
    window.removeDockWidget(dock)  # on its own, at a size where its ticks read well
    dock.setFloating(True)
    dock.show()
    dock.resize(560, 420)
    _pump(0.5)
    return _save(window, dock, "training.png")


def explain() -> Path:
    """The seed example at 1024 x 700 at the backward step of Exp, x selected: the Explain
    section's formula, numbers and chain rule, the step's edges labelled with gradients."""
    window = _window((1024, 700))
    doc = window.document
    _open(window, EXAMPLES / "square_exp_square.expr")
    step = next(
        i for i, s in enumerate(doc.playback.steps) if s.phase == "backward" and s.op == "Exp"
    )
    window.explain_binding.set_edge_labels(True)
    doc.playback.seek(step)
    doc.select_index(_node(window, "x"))
    window.raise_dock("inspectorDock")
    return _save(window, window, "explain.png")


PICTURES: dict[str, Callable[[], Path]] = {
    "screenshot": screenshot,
    "leak": leak,
    "window": window_picture,
    "modules": modules,
    "training": training,
    "explain": explain,
}


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in PICTURES]
    if unknown:
        print(f"unknown picture(s): {', '.join(unknown)}; known: {', '.join(PICTURES)}")
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)  # the window's titles name the examples by their relative paths
    with tempfile.TemporaryDirectory(prefix="docs-screenshots-") as folder:
        os.environ["XDG_CONFIG_HOME"] = folder
        _isolate_settings(folder)
        too_big = []
        for name in names or PICTURES:
            out = PICTURES[name]()
            size = out.stat().st_size
            print(f"{out.relative_to(ROOT)}: {size // 1000} KB")
            if size > MAX_BYTES:
                too_big.append(out.name)
    if too_big:
        print(f"over {MAX_BYTES // 1000} KB: {', '.join(too_big)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
