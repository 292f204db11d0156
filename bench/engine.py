"""Engine benchmark: autodiff against DeZero, PyTorch (CPU, one thread) and a raw-numpy floor.

    python bench/engine.py              # the full run (a few minutes, most of it DeZero's)
    python bench/engine.py --quick      # a smoke run on small sizes
    python bench/engine.py --repeats 9  # more repeats for steadier medians
    python bench/engine.py --base cfa9107   # also an earlier commit's engine, side by side

DeZero (``pip install dezero``) and PyTorch (``pip install torch``) are optional and
benchmark-only: a missing one shows as ``-``. DeZero 0.0.13 needs ``np.int = int`` on numpy 2,
and imports matplotlib and PIL at start-up for its datasets; when those are missing they are
replaced by empty stand-in modules here (nothing benchmarked uses them).

Each figure is the median of ``--repeats`` runs, the engines (and, for (b), the sizes) timed
alternately within each repeat after one untimed warm-up run each; (c) makes five times as many
runs of 20 steps. A ratio is the median of the ratios between runs of the same repeat, which
holds steadier than a ratio of medians when the machine's load drifts. The garbage collector is
off inside a timed region (as ``timeit`` does). Time is this process's CPU time by default
(``--clock wall`` for elapsed time): on a shared machine it is far steadier, and for this
single-threaded work on an idle machine the two agree. BLAS is held to one thread (set before
numpy is imported) so that numpy, DeZero and autodiff compare with PyTorch's single thread.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib.util  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import baseline  # noqa: E402

import autodiff  # noqa: E402
import autodiff.functions as AF  # noqa: E402


# =============================================================================
# Engines
# =============================================================================
def _import_dezero() -> types.ModuleType | None:
    if importlib.util.find_spec("dezero") is None:
        return None
    np.int = int  # type: ignore[attr-defined]  # removed in numpy 2; DeZero 0.0.13 uses it
    for name, sub in (("matplotlib", "pyplot"), ("PIL", "Image")):
        if importlib.util.find_spec(name) is None:
            stand_in = types.ModuleType(name)
            child = types.ModuleType(f"{name}.{sub}")
            setattr(stand_in, sub, child)
            sys.modules[name] = stand_in
            sys.modules[f"{name}.{sub}"] = child
    image = sys.modules.get("PIL.Image")
    if image is not None and not hasattr(image, "BILINEAR"):
        image.BILINEAR = 2  # type: ignore[attr-defined]  # a default argument in dezero.transforms
    import dezero
    import dezero.functions

    return dezero


def _import_torch() -> types.ModuleType | None:
    if importlib.util.find_spec("torch") is None:
        return None
    import torch

    torch.set_num_threads(1)
    return torch


class Engine:
    """What a benchmark needs from a DeZero-like engine: Variable, Parameter, functions.

    ``base``: for an earlier commit's autodiff (``--base``), whose runs happen inside
    :meth:`baseline.Baseline.active` (see :func:`runner`).
    """

    def __init__(
        self,
        name: str,
        module: types.ModuleType,
        functions: types.ModuleType,
        base: baseline.Baseline | None = None,
        layers: types.ModuleType | None = None,
    ) -> None:
        self.name = name
        self.Variable = module.Variable
        self.Parameter = module.Parameter
        self.F = functions
        self.L = layers  # Layer and Linear, for (c3)
        self.base = base

    def has(self, function: str) -> bool:
        """Whether the engine's functions module has ``function`` (an old --base may not)."""
        return hasattr(self.F, function)


def runner(
    engine: Engine, make: Callable[..., Callable[[], dict[str, float]]], *args: object
) -> Callable[[], dict[str, float]]:
    """``make(engine, *args)``, run inside the engine's baseline when it has one."""
    run = make(engine, *args)
    if engine.base is None:
        return run
    base = engine.base

    def within() -> dict[str, float]:
        with base.active():
            return run()

    return within


# =============================================================================
# Timing
# =============================================================================
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = CLOCKS["cpu"]


