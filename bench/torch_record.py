"""What recording a PyTorch training step costs: ``autodiff.trace.pytorch.record()`` against
the same step unrecorded, side by side in one run.

    python bench/torch_record.py [--runs 7] [--steps 10] [--timer cpu|wall] [--base REF]

Two workloads, one thread (``torch.set_num_threads(1)``), SGD, cross entropy:

* MLP 784-256-256-10 (ReLU), batch 64;
* a small CNN: conv 1->8 3x3, ReLU, max pool, conv 8->16 3x3, ReLU, max pool, linear
  16*7*7->10, on 28x28 images, batch 32.

Each run times ``--steps`` training steps plain, then recorded (one ``record()`` around the
steps, values kept up to ``max_array_size`` = 4096 elements, larger ones summarised), then
recorded with ``record(statistics_only=True)`` (the backward passes' graphs and gradients'
statistics, no forward values); the order alternates run by run. The table shows medians and
each recorded time over the plain one, and whether the issue's targets are met (2x with
values kept, 1.3x with statistics only). ``--base REF`` also times that commit's recorder
(loaded beside this tree's by ``bench/baseline.py``) in the same runs: its values recording
and its ``max_array_size=0``, the statistics it could record before ``statistics_only`` (and
its ``statistics_only`` recording, where it has one).
"""

from __future__ import annotations

import argparse
import gc
import inspect
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import baseline  # bench/baseline.py: an earlier commit's autodiff, for --base
import torch
from torch import nn

from autodiff.trace import pytorch


def mlp() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    model = nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
    )
    return model, torch.randn(64, 784), torch.randint(0, 10, (64,))


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def cnn() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    return SmallCNN(), torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))


def steps(model: nn.Module, x: torch.Tensor, y: torch.Tensor, n: int) -> Callable[[], None]:
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def run() -> None:
        for _ in range(n):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    return run


def timed(fn: Callable[[], None], clock: Callable[[], float]) -> float:
    gc.collect()
    start = clock()
    fn()
    return clock() - start


TARGETS = {"values": 2.0, "stats": 1.3}  # issue 26 item 5


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--timer", choices=("cpu", "wall"), default="cpu")
    parser.add_argument(
        "--base", metavar="REF", help="also time this commit's recorder, in the same runs"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    clock = time.process_time if args.timer == "cpu" else time.perf_counter
    base = None if args.base is None else baseline.load(args.base)
    print(f"torch {torch.__version__}, {args.runs} runs x {args.steps} steps, {args.timer} time")
    columns = ["values", "stats"]
    if base is not None:
        # the base's values recording, and its max_array_size=0 (every value summarised: what
        # statistics meant before statistics_only)
        columns += ["values@base", "summarised@base"]
        recorder = base.module("autodiff.trace.pytorch").record
        if "statistics_only" in inspect.signature(recorder).parameters:
            columns.append("stats@base")  # the base's statistics_only recording
        print(f"@base: {base.commit}'s autodiff.trace.pytorch, loaded beside this tree's")
    print(f"{'workload':<10} {'plain':>8}" + "".join(f" {c:>16} {'':>6}" for c in columns))
    for name, make in (("MLP", mlp), ("CNN", cnn)):
        torch.manual_seed(0)
        run = steps(*make(), args.steps)
        run()  # warm up

        def recorded(statistics_only: bool, run: Callable[[], None] = run) -> None:
            with pytorch.record(max_array_size=4096, statistics_only=statistics_only) as t:
                run()
            assert len(t.backward_roots) == args.steps

        kinds = {
            "plain": run,
            "values": lambda: recorded(False),
            "stats": lambda: recorded(True),
        }
        if base is not None:
            old = base.module("autodiff.trace.pytorch")

            def recorded_base(
                size: int, run: Callable[[], None] = run, old: Any = old, **options: Any
            ) -> None:
                with base.active(), old.record(max_array_size=size, **options) as t:
                    run()
                assert len(t.backward_roots) == args.steps

            kinds["values@base"] = lambda: recorded_base(4096)
            kinds["summarised@base"] = lambda: recorded_base(0)
            if "stats@base" in columns:
                kinds["stats@base"] = lambda: recorded_base(4096, statistics_only=True)
        times: dict[str, list[float]] = {k: [] for k in kinds}
        order = list(kinds)
        for i in range(args.runs):
            for k in order if i % 2 == 0 else order[::-1]:
                times[k].append(timed(kinds[k], clock))
        med = {k: statistics.median(v) for k, v in times.items()}
        cells = "".join(f" {med[c] * 1e3:>14.1f}ms {med[c] / med['plain']:>5.2f}x" for c in columns)
        print(f"{name:<10} {med['plain'] * 1e3:>6.1f}ms{cells}")
        for c, target in TARGETS.items():
            ratio = med[c] / med["plain"]
            verdict = "met" if ratio <= target else "missed"
            print(f"{'':<10} {c}: {ratio:.2f}x, target {target}x: {verdict}")


if __name__ == "__main__":
    main()
