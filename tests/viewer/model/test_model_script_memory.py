"""A script's worker is bounded in resident memory (``Document.script_memory_mb``, the setting
``limits/scriptMemoryMB``): past its limit the script is stopped as by Cancel, the run fails
with one line naming the limit and the setting, and the app carries on.

Times are bounded generously (a busy machine decides them); the stop itself comes within
20 ms of the worker's CPU time."""

import sys
import textwrap
import time

import pytest

from viewer.model.document.document import Document
from viewer.model.scripts import worker
from viewer.model.scripts.process import DEFAULT_MEMORY_MB, ScriptProcess

MESSAGE = (
    "the script used more than 300 MiB, its limit: limits/scriptMemoryMB in "
    "~/.config/autodiff-viewer/viewer.ini"
)

ENGINE = """
import numpy as np
import autodiff.functions as F
from autodiff import Variable
x = Variable(np.array([1.0, 2.0]), name="x")
y = F.sum(x * x)
y.name = "loss"
y.backward()
"""

# a backward pass, then a list of arrays grown for ever, 8 MiB at a time
GROW = (
    ENGINE
    + """
kept = []
while True:
    kept.append(np.ones(1024 * 1024))
"""
)

# 400 MiB written in one numpy call, then the script ends by itself
ONCE = """
import numpy as np
big = np.ones(400 * 1024 * 1024 // 8)
print("done", big.nbytes >> 20)
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_a_script_past_its_limit_is_stopped_and_the_document_keeps_its_graph(tmp_path):
    doc = Document()
    doc.script_memory_mb = 300
    assert doc.run_script(write(tmp_path, "first.py", ENGINE)), doc.last_error
    shown, first = doc.trace, doc.script_result
    finished = []
    doc.script_finished.connect(finished.append)
    began = time.monotonic()
    assert doc.run_script(write(tmp_path, "grow.py", GROW)) is False
    assert time.monotonic() - began < 60
    (result,) = finished
    assert not result.ok and not result.cancelled
    # where it was stopped: in its loop
    loop = [i + 1 for i, line in enumerate(GROW.strip().splitlines()) if "kept" in line][1:]
    assert result.error_line in loop
    assert result.error_summary == f"grow.py line {result.error_line}: {MESSAGE}"
    assert str(doc.last_error) == f"grow.py failed: {MESSAGE}, line {result.error_line}"
    assert len(result.graphs) == 1  # what it recorded until then came back
    assert doc.trace is shown and doc.script_result is first  # the graph on screen stays
    assert doc.run_script(write(tmp_path, "second.py", ENGINE)), doc.last_error  # and the app runs
    assert doc.script_result is not first and doc.script_result.ok


@pytest.mark.parametrize(("limit", "ok"), [(300, False), (0, True)])
def test_a_limit_of_0_is_none(tmp_path, limit, ok):
    result = ScriptProcess(write(tmp_path, "once.py", ONCE), memory_mb=limit).run()
    assert result.ok is ok
    if ok:
        assert result.stdout == "done 400\n"
    else:
        assert result.error_summary == f"once.py line 2: {MESSAGE}"  # its one numpy call


def test_a_script_that_catches_the_stop_is_ended_with_its_process(tmp_path):
    text = """
    import numpy as np
    kept = []
    while True:
        try:
            kept.append(np.ones(1024 * 1024))
        except BaseException:
            pass
    """
    process = ScriptProcess(write(tmp_path, "stubborn.py", text), memory_mb=300)
    process.start()
    assert process.wait(60)
    assert process.result.error_summary == (
        f"stubborn.py: {MESSAGE}; it did not stop, so its process was ended"
    )


def test_the_default_bound_is_800_mib():
    assert DEFAULT_MEMORY_MB == 800
    assert ScriptProcess(__file__).memory_mb == 800


class _Watched:
    """A _MemoryWatch over this process, with what it would do recorded instead of done."""

    def __init__(self, limit, in_script):
        import os

        self.stops, self.exits = [], []
        self.fd = os.open("/proc/self/statm", os.O_RDONLY)
        self.watch = worker._MemoryWatch(limit, self.fd, lambda: in_script, self._stop)
        self.watch._exit = self.exits.append

    def _stop(self, frame):
        self.stops.append(frame)

    def check(self):
        self.watch._check(0, sys._getframe())


@pytest.mark.parametrize("in_script", [True, False])
def test_the_watch_does_nothing_under_the_limit_or_between_the_script_and_its_sending(
    in_script,
):
    under = _Watched(1 << 40, in_script)  # a terabyte: this process is under it
    under.watch.sending = True
    under.check()
    idle = _Watched(1, in_script=False)  # over, but neither in the script nor sending
    idle.check()
    assert under.stops == under.exits == idle.stops == idle.exits == []


def test_the_watch_stops_the_script_once_then_ends_it_if_it_stays_over(monkeypatch):
    watched = _Watched(1, in_script=True)  # one byte: this process is over it
    watched.check()
    watched.check()
    assert watched.exits == [] and watched.watch.fired
    assert [frame.f_code.co_name for frame in watched.stops] == ["check"]  # where it was
    monkeypatch.setattr(worker, "_HARD_STOP_S", 0.0)
    time.sleep(0.01)
    watched.check()
    assert watched.exits == [worker.MEMORY_EXIT] and len(watched.stops) == 1


def test_the_watch_ends_the_worker_past_the_limit_while_it_sends_the_recording():
    watched = _Watched(1, in_script=False)
    watched.watch.sending = True
    watched.check()
    assert watched.exits == [worker.MEMORY_EXIT_SENDING] and watched.stops == []


def test_a_worker_ended_while_sending_is_reported_with_the_limit(tmp_path):
    # what the watch does past the limit once the script ended: the worker's exit status
    text = f"""
    import os, threading, time
    threading.Thread(target=os._exit, args=({worker.MEMORY_EXIT_SENDING},)).start()
    time.sleep(60)
    """
    result = ScriptProcess(write(tmp_path, "sent.py", text), memory_mb=300).run()
    assert result.error_summary == (
        "sent.py: the script ended, but its recording needed more than 300 MiB, its limit: "
        "limits/scriptMemoryMB in ~/.config/autodiff-viewer/viewer.ini"
    )
