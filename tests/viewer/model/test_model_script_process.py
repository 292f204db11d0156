"""Scripts run in a worker process: whatever the script does, the app's process is untouched,
each way the worker can end is reported in one line, and Cancel ends it.

No test here bounds how long anything takes (a busy machine decides that): each waits for the
event it is about, with a generous timeout. How soon Cancel ends a run is measured in
bench/cancel_latency.py."""

import os
import sys
import textwrap
import time

import numpy as np
import pytest

from autodiff import core
from viewer.model.document.document import Document
from viewer.model.scripts import process as script_process
from viewer.model.scripts.process import CANCEL_GRACE_S, ScriptProcess
from viewer.model.scripts.worker import AS_BACKSTOP_FACTOR


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def run(tmp_path, text, **options):
    process = ScriptProcess(write(tmp_path, "script.py", text), **options)
    shown = []
    process.output_written.connect(shown.append)
    result = process.run()
    return result, "".join(shown)


def started(tmp_path, text):
    """A running process, once the script wrote its marker file."""
    process = ScriptProcess(write(tmp_path, "script.py", text))
    process.start()
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the script never started"
        assert process.running, process.result and process.result.error
        time.sleep(0.01)
    return process


ENGINE = """
import numpy as np
import autodiff.functions as F
from autodiff import Variable
x = Variable(np.array([1.0, 2.0]), name="x")
for i in range(3):
    x.cleargrad()
    y = F.sum(x * x)
    y.name = "loss"
    y.backward()
    print("grad", i, x.grad.data.tolist())
"""


def test_the_result_comes_back_as_data(tmp_path):
    observers, stdout = core._observers, sys.stdout
    result, shown = run(tmp_path, ENGINE)
    assert result.ok, result.error
    assert core._observers == observers and sys.stdout is stdout  # nothing touched here
    assert shown == result.stdout == "grad 0 [2.0, 4.0]\ngrad 1 [2.0, 4.0]\ngrad 2 [2.0, 4.0]\n"
    assert [g.title for g in result.graphs] == [
        f"#{i + 1} · iter {i} · loss 5 · from loss" for i in range(3)
    ]
    view = result.view(2)
    x = next(n for n in view.variables if view.node(n).get("name") == "x")
    assert view.grad_at(x, len(view.steps) - 1).array.tolist() == [2.0, 4.0]
    assert result.leak_report is not None and result.leak_report.clean
    assert result.trace.live(x) is None  # the objects stayed in the worker


def test_output_of_every_thread_and_both_streams_is_kept(tmp_path):
    result, shown = run(
        tmp_path,
        """
        import sys, threading
        print("main")
        print("oops", file=sys.stderr)
        t = threading.Thread(target=lambda: print("from a thread"))
        t.start(); t.join()
        sys.stdout = open(__file__ + ".out", "w")  # the script's own business
        """,
    )
    assert result.ok
    assert result.stdout == "main\nfrom a thread\n"
    assert result.stderr == "oops\n"
    assert sorted(shown.splitlines()) == ["from a thread", "main", "oops"]


def test_lines_of_the_two_streams_are_not_spliced(tmp_path):
    # stderr's line is written in two parts with stdout's line between them: the panel shows
    # whole lines
    result, shown = run(
        tmp_path,
        """
        import sys
        sys.stderr.write("half of ")
        print("out")
        sys.stderr.write("a line\\n")
        print("oops", file=sys.stderr)
        """,
    )
    assert result.ok, result.error
    assert sorted(shown.splitlines()) == ["half of a line", "oops", "out"]


def test_a_last_line_without_its_newline_is_kept_and_shown(tmp_path):
    result, shown = run(tmp_path, "import sys\nprint('first')\nsys.stdout.write('no newline')\n")
    assert result.ok, result.error
    assert result.stdout == shown == "first\nno newline"


def test_os_exit_in_the_script_ends_the_script_not_the_app(tmp_path):
    result, _ = run(tmp_path, "print('bye')\nimport os\nos._exit(7)\n")
    assert not result.ok and result.exit_code == 7 and result.stdout == "bye\n"


def test_os_exit_from_a_thread_ends_only_the_worker_and_says_so(tmp_path):
    result, _ = run(
        tmp_path,
        """
        import os, threading, time
        print("before", flush=True)
        threading.Thread(target=os._exit, args=(7,)).start()
        time.sleep(30)
        """,
    )
    assert not result.ok and not result.cancelled
    assert result.stdout == "before\n"  # what it printed first is not lost
    assert result.error_summary == (
        "script.py: the script's process exited with status 7 before it finished "
        "(os._exit from a thread, or a crash)"
    )


