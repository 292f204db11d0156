"""The shared-input ("hub") graph: what opening it costs, layout and scene, at several sizes.

    python bench/hub_layout.py                       # n = 1000, 2000, 4000
    python bench/hub_layout.py --sizes 1000 2000 --base HEAD~3 --timeout 120

The graph is ``for i in range(n): y = F.sin(y) + x * 0.001`` then ``y.backward()``, recorded
in process with ``autodiff.trace.record``: the leaf ``x`` feeds every step, so each of its
edges spans more layers than the one before. Each (version, n) runs in its own subprocess, so
one size's peak memory does not hide another's: the child records the trace, then times
``compute_layout`` and the ``Scene`` built from it (what ``first_scene`` does when a graph
opens), and reports the layout's node count (virtual nodes included), its time and the peak
resident memory of the whole child (``ru_maxrss``, recording included).

``--base REF`` also runs that commit's ``autodiff`` and ``viewer`` (``git archive`` into a
temporary folder put first on the child's path), in the same run, before each size's row of
this tree. A child that runs past ``--timeout`` seconds is reported as such.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(n: int) -> None:
    """Record the hub graph of ``n`` steps, lay it out and build its scene; print a JSON row."""
    import resource
    import time

    import numpy as np

    import autodiff.functions as F
    from autodiff import trace as trace_module
    from autodiff.core import Variable
    from viewer.model.layout import layered
    from viewer.model.layout.compute import compute_layout
    from viewer.model.scene.build import scene_of

    with trace_module.record() as t:
        x = Variable(np.array(0.5), name="x")
        y = Variable(np.array(1.0), name="y0")
        for _ in range(n):
            y = F.sin(y) + x * 0.001
        y.backward()
    counted: dict[str, int] = {}
    original = layered.layered_layout

    def counting(*args: object, **kwargs: object) -> layered.Layout:
        result = original(*args, **kwargs)
        counted["nodes"] = result.n_nodes + result.n_virtual
        return result

    layered.layered_layout = counting
    start = time.perf_counter()
    layout = compute_layout(t)
    laid = time.perf_counter()
    scene_of(t, layout, "light")
    done = time.perf_counter()
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    row = {
        "n": n,
        "graph_nodes": len(t.variables) + len(t.functions),
        "layout_nodes": counted.get("nodes", -1),
        "layout_s": laid - start,
        "scene_s": done - laid,
        "total_s": done - start,
        "peak_mb": peak_kb / 1024,
    }
    print(json.dumps(row))


def run_child(n: int, path: Path, timeout: float) -> dict[str, object]:
    env_path = str(path)
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(n)]
    import os

    env = dict(os.environ, PYTHONPATH=env_path, QT_QPA_PLATFORM="offscreen")
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=env, cwd=path
        )
    except subprocess.TimeoutExpired:
        return {"n": n, "error": f"over {timeout:.0f} s"}
    if done.returncode != 0:
        return {"n": n, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def checkout(ref: str) -> tuple[str, Path]:
    """``ref``'s ``autodiff`` and ``viewer`` packages in a temporary folder."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", ref],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "autodiff", "viewer"],
        capture_output=True,
        check=True,
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix=f"hub-{commit}-"))
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return commit, folder


def show(label: str, row: dict[str, object]) -> None:
    if "error" in row:
        print(f"{label:<22} {row['n']:>6}  {row['error']}", flush=True)
        return
    print(
        f"{label:<22} {row['n']:>6} {row['graph_nodes']:>8} {row['layout_nodes']:>10}"
        f" {row['layout_s']:>9.2f} {row['scene_s']:>8.2f} {row['total_s']:>8.2f}"
        f" {row['peak_mb']:>8.0f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--base", metavar="REF", help="also run this commit, in the same run")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per child")
    parser.add_argument("--json", type=Path, help="write the rows there")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child(args.child)
        return 0
    versions: list[tuple[str, Path]] = []
    folder = None
    if args.base is not None:
        commit, folder = checkout(args.base)
        versions.append((f"before ({commit})", folder))
    versions.append(("after (this tree)", ROOT))
    print(
        f"{'version':<22} {'steps':>6} {'nodes':>8} {'laid out':>10}"
        f" {'layout s':>9} {'scene s':>8} {'total s':>8} {'peak MB':>8}"
    )
    rows = []
    try:
        for n in args.sizes:
            for label, path in versions:
                row = run_child(n, path, args.timeout)
                rows.append({"version": label, **row})
                show(label, row)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    if n_rows := [r for r in rows if r["version"].startswith("after") and "error" not in r]:
        first, last = n_rows[0], n_rows[-1]
        if last["n"] != first["n"]:
            print(
                f"this tree: {last['n'] / first['n']:.0f}x the steps take"
                f" {last['total_s'] / first['total_s']:.1f}x the time"
            )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
