"""A script's output reaches the UI in batches (issue 11): printing 10 MB in small writes
sends a few dozen signals, the panel gets at most a million characters, the result keeps its
cap, a quiet script's last line still arrives, and streams the script replaced are restored."""

import sys
import textwrap

from viewer.model.scripts.run import _MAX_CAPTURE, _MAX_SHOWN, ScriptRun


def _script(tmp_path, body: str):
    path = tmp_path / "s.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_ten_megabytes_in_small_writes(tmp_path):
    path = _script(tmp_path, "for i in range(200_000):\n    print('x' * 49)\n")
    run = ScriptRun(path)
    chunks = []
    run.output_written.connect(chunks.append)
    result = run.run()
    assert result.ok
    assert len(chunks) < 400  # 200 000 writes
    shown = sum(len(c) for c in chunks)
    assert _MAX_SHOWN <= shown < _MAX_SHOWN + 500 and "the panel shows" in chunks[-1]
    assert len(result.stdout) == _MAX_CAPTURE


def test_a_quiet_script_s_last_line_arrives_while_it_runs(tmp_path):
    # the script waits until the test saw its last line: were the line held until the script
    # ended, the script would give up waiting and say so
    release = tmp_path / "release"
    path = _script(
        tmp_path,
        f"""
        import pathlib, time
        print("first", flush=True)
        print("second")
        release = pathlib.Path({str(release)!r})
        for _ in range(6000):  # 60 s
            if release.exists():
                print("released")
                break
            time.sleep(0.01)
        else:
            print("never released")
        """,
    )
    run = ScriptRun(path)
    seen = []

    def written(text):
        seen.append(text)
        if "second" in "".join(seen):
            release.touch()

    run.output_written.connect(written)
    result = run.run()
    assert result.ok, result.error
    assert result.stdout == "first\nsecond\nreleased\n"
    assert "".join(seen) == result.stdout


def test_streams_the_script_replaced_are_restored(tmp_path):
    before = sys.stdout, sys.stderr
    path = _script(tmp_path, "import io, sys\nsys.stdout = io.StringIO()\nsys.stderr = None\n")
    assert ScriptRun(path).run().ok
    assert (sys.stdout, sys.stderr) == before


def test_os_exit_ends_the_script_not_the_app(tmp_path):
    import os

    real = os._exit
    path = _script(tmp_path, "import os\nprint('before')\nos._exit(7)\nprint('never')\n")
    result = ScriptRun(path).run()
    assert result.exit_code == 7 and not result.ok
    assert "before" in result.stdout and "never" not in result.stdout
    assert os._exit is real


def test_the_app_ends_past_a_thread_a_script_left_running(tmp_path):
    import subprocess

    root = str(__import__("pathlib").Path(__file__).resolve().parents[3])
    code = (
        "import threading, time, sys\n"
        f"sys.path.insert(0, {root!r})\n"
        "threading.Thread(target=time.sleep, args=(600,), name='stuck').start()\n"
        "from viewer.app import finish\n"
        "finish(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert "ending past 1 running thread(s): stuck" in done.stderr