def test_a_segfault_is_reported_with_the_scripts_line(tmp_path):
    result, _ = run(tmp_path, "import ctypes\nprint('going')\nctypes.string_at(0)\n")
    assert not result.ok
    assert result.stdout == "going\n"
    assert result.error_summary == "script.py line 3: the script's process crashed (SIGSEGV)"
    assert "Segmentation fault" in result.stderr  # faulthandler's report, kept


def test_one_allocation_past_the_address_space_backstop_is_a_memory_error_naming_the_limit(
    tmp_path,
):
    # 4 GiB at once: more than the backstop (what the worker mapped, plus twice the limit)
    result, _ = run(
        tmp_path, "import numpy as np\nbig = np.ones(4 * 1024**3 // 8)\n", memory_mb=1024
    )
    assert not result.ok
    summary = result.error_summary
    assert summary.startswith("script.py line 2: ") and "MemoryError" in summary
    assert summary.endswith(
        "(a script may use 1024 MiB: limits/scriptMemoryMB in ~/.config/autodiff-viewer/viewer.ini)"
    )


def test_a_thread_that_never_ends_does_not_keep_the_run_alive(tmp_path):
    process = ScriptProcess(
        write(
            tmp_path,
            "script.py",
            """
            import threading
            threading.Thread(target=threading.Event().wait).start()  # not a daemon, never ends
            print("main done")
            """,
        )
    )
    process.start()
    assert process.wait(60), "the run waited for the script's thread"
    result = process.result
    assert result.ok and result.stdout == "main done\n"


def test_cancel_stops_a_sleeping_script_and_keeps_its_graph(tmp_path, monkeypatch):
    # the worker is never killed here, however busy the machine: it stops by itself
    monkeypatch.setattr(script_process, "CANCEL_GRACE_S", 120.0)
    process = started(
        tmp_path,
        """
        import pathlib, time
        import numpy as np
        import autodiff.functions as F
        from autodiff import Variable
        y = F.sum(Variable(np.ones(3), name="x") * 2.0)
        y.backward()
        pathlib.Path("started").write_text("yes")
        time.sleep(600)
        """,
    )
    process.cancel()
    assert process.wait(60)
    result = process.result
    assert result.cancelled and len(result.graphs) == 1
    assert "did not stop" not in result.summary
    assert result.summary.startswith("script.py: cancelled after")


def test_cancel_kills_a_script_that_catches_everything_and_what_it_started(tmp_path):
    process = started(
        tmp_path,
        """
        import pathlib, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        pathlib.Path("child").write_text(str(child.pid))
        pathlib.Path("started").write_text("yes")
        while True:
            try:
                time.sleep(600)
            except BaseException:
                pass
        """,
    )
    child = int((tmp_path / "child").read_text())
    began = time.monotonic()
    process.cancel()
    assert process.wait(60)
    assert time.monotonic() - began >= CANCEL_GRACE_S  # killed once its grace was over
    result = process.result
    assert result.cancelled
    assert "did not stop within" in result.error_message
    deadline = time.monotonic() + 10
    while _alive(child):  # the killed group's orphan is reaped by init
        assert time.monotonic() < deadline, "the script's own child survived the cancel"
        time.sleep(0.05)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_the_worker_ends_when_the_app_goes_away(tmp_path):
    process = started(
        tmp_path, "import pathlib, time\npathlib.Path('started').write_text('y')\ntime.sleep(600)\n"
    )
    os.close(process._lifeline)  # what the app's death does to the pipe
    process._lifeline = -1
    assert process.wait(10)
    assert "status 71" in process.result.error_message


def test_a_missing_script_is_a_failed_result(tmp_path):
    result = ScriptProcess(tmp_path / "nope.py").run()
    assert not result.ok and "no such script" in result.error


def test_the_document_runs_scripts_in_the_worker_one_at_a_time(tmp_path):
    doc = Document()
    doc.script_memory_mb = 4096
    run_ = doc.load_path(write(tmp_path, "train.py", ENGINE))
    assert isinstance(run_, ScriptProcess) and run_.memory_mb == 4096
    run_.start()
    assert doc.load_path(write(tmp_path, "other.py", "x = 1\n")) is False
    assert run_.wait(60)
    assert doc.apply_script_result(run_.result)
    assert doc.kind == "script" and len(doc.script_result.graphs) == 3


