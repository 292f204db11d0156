"""What recording a PyTorch training step costs: ``autodiff.trace.pytorch.record()`` against
the same step unrecorded, side by side in one run.

    python bench/torch_record.py [--runs 7] [--steps 10] [--timer cpu|wall]

Two workloads, one thread (``torch.set_num_threads(1)``), SGD, cross entropy:

* MLP 784-256-256-10 (ReLU), batch 64;
* a small CNN: conv 1->8 3x3, ReLU, max pool, conv 8->16 3x3, ReLU, max pool, linear
  16*7*7->10, on 28x28 images, batch 32.

Each run times ``--steps`` training steps plain, then recorded (one ``record()`` around the
steps, values kept up to ``max_array_size`` = 4096 elements, larger ones summarised), then
recorded with ``record(statistics_only=True)`` (the backward passes' graphs and gradients'
statistics, no forward values); the order alternates run by run. The table shows medians and
each recorded time over the plain one (the issue's targets: 2x with values kept, 1.3x with
statistics only).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--timer", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    clock = time.process_time if args.timer == "cpu" else time.perf_counter
    print(f"torch {torch.__version__}, {args.runs} runs x {args.steps} steps, {args.timer} time")
    print(f"{'workload':<10} {'plain':>9} {'values':>9} {'ratio':>6} {'stats':>9} {'ratio':>6}")
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
        times: dict[str, list[float]] = {k: [] for k in kinds}
        order = list(kinds)
        for i in range(args.runs):
            for k in order if i % 2 == 0 else order[::-1]:
                times[k].append(timed(kinds[k], clock))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"{name:<10} {med['plain'] * 1e3:>7.1f}ms {med['values'] * 1e3:>7.1f}ms "
            f"{med['values'] / med['plain']:>5.2f}x {med['stats'] * 1e3:>7.1f}ms "
            f"{med['stats'] / med['plain']:>5.2f}x"
        )


if __name__ == "__main__":
    main()