def _timed(fn: Callable[[], object]) -> float:
    gc.collect()
    gc.disable()
    try:
        t0 = _clock()
        fn()
        return _clock() - t0
    finally:
        gc.enable()


Samples = dict[str, list[float]]  # engine name -> one value per repeat


def run_alternately(
    runners: dict[object, Callable[[], dict[str, float]]], repeats: int
) -> dict[object, dict[str, list[float]]]:
    """Run every runner once per repeat, rotating the order, after one warm-up run each.

    Returns each runner's values per repeat, so that ratios can be taken between runs made
    side by side in the same repeat (steadier than a ratio of medians on a busy machine).
    """
    samples: dict[object, dict[str, list[float]]] = {key: {} for key in runners}
    keys = list(runners)
    for key in keys:
        runners[key]()  # warm-up, not counted: first calls pay for imports and caches
    for r in range(repeats):
        order = keys[r % len(keys) :] + keys[: r % len(keys)]
        for key in order:
            gc.collect()
            for metric, value in runners[key]().items():
                samples[key].setdefault(metric, []).append(value)
    return samples


def median_ratio(a: list[float] | None, b: list[float] | None) -> float | None:
    """The median over repeats of a[i] / b[i]."""
    if not a or not b:
        return None
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


# =============================================================================
# (a) scalar chain: y = sin(y) * y + y
# =============================================================================
CHAIN_START = -0.5  # from -0.5 the iterates stay in (-0.5, 0): no overflow, no NaN


def chain_dezero_like(engine: Engine, steps: int) -> Callable[[], dict[str, float]]:
    V, F = engine.Variable, engine.F

    def run() -> dict[str, float]:
        x = V(np.array(CHAIN_START))
        holder: list = []

        def forward() -> None:
            y = x
            for _ in range(steps):
                y = F.sin(y) * y + y
            holder.append(y)

        fwd = _timed(forward)
        y = holder.pop()
        bwd = _timed(y.backward)
        assert np.isfinite(x.grad.data), x.grad
        return {"forward": fwd, "backward": bwd}

    return run


def chain_torch(torch: types.ModuleType, steps: int) -> Callable[[], dict[str, float]]:
    def run() -> dict[str, float]:
        x = torch.tensor(CHAIN_START, dtype=torch.float64, requires_grad=True)
        holder: list = []

        def forward() -> None:
            y = x
            for _ in range(steps):
                y = torch.sin(y) * y + y
            holder.append(y)

        fwd = _timed(forward)
        y = holder.pop()
        bwd = _timed(y.backward)
        return {"forward": fwd, "backward": bwd}

    return run


# =============================================================================
# (b) backward scaling: one x feeding n branches, y = y + sin(c_i * x)
# =============================================================================
def branches_dezero_like(engine: Engine, n: int) -> Callable[[], dict[str, float]]:
    V, F = engine.Variable, engine.F
    cs = [float(c) for c in np.random.default_rng(0).uniform(-1, 1, n)]

    def run() -> dict[str, float]:
        x = V(np.array(0.5))
        y = V(np.array(0.0))
        for c in cs:
            y = y + F.sin(c * x)
        return {"backward": _timed(y.backward)}

    return run


def branches_torch(torch: types.ModuleType, n: int) -> Callable[[], dict[str, float]]:
    cs = [float(c) for c in np.random.default_rng(0).uniform(-1, 1, n)]

    def run() -> dict[str, float]:
        x = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
        y = torch.tensor(0.0, dtype=torch.float64)
        for c in cs:
            y = y + torch.sin(c * x)
        return {"backward": _timed(y.backward)}

    return run


# =============================================================================
# (c) MLP training step: batch 32, 10 -> 64 -> 64 -> 1, MSE, SGD; the second hidden layer is
# sigmoid (c) or tanh (c2)
# =============================================================================
MLP_SIZES = ((10, 64), (64, 64), (64, 1))
# tanh's slope at 0 is four times sigmoid's: at 0.1 the tanh variant diverges within 20 steps
MLP_LR = {"sigmoid": 0.1, "tanh": 0.03}


