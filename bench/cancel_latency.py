"""How soon Cancel ends a run and how soon a quiet script's last line shows: the claims the
tests state without timing them (a busy machine would fail them), as medians of several runs.

    python bench/cancel_latency.py [--runs 7]

1. A script in its worker process (``ScriptProcess``), started and waiting in ``time.sleep``,
   one in an engine loop and one in a torch training loop (when torch is installed): from
   ``cancel()`` to its result read back (``wait()``), the cancelled run keeping its graphs,
   the last pass logged with its own; target: under 1 s.
2. A typed program on the window's worker (``ThreadRunner``, five nested ``grad()`` calls
   and a budget it spends op by op): from Cancel to the Document's ``program_finished`` on the
   GUI thread, the previous graph still shown; target: under 1 s.
3. A quiet script's last line, printed without a newline flush and followed by a long sleep:
   from the script's ``print`` (its ``time.monotonic()``, the same clock in every process
   here) to ``output_written`` in the app, for ``ScriptProcess`` and for the in-process
   ``ScriptRun``; target: under 0.45 s (the batching never holds a line until the end).

Times are wall-clock seconds: median, then min and max, of ``--runs``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SLEEPING = """
import pathlib, time
import numpy as np
import autodiff.functions as F
from autodiff import Variable
y = F.sum(Variable(np.ones(3), name="x") * 2.0)
y.backward()
pathlib.Path({started!r}).write_text("yes")
time.sleep(600)
"""

ENGINE_LOOP = """
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
    if i == 100:
        pathlib.Path({started!r}).write_text("yes")
"""

TORCH_LOOP = """
import pathlib
import torch
lin = torch.nn.Linear(4, 1)
x = torch.randn(8, 4)
i = 0
while True:
    lin.zero_grad()
    lin(x).pow(2).mean().backward()
    i += 1
    if i == 100:
        pathlib.Path({started!r}).write_text("yes")
"""

QUIET = """
import time
print("first", flush=True)
print("last", time.monotonic())
time.sleep(3)
"""

PROGRAM = "x = 2.0\ny = x ** 6\n" + "\n".join(
    f"g{i} = grad({'y' if i == 1 else f'g{i - 1}'}, x)" for i in range(1, 10)
)


def _summary(times: list[float]) -> str:
    return (
        f"median {statistics.median(times):6.3f} s  "
        f"(min {min(times):.3f}, max {max(times):.3f}, n={len(times)})"
    )


def script_cancel(runs: int, folder: Path) -> None:
    from viewer.model.scripts.process import ScriptProcess

    print("1. a script in its worker process: Cancel to its result read back")
    cases = [("time.sleep(600)", SLEEPING), ("engine loop", ENGINE_LOOP)]
    try:
        import torch  # noqa: F401

        cases.append(("torch loop", TORCH_LOOP))
    except ImportError:
        print("   (torch loop: torch is not installed)")
    for what, body in cases:
        times = []
        torn = 0
        unclean: list[str] = []
        for k in range(runs):
            started = folder / f"started-{what[:4]}-{k}"
            path = folder / "script.py"
            path.write_text(textwrap.dedent(body.format(started=str(started))))
            run = ScriptProcess(path)
            run.start()
            deadline = time.monotonic() + 60
            while not started.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            began = time.perf_counter()
            run.cancel()
            if not run.wait(30):
                raise SystemExit(f"{what}: still running 30 s after Cancel")
            times.append(time.perf_counter() - began)
            result = run.result
            if not result.cancelled or "did not stop" in result.summary:
                unclean.append(result.summary)  # (counted and shown: a bench reports)
            elif body is not SLEEPING and result.graphs[-1].number != len(result.passes) - 1:
                torn += 1  # the Cancel split a pass's end: its log entry without its graph
        print(
            f"   {what:18s} {_summary(times)}  not a clean cancel: {len(unclean)}/{runs}, "
            f"last pass without its graph: {torn}/{runs}"
        )
        for summary in unclean[:3]:
            print(f"      {summary}")


def program_cancel(runs: int) -> None:
    from PySide6 import QtCore, QtWidgets

    from viewer.model.document import work
    from viewer.qt.main_window import MainWindow

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    print("2. a typed program on the window's worker: Cancel to the Document's program_finished")
    on_worker = threading.Event()
    run_program = work.run_program

    def marked(expression_job, progress, should_cancel):
        on_worker.set()
        run_program(expression_job, progress, should_cancel)

    work.run_program = marked
    times = []
    try:
        for _ in range(runs):
            window = MainWindow(restore=False)
            window.runner.show_dialog = False
            before = window.document.trace
            ended = []
            window.document.program_finished.connect(
                lambda _shown, ended=ended: ended.append(time.perf_counter())
            )
            on_worker.clear()
            window.editor_binding.run(PROGRAM)
            if not on_worker.wait(30):
                raise SystemExit("the program never reached its worker")
            time.sleep(0.2)  # well into the run
            began = time.perf_counter()
            window.document.cancel_expression()
            deadline = time.monotonic() + 30
            while not ended and time.monotonic() < deadline:
                app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 5)
            if not ended or window.document.trace is not before:
                raise SystemExit("the program was not cancelled")
            times.append(ended[0] - began)
            window.close()
            window.deleteLater()
            app.processEvents()
    finally:
        work.run_program = run_program
    print(f"   {'nested grad()':18s} {_summary(times)}")


def last_line(runs: int, folder: Path) -> None:
    from viewer.model.scripts.process import ScriptProcess
    from viewer.model.scripts.run import ScriptRun

    print("3. a quiet script's last line: its print to output_written")
    path = folder / "quiet.py"
    path.write_text(QUIET)
    for label, runner in (("ScriptProcess", ScriptProcess), ("ScriptRun", ScriptRun)):
        times = []
        for _ in range(runs):
            run = runner(path)
            arrived: list[float] = []
            text: list[str] = []

            def written(chunk, arrived=arrived, text=text):
                text.append(chunk)
                if "last" in chunk:
                    arrived.append(time.monotonic())

            run.output_written.connect(written)
            run.start()
            run.wait(60)
            stamp = float("".join(text).split("last", 1)[1].split()[0])
            times.append(arrived[0] - stamp)
        print(f"   {label:18s} {_summary(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="cancel-latency-"))
    script_cancel(args.runs, folder)
    program_cancel(args.runs)
    last_line(args.runs, folder)


if __name__ == "__main__":
    main()
