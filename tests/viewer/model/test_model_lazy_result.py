"""A worker's run comes back lazily: at its end the app reads what it shows (the graph list,
the pass log, the graph on screen); every other graph's recording stays in the run's folder
until it is selected, and the folder goes with the result."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from autodiff.trace import trace_from_npz
from viewer.model.document.document import Document
from viewer.model.scripts import result_folder
from viewer.model.scripts.process import FOLDER_PREFIX, ScriptProcess, remove_stale_folders
from viewer.model.scripts.result_folder import hold_folder
from viewer.model.scripts.result_schema import RECORDINGS_DONE_NAME, SEGMENT_NAME, TRACE_NAME
from viewer.model.scripts.run import GraphUnavailable

TRAIN = """
import numpy as np
from autodiff import Variable
w = Variable(np.array([1.0, 2.0]), name="w")
for epoch in range(120):
    w.cleargrad()
    loss = (w * w * (1.0 + epoch)).sum()
    loss.name = "loss"
    loss.backward()
    w.data = w.data - 0.001 * w.grad.data
"""


def _script(tmp_path, text=TRAIN):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


@pytest.fixture
def reads(monkeypatch):
    """The names of the recordings the app reads, in order."""
    seen = []
    real = result_folder.trace_from_npz

    def spy(path):
        seen.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(result_folder, "trace_from_npz", spy)
    return seen


def _written(result, seconds=60.0):
    """Once the worker has written every recording (those of the graphs not shown come after
    the result)."""
    done = os.path.join(result.folder.path, RECORDINGS_DONE_NAME)
    deadline = time.monotonic() + seconds
    while not os.path.exists(done):
        assert time.monotonic() < deadline, "the worker never wrote all its recordings"
        time.sleep(0.01)


def _segment_graphs(result):
    return [k for k, g in enumerate(result.graphs) if g.segment >= 0]


def _same_view(lazy, eager):
    assert [(s.phase, s.function, s.inputs, s.outputs) for s in lazy.steps] == [
        (s.phase, s.function, s.inputs, s.outputs) for s in eager.steps
    ]
    assert sorted(lazy.graph.nodes) == sorted(eager.graph.nodes)
    last = len(lazy.steps) - 1
    for node in lazy.graph.nodes:
        for at in (0, last):
            for a, b in (
                (lazy.value_at(node, at), eager.value_at(node, at)),
                (lazy.grad_at(node, at), eager.grad_at(node, at)),
            ):
                if a is None or b is None:
                    assert a is None and b is None
                else:
                    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_the_end_of_a_run_reads_only_the_graph_shown_and_a_selected_graph_on_demand(
    tmp_path, reads
):
    result = ScriptProcess(_script(tmp_path), max_passes=10).run()
    assert result.ok, result.error
    _written(result)  # (the test copies files the worker writes after the result)
    segments = _segment_graphs(result)
    assert len(segments) >= 3 and segments[-1] == len(result.graphs) - 1
    last = result.graphs[-1]
    # the graph on screen only: neither the head trace nor the other passes' segments
    assert reads == [SEGMENT_NAME.format(last.segment)]
    assert len(result.passes) == 120  # the Training plot's scalars came whole
    folder = result.folder.path
    other = result.graphs[segments[0]]
    name = SEGMENT_NAME.format(other.segment)
    eager = trace_from_npz(shutil.copy(os.path.join(folder, name), tmp_path / name))

    view = result.view(segments[0])  # selected: read now, once
    assert reads == [SEGMENT_NAME.format(last.segment), name]
    assert result.view(segments[0]) is view
    _same_view(view, other.view(eager))
    assert view.pass_offset == other.number - other.backward_pass  # numbered as the run's

    head = [k for k, g in enumerate(result.graphs) if g.segment < 0]
    assert len(head) >= 2 and result.loaded_trace is None
    eager_head = trace_from_npz(shutil.copy(os.path.join(folder, TRACE_NAME), tmp_path / "h.npz"))
    _same_view(result.view(head[0]), result.graphs[head[0]].view(eager_head))
    result.view(head[1])  # the same head trace: not read again
    assert reads[2:] == [TRACE_NAME]
    assert result.is_head(result.view(head[1])) and not result.is_head(view)


def test_a_graph_whose_file_is_gone_or_damaged_says_so_and_the_rest_still_shows(tmp_path):
    doc = Document()
    doc.script_max_passes = 10
    assert doc.run_script(_script(tmp_path))
    result = doc.script_result
    shown_title, shown = doc.title, doc.trace
    gone, damaged, fine = _segment_graphs(result)[:3]
    folder = result.folder.path
    os.remove(os.path.join(folder, SEGMENT_NAME.format(result.graphs[gone].segment)))
    with open(os.path.join(folder, SEGMENT_NAME.format(result.graphs[damaged].segment)), "wb") as f:
        f.write(b"PK\x03\x04 not a recording")

    for index, problem in ((gone, "is missing"), (damaged, "could not be read")):
        assert not doc.show_script_graph(index)
        message = str(doc.last_error)
        assert isinstance(doc.last_error, GraphUnavailable)
        assert result.graphs[index].title in message
        assert SEGMENT_NAME.format(result.graphs[index].segment) in message
        assert problem in message
        # the graph on screen stays, as itself
        assert doc.title == shown_title and doc.trace is shown
        assert doc.script_result is result

    assert doc.show_script_graph(fine)  # the rest of the run is usable
    assert doc.title.endswith(result.graphs[fine].title)
    assert doc.trace is result.view(fine)


def test_the_folder_goes_when_the_result_is_replaced_or_dropped(tmp_path):
    doc = Document()
    doc.script_max_passes = 10
    path = _script(tmp_path)
    assert doc.run_script(path)
    first = doc.script_result.folder.path
    assert os.path.isdir(first)  # other graphs are still to be read from it
    assert os.path.basename(first).startswith(f"{FOLDER_PREFIX}{os.getpid()}-")

    assert doc.run_script(path)  # the next run replaces it
    second = doc.script_result.folder.path
    assert second != first and not os.path.exists(first)
    assert os.path.isdir(second)

    del doc
    gc.collect()
    assert not os.path.exists(second)


def test_a_run_with_nothing_left_to_read_removes_its_folder_at_once(tmp_path):
    short = "from autodiff import Variable\nx = Variable(2.0)\ny = x * x\ny.backward()\n"
    result = ScriptProcess(_script(tmp_path, short)).run()
    assert result.ok and len(result.graphs) == 1
    assert result.folder.released and not os.path.exists(result.folder.path)
    assert result.view(0) is not None and result.is_head(result.view(0))


def test_the_folder_goes_when_the_app_quits(tmp_path):
    app = textwrap.dedent(
        f"""
        import sys
        from viewer.model.document.document import Document
        doc = Document()
        doc.script_max_passes = 10
        assert doc.run_script({str(_script(tmp_path))!r})
        print(doc.script_result.folder.path, flush=True)
        sys.exit(0)  # the document still holds the result
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-c", app], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    folder = done.stdout.split()[-1]
    assert folder.startswith(os.path.dirname(folder)) and not os.path.exists(folder)