@pytest.mark.parametrize("limit", [0, 2048, 10**24])
def test_the_address_space_backstop_can_be_set_or_lifted(tmp_path, limit):
    result, _ = run(
        tmp_path,
        """
        import resource
        print(resource.getrlimit(resource.RLIMIT_AS)[0])
        print(int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize())
        """,
        memory_mb=limit,
    )
    assert result.ok, result.error  # a limit past what setrlimit takes is clamped, not fatal
    soft, mapped = (int(line) for line in result.stdout.split())
    if limit == 10**24:
        assert soft == 2**63 - 1 or soft == -1
    elif limit:
        # the resident limit is the watch's; the address space's is a backstop on top of what
        # the worker mapped before the script (no more than it maps now)
        backstop = AS_BACKSTOP_FACTOR * limit * 1024 * 1024
        assert backstop < soft <= backstop + mapped
    else:
        assert soft == -1 or soft > 2**50  # RLIM_INFINITY


def test_big_arrays_in_the_recording_come_back_whole(tmp_path):
    result, _ = run(
        tmp_path,
        """
        import numpy as np
        import autodiff.functions as F
        from autodiff import Variable
        x = Variable(np.arange(12.0).reshape(3, 4), name="x")
        y = F.sum(F.tanh(x))
        y.backward()
        """,
    )
    view = result.view(0)
    x = next(n for n in view.variables if view.node(n).get("name") == "x")
    grad = view.grad_at(x, len(view.steps) - 1).array
    np.testing.assert_allclose(grad, 1 - np.tanh(np.arange(12.0).reshape(3, 4)) ** 2)


def test_a_process_the_script_leaves_behind_neither_holds_the_result_nor_survives(tmp_path):
    process = ScriptProcess(
        write(
            tmp_path,
            "script.py",
            """
            import os, pathlib, threading
            pid = os.fork()
            if pid == 0:  # holds every pipe of the worker, the channel included
                threading.Event().wait()  # forever
                os._exit(0)
            pathlib.Path("child").write_text(str(pid))
            print("parent done")
            """,
        )
    )
    process.start()
    assert process.wait(60), "the run waited for the script's own child"
    result = process.result
    assert result.ok and result.stdout == "parent done\n"
    child = int((tmp_path / "child").read_text())
    deadline = time.monotonic() + 10
    while _alive(child):
        assert time.monotonic() < deadline, "the script's own child outlived its run"
        time.sleep(0.05)


def test_the_summary_says_why_a_cancel_ended_the_process_and_where_a_crash_happened(tmp_path):
    result, _ = run(tmp_path, "import ctypes\nprint('going')\nctypes.string_at(0)\n")
    assert result.summary == "script.py failed: the script's process crashed (SIGSEGV), line 3"
    assert result.error == "the script's process crashed (SIGSEGV)"  # the dump is in stderr
    process = started(
        tmp_path,
        # 'started' is written inside the try: a Cancel arriving right after it must meet
        # the except (written before the loop, it once ended the script in time: flaky)
        "import pathlib, time\n"
        "while True:\n    try:\n        pathlib.Path('started').write_text('y')\n"
        "        time.sleep(600)\n    except BaseException:\n        pass\n",
    )
    process.cancel()
    assert process.wait(30)
    assert process.result.summary.endswith(
        "(the script did not stop within 0.8 s of Cancel: its process was ended, and what it "
        "built is not kept)"
    )


def test_a_cancelled_long_run_sends_its_output_and_a_bounded_sample_of_its_passes(
    tmp_path, monkeypatch
):
    # the worker is never killed here, however busy the machine: it stops by itself
    monkeypatch.setattr(script_process, "CANCEL_GRACE_S", 120.0)
    process = started(
        tmp_path,
        """
        import pathlib
        import numpy as np
        import autodiff.functions as F
        from autodiff import Variable
        x = Variable(np.array(0.5), name="x")
        i = 0
        while True:
            x.cleargrad()
            y = F.sin(x) * x
            y.backward()
            i += 1
            if i == 3000:  # 12 000 steps
                print("iterating", flush=True)
                pathlib.Path("started").write_text("yes")
        """,
    )
    process.cancel()
    assert process.wait(60)
    result = process.result
    assert result.cancelled and result.stdout == "iterating\n"  # what it printed came through
    assert "did not stop" not in result.summary  # the worker ended by itself, in time
    # only a sample of the passes' graphs came back, and every pass's loss
    assert len(result.passes) >= 3000
    assert 500 < len(result.graphs) <= 1001 + 100
    assert result.sampling.startswith(f"showing {len(result.graphs):,} of ")


