"""Recorder and leak-audit benchmark: the engine with and without recording, side by side.

    python bench/trace.py            # the full run (a minute or two)
    python bench/trace.py --quick    # a smoke run on small sizes (no training script)
    python bench/trace.py --repeats 15
    python bench/trace.py --quick --base cfa9107   # also an earlier commit, in the same run
    python bench/trace.py --overhead --base main   # only the overhead rows, full sizes

Workloads (the same as bench/engine.py):
  (a) scalar chain y = sin(y) * y + y, 2000 steps, forward + backward;
  (b) MLP training steps: batch 32, 10 -> 64 -> 64 -> 1, sigmoid, MSE, SGD.
Each is timed with no observer, with an observer that handles nothing (the engine's own hook
path), and inside ``trace.record()``. Targets: recording <= 1.3x (issue 25, the MLP of Layers
with its scopes included); no observer = the engine as before the hook (its cost is one tuple
check per operation, estimated below).

Then a 100 000-node graph (a chain of 50 000 ``sin``): the time and peak memory
(tracemalloc, in a separate run) to record its forward and backward, to build the lazy
``steps`` and ``graph``, and to audit it while the user holds its output and after release.

Last, a long training script the way the viewer opens it (``--script``, by default
resources/examples/sine_regression.py: 10 000 iterations, 80 000 steps): the script alone,
``Document.run_script`` (the worker process) and the in-process runner it replaced, side by
side, each split into the recorded run (with the leak audit and the view of the
last graph, :func:`autodiff.trace.view_for_root`) and showing it (layout and scene), and
for comparison what the whole run's ``Trace.steps`` and ``Trace.graph`` cost. Wall-clock time,
one run each (it is a latency the user waits for).

Each time is the median of ``--repeats`` runs, variants alternating within each repeat; each
ratio is the median of the per-repeat ratios (variants of one repeat run back to back); the
garbage collector is off inside a timed region (as ``timeit`` does); BLAS uses one thread;
times are CPU time of the process (``--timer wall`` for wall-clock time).

``--base REF`` runs (a), (b) and the big graph for this tree and for that commit's autodiff
(loaded beside it by ``bench/baseline.py``), after / before / after / before, so that each
figure of the two versions is measured in the same run.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import gc  # noqa: E402
import itertools  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import baseline  # noqa: E402
from engine import sgd_steps  # noqa: E402

import autodiff.functions as F  # noqa: E402
from autodiff import Parameter, Variable, core, layers, trace  # noqa: E402

TIMER = time.process_time  # CPU time of this process; --timer wall for time.perf_counter
CHAIN_START = -0.5  # the iterates stay in (-0.5, 0): no overflow
MLP_SIZES = ((10, 64), (64, 64), (64, 1))


class _Silent:
    """An observer that handles no event: what the engine's hook path costs by itself."""


# =============================================================================
# Workloads: each returns a callable that runs once and returns the seconds it took
# =============================================================================
def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _timed(fn: Callable[[], object], faults: list[int] | None = None) -> float:
    """Seconds ``fn`` took; what it returns (e.g. a trace) is dropped after the clock stops.
    The run's minor page faults (fresh memory the OS had to map) go to ``faults``."""
    gc.collect()
    gc.disable()
    try:
        f0 = _minor_faults()
        t0 = TIMER()
        result = fn()
        seconds = TIMER() - t0
        if faults is not None:
            faults.append(_minor_faults() - f0)
        del result
        return seconds
    finally:
        gc.enable()


def _variant(work: Callable[[], object], mode: str, faults: list[int]) -> Callable[[], float]:
    def plain() -> object:
        return work()

    def silent() -> object:
        observer = _Silent()
        core.add_observer(observer)
        try:
            return work()
        finally:
            core.remove_observer(observer)

    def recorded() -> object:
        with trace.record() as t:
            work()
        return t  # kept until the clock stops: freeing the trace is not recording

    fn = {"none": plain, "silent observer": silent, "record": recorded}[mode]
    return partial(_timed, fn, faults)


def chain(steps: int) -> Callable[[], object]:
    def run() -> object:
        x = Variable(np.array(CHAIN_START))
        y = x
        for _ in range(steps):
            y = F.sin(y) * y + y
        y.backward()
        return x.grad

    return run


