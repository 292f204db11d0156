"""Heavy scripts in the app: wall time and memory of four scripts, plain python against the app.

    python bench/heavy_scripts.py [--flood-ops 200000] [--full] [--only NAME ...] [--repeat N]
                                  [--json FILE]

The four scripts of issue 25, each run once both ways:

* **flood**: ``--flood-ops`` throwaway ops (``F.sin(x)`` in a loop, no backward reaches
  them), then 5 training steps;
* **evaluation**: 60 epochs of training a small MLP, each followed by 100 evaluation
  forwards that forget ``no_grad()``;
* **tiny passes**: 150 000 passes of ``y = x * x; y.backward()``;
* **sine**: ``resources/examples/sine_regression.py`` as bundled.

The default flood is 200 000 ops so the whole bench takes about a minute; ``--full`` runs the
issue's sizes (1 000 000 ops).

* **plain**: ``python script.py`` in a subprocess; its peak resident size is the child's
  ``ru_maxrss`` (``os.wait4``).
* **app**: a fresh interpreter opens it as the app does, ``Document.run_script`` without Qt:
  the script in its worker process, recorded, the result read back and its last graph laid
  out and installed (**app s**, **ratio**: what the user waits for to see the graph, from
  the start, as ``--yes`` runs it). **asked**: the same ratio as the window runs a script: it
  asks first, the worker starts while the question is open (``ScriptProcess.warm_up``), the
  answer comes after 1 s and the time counts from it. The
  worker then looks for problems and sends their report, which a thread awaits as the
  window's runner does: **report** is the time until it came, over plain python's. The app
  does not keep the worker's resource usage, so its peak is read here as that interpreter's
  ``RUSAGE_CHILDREN`` ``ru_maxrss`` (the worker is its only child, read once it ended). The
  app's growth is its ``VmRSS`` after the run (result still held, as the window holds it)
  minus before; its peak growth is its ``ru_maxrss`` after minus its ``VmRSS`` before.

Times are wall-clock seconds of one run each, or with ``--repeat N`` the median of N runs
(plain and app alternate, so a busy machine weighs on both alike); ratios are app over plain
(the median of the runs' ratios). The **cpu ratio** is the same over CPU seconds (user and
system: the plain child's; the app's interpreter with its worker, from the app's start on),
which a machine busy with other work changes less than wall time; the app's path runs on
more than one thread and process, so on an idle machine its wall time can be below its CPU
time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SINE = ROOT / "resources" / "examples" / "sine_regression.py"

FLOOD = """
import numpy as np
import autodiff.functions as F
from autodiff import Variable

x = Variable(np.array(1.0), name="x")
for i in range({ops}):
    F.sin(x)  # thrown away: no backward reaches it
for step in range(5):
    loss = F.sin(x) * x
    x.cleargrad()
    loss.backward()
    x.data = x.data - 0.01 * x.grad.data
"""

EVALUATION = """
import numpy as np
import autodiff.functions as F
from autodiff import datasets, models, optimizers

x, t = datasets.get_sine()
x_test, t_test = x[::2], t[::2]
model = models.MLP((10, 1))
optimizer = optimizers.SGD(0.2).setup(model)
for epoch in range({epochs}):
    loss = F.mean_squared_error(t, model(x))
    model.cleargrads()
    loss.backward()
    optimizer.update()
    for k in range({forwards}):  # evaluation without no_grad(): each forward builds a graph
        test_loss = F.mean_squared_error(t_test, model(x_test))
"""

TINY = """
import numpy as np
from autodiff import Variable

x = Variable(np.array(1.5), name="x")
for i in range({passes}):
    y = x * x
    x.cleargrad()
    y.backward()
"""

APP = """
import json, resource, sys, time
sys.path.insert(0, {root!r})


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])


import threading
from viewer.model.document.document import Document
from viewer.model.document.work import Outcome


