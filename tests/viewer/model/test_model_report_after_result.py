"""A script's worker sends its result first and looks for problems after it: the graph shows
while the detectors run, their report comes when they end (``ScriptResult.problems_pending``),
and a Cancel, or another source, stops them. The script below plants a detector in its own
worker that waits until the test lets it go, so each moment is seen, not raced."""

from __future__ import annotations

import io
import os
import time

from planted_detector import write_plants
from test_model_one_run import wait_for

from viewer.check import run_check
from viewer.model.document.document import Document
from viewer.model.document.work import Outcome
from viewer.model.scripts.process import ScriptProcess


def _script(tmp_path):
    return write_plants(tmp_path)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_result_comes_while_the_detectors_still_run_and_their_report_after(tmp_path):
    process = ScriptProcess(_script(tmp_path))
    stages = []
    process.stage_changed.connect(stages.append)
    result = process.run()  # returns with the result: the planted detector is still waiting
    assert result.ok and result.stdout == "trained\n"  # the whole output came first
    assert len(result.graphs) == 2 and result.view(1) is not None
    assert result.problems is None
    pending = result.problems_pending
    wait_for(tmp_path / "looking")
    assert not pending.done and _alive(process.pid)
    assert "looking for problems" not in stages  # (the worker's stage after its result)
    (tmp_path / "go").write_text("")
    assert pending.wait(60)
    report = pending.report
    assert pending.error is None and "dead-relu" in report.ran
    assert [(p.kind, p.message, p.graph) for p in report.for_graph(1)] == [
        ("dead-relu", "planted: units dead", 1)
    ]
    deadline = time.monotonic() + 10
    while _alive(process.pid) and process._proc.poll() is None:
        assert time.monotonic() < deadline, "the worker outlived its report"
        time.sleep(0.01)


def test_cancel_after_the_result_stops_the_detectors_and_says_so(tmp_path):
    process = ScriptProcess(_script(tmp_path))
    result = process.run()
    pending = result.problems_pending
    wait_for(tmp_path / "looking")
    began = time.monotonic()
    process.cancel()
    assert pending.wait(30) and time.monotonic() - began < 20  # (its detector waits 60 s)
    assert pending.stopped and pending.report is None
    assert pending.error == "the problem detectors were stopped"
    assert process._proc.poll() is not None  # the worker is gone
    assert result.ok and result.graphs  # the result stands


class _Runner:
    """Keeps the problems' work to run it when the test says; cancels as a runner does."""

    def __init__(self):
        self.kept = []
        self.cancelled = []

    def submit(self, work):
        assert work.kind == "problems", work.kind  # (a small graph is laid out in place)
        self.kept.append(work)

    def cancel(self, kind):
        self.cancelled.append(kind)


def test_the_document_shows_the_graph_first_and_its_problems_when_they_come(tmp_path):
    doc = Document()
    doc.runner = runner = _Runner()
    assert doc.run_script(_script(tmp_path))
    assert doc.scene is not None and doc.shown_graph() == 1  # shown before any report
    assert doc.problems_running and doc.problem_report is None
    assert not [p for p in doc.problems() if p.kind == "dead-relu"]
    (work,) = runner.kept
    (tmp_path / "go").write_text("")
    report = work.function(*work.args, lambda *a: None, lambda: False)
    work.finish(Outcome("succeeded", report))
    assert not doc.problems_running and doc.problem_report is report
    assert ("dead-relu", 1) in {(p.kind, p.graph) for p in doc.problems()}


def test_another_source_stops_the_detectors_of_the_run_it_replaces(tmp_path):
    doc = Document()
    doc.runner = runner = _Runner()
    assert doc.run_script(_script(tmp_path))
    (work,) = runner.kept
    pending = work.args[0]
    wait_for(tmp_path / "looking")
    assert doc.run_expression("x = 0.5\ny = exp(x)\n")
    assert "problems" in runner.cancelled  # the runner asks the work to stop...
    why = work.function(*work.args, lambda *a: None, lambda: True)  # ...which it does
    assert pending.stopped and why == "the problem detectors were stopped"
    work.finish(Outcome("succeeded", why))  # (late: the document follows the expression)
    assert doc.problem_note == ""


def test_check_waits_for_the_report_the_worker_sends_after_its_result(tmp_path):
    (tmp_path / "go").write_text("")
    out, err = io.StringIO(), io.StringIO()
    code = run_check(str(_script(tmp_path)), run_scripts=True, as_json=False, out=out, err=err)
    assert "planted: units dead" in out.getvalue(), (out.getvalue(), err.getvalue())
    assert code != 0


def test_check_with_a_timeout_that_stops_the_detectors_gives_no_clean_bill(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    # (long enough for the script itself on a loaded machine: the detector then waits)
    code = run_check(
        str(_script(tmp_path)), run_scripts=True, as_json=False, out=out, err=err, timeout=15
    )
    assert (tmp_path / "looking").exists()  # the script ended; the detectors were stopped
    assert "the problem detectors were stopped after 15 s (--timeout)" in err.getvalue()
    assert "No problems found" not in err.getvalue() and code == 1


def test_check_gives_no_clean_bill_when_the_worker_ends_before_its_report(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text(
        "import os, threading\n" + PLANTS_IMPORTS + "threading.Timer(1.0, os._exit, (3,)).start()\n"
    )
    out, err = io.StringIO(), io.StringIO()
    code = run_check(str(script), run_scripts=True, as_json=False, out=out, err=err)
    assert "the problem detectors did not finish: their process exited with status 3" in (
        err.getvalue()
    )
    assert code == 1


# a script whose planted detector waits (no "go" is ever written) until the worker ends
PLANTS_IMPORTS = (
    "import pathlib, time\n"
    "import numpy as np\n"
    "from autodiff import Variable\n"
    "import viewer.model.checks.detectors\n"
    "from viewer.model.checks import problems as P\n"
    "@P.graph_detector('dead-relu')\n"
    "def slow(g, limits, time=time):\n"
    "    time.sleep(30)\n"
    "    return []\n"
    "w = Variable(np.array([1.0, 2.0]))\n"
    "(w * w).sum().backward()\n"
)
