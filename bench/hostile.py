"""Hostile-input benchmark (issue 11): what bad files and runaway scripts cost the app.

    python bench/hostile.py             # everything (about a minute)
    python bench/hostile.py --quick     # smaller sizes

Side by side in one run:

1. Refusing a JSON "trace" that is 120 MB of ``[[],[],...]``: time and peak memory of
   ``trace.load`` (which refuses it before parsing) against parsing it first, as the loader
   did before (``json.loads``), each in a fresh process; target: peak below 3x the file size.
2. The app's event-loop stall while a script prints 10 MB in small writes: the longest gap
   between the ticks of a 5 ms timer, the script run in its worker process (now) and on a
   thread of the app (before); target: no stall over 100 ms.
3. The process's memory after a cancelled long training run, against before it (target:
   back within 50 MB), for both runners.
4. Time from Cancel to an idle app for a CPU-bound script, a sleeping one and one that
   catches BaseException (target: under 1 s), for both runners.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _in_fresh_process(code: str) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of ``code`` run in a new interpreter."""
    body = textwrap.indent(textwrap.dedent(code).strip(), "    ")
    wrapper = "\n".join(
        [
            "import resource, sys, time",
            f"sys.path.insert(0, {str(ROOT)!r})",
            "t0 = time.perf_counter()",
            "try:",
            body,
            "except Exception:",
            "    pass",
            "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024",
            "print(time.perf_counter() - t0, peak)",
        ]
    )
    out = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True)
    seconds, peak = out.stdout.split()[-2:]
    return float(seconds), float(peak)


def dense_json(mb: int) -> None:
    path = Path(tempfile.mkdtemp()) / "dense.json"
    count = mb * 1_000_000 // 3
    with open(path, "w") as f:
        f.write('{"format": "autodiff-trace", "schema_version": 2, "x": [')
        f.write("[]," * (count - 1) + "[]]}")
    size = path.stat().st_size / 1e6
    _, base_peak = _in_fresh_process("import autodiff.trace")
    load_t, load_peak = _in_fresh_process(f"from autodiff import trace\ntrace.load({str(path)!r})")
    parse_t, parse_peak = _in_fresh_process(f"import json\njson.load(open({str(path)!r}))")
    print(f"1. refusing a {size:.0f} MB [[],[],...] file (peak RSS of a fresh process)")
    print(f"   interpreter + autodiff alone     {base_peak:8.0f} MB")
    print(
        f"   trace.load (refused)      {load_t:6.2f} s {load_peak:8.0f} MB  "
        f"({(load_peak - base_peak) / size:.1f}x the file)"
    )
    print(
        f"   json.load first (before)  {parse_t:6.2f} s {parse_peak:8.0f} MB  "
        f"({(parse_peak - base_peak) / size:.1f}x the file)"
    )
    path.unlink()


def _in_process(path, argv=None, max_array_size=4096, memory_mb=None):
    """The runner scripts had before the worker process: a thread of the app's own."""
    from viewer.model.scripts.run import ScriptRun

    return ScriptRun(path, argv, max_array_size=max_array_size)


RUNNERS = ("worker process (now)", "in-process (before)")


def _use_runner(label: str) -> None:
    from viewer.model.document import script_loader
    from viewer.model.scripts.process import ScriptProcess

    script_loader.ScriptProcess = ScriptProcess if label == RUNNERS[0] else _in_process