class Runner:
    # The window's runner, without Qt: the problem report (which the worker sends after its
    # result) is awaited on a thread, as the window does; other work runs in place.

    def __init__(self):
        self.threads = []

    def submit(self, work):
        def go():
            try:
                got = work.function(*work.args, lambda *a: None, lambda: False)
                out = Outcome("succeeded", got)
            except BaseException as e:
                out = Outcome("failed", error=e)
            work.finish(out)

        if work.kind != "problems":
            return go()
        thread = threading.Thread(target=go)
        thread.start()
        self.threads.append(thread)

    def cancel(self, kind):
        pass


doc = Document()
doc.runner = runner = Runner()
before = status("VmRSS")
cpu_before = sum(
    u.ru_utime + u.ru_stime
    for u in (resource.getrusage(resource.RUSAGE_SELF),
              resource.getrusage(resource.RUSAGE_CHILDREN))
)
if {dialog!r} > 0:
    # as the window runs it: the worker starts while the user reads the question (warm_up),
    # and the time counts from the answer
    run = doc.prepare_script({path!r})
    run.warm_up()
    time.sleep({dialog!r})
    began = time.perf_counter()
    ok = doc.apply_script_result(run.run())
else:
    began = time.perf_counter()
    ok = doc.run_script({path!r})
wall = time.perf_counter() - began  # the graph is on screen
for thread in runner.threads:
    thread.join()