def mlp(steps: int) -> Callable[[], object]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 10)).astype(np.float32)
    t = np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)
    weights = []
    for n_in, n_out in MLP_SIZES:
        weights.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32))
        weights.append(np.zeros(n_out, dtype=np.float32))

    def run() -> object:
        params = [Parameter(w.copy()) for w in weights]
        W1, b1, W2, b2, W3, b3 = params

        def loss_of() -> object:
            h = F.sigmoid(F.linear(x, W1, b1))
            h = F.sigmoid(F.linear(h, W2, b2))
            return F.mean_squared_error(F.linear(h, W3, b3), t)

        return sgd_steps(loss_of, params, steps, 0.1)

    return run


def layered_mlp(steps: int) -> Callable[[], object]:
    """(b) built of Layers: a Model holding three Linear layers, so each call opens scopes
    (``MLP/l0``...) when recording; what scopes add to recording is (b2)'s ratio against
    (b)'s, and against the base's (b2) with ``--base``."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 10)).astype(np.float32)
    t = np.sin(x.sum(axis=1, keepdims=True)).astype(np.float32)

    class MLP(layers.Layer):
        def __init__(self) -> None:
            super().__init__()
            for i, (n_in, n_out) in enumerate(MLP_SIZES):
                setattr(self, f"l{i}", layers.Linear(n_out, in_size=n_in))

        def forward(self, h: object) -> object:
            h = F.sigmoid(self.l0(h))
            h = F.sigmoid(self.l1(h))
            return self.l2(h)

    def run() -> object:
        np.random.seed(0)
        model = MLP()
        params = list(model.params())
        return sgd_steps(lambda: F.mean_squared_error(model(x), t), params, steps, 0.1)

    return run


def compare(name: str, work: Callable[[], object], repeats: int) -> dict[str, float]:
    modes = ("none", "silent observer", "record")
    faults: dict[str, list[int]] = {m: [] for m in modes}
    runners = {m: _variant(work, m, faults[m]) for m in modes}
    for m in modes:
        runners[m]()  # warm-up
    samples: dict[str, list[float]] = {m: [] for m in modes}
    for r in range(repeats):
        order = modes[r % 3 :] + modes[: r % 3]
        for m in order:
            samples[m].append(runners[m]())
    med = {m: statistics.median(v) for m, v in samples.items()}
    # The ratio within each repeat (its variants ran back to back), then the median: a slow
    # stretch of the shared machine then slows both sides of a ratio.
    ratio = {
        m: statistics.median([a / b for a, b in zip(samples[m], samples["none"], strict=True)])
        for m in modes
    }
    print(f"\n{name}")
    print(f"  {'variant':<16} {'time':>12}   {'ratio':>5}   minor page faults")
    for m in modes:
        n_faults = statistics.median(faults[m])
        print(f"  {m:<16} {med[m] * 1e3:9.2f} ms   {ratio[m]:5.2f}x   {n_faults:6.0f}")
    first_read(work)
    return med


def first_read(work: Callable[[], object]) -> None:
    """What recording leaves for later: decoding the tape and building the steps, paid by
    whoever reads the trace first (median of 5)."""
    decode, steps = [], []
    for _ in range(5):
        with trace.record() as t:
            work()
        decode.append(_timed(t._sync))
        steps.append(_timed(lambda: t.steps))
    print(
        f"  read afterwards: decode the tape {statistics.median(decode) * 1e3:7.2f} ms, "
        f"then Trace.steps {statistics.median(steps) * 1e3:7.2f} ms"
    )


def hook_check_cost(ops: int) -> float:
    """Seconds that ``ops`` empty ``if observers:`` checks take: the no-recorder cost."""
    observers: tuple = ()

    def checks() -> None:
        for _ in range(ops):
            if observers:
                pass

    def loop() -> None:
        for _ in range(ops):
            pass

    with_check = min(_timed(checks) for _ in range(5))
    without = min(_timed(loop) for _ in range(5))
    return max(with_check - without, 0.0)


# =============================================================================
# A 100 000-node graph
# =============================================================================
def _materialize(t: trace.Trace) -> object:
    return t.steps, t.graph


def big_graph(ops: int) -> None:
    print(f"\n{2 * ops + 1}-node graph (a chain of {ops} sin), forward + backward")

    def build() -> tuple[Variable, Variable]:
        x = Variable(np.array(0.5), name="x")
        y = x
        for _ in range(ops):
            y = F.sin(y)
        y.backward()
        return x, y

    def clock(fn: Callable[[], object]) -> tuple[float, object]:
        t0 = TIMER()
        result = fn()
        return TIMER() - t0, result

    gc.collect()
    gc.disable()
    try:
        plain, built = clock(build)
        del built

        def record_build() -> tuple[trace.Trace, Variable, Variable]:
            with trace.record() as t:
                x, y = build()
            return t, x, y

        recorded, (t, x, y) = clock(record_build)
        decode, _ = clock(t._sync)
        lazy, _ = clock(partial(_materialize, t))
        assert t.graph.number_of_nodes() == 2 * ops + 1 and len(t.steps) == 2 * ops
        audit_held, held = clock(t.audit)
        del y
        audit_released, released = clock(t.audit)
    finally:
        gc.enable()
    print(f"  build without recording   {plain:8.2f} s")
    print(f"  build while recording     {recorded:8.2f} s   {recorded / plain:5.2f}x")
    print(f"  decode the tape (lazy)    {decode:8.2f} s")
    print(f"  then steps + graph (lazy) {lazy:8.2f} s")
    n_held, n_released = len(held.survivors), len(released.survivors)  # type: ignore[attr-defined]
    print(f"  audit, output held        {audit_held:8.2f} s   {n_held} survivors")
    print(f"  audit, after release      {audit_released:8.2f} s   {n_released} survivors")
    del x, held, released

    # Peak memory, traced separately (tracemalloc slows everything down).
    def peak(fn: Callable[[], object]) -> tuple[float, object]:
        gc.collect()
        tracemalloc.start()
        try:
            result = fn()
            return tracemalloc.get_traced_memory()[1] / 1e6, result
        finally:
            tracemalloc.stop()

    mem_plain, built = peak(build)
    del built
    mem_rec, kept = peak(record_build)
    mem_lazy, _ = peak(partial(_materialize, kept[0]))  # type: ignore[index]
    mem_audit, _ = peak(kept[0].audit)  # type: ignore[index]
    del kept
    print(f"  peak memory, build without recording  {mem_plain:8.1f} MB")
    print(f"  peak memory, build while recording    {mem_rec:8.1f} MB")
    print(f"  peak memory, steps + graph (lazy)     {mem_lazy:8.1f} MB more")
    print(f"  peak memory, audit (output held)      {mem_audit:8.1f} MB more")


# =============================================================================
# A long training script, as the viewer opens it
# =============================================================================
def training_script(path: Path) -> None:
    import contextlib
    import io
    import runpy

    from viewer.model.document.document import Document
    from viewer.model.scripts.run import ScriptRun

    print(f"\n{path.name} in the viewer (wall-clock seconds)")
    clock = time.perf_counter
    saved = (os.getcwd(), list(sys.path))
    try:
        os.chdir(path.parent)
        sys.path.insert(0, str(path.parent))
        t0 = clock()
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(str(path), run_name="__main__")
        plain = clock() - t0
    finally:
        os.chdir(saved[0])
        sys.path[:] = saved[1]
    from viewer.model.scripts.process import ScriptProcess

    print(f"  the script alone                       {plain:7.2f} s")
    for label, runner in (
        ("worker process (Document.run_script)", ScriptProcess),
        ("in this process (before)", ScriptRun),
    ):
        gc.collect()
        document = Document()
        run = runner(path)
        stages: list[tuple[str, float]] = [("the script, recording", clock())]
        run.stage_changed.connect(lambda stage, stages=stages: stages.append((stage, clock())))
        result = run.run()
        stages.append(("", clock()))
        ran = stages[-1][1] - stages[0][1]
        t0 = clock()
        shown = document.apply_script_result(result)
        show = clock() - t0
        assert shown, document.last_error
        t = result.trace
        view = document.trace
        print(
            f"  {label:<38} {ran + show:7.2f} s   "
            f"{len(t.steps):,} steps, {len(t.variables) + len(t.functions):,} nodes recorded"
        )
        print(f"    run: record, audit, send, view       {ran:7.2f} s")
        for (stage, start), (_, end) in itertools.pairwise(stages):
            print(f"      {stage[:34]:<35}{end - start:7.2f} s")
        print(
            f"    show it: layout and scene            {show:7.2f} s   "
            f"{view.graph.number_of_nodes()} nodes, {len(view.steps)} steps"
        )
        del result, t, view, run, document
    fresh = ScriptRun(path).run().trace  # a trace whose steps and graph were never built
    t0 = clock()
    steps = fresh.steps
    all_steps = clock() - t0
    t0 = clock()
    graph = fresh.graph
    all_graph = clock() - t0
    print(f"  the whole run's Trace.steps (first)    {all_steps:7.2f} s   {len(steps):,} steps")
    print(f"  the whole run's Trace.graph (first)    {all_graph:7.2f} s   {len(graph):,} nodes")


ENGINE_NAMES = ("F", "Parameter", "Variable", "core", "layers", "trace")


@contextlib.contextmanager
def _engine(base: baseline.Baseline | None) -> Iterator[None]:
    """Inside, this module's engine names are ``base``'s (None: the current tree's)."""
    if base is None:
        yield
        return
    names = globals()
    saved = {name: names[name] for name in ENGINE_NAMES}
    names.update(
        F=base.module("autodiff.functions"),
        Parameter=base.module("autodiff.core").Parameter,
        Variable=base.module("autodiff.core").Variable,
        core=base.module("autodiff.core"),
        layers=base.module("autodiff.layers"),
        trace=base.module("autodiff.trace"),
    )
    try:
        with base.active():
            yield
    finally:
        names.update(saved)


def engine_sections(steps: int, mlp_steps: int, big_ops: int | None, repeats: int) -> None:
    med = compare(f"(a) scalar chain, {steps} steps, forward + backward", chain(steps), repeats)
    ops = 3 * steps
    check = hook_check_cost(2 * ops)
    print(
        f"  no-observer hook checks (~{2 * ops} per run): {check * 1e6:.0f} us = "
        f"{100 * check / med['none']:.2f}% of the run"
    )
    compare(f"(b) MLP, {mlp_steps} training steps", mlp(mlp_steps), repeats)
    name = f"(b2) the same MLP as Layers (scopes), {mlp_steps} steps"
    compare(name, layered_mlp(mlp_steps), repeats)
    if big_ops is not None:
        big_graph(big_ops)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--timer", choices=("cpu", "wall"), default="cpu")
    parser.add_argument(
        "--script",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "resources/examples/sine_regression.py",
        help="the training script of the last section",
    )
    parser.add_argument("--only-script", action="store_true", help="only the last section")
    parser.add_argument(
        "--overhead",
        action="store_true",
        help="only the recording overhead rows (a), (b), (b2): no big graph, no script",
    )
    parser.add_argument(
        "--base", metavar="REF", help="also run (a), (b) and the big graph with this commit"
    )
    args = parser.parse_args()
    if args.only_script:
        training_script(args.script.resolve())
        return
    global TIMER
    TIMER = time.process_time if args.timer == "cpu" else time.perf_counter
    repeats = args.repeats or (3 if args.quick else 11)
    steps = 200 if args.quick else 2000
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}; medians of {repeats}")
    mlp_steps = 2 if args.quick else 10
    big_ops = None if args.overhead else 5_000 if args.quick else 50_000
    if args.base is None:
        engine_sections(steps, mlp_steps, big_ops, repeats)
    else:
        base = baseline.load(args.base)
        for version in (None, base, None, base):
            label = "after (this tree)" if version is None else f"before ({base.commit})"
            print(f"\n======== {label}")
            with _engine(version):
                engine_sections(steps, mlp_steps, big_ops, repeats)
    if not (args.quick or args.overhead):
        training_script(args.script.resolve())


if __name__ == "__main__":
    main()