def _mlp_data() -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 10)).astype(np.float32)
    t = np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)
    weights = []
    for n_in, n_out in MLP_SIZES:
        weights.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32))
        weights.append(np.zeros(n_out, dtype=np.float32))
    return x, t, weights


def sgd_steps(loss_of: Callable[[], Any], params: list, steps: int, lr: float) -> float:
    """``steps`` steps of plain SGD on ``loss_of()`` (DeZero's API); the last loss."""
    for _ in range(steps):
        loss = loss_of()
        for p in params:
            p.cleargrad()
        loss.backward()
        for p in params:
            p.data -= lr * p.grad.data
    return float(loss.data)


def mlp_dezero_like(
    engine: Engine, steps: int, second: str = "sigmoid"
) -> Callable[[], dict[str, float]]:
    P, F = engine.Parameter, engine.F
    act2 = getattr(F, second)
    lr = MLP_LR[second]

    def run() -> dict[str, float]:
        x, t, weights = _mlp_data()
        W1, b1, W2, b2, W3, b3 = params = [P(w.copy()) for w in weights]
        losses: list = []

        def loss_of() -> object:
            h = F.sigmoid(F.linear(x, W1, b1))
            h = act2(F.linear(h, W2, b2))
            return F.mean_squared_error(F.linear(h, W3, b3), t)

        def train() -> None:
            losses.append(sgd_steps(loss_of, params, steps, lr))

        seconds = _timed(train)
        assert params[0].data.dtype == np.float32, params[0].data.dtype
        return {"train": seconds, "loss": losses[0]}

    return run


def mlp_layers(engine: Engine, steps: int) -> Callable[[], dict[str, float]]:
    """(c) written with the engine's Layer and Linear: what a call of a layer costs (for
    autodiff with no recorder, the scope check of Layer.__call__)."""
    F, L = engine.F, engine.L
    lr = MLP_LR["sigmoid"]

    def run() -> dict[str, float]:
        x, t, weights = _mlp_data()

        class MLP(L.Layer):
            def __init__(self) -> None:
                super().__init__()
                for i, (n_in, n_out) in enumerate(MLP_SIZES):
                    fc = L.Linear(n_out, in_size=n_in)
                    fc.W.data, fc.b.data = weights[2 * i].copy(), weights[2 * i + 1].copy()
                    setattr(self, f"l{i}", fc)

            def forward(self, h: object) -> object:
                return self.l2(F.sigmoid(self.l1(F.sigmoid(self.l0(h)))))

        model = MLP()
        params = list(model.params())
        losses: list = []

        def train() -> None:
            losses.append(sgd_steps(lambda: F.mean_squared_error(model(x), t), params, steps, lr))

        seconds = _timed(train)
        return {"train": seconds, "loss": losses[0]}

    return run


def mlp_torch(
    torch: types.ModuleType, steps: int, second: str = "sigmoid"
) -> Callable[[], dict[str, float]]:
    act2 = getattr(torch, second)
    lr = MLP_LR[second]

    def run() -> dict[str, float]:
        x, t, weights = _mlp_data()
        x, t = torch.from_numpy(x), torch.from_numpy(t)
        W1, b1, W2, b2, W3, b3 = params = [torch.tensor(w, requires_grad=True) for w in weights]
        losses: list = []

        def train() -> None:
            for _ in range(steps):
                h = torch.sigmoid(x @ W1 + b1)
                h = act2(h @ W2 + b2)
                y = h @ W3 + b3
                loss = ((y - t) ** 2).sum() / len(y)
                for p in params:
                    p.grad = None
                loss.backward()
                with torch.no_grad():
                    for p in params:
                        p -= lr * p.grad
            losses.append(loss.item())

        seconds = _timed(train)
        return {"train": seconds, "loss": losses[0]}

    return run


def _sigmoid(a: np.ndarray) -> np.ndarray:
    return np.tanh(a * 0.5) * 0.5 + 0.5


