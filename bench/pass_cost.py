"""What one backward pass costs the app's recording, in process: where the time of
``bench/heavy_scripts.py``'s tiny passes and sine example goes.

    python bench/pass_cost.py [--passes 30000] [--sine 2000] [--repeat 3]

Each row is CPU microseconds per pass (``time.process_time``, the best of ``--repeat`` runs:
other work on a busy machine changes it less than wall time), the script's loop run in this
interpreter with the collector off, as the worker runs it:

* **plain**: no observer;
* **recorder**: one ``autodiff.trace.Trace`` recording every pass into one trace (no pass
  log, no sampling);
* **pass log only**: :class:`~viewer.model.scripts.pass_recording.PassRecording`'s own
  observer with its recorder detached: every pass's scalars logged (loss, iteration, flags,
  gradient norms, the held check), nothing recorded. The floor of a "light" mode that records
  no graph for the passes the sampling will drop;
* **app's recording**: ``PassRecording`` as the worker runs it (every pass recorded, each
  kept pass in a trace of its own, the others shared and dropped).

The tiny pass is ``y = x * x; x.cleargrad(); y.backward()``; the sine example is
``resources/examples/sine_regression.py``'s ``main(iters)``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import runpy
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from autodiff import Variable, core
from autodiff.trace import record
from viewer.model.scripts.pass_recording import PassRecording

ROOT = Path(__file__).resolve().parents[1]
SINE = ROOT / "resources" / "examples" / "sine_regression.py"


def tiny(n: int) -> None:
    x = Variable(np.array(1.5), name="x")
    for _ in range(n):
        y = x * x
        x.cleargrad()
        y.backward()


def plain(loop: Callable[[], None]) -> float:
    began = time.process_time()
    loop()
    return time.process_time() - began


def recorder(loop: Callable[[], None]) -> float:
    with record(4096):
        return plain(loop)


def log_only(loop: Callable[[], None], script: str) -> float:
    recording = PassRecording(4096, script=script)
    recording.reservoir.head = sys.maxsize  # every pass in the head: no trace is ever made
    with recording:
        core.remove_observer(recording.head.tables)
        try:
            return plain(loop)
        finally:
            core.add_observer(recording.head.tables)


def app(loop: Callable[[], None], script: str) -> float:
    with PassRecording(4096, script=script):
        return plain(loop)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--passes", type=int, default=30_000, help="tiny passes")
    p.add_argument("--sine", type=int, default=2_000, help="the sine example's iterations")
    p.add_argument("--repeat", type=int, default=3, help="runs of each, the best reported")
    args = p.parse_args(argv)
    sine_main = runpy.run_path(str(SINE))["main"]

    def sine() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            sine_main(args.sine)

    cases = [
        (f"{args.passes:,} tiny passes", lambda: tiny(args.passes), __file__, args.passes),
        (f"sine example, {args.sine:,} iterations", sine, str(SINE), args.sine),
    ]
    gc.disable()
    print(f"{'':<34}{'plain':>8}{'recorder':>10}{'log only':>10}{'app':>8}   (us/pass, CPU)")
    for name, loop, script, n in cases:
        ways = (
            lambda loop=loop: plain(loop),
            lambda loop=loop: recorder(loop),
            lambda loop=loop, script=script: log_only(loop, script),
            lambda loop=loop, script=script: app(loop, script),
        )
        best = [min(way() for _ in range(max(1, args.repeat))) * 1e6 / n for way in ways]
        ratios = " ".join(f"{b / best[0]:.2f}x" for b in best[1:])
        print(
            f"{name:<34}{best[0]:>8.1f}{best[1]:>10.1f}{best[2]:>10.1f}{best[3]:>8.1f}"
            f"   ({ratios})",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
