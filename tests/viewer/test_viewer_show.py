"""viewer.show() from a user's script, run as a subprocess on the offscreen platform: it blocks
like plt.show() until its windows close (they close themselves here), and returns at once
inside a running Qt event loop."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from autodiff import Variable

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = textwrap.dedent(
    """
    import sys
    import numpy as np
    import viewer
    assert "PySide6" not in sys.modules, "import viewer must not import Qt"
    import autodiff.functions as F
    from autodiff import Variable, trace

    x = Variable(np.array(0.5), name="x")
    y = F.tanh(x) * x ** 2
    y.name = "y"
    y.backward()
    """
)


def _run(tmp_path: Path, body: str, autoclose_ms: int | None = 200) -> subprocess.CompletedProcess:
    script = tmp_path / "user_script.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    env = dict(os.environ)
    env.update(
        QT_QPA_PLATFORM="offscreen",
        XDG_CONFIG_HOME=str(tmp_path / "config"),  # the user's settings stay untouched
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
    )
    env.pop("VIEWER_SHOW_AUTOCLOSE_MS", None)
    if autoclose_ms is not None:
        env["VIEWER_SHOW_AUTOCLOSE_MS"] = str(autoclose_ms)
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def test_show_blocks_until_the_window_closes(tmp_path):
    done = _run(
        tmp_path,
        """
        windows = viewer.show(y)
        print("after show", len(windows), windows[0].isVisible())
        """,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # y = tanh(x) * x**2: x, Tanh, t, Pow, p, Mul, y and one edge per argument slot
    assert lines == ["viewer.show: show: y: 7 nodes, 7 edges, 6 steps", "after show 1 False"]


def test_show_a_recorded_trace_and_several_graphs(tmp_path):
    done = _run(
        tmp_path,
        """
        with trace.record() as t:
            z = F.square(F.exp(F.square(x)))
            z.backward()
        windows = viewer.show(t, y)
        print("windows", len(windows))
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        # the recording has the backward steps too
        "viewer.show: show: recorded trace: 7 nodes, 6 edges, 6 steps",
        "viewer.show: show: y: 7 nodes, 7 edges, 6 steps",
        "windows 2",
    ]


def test_show_returns_at_once_inside_a_running_event_loop(tmp_path):
    done = _run(
        tmp_path,
        """
        from PySide6 import QtCore, QtWidgets

        app = QtWidgets.QApplication([])
        def inside_the_loop():
            windows = viewer.show(y, _autoclose_ms=100)
            print("returned while open", windows[0].isVisible(), flush=True)
            QtCore.QTimer.singleShot(400, app.quit)
        QtCore.QTimer.singleShot(0, inside_the_loop)
        app.exec()
        # calling the module works too (``import viewer.show`` makes it the package attribute)
        import viewer.show
        viewer.show(y, block=True, _autoclose_ms=50)
        """,
        autoclose_ms=None,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "returned while open True",
        "viewer.show: show: y: 7 nodes, 7 edges, 6 steps",
        "viewer.show: show: y: 7 nodes, 7 edges, 6 steps",
    ]


def test_show_without_a_variable_says_what_to_pass():
    from viewer.show import show

    with pytest.raises(TypeError, match=r"needs at least one Variable .*viewer.show\(y\)"):
        show()
    with pytest.raises(TypeError, match="argument 2 is a float; pass autodiff Variables"):
        show(Variable(np.ones(2)), 3.0)
