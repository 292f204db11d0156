"""A run's folder (its recording, on its way to the app) is removed when the run ends,
whichever way it ends; what runs of a dead app left behind is removed at start-up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

from viewer.model.scripts import process as script_process
from viewer.model.scripts.process import (
    FOLDER_PREFIX,
    STALE_FOLDER_AGE_S,
    ScriptProcess,
    remove_stale_folders,
)


@pytest.fixture
def made_folders(monkeypatch):
    """The folders the runs of this test make."""
    made = []
    real = tempfile.mkdtemp

    def spy(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(script_process.tempfile, "mkdtemp", spy)
    return made


def _script(tmp_path, text):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


STARTED = "import pathlib\npathlib.Path('started').write_text('y')\n"


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("print('fine')\n", True),
        ("raise ValueError('no')\n", False),
        ("import os\nos._exit(7)\n", False),
        ("import ctypes\nctypes.string_at(0)\n", False),
        ("import numpy as np\nx = np.ones(4 * 1024**3 // 8)\n", False),
    ],
)
def test_the_folder_goes_whichever_way_the_run_ends(tmp_path, made_folders, text, ok):
    result = ScriptProcess(_script(tmp_path, text), memory_mb=1024).run()
    assert result.ok is ok
    (folder,) = made_folders
    assert os.path.basename(folder).startswith(f"{FOLDER_PREFIX}{os.getpid()}-")
    assert not os.path.exists(folder)


def test_the_folder_goes_when_the_run_is_cancelled(tmp_path, made_folders):
    process = ScriptProcess(_script(tmp_path, STARTED + "import time\ntime.sleep(600)\n"))
    process.start()
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline and process.running, "the script never started"
        time.sleep(0.02)
    process.cancel()
    assert process.wait(60)
    assert process.result.cancelled
    (folder,) = made_folders
    assert not os.path.exists(folder)


def test_the_worker_removes_the_folder_when_the_app_is_killed(tmp_path):
    script = _script(tmp_path, STARTED + "import time\ntime.sleep(600)\n")
    app = textwrap.dedent(
        f"""
        import os, signal, time, pathlib
        from viewer.model.scripts.process import ScriptProcess
        process = ScriptProcess({str(script)!r})
        process.start()
        while not pathlib.Path({str(tmp_path / "started")!r}).exists():
            time.sleep(0.02)
        print(process._folder, process.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no finally runs: as a crash of the app
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", app], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    folder, worker = done.stdout.split()
    deadline = time.monotonic() + 60
    while os.path.exists(folder):
        assert time.monotonic() < deadline, f"{folder} is still there"
        time.sleep(0.05)
    while True:  # and the worker itself ended
        try:
            os.kill(int(worker), 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the worker outlived the app"
        time.sleep(0.05)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_start_up_removes_only_old_folders_of_runs_no_longer_alive(tmp_path):
    now = time.time()
    old = now - STALE_FOLDER_AGE_S - 60
    dead, alive = _dead_pid(), os.getpid()

    def folder(name, mtime):
        path = tmp_path / name
        path.mkdir()
        (path / "trace.npz").write_bytes(b"x" * 1000)
        os.utime(path, (mtime, mtime))
        return path

    gone = [folder(f"{FOLDER_PREFIX}{dead}-abc", old), folder(f"{FOLDER_PREFIX}old_name", old)]
    kept = [
        folder(f"{FOLDER_PREFIX}{alive}-abc", old),  # its app still runs
        folder(f"{FOLDER_PREFIX}{dead}-young", now - 60),  # may still be read
        folder("someone-else", old),
    ]
    stray_file = tmp_path / f"{FOLDER_PREFIX}{dead}-file"
    stray_file.write_text("not a folder")
    os.utime(stray_file, (old, old))
    target = folder("target", old)
    link = tmp_path / f"{FOLDER_PREFIX}{dead}-link"
    link.symlink_to(target)
    os.utime(link, (old, old), follow_symlinks=False)

    removed = remove_stale_folders(str(tmp_path), now=now)
    assert sorted(removed) == sorted(str(p) for p in gone)
    for path in gone:
        assert not path.exists()
    for path in [*kept, stray_file, link, target]:
        assert path.exists() or path.is_symlink()
    assert (target / "trace.npz").exists()  # a link is not followed


def test_the_app_removes_stale_folders_when_it_starts(tmp_path, monkeypatch):
    from viewer import app

    seen = []
    monkeypatch.setattr(script_process, "remove_stale_folders", lambda: seen.append(1))
    assert app.main(["--export", str(tmp_path / "x.png"), "nope.expr"]) != 0
    assert seen == [1]
