"""Training benchmark: autodiff against DeZero 0.0.13 (and PyTorch on one CPU thread).

    python bench/train.py [--runs 41] [--sine-runs 9] [--timer cpu|wall] [--json FILE]

Two workloads, each with the same model, data, seed and arithmetic in every engine:

* spiral: one epoch (10 mini-batches of 30) of the spiral classifier, MLP (10, 3) with sigmoid,
  softmax cross entropy, SGD lr 1.0;
* sine: 1000 full-batch steps of the sine regression, MLP (10, 1), mean squared error, SGD 0.2.

Engines alternate run by run (ABAB..., then BABA...) so drifting machine load hits both alike;
the table shows medians and ours/DeZero (target: at most 0.70). Time is this process's CPU time
unless ``--timer wall``: every engine here runs on one thread, and CPU time is far less
disturbed by other programs on a busy machine than elapsed time. Both engines must also end with
the same loss, which the table reports. PyTorch's figure is printed when ``import torch``
works (``pip install torch``), as a reference only.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import autodiff
import autodiff.datasets
import autodiff.functions
import autodiff.models
import autodiff.optimizers

TARGET_RATIO = 0.70


def import_dezero() -> tuple[Any, str]:
    """DeZero 0.0.13 as a module, or None and why not.

    DeZero imports matplotlib and PIL at import time for its image datasets, which training
    never touches: stand-ins are registered for them when they are missing. On numpy 2 it also
    needs ``np.int``, removed from numpy.
    """
    if not hasattr(np, "int"):
        np.int = int  # type: ignore[attr-defined]
    for name in ("matplotlib", "matplotlib.pyplot", "PIL", "PIL.Image"):
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    image = sys.modules["PIL.Image"]
    if not hasattr(image, "BILINEAR"):
        image.BILINEAR = 2  # a default argument value in dezero.transforms
        image.Image = type("Image", (), {})
        sys.modules["PIL"].Image = image
    try:
        import dezero
        import dezero.functions
        import dezero.models
        import dezero.optimizers
    except ImportError as e:
        return None, f"DeZero is not importable ({e}); pip install dezero==0.0.13"
    return dezero, ""


# =============================================================================
# Workloads: build(lib) -> run() -> final loss; only run() is timed
# =============================================================================
def initial_weights(sizes: tuple[int, ...], in_size: int, seed: int) -> list[tuple[Any, Any]]:
    """Linear's initialisation, float32, drawn once so every engine starts from the same point
    (DeZero on numpy 2 would make its own weights float64)."""
    rng = np.random.RandomState(seed)
    weights = []
    for out_size in sizes:
        scale = np.float32(np.sqrt(1 / in_size))
        W = rng.randn(in_size, out_size).astype(np.float32) * scale
        weights.append((W, np.zeros(out_size, np.float32)))
        in_size = out_size
    return weights


def mlp(lib: Any, sizes: tuple[int, ...], in_size: int, seed: int) -> Any:
    model = lib.models.MLP(sizes)
    for layer, (W, b) in zip(model.layers, initial_weights(sizes, in_size, seed), strict=True):
        layer.W.data = W
        layer.b.data = b
    return model


def spiral_epoch(lib: Any) -> Callable[[], float]:
    F = lib.functions
    x, t = autodiff.datasets.get_spiral(train=True)
    model = mlp(lib, (10, 3), 2, seed=0)
    optimizer = lib.optimizers.SGD(1.0).setup(model)
    index = np.random.RandomState(0).permutation(len(x))
    batch_size = 30

    def run() -> float:
        for i in range(len(x) // batch_size):
            batch = index[i * batch_size : (i + 1) * batch_size]
            y = model(x[batch])
            loss = F.softmax_cross_entropy(y, t[batch])
            model.cleargrads()
            loss.backward()
            optimizer.update()
        return float(loss.data)

    return run


def sine_steps(lib: Any, steps: int = 1000) -> Callable[[], float]:
    F = lib.functions
    x, y = autodiff.datasets.get_sine(seed=0)
    model = mlp(lib, (10, 1), 1, seed=1)
    optimizer = lib.optimizers.SGD(0.2).setup(model)

    def run() -> float:
        for _ in range(steps):
            loss = F.mean_squared_error(y, model(x))
            model.cleargrads()
            loss.backward()
            optimizer.update()
        return float(loss.data)

    return run


def torch_workloads() -> tuple[Any, str]:
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed (pip install torch for its figure)"
    torch.set_num_threads(1)

    def torch_mlp(sizes: tuple[int, ...], in_size: int, seed: int) -> Any:
        layers: list[Any] = []
        for i, (W, b) in enumerate(initial_weights(sizes, in_size, seed)):
            lin = torch.nn.Linear(*W.shape)
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(W.T.copy()))
                lin.bias.copy_(torch.from_numpy(b))
            layers.append(lin)
            if i < len(sizes) - 1:
                layers.append(torch.nn.Sigmoid())
        return torch.nn.Sequential(*layers)

    def spiral() -> Callable[[], float]:
        x, t = autodiff.datasets.get_spiral(train=True)
        model = torch_mlp((10, 3), 2, seed=0)
        optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
        index = np.random.RandomState(0).permutation(len(x))
        xs, ts = torch.from_numpy(x), torch.from_numpy(t)
        batches = [torch.from_numpy(index[i * 30 : (i + 1) * 30]) for i in range(len(x) // 30)]

        def run() -> float:
            for batch in batches:
                loss = torch.nn.functional.cross_entropy(model(xs[batch]), ts[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            return loss.item()

        return run

    def sine() -> Callable[[], float]:
        x, y = autodiff.datasets.get_sine(seed=0)
        model = torch_mlp((10, 1), 1, seed=1).double()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
        xs, ys = torch.from_numpy(x), torch.from_numpy(y)

        def run() -> float:
            for _ in range(1000):
                loss = torch.nn.functional.mse_loss(model(xs), ys)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            return loss.item()

        return run

    return {"spiral": spiral, "sine": sine}, f"torch {torch.__version__}, 1 thread"


# =============================================================================
# Timing
# =============================================================================
def time_alternating(
    builders: dict[str, Callable[[], Callable[[], float]]],
    runs: int,
    clock: Callable[[], float] = time.process_time,
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Time each engine ``runs`` times, alternating engines; return seconds and final losses."""
    times: dict[str, list[float]] = {name: [] for name in builders}
    losses: dict[str, float] = {}
    names = list(builders)
    for name in names:  # warm-up: imports, lazy initialisation, caches
        builders[name]()()
    for r in range(runs):
        for name in names if r % 2 == 0 else names[::-1]:
            run = builders[name]()
            gc.collect()
            start = clock()
            loss = run()
            times[name].append(clock() - start)
            losses[name] = loss
    return times, losses


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=41, help="timed spiral epochs per engine")
    parser.add_argument("--sine-runs", type=int, default=9, help="timed sine runs per engine")
    parser.add_argument(
        "--timer",
        choices=("cpu", "wall"),
        default="cpu",
        help="cpu: this process's CPU time (default; every engine here runs on one thread, and "
        "other programs on the machine barely move it); wall: elapsed time",
    )
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)

    dezero, why_not = import_dezero()
    if dezero is None:
        print(why_not)
        return {}
    torch_builders, torch_note = torch_workloads()
    clock = time.process_time if args.timer == "cpu" else time.perf_counter

    workloads = {
        "spiral, 1 epoch (10 steps)": ("spiral", spiral_epoch, args.runs),
        "sine, 1000 steps": ("sine", sine_steps, args.sine_runs),
    }
    rows = []
    for label, (key, build, runs) in workloads.items():
        builders = {
            "ours": lambda build=build: build(autodiff),
            "dezero": lambda build=build: build(dezero),
        }
        if torch_builders is not None:
            builders["torch"] = torch_builders[key]
        times, losses = time_alternating(builders, runs, clock)
        med = {name: statistics.median(ts) for name, ts in times.items()}
        rows.append(
            {
                "workload": label,
                "runs": runs,
                "ours_ms": med["ours"] * 1e3,
                "dezero_ms": med["dezero"] * 1e3,
                "ratio": med["ours"] / med["dezero"],
                "best_ratio": min(times["ours"]) / min(times["dezero"]),
                "torch_ms": med["torch"] * 1e3 if "torch" in med else None,
                "same_loss": bool(np.isclose(losses["ours"], losses["dezero"], rtol=1e-6)),
                "loss": losses["ours"],
            }
        )

    print(
        f"numpy {np.__version__}, DeZero {dezero.__version__}; {torch_note}; "
        f"{'CPU' if args.timer == 'cpu' else 'wall-clock'} time"
    )
    header = (
        f"{'workload':<28}{'runs':>5}{'ours ms':>10}{'DeZero ms':>11}{'ours/DeZero':>13}"
        f"{'(best)':>8}{'target':>9}{'torch ms':>10}  same loss"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        torch_ms = "-" if row["torch_ms"] is None else f"{row['torch_ms']:.2f}"
        verdict = "ok" if row["ratio"] <= TARGET_RATIO else "MISSED"
        print(
            f"{row['workload']:<28}{row['runs']:>5}{row['ours_ms']:>10.2f}"
            f"{row['dezero_ms']:>11.2f}{row['ratio']:>12.2f}x{row['best_ratio']:>7.2f}x"
            f"{verdict:>9}{torch_ms:>10}  "
            f"{'yes' if row['same_loss'] else 'NO'} ({row['loss']:.6f})"
        )
    print(
        f"target: ours/DeZero <= {TARGET_RATIO:.2f}, on medians; (best) is the fastest run of "
        "each, less sensitive to other load on the machine"
    )
    result = {"target_ratio": TARGET_RATIO, "timer": args.timer, "rows": rows, "torch": torch_note}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