report = time.perf_counter() - began  # and the Problems panel has the report
result = doc.script_result
print(json.dumps({{
    "ok": bool(ok and result is not None and result.ok),
    "error": None if doc.last_error is None else str(doc.last_error),
    "wall_s": wall,
    "report_s": report,
    "report": doc.problem_report is not None,
    "before_kb": before,
    "after_kb": status("VmRSS"),
    "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "worker_peak_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    "cpu_s": sum(
        u.ru_utime + u.ru_stime
        for u in (resource.getrusage(resource.RUSAGE_SELF),
                  resource.getrusage(resource.RUSAGE_CHILDREN))
    ) - cpu_before,
    "graphs": 0 if result is None else len(result.graphs),
    "sampling": "" if result is None else result.sampling,
}}))
"""


def scripts(flood_ops: int) -> list[tuple[str, str, str | None]]:
    """(name, description, source; None: the bundled sine example as it is)."""
    return [
        (
            "flood",
            f"{flood_ops:,} throwaway ops, then 5 training steps",
            FLOOD.format(ops=flood_ops),
        ),
        (
            "evaluation",
            "60 epochs, each with 100 evaluation forwards without no_grad",
            EVALUATION.format(epochs=60, forwards=100),
        ),
        ("tiny", "150,000 tiny passes (y = x * x; y.backward())", TINY.format(passes=150_000)),
        ("sine", "resources/examples/sine_regression.py", None),
    ]


def run_plain(path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=path.parent,
        env=env,
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{path.name} failed under plain python: {err.decode()[-2000:]}")
    return {"wall_s": wall, "peak_kb": usage.ru_maxrss, "cpu_s": usage.ru_utime + usage.ru_stime}


DIALOG_S = 1.0  # how long the user takes to answer "Run this script?" (the confirmed runs)


def run_app(path: Path, dialog: float = 0.0) -> dict:
    """The app's path in a fresh interpreter; ``dialog`` > 0: confirmed after that long, the
    worker started while the question is open, the time counted from the answer."""
    code = APP.format(root=str(ROOT), path=str(path), dialog=float(dialog))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--flood-ops", type=int, default=200_000, help="the flood's throwaway ops")
    p.add_argument("--full", action="store_true", help="the issue's sizes (1 000 000 ops)")
    p.add_argument("--only", nargs="*", help="run only these (flood, evaluation, tiny, sine)")
    p.add_argument("--repeat", type=int, default=1, help="runs of each, medians reported")
    p.add_argument("--json", help="write the figures to this file")
    args = p.parse_args(argv)
    flood_ops = 1_000_000 if args.full else args.flood_ops
    rows = []
    failed = False
    mb = 1 / 1024
    with tempfile.TemporaryDirectory() as folder:
        for name, description, source in scripts(flood_ops):
            if args.only and name not in args.only:
                continue
            if source is None:
                path = SINE
            else:
                path = Path(folder) / f"{name}.py"
                path.write_text(textwrap.dedent(source).lstrip())
            plains, apps, confirmed = [], [], []
            for _ in range(max(1, args.repeat)):
                plains.append(run_plain(path))
                apps.append(run_app(path))
                confirmed.append(run_app(path, DIALOG_S))
            plain, app = plains[-1], apps[-1]
            if not all(a["ok"] and a["report"] for a in apps + confirmed):
                print(f"{name}: the app's run failed: {app['error']}", file=sys.stderr)
                failed = True
            rows.append(
                {
                    "name": name,
                    "script": description,
                    "runs": len(apps),
                    "plain_wall_s": statistics.median(p["wall_s"] for p in plains),
                    "plain_peak_mb": plain["peak_kb"] * mb,
                    "app_wall_s": statistics.median(a["wall_s"] for a in apps),
                    "app_report_s": statistics.median(a["report_s"] for a in apps),
                    "report_ratio": statistics.median(
                        a["report_s"] / p["wall_s"] for p, a in zip(plains, apps, strict=True)
                    ),
                    "ratio": statistics.median(
                        a["wall_s"] / p["wall_s"] for p, a in zip(plains, apps, strict=True)
                    ),
                    "confirmed_wall_s": statistics.median(c["wall_s"] for c in confirmed),
                    "confirmed_ratio": statistics.median(
                        c["wall_s"] / p["wall_s"] for p, c in zip(plains, confirmed, strict=True)
                    ),
                    "cpu_ratio": statistics.median(
                        a["cpu_s"] / p["cpu_s"] for p, a in zip(plains, apps, strict=True)
                    ),
                    "plain_walls_s": [p["wall_s"] for p in plains],
                    "app_walls_s": [a["wall_s"] for a in apps],
                    "worker_peak_mb": app["worker_peak_kb"] * mb,
                    "app_growth_mb": (app["after_kb"] - app["before_kb"]) * mb,
                    "app_peak_growth_mb": (app["peak_kb"] - app["before_kb"]) * mb,
                    "app_before_mb": app["before_kb"] * mb,
                    "graphs": app["graphs"],
                    "sampling": app["sampling"],
                }
            )
            r = rows[-1]
            print(
                f"{name}: plain {r['plain_wall_s']:.1f} s, app {r['app_wall_s']:.1f} s (asked "
                f"first: {r['confirmed_wall_s']:.1f} s), report {r['app_report_s']:.1f} s",
                flush=True,
            )

    header = (
        f"{'script':<62}{'plain s':>9}{'app s':>8}{'ratio':>8}{'asked':>8}{'report':>8}"
        f"{'cpu ratio':>10}"
        f"{'plain MB':>10}"
        f"{'worker MB':>11}{'app +MB':>9}{'app peak +MB':>14}"
    )
    print()
    print(header)
    for r in rows:
        print(
            f"{r['script']:<62}{r['plain_wall_s']:>9.1f}{r['app_wall_s']:>8.1f}"
            f"{r['ratio']:>7.1f}x{r['confirmed_ratio']:>7.1f}x{r['report_ratio']:>7.1f}x"
            f"{r['cpu_ratio']:>9.1f}x"
            f"{r['plain_peak_mb']:>10.0f}"
            f"{r['worker_peak_mb']:>11.0f}"
            f"{r['app_growth_mb']:>9.0f}{r['app_peak_growth_mb']:>14.0f}"
        )
    print()
    for r in rows:
        print(f"{r['name']}: {r['graphs']} graphs kept; {r['sampling'] or 'no sampling note'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"flood_ops": flood_ops, "rows": rows}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
