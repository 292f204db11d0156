"""The recording overheads of issue 25 counted in machine instructions (valgrind's
callgrind), not in time: the same figure on every run, on a busy machine too.

    python bench/instructions.py [--only chain mlp ...] [--runs 2]

CPU time on the shared 2-core machines moves 20-25% between runs of the same code, more than
most changes to the recorder do; an instruction count does not move. It is not time, and the
issue's targets are in time (``bench/trace.py``, ``bench/pass_cost.py``,
``bench/heavy_scripts.py``): an interpreted instruction takes less time than one of numpy's
memory-bound copies, so the ratios here run below the time ratios (1.43x here for the MLP,
1.4x-1.7x in time). What it says exactly is whether a change made the recording cheaper, and
by how much. (PyTorch's recording is left out: under valgrind torch's kernels take other code
paths, and its copies cost time, not instructions, so a ratio of its instructions would say
1.6x for a recording that takes 2.8x the time.)

Each workload runs in a child Python under ``valgrind --tool=callgrind``: it builds the work,
runs it once (warm-up), then ``N`` more times; the count with ``N = 1 + runs`` minus the
count with ``N = 1``, over ``runs``, is the instructions of one run, without the start,
the imports and the warm-up. Rows:

* chain, mlp, layers: ``bench/trace.py``'s (a), (b) and (b2), unrecorded and in
  ``autodiff.trace.record()`` (issue 25 item 5);
* tiny: 2 000 passes of ``y = x * x; x.cleargrad(); y.backward()`` (``bench/pass_cost.py``)
  unrecorded, in ``record()`` and in the app's ``PassRecording`` (issue 25 item 3).

valgrind must be installed (``apt-get install valgrind``); a run takes about eight minutes.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# workload -> its ways of running, the first unrecorded
WORKLOADS: dict[str, tuple[str, ...]] = {
    "chain": ("plain", "record"),
    "mlp": ("plain", "record"),
    "layers": ("plain", "record"),
    "tiny": ("plain", "record", "app"),
}


def _load(name: str) -> object:
    """A bench script as a module (bench/trace.py would shadow the standard ``trace``)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _work(workload: str, way: str) -> Callable[[], object]:
    """One run of ``workload`` recorded (or not) the ``way`` named."""
    sys.path[:0] = [str(ROOT), str(HERE)]
    from autodiff.trace import record

    if workload == "tiny":
        cost = _load("pass_cost")

        def loop() -> None:
            cost.tiny(2000)

        if way == "app":
            return lambda: cost.app(loop, cost.__file__)
    else:
        bench = _load("trace")
        make, steps = {"chain": (bench.chain, 2000), "mlp": (bench.mlp, 100)}.get(
            workload, (bench.layered_mlp, 100)
        )
        loop = make(steps)
    if way == "plain":
        return loop

    def in_record() -> object:
        with record() as t:
            loop()
        return t

    return in_record


def child(workload: str, way: str, n: int) -> None:
    work = _work(workload, way)
    work()  # warm-up
    gc.collect()
    gc.disable()
    for _ in range(n):
        work()


def count(workload: str, way: str, n: int) -> int:
    """The instructions of the child that runs ``workload`` ``n`` times after its warm-up."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [
                "valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
                sys.executable, __file__, "--child", workload, way, str(n),
            ],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise RuntimeError(f"{workload} {way}: the child failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(WORKLOADS), metavar="WORKLOAD")
    parser.add_argument("--runs", type=int, default=2, help="runs counted past the warm-up")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: apt-get install valgrind", file=sys.stderr)
        return 2
    names = args.only or list(WORKLOADS)
    print(f"instructions of one run (millions), {args.runs} runs counted past the warm-up")
    for name in names:
        ways = WORKLOADS[name]
        per_run = {
            way: (count(name, way, 1 + args.runs) - count(name, way, 1)) / args.runs for way in ways
        }
        plain = per_run["plain"]
        cells = []
        for way in ways:
            cell = f"{way} {per_run[way] / 1e6:.1f}M"
            if way != "plain":
                cell += f" {per_run[way] / plain:.3f}x"
            cells.append(cell)
        print(f"{name:<10} " + "   ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