def test_start_up_keeps_an_old_folder_a_live_app_still_reads(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid no process has: the folder looks like a crashed app's
    old = time.time() - 10 * 24 * 3600
    path = tmp_path / f"{FOLDER_PREFIX}{child.pid}-held"
    path.mkdir()
    (path / TRACE_NAME).write_bytes(b"x")
    os.utime(path, (old, old))
    lock = hold_folder(str(path))
    assert lock >= 0
    try:
        assert remove_stale_folders(str(tmp_path)) == []
        assert path.is_dir()
    finally:
        os.close(lock)
    assert remove_stale_folders(str(tmp_path)) == [str(path)]
    assert not path.exists()


def test_a_recording_the_worker_writes_after_the_result_is_waited_for(tmp_path):
    """The worker writes the graphs not shown after the result: a recording asked for before
    its file is there is waited for, while the worker may still write it."""
    source = tmp_path / "run"
    source.mkdir()
    result = ScriptProcess(_script(tmp_path), max_passes=10).run()
    _written(result)
    name = SEGMENT_NAME.format(result.graphs[_segment_graphs(result)[0]].segment)
    shutil.copy(os.path.join(result.folder.path, name), source / name)
    later = tmp_path / "later"
    later.mkdir()
    writing = [True]
    folder = result_folder.ResultFolder(str(later), has_head=False, writing=lambda: writing[0])

    def write_it():
        time.sleep(0.3)
        shutil.copy(source / name, later / f"{name}.part.npz")
        os.replace(later / f"{name}.part.npz", later / name)

    thread = threading.Thread(target=write_it)
    thread.start()
    began = time.monotonic()
    trace = folder.segment(int(name.split("_")[1].split(".")[0]))
    assert time.monotonic() - began >= 0.25 and trace is not None
    thread.join()
    # one the worker will not write: said at once when it has ended, or when it said why
    writing[0] = False
    with pytest.raises(FileNotFoundError, match="is missing"):
        folder.segment(999_999)
    writing[0] = True
    (later / RECORDINGS_DONE_NAME).write_text("segment_7.npz: OSError: No space left on device")
    with pytest.raises(FileNotFoundError, match=r"could not be written .*No space left"):
        folder.segment(7)


def test_cancel_right_after_the_result_loses_no_graph(tmp_path):
    """Cancel at once after the result, while the worker may still be writing the graphs not
    shown (or already looking for problems: this run's are quick): every graph still opens,
    and the report either came first or is said to be stopped. (That Cancel stops the
    detectors is held, without a race, by test_model_report_after_result.)"""
    process = ScriptProcess(_script(tmp_path), max_passes=10)
    result = process.run()
    process.cancel()
    pending = result.problems_pending
    assert pending.wait(60)
    if pending.report is None:
        assert pending.error == "the problem detectors were stopped"
    for index in range(len(result.graphs)):
        assert result.view(index).steps, index