def mlp_numpy(steps: int, second: str = "sigmoid") -> Callable[[], dict[str, float]]:
    """The floor: the same step written by hand in numpy, no graph at all."""
    tanh = second == "tanh"
    lr = MLP_LR[second]

    def run() -> dict[str, float]:
        x, t, weights = _mlp_data()
        W1, b1, W2, b2, W3, b3 = params = [w.copy() for w in weights]
        losses: list = []

        def train() -> None:
            n = len(x)
            for _ in range(steps):
                h1 = _sigmoid(x @ W1 + b1)
                a2 = h1 @ W2 + b2
                h2 = np.tanh(a2) if tanh else _sigmoid(a2)
                y = h2 @ W3 + b3
                diff = y - t
                loss = (diff**2).sum() / n
                gy = diff * (2.0 / n)
                grads = [None] * 6
                grads[4], grads[5] = h2.T @ gy, gy.sum(axis=0)
                g = gy @ W3.T
                g = g * (1 - h2 * h2) if tanh else g * h2 * (1 - h2)
                grads[2], grads[3] = h1.T @ g, g.sum(axis=0)
                g = (g @ W2.T) * h1 * (1 - h1)
                grads[0], grads[1] = x.T @ g, g.sum(axis=0)
                for p, grad in zip(params, grads, strict=True):
                    p -= lr * grad
            losses.append(float(loss))

        seconds = _timed(train)
        return {"train": seconds, "loss": losses[0]}

    return run


# =============================================================================
# (f) LSTM, truncated backpropagation through time: batch 32, 16 -> 64 -> 1, MSE summed over
# a window of 20 steps, then backward, unchain_backward and an SGD step (the book's step 60)
# =============================================================================
LSTM_SIZES = {"batch": 32, "in": 16, "hidden": 64}
LSTM_LR = 0.05


def _lstm_data(steps: int) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    n, i, h = LSTM_SIZES["batch"], LSTM_SIZES["in"], LSTM_SIZES["hidden"]
    xs = rng.standard_normal((steps, n, i)).astype(np.float32)
    ts = np.sin(xs.sum(axis=2, keepdims=True)).astype(np.float32)
    weights = {}
    for gate in "fiou":
        weights[f"x2{gate}/W"] = (rng.standard_normal((i, h)) / np.sqrt(i)).astype(np.float32)
        weights[f"x2{gate}/b"] = np.zeros(h, dtype=np.float32)
        weights[f"h2{gate}/W"] = (rng.standard_normal((h, h)) / np.sqrt(h)).astype(np.float32)
    weights["fc/W"] = (rng.standard_normal((h, 1)) / np.sqrt(h)).astype(np.float32)
    weights["fc/b"] = np.zeros(1, dtype=np.float32)
    return xs, ts, weights


def _lstm_class(engine: Engine) -> type:
    """The engine's LSTM layer; for an earlier commit's autodiff, which has none, the same
    layer (DeZero's formula and parameters) built here from its Layer and Linear."""
    L, F = engine.L, engine.F
    if hasattr(L, "LSTM"):
        return L.LSTM

    class LSTM(L.Layer):
        def __init__(self, hidden_size: int, in_size: int) -> None:
            super().__init__()
            for gate in "fiou":
                setattr(self, f"x2{gate}", L.Linear(hidden_size, in_size=in_size))
            for gate in "fiou":
                setattr(self, f"h2{gate}", L.Linear(hidden_size, in_size=hidden_size, nobias=True))
            self.h = self.c = None

        def forward(self, x: Any) -> Any:
            def gate(name: str, act: Callable) -> Any:
                a = getattr(self, f"x2{name}")(x)
                return act(a if self.h is None else a + getattr(self, f"h2{name}")(self.h))

            f, i = gate("f", F.sigmoid), gate("i", F.sigmoid)
            o, u = gate("o", F.sigmoid), gate("u", F.tanh)
            c = i * u if self.c is None else f * self.c + i * u
            self.h, self.c = o * F.tanh(c), c
            return self.h

    return LSTM


