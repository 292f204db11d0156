"""Saving and reading a trace, this tree against an earlier commit, side by side in one run.

    python bench/trace_files.py --base 9b58442
    python bench/trace_files.py --base 9b58442 --steps 20000 --repeats 7

The trace is a training run's recording (an MLP, 4 -> 16 -> 16 -> 1, batch 8, sigmoid, MSE,
SGD): ``--steps`` steps in all. Each version records it with its own engine, then writes and
reads it in both formats (JSON with ``to_json``/``trace.load``; the binary ``.npz`` the script
worker sends back). Each figure is the median of ``--repeats`` CPU times, the two versions
alternating within a repeat; the ratio is the median of the per-repeat ratios (after/before).
What the readers check (issue 21's rules, the npz members read one by one with their bounds)
is what this measures.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baseline


def record(autodiff, steps: int):
    F, L = autodiff.functions, autodiff.layers
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 4))
    t = rng.standard_normal((8, 1))
    l1, l2, l3 = L.Linear(16), L.Linear(16), L.Linear(1)
    params = None
    with autodiff.trace.record() as tr:
        count = 0
        while True:
            y = l3(F.sigmoid(l2(F.sigmoid(l1(x)))))
            loss = F.mean_squared_error(y, t)
            for layer in (l1, l2, l3):
                layer.cleargrads()
            loss.backward()
            params = params or [p for la in (l1, l2, l3) for p in la.params()]
            for p in params:
                p.data -= 0.01 * p.grad.data
            count += 1
            if len(tr.steps) >= steps or count > 10_000:
                break
    return tr


def _cpu(fn) -> float:
    gc.disable()
    start = time.process_time()
    try:
        fn()
    finally:
        elapsed = time.process_time() - start
        gc.enable()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import autodiff
    import autodiff.trace
    import autodiff.trace._trace as now_tracemod
    import autodiff.trace.formats.npz as now_binary

    base = baseline.load(args.base)
    with base.active():
        old = base.module("autodiff")
        old_binary = base.module("autodiff.trace.formats.npz")
        old_tracemod = base.module("autodiff.trace._trace")
        old_trace = record(old, args.steps)
    now_trace = record(autodiff, args.steps)
    print(f"{len(now_trace.steps)} steps (now), {len(old_trace.steps)} steps ({args.base})")

    folder = tempfile.mkdtemp()
    json_now, json_old = os.path.join(folder, "now.json"), os.path.join(folder, "old.json")
    npz_now, npz_old = os.path.join(folder, "now.npz"), os.path.join(folder, "old.npz")

    def tasks(version):
        if version == "now":
            t, binary, module, j, z = now_trace, now_binary, autodiff.trace, json_now, npz_now
            reader = now_tracemod
        else:
            t, binary, module, j, z = old_trace, old_binary, old.trace, json_old, npz_old
            reader = old_tracemod
        return {
            "write JSON": lambda: t.to_json(j),
            "read JSON": lambda: module.load(j),
            "write npz": lambda: binary.trace_to_npz(t, z),
            "read npz": lambda: reader.trace_from_npz(z),
        }

    names = list(tasks("now"))
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):
        for name in names:
            for version in ("now", "before"):
                if version == "before":
                    with base.active():
                        elapsed = _cpu(tasks(version)[name])
                else:
                    elapsed = _cpu(tasks(version)[name])
                times.setdefault((name, version), []).append(elapsed)
    print(f"{'':12} {'now':>9} {'before':>9} {'ratio':>7}   (CPU s, median of {args.repeats})")
    for name in names:
        now, before = times[name, "now"], times[name, "before"]
        ratio = statistics.median(a / b for a, b in zip(now, before, strict=True))
        print(
            f"{name:12} {statistics.median(now):9.3f} {statistics.median(before):9.3f} "
            f"{ratio:7.2f}x"
        )
    for label, path in (("JSON", json_now), ("npz", npz_now)):
        print(f"{label} file: {os.path.getsize(path) / 1e6:.1f} MB (now)")


if __name__ == "__main__":
    main()
