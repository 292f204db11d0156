"""micrograd's demo on autodiff.micrograd against micrograd itself (benchmark only).

    pip install micrograd            # the reference; not a dependency of the project
    python bench/micrograd.py [--steps 100] [--repeats 3] [--points 100] [--timer cpu|wall]
    python bench/micrograd.py --quick   # 10 steps, 3 repeats: a smoke run

The workload is micrograd's demo: MLP(2, [16, 16, 1]) on two moons (made with numpy), the
max-margin loss with L2 regularisation and SGD with the demo's decaying learning rate, the
same program for both (``tests/autodiff/micrograd_demo.py``, which the tests run too), with no
recorder attached. Runs alternate (micrograd, ours, ours, micrograd, ...) so drifting machine
load hits both alike; the table shows the medians and the median of the per-repeat ratios
(target: ours at most 3x micrograd's time), and both final losses, which must agree to 1e-12.
The cycle collector stays on: micrograd's nodes are reference cycles (each ``_backward``
closure holds its node), so it is part of what a micrograd program costs, and most of it.
``--no-gc`` turns it off inside each timed run (collecting between runs) to time the arithmetic
alone.
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this file is named micrograd.py: its folder must not hide the real micrograd from imports
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "autodiff"))

from micrograd_demo import train  # noqa: E402

from autodiff.micrograd import engine, nn  # noqa: E402

TARGET_RATIO = 3.0
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100, help="training steps per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs per engine")
    parser.add_argument("--points", type=int, default=100, help="moons data points")
    parser.add_argument("--timer", choices=sorted(CLOCKS), default="cpu")
    parser.add_argument("--quick", action="store_true", help="10 steps: a smoke run")
    parser.add_argument(
        "--no-gc", action="store_true", help="the cycle collector off inside each timed run"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.steps = 10
    try:
        import micrograd.engine
        import micrograd.nn
    except ImportError:
        print("micrograd is not installed: pip install micrograd", file=sys.stderr)
        return 2
    engines = {
        "micrograd": (micrograd.engine.Value, micrograd.nn.MLP),
        "autodiff.micrograd": (engine.Value, nn.MLP),
    }
    clock = CLOCKS[args.timer]
    times: dict[str, list[float]] = {name: [] for name in engines}
    losses: dict[str, float] = {}
    for repeat in range(args.repeats):
        order = list(engines) if repeat % 2 == 0 else list(reversed(engines))
        for name in order:
            Value, MLP = engines[name]
            gc.collect()
            if args.no_gc:
                gc.disable()
            began = clock()
            history = train(Value, MLP, args.steps, n=args.points)
            times[name].append(clock() - began)
            gc.enable()
            losses[name] = history[-1][0]
            print(f"  run {repeat + 1} {name}: {times[name][-1]:.2f} s", file=sys.stderr)
    ratios = [
        ours / theirs
        for ours, theirs in zip(times["autodiff.micrograd"], times["micrograd"], strict=True)
    ]
    ratio = statistics.median(ratios)
    agree = math.isclose(
        losses["micrograd"], losses["autodiff.micrograd"], rel_tol=1e-12, abs_tol=1e-12
    )
    print(
        f"micrograd demo, MLP 2-16-16-1, {args.points} points, {args.steps} steps, "
        f"{args.timer} time, medians of {args.repeats}"
        + (", cycle collector off" if args.no_gc else "")
    )
    print(f"{'engine':<20}  {'time':>9}  {'final loss':>20}")
    for name in engines:
        median = statistics.median(times[name])
        print(f"{name:<20}  {median:>8.2f}s  {losses[name]:>20.16f}")
    met = "yes" if ratio <= TARGET_RATIO else "NO"
    print(f"ours/micrograd {ratio:.2f}x (target <= {TARGET_RATIO:g}x: {met})")
    print(f"final losses agree to 1e-12: {agree}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