def lstm_bptt(engine: Engine, steps: int, windows: int) -> Callable[[], dict[str, float]]:
    """``windows`` windows of ``steps`` LSTM steps, each ending in backward, unchain_backward
    and an SGD update, with the engine's LSTM and Linear layers and identical weights."""
    F, L = engine.F, engine.L

    def run() -> dict[str, float]:
        xs, ts, weights = _lstm_data(steps * windows)
        lstm = _lstm_class(engine)(LSTM_SIZES["hidden"], in_size=LSTM_SIZES["in"])
        fc = L.Linear(1, in_size=LSTM_SIZES["hidden"])
        for key, array in weights.items():
            name, attr = key.split("/")
            layer = fc if name == "fc" else getattr(lstm, name)
            getattr(layer, attr).data = array.copy()
        params = [*lstm.params(), *fc.params()]
        losses: list[float] = []

        def train() -> None:
            k = 0
            for _ in range(windows):
                loss = 0
                for _ in range(steps):
                    loss = loss + F.mean_squared_error(fc(lstm(xs[k])), ts[k])
                    k += 1
                for p in params:
                    p.cleargrad()
                loss.backward()
                loss.unchain_backward()
                for p in params:
                    p.data -= LSTM_LR * p.grad.data
                losses.append(float(loss.data))

        seconds = _timed(train)
        return {"train": seconds / windows, "loss": losses[-1]}

    return run


# =============================================================================
# (d) ten 512x512 matmuls, forward and backward
# =============================================================================
def _matmul_data(size: int, depth: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        (rng.standard_normal((size, size)) / np.sqrt(size)).astype(np.float32)
        for _ in range(depth + 1)
    ]


def matmul_dezero_like(engine: Engine, size: int, depth: int) -> Callable[[], dict[str, float]]:
    V, F = engine.Variable, engine.F

    def run() -> dict[str, float]:
        arrays = _matmul_data(size, depth)

        def step() -> None:
            xs = [V(a) for a in arrays]
            y = xs[0]
            for w in xs[1:]:
                y = F.matmul(y, w)
            y.backward()

        return {"step": _timed(step)}

    return run


def matmul_torch(torch: types.ModuleType, size: int, depth: int) -> Callable[[], dict[str, float]]:
    def run() -> dict[str, float]:
        arrays = _matmul_data(size, depth)

        def step() -> None:
            xs = [torch.tensor(a, requires_grad=True) for a in arrays]
            y = xs[0]
            for w in xs[1:]:
                y = y @ w
            y.backward(torch.ones_like(y))

        return {"step": _timed(step)}

    return run


def matmul_numpy(size: int, depth: int) -> Callable[[], dict[str, float]]:
    """The floor: the same 3 * depth matmuls in numpy (forward, then dx and dW per layer)."""

    def run() -> dict[str, float]:
        arrays = _matmul_data(size, depth)

        def step() -> None:
            ys = [arrays[0]]
            for w in arrays[1:]:
                ys.append(ys[-1] @ w)
            gy = np.ones_like(ys[-1])
            grads = []
            for i in range(depth, 0, -1):
                grads.append(ys[i - 1].T @ gy)
                gy = gy @ arrays[i].T
            grads.append(gy)

        return {"step": _timed(step)}

    return run


# =============================================================================
# (e) conv2d: N=8, C=16, 32x32 images, 3x3 kernels, 16 output channels, padding 1
# =============================================================================
CONV_FULL = (8, 16, 32, 16, 3, 1)  # N, C, H = W, OC, K, pad
CONV_QUICK = (2, 16, 16, 16, 3, 1)
CONV_STEPS = 10  # conv2d forward and backward passes per run


