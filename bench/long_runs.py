"""Long runs in the app: memory and time of a 300 000-pass script, with and without the viewer.

    python bench/long_runs.py [--passes 300000] [--runs 3] [--max-passes 1000] [--json FILE]

The script is a tiny scalar training loop (``y = (x * x).sum(); x.cleargrad(); y.backward()``
and an update, ``--passes`` times). Side by side, alternating run by run:

* **plain**: ``python script.py`` in a subprocess, no viewer, no recording;
* **app**: a fresh interpreter opens it as the app does, ``Document.run_script`` (the script in
  its worker process, recording on, a sample of ``--max-passes`` graphs kept), and the first
  graph's layout.

Memory is read from ``/proc/<pid>/status`` (no psutil): the peak resident size (``VmHWM``) of
the plain script, of the app's worker (the script prints its own at its end) and of the app's
process, and the app's growth (``VmRSS`` after the run minus before it). The target: the app
holds within 100 MB of what the script alone does (its growth under 100 MB), whatever the
length of the run. Times are wall-clock seconds, medians of ``--runs``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MB = 100.0

SCRIPT = """
import numpy as np
from autodiff import Variable

x = Variable(np.array(1.5), name="x")
for i in range({passes}):
    y = (x * x).sum()
    y.name = "loss"
    x.cleargrad()
    y.backward()
    x.data = x.data - 1e-6 * x.grad.data


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])


print("peak_kb", status("VmHWM"), "rss_kb", status("VmRSS"))
"""

APP = """
import json, sys, time
sys.path.insert(0, {root!r})


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])


from viewer.model.document.document import Document

doc = Document()
doc.script_max_passes = {max_passes}
before = status("VmRSS")
began = time.perf_counter()
ok = doc.run_script({path!r})
wall = time.perf_counter() - began
result = doc.script_result
worker = [int(w) for w in result.stdout.split() if w.isdigit()]
print(json.dumps({{
    "ok": ok and result.ok,
    "wall_s": wall,
    "before_kb": before,
    "after_kb": status("VmRSS"),
    "peak_kb": status("VmHWM"),
    "worker_peak_kb": worker[0] if worker else None,
    "graphs": len(result.graphs),
    "passes": len(result.passes) if result.passes is not None else 0,
    "sampling": result.sampling,
}}))
"""


def run_plain(path: Path) -> dict:
    began = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT)},
    ).stdout.split()
    return {"wall_s": time.perf_counter() - began, "peak_kb": int(out[1])}


def run_app(path: Path, max_passes: int) -> dict:
    code = APP.format(root=str(ROOT), path=str(path), max_passes=max_passes)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--passes", type=int, default=300_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--max-passes", type=int, default=1000)
    p.add_argument("--json", help="write the figures to this file")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "long_loop.py"
        path.write_text(textwrap.dedent(SCRIPT.format(passes=args.passes)))
        plain: list[dict] = []
        app: list[dict] = []
        for k in range(args.runs):
            order = (run_plain, run_app) if k % 2 == 0 else (run_app, run_plain)
            for run in order:
                if run is run_plain:
                    plain.append(run_plain(path))
                else:
                    app.append(run_app(path, args.max_passes))
                    if not app[-1]["ok"]:
                        print("the app's run failed", app[-1], file=sys.stderr)
                        return 1

    def med(rows: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    mb = 1 / 1024
    figures = {
        "passes": args.passes,
        "runs": args.runs,
        "max_passes": args.max_passes,
        "plain_wall_s": med(plain, "wall_s"),
        "plain_peak_mb": med(plain, "peak_kb") * mb,
        "app_wall_s": med(app, "wall_s"),
        "app_worker_peak_mb": med(app, "worker_peak_kb") * mb,
        "app_peak_mb": med(app, "peak_kb") * mb,
        "app_before_mb": med(app, "before_kb") * mb,
        "app_growth_mb": statistics.median((r["after_kb"] - r["before_kb"]) * mb for r in app),
        "graphs_kept": app[-1]["graphs"],
        "passes_logged": app[-1]["passes"],
        "sampling": app[-1]["sampling"],
    }
    figures["worker_over_plain_mb"] = figures["app_worker_peak_mb"] - figures["plain_peak_mb"]
    print(f"{args.passes:,} backward passes, medians of {args.runs} runs")
    print(f"{'':28}{'wall s':>10}{'peak MB':>10}")
    print(f"{'plain python':28}{figures['plain_wall_s']:>10.1f}{figures['plain_peak_mb']:>10.1f}")
    print(
        f"{'app: the worker (script)':28}{figures['app_wall_s']:>10.1f}"
        f"{figures['app_worker_peak_mb']:>10.1f}"
    )
    print(f"{'app: its own process':28}{'':>10}{figures['app_peak_mb']:>10.1f}")
    print(
        f"app growth over the run: {figures['app_growth_mb']:+.1f} MB "
        f"(from {figures['app_before_mb']:.0f} MB); the worker over plain python: "
        f"{figures['worker_over_plain_mb']:+.1f} MB (target: within {TARGET_MB:.0f} MB)"
    )
    print(f"{figures['sampling']}; {figures['passes_logged']:,} passes plotted")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    ok = figures["app_growth_mb"] <= TARGET_MB and figures["worker_over_plain_mb"] <= TARGET_MB
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