def output_stall(megabytes: int) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6 import QtCore, QtWidgets

    from viewer.qt.main_window import MainWindow

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    folder = Path(tempfile.mkdtemp())
    # the benchmark's windows keep their settings here, never in the user's file
    for scope in (QtCore.QSettings.Scope.UserScope, QtCore.QSettings.Scope.SystemScope):
        for fmt in (QtCore.QSettings.Format.IniFormat, QtCore.QSettings.Format.NativeFormat):
            QtCore.QSettings.setPath(fmt, scope, str(folder))
    os.environ["XDG_CONFIG_HOME"] = str(folder)
    script = folder / "prints.py"
    lines = megabytes * 1_000_000 // 50
    script.write_text(f"for i in range({lines}):\n    print('x' * 49)\n")
    print(f"2. event-loop stall while a script prints {megabytes} MB in 50-byte lines")
    for label in RUNNERS:
        _use_runner(label)
        window = MainWindow()
        window.show()
        gaps = []
        last = [time.perf_counter()]

        def tick(gaps=gaps, last=last) -> None:
            now = time.perf_counter()
            gaps.append(now - last[0])
            last[0] = now

        timer = QtCore.QTimer()
        timer.timeout.connect(tick)
        timer.start(5)
        began = time.perf_counter()
        window.open_path(script, confirm_scripts=False)
        while window.document.script_run is not None and window.document.script_run.running:
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
        for _ in range(200):  # let the queued output drain
            app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 50)
        took = time.perf_counter() - began
        timer.stop()
        gaps.sort()
        print(
            f"   {label:22s} longest stall {gaps[-1] * 1000:5.0f} ms, 99th percentile "
            f"{gaps[int(len(gaps) * 0.99)] * 1000:4.0f} ms   run + drain {took:.1f} s"
        )
        window.close()
        window.deleteLater()
        app.processEvents()
    _use_runner(RUNNERS[0])


def cancel_to_idle() -> None:
    from viewer.model.scripts.process import ScriptProcess

    folder = Path(tempfile.mkdtemp())
    scripts = {
        "CPU-bound loop": "x = 0\nwhile True:\n    x += 1\n",
        "time.sleep(600)": "import time\ntime.sleep(600)\n",
        "catches BaseException": (
            "import time\nwhile True:\n    try:\n        time.sleep(0.01)\n"
            "    except BaseException:\n        pass\n"
        ),
        "engine loop": (
            "import numpy as np\nfrom autodiff import Variable\nimport autodiff.functions as F\n"
            "x = Variable(np.array(0.5))\nwhile True:\n    y = F.sin(x) * x\n    y.backward()\n"
        ),
    }
    print("4. time from Cancel to the run's end, result read (median of 3)")
    for runner, label in ((ScriptProcess, RUNNERS[0]), (_in_process, RUNNERS[1])):
        print(f"   {label}")
        for what, body in scripts.items():
            path = folder / "s.py"
            path.write_text(body)
            times = []
            for _ in range(3 if runner is ScriptProcess else 1):
                run = runner(path)
                run.start()
                time.sleep(1.0)
                began = time.perf_counter()
                run.cancel()
                ended = run.wait(5.0)
                times.append(time.perf_counter() - began if ended else None)
            if None in times:
                state = "still running after 5 s"
            else:
                state = f"{sorted(times)[len(times) // 2]:5.2f} s"
            print(f"     {what:24s} {state}")


def memory_after_cancel(seconds: float) -> None:
    import gc

    from viewer.model import Document

    folder = Path(tempfile.mkdtemp())
    path = folder / "long.py"
    path.write_text(
        "import numpy as np\nfrom autodiff import Variable\nimport autodiff.functions as F\n"
        "x = Variable(np.array(0.5), name='x')\nwhile True:\n"
        "    x.cleargrad()\n    y = F.sin(x) * x\n    y.backward()\n"
    )
    print(f"3. memory around a cancelled {seconds:.0f} s training loop")
    for label in RUNNERS:  # the worker first: the in-process run leaves its memory behind
        _use_runner(label)
        gc.collect()
        before = _rss_mb()
        doc = Document()
        run = doc.prepare_script(path)
        run.start()
        time.sleep(seconds)
        peak = _rss_mb()
        began = time.perf_counter()
        run.cancel()
        run.wait(30)
        took = time.perf_counter() - began
        doc.apply_script_result(run.result)
        shown = _rss_mb()
        trace = run.result.trace
        n = len(trace.steps) if trace is not None else 0
        del run, trace  # the app keeps no reference to a finished run
        doc.run_expression("y = x * 2")  # the next document replaces the run
        after = _rss_mb()
        print(f"   {label}: {n} steps came back, {took:.1f} s from Cancel to the result")
        print(f"     before {before:.0f} MB, at the cancel {peak:.0f} MB, shown {shown:.0f} MB,")
        print(f"     after opening an expression {after:.0f} MB ({after - before:+.0f} MB)")
    _use_runner(RUNNERS[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    dense_json(12 if args.quick else 120)
    output_stall(1 if args.quick else 10)
    memory_after_cancel(2 if args.quick else 8)
    cancel_to_idle()  # last: the runs it cannot stop go on recording in this process


if __name__ == "__main__":
    main()
