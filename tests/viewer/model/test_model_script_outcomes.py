"""What a cancelled or failed script leaves: its graphs up to then, where it failed, one run
at a time."""

import textwrap
import time

import pytest

from viewer.model.document.document import Document
from viewer.model.scripts.process import ScriptProcess
from viewer.model.scripts.run import run_script

# one graph with its backward pass, a marker file, then a loop until cancelled
SLOW = """
import pathlib
import numpy as np
import autodiff.functions as F
from autodiff import Variable
x = Variable(np.array(0.5), name="x")
loss = F.tanh(x) * x
loss.name = "loss"
loss.backward()
pathlib.Path("built").write_text("yes")
while True:
    z = F.sin(x)
"""

FAILS = """
import numpy as np
import autodiff.functions as F
from autodiff import Variable

def step(v):
    return 1 / v

x = Variable(np.array(0.5), name="x")
y = F.exp(x)
y.backward()
ratio = step(0)
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def started(tmp_path, run):
    run.start()
    deadline = time.monotonic() + 30
    while not (tmp_path / "built").exists():
        assert time.monotonic() < deadline, "the script never built its graph"
        time.sleep(0.01)


@pytest.fixture
def slow_run(tmp_path):
    doc = Document()
    run = doc.load_path(write(tmp_path, "slow.py", SLOW))
    assert isinstance(run, ScriptProcess)
    stages = []
    run.stage_changed.connect(stages.append)
    started(tmp_path, run)
    yield doc, run, stages
    run.cancel()
    assert run.wait(30)


def test_a_cancelled_run_prepares_and_shows_what_it_built(slow_run):
    doc, run, stages = slow_run
    run.cancel()
    assert run.wait(30)
    result = run.result
    assert result.cancelled and result.graphs
    assert "preparing the last graph" in stages  # on the script's thread, not the GUI's
    assert doc.apply_script_result(result)
    assert doc.kind == "script" and doc.script_result is result
    assert doc.title.startswith("slow.py: ")
    assert doc.playback.n_steps > 0


def test_a_second_script_waits_for_the_first(slow_run, tmp_path):
    doc, run, _ = slow_run
    other = write(tmp_path, "other.py", "print('never')\n")
    assert doc.load_path(other) is False
    assert "slow.py is running" in str(doc.last_error)
    assert doc.script_run is run
    run.cancel()
    assert run.wait(30)
    doc.apply_script_result(run.result)
    assert isinstance(doc.load_path(other), ScriptProcess)


def test_a_failure_says_the_scripts_line_in_one_line(tmp_path):
    result = run_script(write(tmp_path, "fails.py", FAILS))
    assert not result.ok and not result.cancelled
    assert result.error_line == 6  # inside step(), the script's deepest frame
    assert result.error_summary == "fails.py line 6: ZeroDivisionError: division by zero"
    assert "\n" not in result.error_summary
    assert len(result.graphs) == 1  # the graph built before the error


def test_a_syntax_error_says_its_line(tmp_path):
    result = run_script(write(tmp_path, "syntax.py", "x = 1\ny = (2\nz = 3 +\n"))
    assert result.error_line is not None and result.error_line >= 2
    assert result.error_summary.startswith(f"syntax.py line {result.error_line}: SyntaxError")


def test_a_multi_line_message_stays_on_one_line(tmp_path):
    result = run_script(write(tmp_path, "multi.py", "raise ValueError('first\\nsecond')\n"))
    assert result.error_summary == "multi.py line 1: ValueError: first second"


def test_a_run_that_succeeds_or_is_cancelled_has_no_error_summary(tmp_path):
    assert run_script(write(tmp_path, "ok.py", "x = 1\n")).error_summary == ""


def test_a_syntax_error_names_its_line_once(tmp_path):
    # str(SyntaxError) ends in "(file, line N)"; the summary says the line itself
    result = run_script(write(tmp_path, "syn.py", "x = (\n"))
    assert result.error_summary == "syn.py line 1: SyntaxError: '(' was never closed"
    assert result.summary.count("line 1") == 1, result.summary