def test_a_script_that_is_not_a_regular_file_is_refused_by_name(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    doc = Document()
    assert doc.load_path(fifo) is False
    assert str(doc.last_error) == "cannot run pipe.py: not a regular file"
    assert doc.load_path(tmp_path / "gone.py") is False
    assert "no such script" in str(doc.last_error)


def test_a_worker_started_before_the_answer_runs_nothing_until_told(tmp_path):
    path = write(
        tmp_path,
        "script.py",
        f"""
        open({str(tmp_path / "ran")!r}, "w").write("x")
        import numpy as np
        from autodiff import Variable
        x = Variable(np.array(3.0), name="x")
        y = x * x
        y.backward()
        print("grad", float(x.grad.data))
        """,
    )
    process = ScriptProcess(path)
    process.warm_up()
    assert process.pid is not None
    time.sleep(1.0)  # its imports are done: still nothing of the script ran
    assert not (tmp_path / "ran").exists()
    assert not process.running
    shown = []
    process.output_written.connect(shown.append)
    result = process.run()
    assert result.ok, result.error
    assert (tmp_path / "ran").exists()
    assert "grad 6.0" in "".join(shown)
    assert result.graphs


def test_a_released_worker_ends_and_its_run_does_not_start(tmp_path):
    path = write(tmp_path, "script.py", f"open({str(tmp_path / 'ran')!r}, 'w')\n")
    process = ScriptProcess(path)
    process.warm_up()
    pid, folder = process.pid, process._folder
    assert pid is not None and os.path.isdir(folder)
    process.release()
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and _state(pid) != "Z":
        assert time.monotonic() < deadline, "the released worker still runs"
        time.sleep(0.01)
    assert not os.path.exists(folder)
    with pytest.raises(RuntimeError, match="let go"):
        process.run()
    assert not (tmp_path / "ran").exists()
    assert not process.running


def test_preparing_another_script_lets_the_warm_worker_of_the_first_go(tmp_path):
    doc = Document()
    first = doc.prepare_script(write(tmp_path, "a.py", "print(1)\n"))
    first.warm_up()
    folder = first._folder
    second = doc.prepare_script(write(tmp_path, "b.py", "print(2)\n"))
    assert second is not first and doc.script_run is second
    assert not os.path.exists(folder)
    with pytest.raises(RuntimeError):
        first.start()
    result = second.run()
    assert result.ok, result.error


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


class _Ended:
    """A worker that has ended (what ``_read_channel`` asks of its process)."""

    returncode = 0

    def poll(self):
        return 0


def _frames(*messages):
    import json
    import struct

    out = b""
    for kind, text in messages:
        body = json.dumps({"t": kind, "s": text}).encode()
        out += struct.pack("<I", len(body)) + body
    return out


def test_a_report_that_came_in_the_same_read_as_the_result_is_not_lost(tmp_path):
    """The worker writes "done", then, its detectors being quick, the problem report and
    its end: all three may be in one read. The report is taken from what was read."""
    process = ScriptProcess(write(tmp_path, "script.py", "pass\n"))
    read, written = os.pipe()
    os.write(written, _frames(("stage", "s"), ("done", ""), ("problems", "[1]")))
    os.close(written)
    process._channel = read
    try:
        assert process._read_channel(_Ended(), "done") == ""
        assert process._read_channel(_Ended(), "problems") == "[1]"
    finally:
        os.close(read)


def test_what_the_worker_wrote_just_before_it_ended_is_read(tmp_path):
    """The worker may write its report and end between the app's wait and its look at the
    process: what it wrote is still read (a process it started holds the channel open)."""
    process = ScriptProcess(write(tmp_path, "script.py", "pass\n"))
    read, written = os.pipe()
    process._channel = read

    class EndsAfterWriting(_Ended):
        def poll(self):  # the frame arrives as the worker is seen to have ended
            if not getattr(self, "wrote", False):
                self.wrote = True
                os.write(written, _frames(("problems", "[2]")))
            return 0

    try:
        assert process._read_channel(EndsAfterWriting(), "problems") == "[2]"
        # and with nothing more to read, the ended worker's channel gives None at once
        assert process._read_channel(_Ended(), "problems") is None
    finally:
        os.close(read)
        os.close(written)