def _conv_data(n: int, c: int, size: int, oc: int, k: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, size, size)).astype(np.float32)
    W = (rng.standard_normal((oc, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    return [x, W, np.zeros(oc, dtype=np.float32)]


def conv_dezero_like(engine: Engine, shape: tuple[int, ...]) -> Callable[[], dict[str, float]]:
    """``conv2d(x, W, b)`` then backward from its output (seeded with ones), x a Variable (a
    layer inside a network: its input's gradient is computed too)."""
    V, P, F = engine.Variable, engine.Parameter, engine.F
    n, c, size, oc, k, pad = shape

    def run() -> dict[str, float]:
        xa, Wa, ba = _conv_data(n, c, size, oc, k)
        x, W, b = V(xa), P(Wa), P(ba)
        fwd = bwd = 0.0
        holder: list = []
        for _ in range(CONV_STEPS):
            fwd += _timed(lambda: holder.append(F.conv2d(x, W, b, 1, pad)))
            y = holder.pop()
            for v in (x, W, b):
                v.cleargrad()
            bwd += _timed(y.backward)
        assert W.grad.shape == W.shape and x.grad.shape == x.shape
        return {"forward": fwd / CONV_STEPS, "backward": bwd / CONV_STEPS}

    return run


def conv_torch(torch: types.ModuleType, shape: tuple[int, ...]) -> Callable[[], dict[str, float]]:
    n, c, size, oc, k, pad = shape

    def run() -> dict[str, float]:
        xa, Wa, ba = _conv_data(n, c, size, oc, k)
        x, W, b = (torch.tensor(a, requires_grad=True) for a in (xa, Wa, ba))
        fwd = bwd = 0.0
        holder: list = []
        for _ in range(CONV_STEPS):
            fwd += _timed(lambda: holder.append(torch.nn.functional.conv2d(x, W, b, 1, pad)))
            y = holder.pop()
            for v in (x, W, b):
                v.grad = None
            bwd += _timed(lambda y=y: y.backward(torch.ones_like(y)))
        return {"forward": fwd / CONV_STEPS, "backward": bwd / CONV_STEPS}

    return run


def conv_rows(
    engines: list[Engine], torch: types.ModuleType | None, quick: bool, repeats: int
) -> list[dict]:
    """(e): conv2d forward and backward; an engine without conv2d (an old --base) shows '-'."""
    shape = CONV_QUICK if quick else CONV_FULL
    runners: dict = {e.name: runner(e, conv_dezero_like, shape) for e in engines if e.has("conv2d")}
    if torch is not None:
        runners["PyTorch"] = conv_torch(torch, shape)
    res = run_alternately(runners, repeats * 3)
    n, c, size, oc, k, pad = shape
    rows = []
    for metric in ("forward", "backward"):
        samples = {name: [v * 1e3 for v in r[metric]] for name, r in res.items()}
        ratio = median_ratio(samples["autodiff"], samples.get("DeZero"))
        rows.append(
            {
                "name": f"(e) conv2d {n}x{c}x{size}x{size} {k}x{k}->{oc} pad {pad} {metric}",
                "unit": "ms",
                "samples": samples,
                "target": "<= 1.0x DeZero",
                "met": _met(None if ratio is None else ratio <= 1.0),
            }
        )
    return rows


# =============================================================================
# Report
# =============================================================================
ENGINE_COLUMNS = ("autodiff", "before", "DeZero", "PyTorch", "numpy")


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def print_table(rows: list[dict]) -> None:
    before = any("before" in row["samples"] for row in rows)
    columns = [e for e in ENGINE_COLUMNS if e != "before" or before]
    headers = ("benchmark", *columns, "ours/DeZero", "ours/floor", "target", "met")
    if before:
        headers = (*headers[:-2], "ours/before", *headers[-2:])
    table = [headers]
    for row in rows:
        samples: Samples = row["samples"]
        unit = row["unit"]
        ours = samples.get("autodiff") if row.get("ratios", True) else None
        table.append(
            (
                row["name"],
                *(
                    _fmt(statistics.median(samples[e]) if e in samples else None, unit)
                    for e in columns
                ),
                _ratio(median_ratio(ours, samples.get("DeZero"))),
                _ratio(median_ratio(ours, samples.get("numpy"))),
                *((_ratio(median_ratio(ours, samples.get("before"))),) if before else ()),
                row.get("target", ""),
                row.get("met", ""),
            )
        )
    widths = [max(len(str(line[i])) for line in table) for i in range(len(headers))]
    for k, line in enumerate(table):
        print("  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(line)).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))


def _met(ok: bool | None) -> str:
    return "-" if ok is None else ("yes" if ok else "NO")


def lstm_row(engines: list[Engine], repeats: int, quick: bool) -> tuple[dict, dict]:
    """(f): one LSTM window of truncated BPTT per figure (for ``--base``, an LSTM of the old
    engine's Linear layers: :func:`_lstm_class`)."""
    steps, windows = (10, 2) if quick else (20, 3)
    runners = {e.name: runner(e, lstm_bptt, steps, windows) for e in engines}
    res = run_alternately(runners, repeats * 5)
    per_window = {name: [v * 1e3 for v in r["train"]] for name, r in res.items()}
    ratio = median_ratio(per_window["autodiff"], per_window.get("DeZero"))
    row = {
        "name": f"(f) LSTM 32x16-64 BPTT {steps} steps fwd+bwd",
        "unit": "ms",
        "samples": per_window,
        "target": "<= 1.0x DeZero",
        "met": _met(None if ratio is None else ratio <= 1.0),
    }
    return row, {name: r["loss"][-1] for name, r in res.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per figure")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="cpu: this process's CPU time (steady on a shared machine; the same as wall time "
        "for single-threaded work on an idle one); wall: elapsed time",
    )
    parser.add_argument(
        "--base",
        metavar="REF",
        help="also time this git commit's autodiff, side by side (the 'before' column)",
    )
    args = parser.parse_args(argv)
    global _clock
    _clock = CLOCKS[args.clock]
    quick = args.quick
    repeats = args.repeats or (2 if quick else 5)

    ours = Engine("autodiff", autodiff, AF, layers=autodiff.layers)
    dezero = _import_dezero()
    dz = (
        Engine("DeZero", dezero, dezero.functions, layers=dezero.layers)
        if dezero is not None
        else None
    )
    torch = _import_torch()
    before = None
    if args.base:
        base = baseline.load(args.base)
        before = Engine(
            "before",
            base.module("autodiff.core"),
            base.module("autodiff.functions"),
            base,
            layers=base.module("autodiff.layers"),
        )
    engines = [e for e in (ours, before, dz) if e is not None]

    print(
        f"autodiff {autodiff.__version__}, DeZero {getattr(dezero, '__version__', '-')}, "
        f"PyTorch {getattr(torch, '__version__', '-')}, numpy {np.__version__}, "
        f"Python {sys.version.split()[0]}"
        + (f", before = {args.base} ({before.base.commit})" if before else "")
        + f"; medians of {repeats} repeats ((c): {5 * repeats} "
        f"short runs), {args.clock} time; ratios are medians of per-repeat ratios"
        + (" (--quick: small sizes)" if quick else "")
    )
    rows: list[dict] = []

    def scaled(res: dict, metric: str, factor: float) -> Samples:
        return {name: [v * factor for v in r[metric]] for name, r in res.items()}

    def target_row(name: str, samples: Samples, unit: str, target: str, ok) -> dict:
        return {"name": name, "unit": unit, "samples": samples, "target": target, "met": ok}

    # (a)
    steps = 200 if quick else 2000
    n_ops = 3 * steps
    runners: dict = {e.name: runner(e, chain_dezero_like, steps) for e in engines}
    if torch is not None:
        runners["PyTorch"] = chain_torch(torch, steps)
    res = run_alternately(runners, repeats)
    for metric in ("forward", "backward"):
        name = f"(a) chain {n_ops} ops {metric} per op"
        rows.append({"name": name, "unit": "us", "samples": scaled(res, metric, 1e6 / n_ops)})
    total = {
        name: [(f + b) * 1e3 for f, b in zip(r["forward"], r["backward"], strict=True)]
        for name, r in res.items()
    }
    ratio = median_ratio(total["autodiff"], total.get("DeZero"))
    ok = _met(None if ratio is None else ratio <= 0.5)
    rows.append(target_row(f"(a) chain {n_ops} ops fwd+bwd", total, "ms", "<= 0.5x DeZero", ok))

    # (b): every size and engine in each repeat, so the scaling ratio compares neighbours
    sizes = (250, 500, 1000) if quick else (1000, 2000, 4000)
    runners = {}
    for n in sizes:
        for e in engines:
            runners[(e.name, n)] = runner(e, branches_dezero_like, n)
        if torch is not None:
            runners[("PyTorch", n)] = branches_torch(torch, n)
    res = run_alternately(runners, repeats)
    names = sorted({name for name, _ in res}, key=ENGINE_COLUMNS.index)
    times = {
        n: {name: [v * 1e3 for v in res[(name, n)]["backward"]] for name in names} for n in sizes
    }
    for n in sizes:
        row = {"name": f"(b) {n} branches backward", "unit": "ms", "samples": times[n]}
        if n == sizes[-1] and "DeZero" in times[n]:
            ratio = median_ratio(times[n]["autodiff"], times[n]["DeZero"])
            row.update(target="<= 0.15x DeZero", met=_met(ratio <= 0.15))
        rows.append(row)
    scaling = {
        name: [a / b for a, b in zip(times[sizes[-1]][name], times[sizes[0]][name], strict=True)]
        for name in names
    }
    ok = _met(statistics.median(scaling["autodiff"]) <= 5)
    name = f"(b) time({sizes[-1]}) / time({sizes[0]})"
    rows.append({**target_row(name, scaling, "", "<= 5", ok), "ratios": False})

    # (c), (c2): short runs of 20 steps, five times as many repeats, so the engines alternate
    steps = 10 if quick else 20
    losses = {}
    for label, second in (("(c)", "sigmoid"), ("(c2)", "tanh")):
        runners = {e.name: runner(e, mlp_dezero_like, steps, second) for e in engines}
        if torch is not None:
            runners["PyTorch"] = mlp_torch(torch, steps, second)
        runners["numpy"] = mlp_numpy(steps, second)
        res = run_alternately(runners, repeats * 5)
        per100 = scaled(res, "train", 100 / steps * 1e3)
        ratio = median_ratio(per100["autodiff"], per100.get("DeZero"))
        ok = _met(None if ratio is None else ratio <= 0.5)
        name = f"{label} MLP 32x10-64-64-1 {second} per 100 steps"
        rows.append(target_row(name, per100, "ms", "<= 0.5x DeZero", ok))
        losses[label] = {name: r["loss"][-1] for name, r in res.items()}

    # (c3): (c) built of Layers; with no recorder, a layer's call checks for scope handlers
    runners = {e.name: runner(e, mlp_layers, steps) for e in engines}
    res = run_alternately(runners, repeats * 5)
    per100 = scaled(res, "train", 100 / steps * 1e3)
    ratio = median_ratio(per100["autodiff"], per100.get("before"))
    ok = _met(None if ratio is None else ratio <= 1.05)
    name = "(c3) the MLP of (c) as Layers per 100 steps"
    rows.append(target_row(name, per100, "ms", "<= 1.05x before", ok))
    losses["(c3)"] = {name: r["loss"][-1] for name, r in res.items()}

    # (d)
    size, depth = (128, 10) if quick else (512, 10)
    runners = {e.name: runner(e, matmul_dezero_like, size, depth) for e in engines}
    if torch is not None:
        runners["PyTorch"] = matmul_torch(torch, size, depth)
    runners["numpy"] = matmul_numpy(size, depth)
    res = run_alternately(runners, repeats)
    step_ms = scaled(res, "step", 1e3)
    ok = _met(median_ratio(step_ms["autodiff"], step_ms["numpy"]) <= 1.15)
    name = f"(d) {depth} matmuls {size}x{size} fwd+bwd"
    rows.append(target_row(name, step_ms, "ms", "<= 1.15x numpy", ok))

    # (e) conv2d, (f) LSTM
    rows += conv_rows(engines, torch, quick, repeats)
    row, lstm_losses = lstm_row(engines, repeats, quick)
    rows.append(row)

    print()
    print_table(rows)
    print()
    for label, by_engine in losses.items():
        print(
            f"{label} loss after {steps} steps (same model, same data): "
            + ", ".join(f"{name} {loss:.6g}" for name, loss in by_engine.items())
        )
    print(
        "(f) loss of the last window (same model, same data): "
        + ", ".join(f"{name} {loss:.6g}" for name, loss in lstm_losses.items())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
