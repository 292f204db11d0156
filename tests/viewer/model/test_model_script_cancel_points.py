"""A Cancel that lands in the run's own bookkeeping (a pass's log entry and its kept graph, the
swap to a new recording) waits for its end: the run is cancelled and its sample whole, the
last pass logged being the last graph kept. The Cancel is delivered here as the worker's
SIGTERM handler delivers it (viewer.model.scripts.worker), at the worst moment: right after
the pass was logged and the pass before it dropped, before its own graph was kept."""

from __future__ import annotations

import textwrap

import pytest

from viewer.model.scripts import pass_recording
from viewer.model.scripts.cancelling import Bookkeeping, ScriptCancelled
from viewer.model.scripts.run import ScriptRun

ENGINE = """
import numpy as np
from autodiff import Variable
x = Variable(np.array(2.0))
while True:
    x.cleargrad()
    y = x * x
    y.backward()
"""

TORCH = """
import torch
lin = torch.nn.Linear(4, 1)
x = torch.randn(8, 4)
while True:
    lin.zero_grad()
    lin(x).pow(2).mean().backward()
"""


def _cancelled_at_pass(tmp_path, monkeypatch, source: str, at: int) -> ScriptRun:
    path = tmp_path / "forever.py"
    path.write_text(textwrap.dedent(source))
    run = ScriptRun(path, capture=True)
    run.cancel_on_operation = False  # as in the worker: the signal handler stops the script
    run.max_passes = 20
    original = pass_recording.PassRecording.log_pass

    def log_pass(self, *args, **kwargs):
        dropped = original(self, *args, **kwargs)
        if self.reservoir.seen == at:  # the SIGTERM handler, right after the log entry
            run.cancel()
            if not run.bookkeeping.hold():
                raise ScriptCancelled("the script was cancelled")
        return dropped

    monkeypatch.setattr(pass_recording.PassRecording, "log_pass", log_pass)
    run.run()
    return run


@pytest.mark.parametrize("engine", ["autodiff", "torch"])
@pytest.mark.parametrize("at", [5, 15, 37])
def test_a_cancel_during_a_pass_end_keeps_the_last_pass_logged(tmp_path, monkeypatch, engine, at):
    if engine == "torch":
        pytest.importorskip("torch")
    run = _cancelled_at_pass(tmp_path, monkeypatch, TORCH if engine == "torch" else ENGINE, at)
    result = run.result
    assert result.cancelled and result.error == "cancelled", result.error
    assert len(result.passes) == at
    assert result.graphs[-1].number == at - 1  # the last pass logged, with its graph
    steps = [s for s in result.view(len(result.graphs) - 1).steps if s.phase == "backward"]
    assert steps
    assert run.bookkeeping.depth == 0 and not run.bookkeeping.pending


def test_a_cancel_held_by_a_section_is_raised_as_the_outermost_ends():
    book = Bookkeeping()
    assert not book.hold()  # outside any section: the deliverer raises it itself
    with pytest.raises(ScriptCancelled), book:
        with book:
            assert book.hold()
        # the inner end does not raise: the outer section is not over
        assert book.pending
    assert book.depth == 0 and not book.pending
    with pytest.raises(ValueError), book:  # an exception on its way is not replaced
        book.hold()
        raise ValueError("the section's own failure")
    assert not book.pending


def test_a_signal_landing_in_a_recorders_code_is_known_as_such():
    """The worker's SIGTERM handler sends a Cancel again when it landed in a recorder's code
    (or below it): known from the frames, the script's own code being anywhere else."""
    import os
    import sys

    import autodiff.trace
    from viewer.model.scripts.cancelling import in_recording

    def frame_in(filename: str, inner=None):
        space: dict = {"sys": sys, "inner": inner}
        code = "def here():\n    return inner() if inner else sys._getframe()\n"
        exec(compile(code, filename, "exec"), space)
        return space["here"]

    recorder = os.path.join(os.path.dirname(os.path.abspath(autodiff.trace.__file__)), "_x.py")
    script = os.path.join(os.path.dirname(recorder), "..", "..", "my_script.py")
    assert not in_recording(sys._getframe())
    assert not in_recording(frame_in(os.path.abspath(script))())
    assert in_recording(frame_in(recorder)())
    # the script's code called from a recorder's (a hook the program registered) is left
    # whole too: the Cancel comes once the recorder returned
    assert in_recording(frame_in(recorder, frame_in(os.path.abspath(script)))())
    dispatch = os.path.join("site-packages", "torch", "utils", "_python_dispatch.py")
    assert in_recording(frame_in(dispatch)())
