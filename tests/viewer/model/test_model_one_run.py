"""One run at a time, in the model as in the window: while a script runs, the Document
refuses a second one (and a typed program's run refuses a script) with the window's message,
and the first run finishes and is shown as if it had run alone."""

import textwrap
import time

import pytest

from viewer.model.document.document import Document
from viewer.model.scripts.process import ScriptProcess

# The first script waits for the test's go-ahead (a file), so the second is asked for while it
# surely runs, whatever the machine's speed.
FIRST = """
import pathlib, time
import numpy as np
from autodiff import Variable
import autodiff.functions as F
here = pathlib.Path(__file__).parent
(here / "first.started").write_text("1")
deadline = time.monotonic() + 60
while not (here / "go").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
x = Variable(np.array(0.5), name="x")
y = F.sin(x) * x
y.backward()
(here / "first.done").write_text("1")
print("first done")
"""

SECOND = """
import pathlib
pathlib.Path(__file__).with_name("second.ran").write_text("1")
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def wait_for(path, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def test_a_second_script_is_refused_while_one_runs_and_the_first_finishes(tmp_path):
    first, second = write(tmp_path, "first.py", FIRST), write(tmp_path, "second.py", SECOND)
    doc = Document()
    errors = []
    doc.error_raised.connect(errors.append)
    run = doc.prepare_script(first)
    assert isinstance(run, ScriptProcess)
    run.start()
    wait_for(tmp_path / "first.started")

    assert doc.prepare_script(second) is False
    message = "cannot run second.py while first.py is running: wait for it or cancel it first"
    assert str(doc.last_error) == message and [str(e) for e in errors] == [message]
    assert doc.load_path(second) is False  # the window's way in says the same
    assert str(doc.last_error) == message
    assert doc.run_script(second) is False
    assert doc.script_run is run  # the document still follows the first run

    (tmp_path / "go").write_text("1")
    assert run.wait(60)
    assert not run.running and run.result.ok, run.result.summary
    assert run.result.stdout == "first done\n"
    assert doc.apply_script_result(run.result) and doc.kind == "script"
    assert doc.script_run is None and doc.script_result is run.result
    assert not (tmp_path / "second.ran").exists()  # the refused script never ran

    # once the first run is over, the second may run
    again = doc.prepare_script(second)
    assert isinstance(again, ScriptProcess), doc.last_error
    assert again.run().ok and (tmp_path / "second.ran").exists()


def test_a_script_is_refused_while_a_typed_program_runs(tmp_path):
    doc = Document()
    doc.expression_job = object()  # what the Document holds while a program runs elsewhere
    assert doc.prepare_script(write(tmp_path, "second.py", SECOND)) is False
    assert str(doc.last_error) == (
        "cannot run second.py while the typed program is running: wait for it or cancel it first"
    )
    assert not (tmp_path / "second.ran").exists()


def test_only_the_run_the_document_follows_may_start(tmp_path):
    """Prepare a, then b (a, not started, is no longer followed): a's start is refused with
    a message naming both; b runs normally; a never ran."""
    doc = Document()
    marker_a = tmp_path / "a_ran"
    a = tmp_path / "a.py"
    a.write_text(f"open({str(marker_a)!r}, 'w').write('x')\n")
    b = tmp_path / "b.py"
    b.write_text("print('b')\n")
    run_a = doc.prepare_script(a)
    run_b = doc.prepare_script(b)
    assert isinstance(run_a, ScriptProcess) and isinstance(run_b, ScriptProcess)
    with pytest.raises(RuntimeError, match=r"cannot start a\.py: the document now follows b\.py"):
        run_a.start()
    run_b.start()
    assert run_b.wait(60)
    assert run_b.result.ok
    assert not marker_a.exists()
