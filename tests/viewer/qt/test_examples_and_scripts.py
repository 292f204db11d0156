"""Every bundled example loads and plays to the end; a failing script leaves the app usable."""

import os

import pytest
from PySide6 import QtCore

from viewer.model.document.examples import list_examples

EXAMPLES = list_examples()
# Scripts run the user's code with recording on; the training ones take a while.
# A torch example is skipped where torch is not installed (opening one then says what to install).
PARAMS = [
    pytest.param(
        e,
        id=e.stem,
        marks=[pytest.mark.slow] * (e.kind == "script")
        + [pytest.mark.skipif(bool(e.missing), reason=f"needs {', '.join(e.missing)}")],
    )
    for e in EXAMPLES
]


@pytest.mark.parametrize("example", PARAMS)
def test_every_bundled_example_loads_and_plays_to_the_end(qtbot, window, wait_for_script, example):
    doc = window.document
    window.load_example(example.stem)
    if example.kind == "script":
        wait_for_script(window)
        result = doc.script_result
        assert result is not None and result.ok, result.error if result else "no result"
    assert doc.scene is not None, f"{example.stem}: {doc.last_error}"
    assert window.scene_binding.shown_scene is doc.scene
    playback = doc.playback
    playback.to_start()
    steps = playback.n_steps
    assert steps > 0
    moved = 0
    while playback.step_forward():
        moved += 1
    assert playback.at_end and moved == steps
    frame = window.graph_view.frame
    assert frame is not None and frame.step == steps - 1
    if example.kind == "expression":
        assert window.editor.text() == example.read()


def test_a_script_with_an_exception_leaves_the_app_usable(qtbot, window, wait_for_script, tmp_path):
    script = tmp_path / "broken.py"
    script.write_text(
        "import numpy as np\n"
        "from autodiff import Variable\n"
        "x = Variable(np.array(2.0))\n"
        "y = x * x\n"
        "print('about to fail')\n"
        "raise RuntimeError('this script is broken on purpose')\n"
    )
    scene = window.document.scene
    assert window.open_path(script, confirm_scripts=False)
    wait_for_script(window)
    output = window.script_panel.error_text()
    assert "about to fail" in output
    assert "RuntimeError: this script is broken on purpose" in output
    assert "Traceback" in output
    assert window.document.scene is scene  # the previous graph stays
    assert window.editor_binding.run("y = exp(x)")
    assert window.document.trace.steps[0].op == "Exp"


# a script that runs until it is cancelled
_FOREVER = (
    "import numpy as np\n"
    "from autodiff import Variable\n"
    "x = Variable(np.array(0.1))\n"
    "while True:\n"
    "    y = x * x\n"
)


def test_a_script_runs_in_the_background_and_can_be_cancelled(
    qtbot, window, wait_for_script, tmp_path
):
    script = tmp_path / "slow.py"
    script.write_text(_FOREVER)
    finished = []
    window.document.script_finished.connect(finished.append)
    assert window.open_path(script, confirm_scripts=False)
    run = window.document.script_run
    assert run is not None
    qtbot.waitUntil(lambda: run.running, timeout=10_000)
    assert window.script_panel.cancel_button.isEnabled()
    # the window still answers while the script runs
    window.document.playback.to_end()
    qtbot.wait(100)
    qtbot.mouseClick(window.script_panel.cancel_button, QtCore.Qt.MouseButton.LeftButton)
    wait_for_script(window, timeout=30_000)
    (result,) = finished
    assert result.path == script.resolve()
    assert result.cancelled, (result.summary, result.error)
    # the document takes the run only with a graph of it on screen
    doc = window.document
    assert (doc.script_result is result) == (doc.kind == "script")


def test_esc_cancels_a_running_script_and_otherwise_leaves_the_key_alone(
    qtbot, window, wait_for_script, tmp_path
):
    cancel = window.actions["cancel_run"]
    assert not cancel.isEnabled()  # nothing runs: Esc is the focused widget's
    assert "Esc" in cancel.toolTip()
    script = tmp_path / "slow.py"
    script.write_text(_FOREVER)
    finished = []
    window.document.script_finished.connect(finished.append)
    assert window.open_path(script, confirm_scripts=False)
    run = window.document.script_run
    qtbot.waitUntil(lambda: run.running, timeout=10_000)
    assert cancel.isEnabled()
    window.graph_view.setFocus()
    qtbot.keyClick(window.graph_view, QtCore.Qt.Key.Key_Escape)
    wait_for_script(window, timeout=30_000)
    (result,) = finished
    assert result.cancelled, (result.summary, result.error)
    assert not cancel.isEnabled()
    assert window.document.cancel_run() is False  # nothing left to stop


def test_declining_the_confirmation_does_not_run_the_script(qtbot, window, tmp_path):
    script = tmp_path / "never.py"
    marker = tmp_path / "ran"
    script.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    asked = []

    def decline(path):
        # the worker started while the question is open: it has not run the script
        run = window.document.script_run
        asked.append((run.pid, run._folder))
        assert run.pid is not None and not marker.exists()
        return False

    window.confirm_script = decline
    assert not window.open_path(script)
    qtbot.wait(100)
    assert not marker.exists()
    assert window.document.script_run is None
    # the warm worker ended with the answer, its folder gone
    ((pid, folder),) = asked
    qtbot.waitUntil(lambda: not _alive(pid), timeout=10_000)
    assert not os.path.exists(folder)


def _alive(pid):
    """Whether process ``pid`` runs (a zombie, ended but not reaped yet, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_panel_says_what_the_run_does_after_the_script_and_that_it_ran_apart(
    qtbot, window, wait_for_script, tmp_path
):
    stages = []
    script = tmp_path / "staged.py"
    script.write_text(
        "import numpy as np\nfrom autodiff import Variable\nimport autodiff.functions as F\n"
        "y = F.sum(Variable(np.ones(3)) * 2.0)\ny.backward()\n"
    )
    window.script_binding.stage.connect(stages.append)
    panel = window.script_panel
    window.open_path(script, confirm_scripts=False)
    assert "in a process of its own" in panel.status.text()
    panel.show_stage("sending the recording")
    assert panel.status.text() == "staged.py: sending the recording…"
    wait_for_script(window)
    assert "sending the recording" in stages and "reading the result" in stages
    panel.show_stage("late")  # after the run: the summary stays
    assert panel.status.text().startswith("staged.py ran in")
