"""Render benchmark: time to first paint and time per playback step redraw of the graph view.

    python bench/render.py                         # 1 000 and 10 000 nodes + engine graphs
    python bench/render.py --sizes 1000,10000,20000 --repeats 15
    python bench/render.py --gen-dag ../shared/bench/gen_dag.py --json /tmp/render.json

Graphs: the reference generator ``gen_dag.py`` (``gen_graph(n, seed)``, looked up as
``../shared/bench/gen_dag.py`` beside the repository unless ``--gen-dag`` names it) is *run on
the engine*: every function node becomes a call of a small Function with the node's fan-in
and fan-out, recorded by ``autodiff.trace.record`` with a backward pass, so the view is fed a
real Trace, layout and Scene. Two graphs the engine builds on its own are added: an MLP
training step and a scalar chain of ``y = sin(y) * y + y``.

Measured, on the offscreen platform in a 1600 x 1000 view:

* first paint: ``set_graph(geometry)`` + ``set_frame(frame)`` + a synchronous repaint
* step redraw: ``scene.frame(step)`` (the model's part) + ``set_frame`` + a synchronous
  repaint of the whole view (``full``: the worst case), and the same with the event loop doing
  what it does in the app, repainting only the boxes that changed (``app``), over consecutive
  steps in the middle of the forward and backward passes, at two zooms: the whole graph fitted
  in the view, and zoomed in to readable labels (~120 px per node).

Each figure is the median over ``--repeats`` runs (first paint) or over the steps replayed
(redraw), as elapsed (wall) time; the process's CPU time is shown beside it because on a
shared machine it is the steadier figure. Targets: a step redraw <= 16 ms at 1 000 nodes and
<= 50 ms at 10 000.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import autodiff.functions as F  # noqa: E402
from autodiff import Function, Variable, trace  # noqa: E402
from bench.reference_graphs import GEN_DAG, load_gen_dag  # noqa: E402
from viewer.model.layout.compute import compute_layout  # noqa: E402
from viewer.model.scene.scene import Scene  # noqa: E402

TARGETS_MS = {1000: 16.0, 10000: 50.0}


# =============================================================================
# Graphs
# =============================================================================
_OP_CLASSES: dict[tuple[str, int], type] = {}


def _op_class(label: str, n_out: int) -> type:
    """A Function named like the generator's op, with any fan-in and ``n_out`` outputs."""
    key = (label, n_out)
    if key not in _OP_CLASSES:

        def forward(self, *xs):
            total = np.tanh(sum(xs))  # bounded, so deep graphs stay finite
            return tuple(total * (k + 1) for k in range(n_out)) if n_out > 1 else total

        def backward(self, *gys):
            g = sum(gy for gy in gys if gy is not None)
            return tuple(g for _ in self.inputs) if len(self.inputs) > 1 else g

        _OP_CLASSES[key] = type(
            label or "Op", (Function,), {"forward": forward, "backward": backward}
        )
    return _OP_CLASSES[key]


def gen_dag_trace(gen: ModuleType, n: int, seed: int = 0) -> trace.Trace:
    """Run the generator's graph on the engine, with a backward pass, and record it."""
    nodes, edges = gen.gen_graph(n, seed)
    inputs_of: dict[int, list[int]] = {}
    outputs_of: dict[int, list[int]] = {}
    kind = {i: k for i, k, _ in nodes}
    for a, b in edges:
        if kind[b] == "func":
            inputs_of.setdefault(b, []).append(a)
        else:
            outputs_of.setdefault(a, []).append(b)
    rng = np.random.default_rng(seed)
    values: dict[int, Variable] = {}
    keep = []
    with trace.record(max_array_size=16) as t:
        for i, k, label in nodes:
            if k == "var" and i not in values and not any(i in v for v in outputs_of.values()):
                values[i] = Variable(np.array(rng.uniform(0.1, 0.9)), name=label or None)
        for i, k, label in nodes:
            if k != "func":
                continue
            outs = outputs_of.get(i, [])
            ins = [values[j] for j in inputs_of.get(i, []) if j in values]
            if not ins or not outs:
                continue
            result = _op_class(label, len(outs))()(*ins)
            results = result if isinstance(result, list | tuple) else [result]
            for j, v in zip(outs, results, strict=False):
                values[j] = v
        sinks = [v for j, v in values.items() if v.creator is not None]
        loss = sinks[0]
        for v in sinks[1:64]:
            loss = loss + v
        loss.backward()
        keep.append((values, loss))
    t._bench_keep = keep  # the graph stays alive: no FREED states while we draw it
    return t


def mlp_trace() -> trace.Trace:
    from autodiff import models, optimizers

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8))
    y = (x[:, :1] > 0).astype(float)
    model = models.MLP((32, 32, 1))
    optimizers.SGD(0.1).setup(model)
    with trace.record(max_array_size=64) as t:
        loss = F.mean_squared_error(model(x), y)
        loss.backward()
    t._bench_keep = (model, loss)
    return t


def chain_trace(ops: int) -> trace.Trace:
    with trace.record(max_array_size=16) as t:
        x = Variable(np.array(0.3), name="x")
        y = x
        for _ in range(ops // 3):
            y = F.sin(y) * y + y
            y = y * 0.5
        y.backward()
    t._bench_keep = (x, y)
    return t


# =============================================================================
# Timing
# =============================================================================
def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _ms(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return (wall - start[0]) * 1e3, (cpu - start[1]) * 1e3


def _median(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def _p90(pairs: list[tuple[float, float]]) -> float:
    walls = sorted(p[0] for p in pairs)
    return walls[min(len(walls) - 1, int(0.9 * len(walls)))]


def measure(name: str, t: Any, repeats: int, steps: int) -> dict[str, Any]:
    from PySide6 import QtWidgets

    from viewer.qt.graph.view import GraphView

    app = QtWidgets.QApplication.instance()
    start = _clock()
    layout = compute_layout(t)
    layout_ms = _ms(start)
    start = _clock()
    scene = Scene(t, layout)
    scene_ms = _ms(start)
    n_steps = scene.n_steps

    view = GraphView()
    view.resize(1600, 1000)
    view.show()
    app.processEvents()

    first: list[tuple[float, float]] = []
    for _ in range(repeats):
        frame = scene.frame(n_steps // 2)
        gc.collect()
        start = _clock()
        view.set_graph(scene.geometry)
        view.set_frame(frame)
        view.viewport().repaint()
        first.append(_ms(start))

    def replay(label: str) -> dict[str, Any]:
        model, total, partial = [], [], []
        picks = []
        forward = [s.index for s in t.steps if s.phase == "forward"]
        backward = [s.index for s in t.steps if s.phase == "backward"]
        for run in (forward, backward):
            if run:
                mid = len(run) // 2
                picks += run[max(0, mid - steps // 4) : mid + steps // 4]
        for full in (True, False):
            view.set_frame(scene.frame(picks[0] - 1))
            view.viewport().repaint()
            app.processEvents()
            for step in picks:
                start = _clock()
                frame = scene.frame(step)
                if full:
                    model.append(_ms(start))
                view.set_frame(frame)
                if full:
                    # worst case: the whole view repainted
                    view.viewport().repaint()
                    total.append(_ms(start))
                else:
                    # what the app does: Qt repaints the boxes that changed
                    app.processEvents()
                    app.processEvents()
                    partial.append(_ms(start))
        wall, cpu = _median(total)
        return {
            "zoom": label,
            "pixels_per_unit": round(view.pixels_per_unit(), 1),
            "steps_timed": len(total),
            "redraw_ms": round(wall, 2),
            "redraw_cpu_ms": round(cpu, 2),
            "redraw_p90_ms": round(_p90(total), 2),
            "partial_redraw_ms": round(_median(partial)[0], 2),
            "partial_redraw_cpu_ms": round(_median(partial)[1], 2),
            "model_frame_ms": round(_median(model)[0], 2),
        }

    view.fit()
    app.processEvents()
    fitted = replay("fit")
    view.zoom_by(120.0 / max(view.pixels_per_unit(), 1e-9))
    view.center_on(scene.n_nodes // 2)
    app.processEvents()
    zoomed = replay("zoomed in")
    view.close()
    view.deleteLater()
    app.processEvents()
    wall, cpu = _median(first)
    return {
        "graph": name,
        "nodes": scene.n_nodes,
        "edges": scene.n_edges,
        "steps": n_steps,
        "layout_ms": round(layout_ms[0], 1),
        "scene_ms": round(scene_ms[0], 1),
        "first_paint_ms": round(wall, 2),
        "first_paint_cpu_ms": round(cpu, 2),
        "redraw": [fitted, zoomed],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,10000", help="gen_dag sizes (comma separated)")
    p.add_argument("--repeats", type=int, default=9, help="first-paint repeats")
    p.add_argument("--steps", type=int, default=60, help="steps replayed per zoom")
    p.add_argument("--chain-ops", type=int, default=1500, help="ops in the engine chain")
    p.add_argument(
        "--gen-dag",
        type=Path,
        default=GEN_DAG,
        help="path of the reference generator",
    )
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args(argv)

    from PySide6 import QtWidgets

    import viewer.qt  # noqa: F401  (applies the bindings workaround before any emit)

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    app.setStyle("Fusion")
    gen = load_gen_dag(args.gen_dag)
    graphs: list[tuple[str, Callable[[], Any]]] = [
        (f"gen_dag {int(n):,}", lambda n=int(n): gen_dag_trace(gen, n))
        for n in args.sizes.split(",")
    ]
    graphs += [
        ("engine: MLP training step", mlp_trace),
        (f"engine: chain of {args.chain_ops} ops", lambda: chain_trace(args.chain_ops)),
    ]
    results = []
    print(
        f"{'graph':<28} {'nodes':>7} {'steps':>6} {'layout':>8} {'scene':>7} {'1st paint':>9} "
        f"{'zoom':>9} {'full':>7} {'p90':>7} {'cpu':>6} {'app':>7} {'cpu':>6} {'frame()':>7}"
        f" {'target full/app':>15}"
    )
    for name, make in graphs:
        t = make()
        r = measure(name, t, args.repeats, args.steps)
        results.append(r)
        target = None
        if r["nodes"] >= 800:
            target = TARGETS_MS[min(TARGETS_MS, key=lambda k: abs(k - r["nodes"]))]
        for k, z in enumerate(r["redraw"]):
            head = (
                f"{name:<28} {r['nodes']:>7,} {r['steps']:>6,} {r['layout_ms']:>6.0f}ms "
                f"{r['scene_ms']:>5.0f}ms {r['first_paint_ms']:>7.1f}ms"
                if k == 0
                else " " * 71
            )
            verdict = ""
            if target is not None:
                marks = [
                    "ok" if z[key] <= target else "MISS"
                    for key in ("redraw_ms", "partial_redraw_ms")
                ]
                verdict = f"<={target:.0f}: {marks[0]}/{marks[1]}"
            print(
                f"{head} {z['zoom']:>9} {z['redraw_ms']:>5.1f}ms {z['redraw_p90_ms']:>5.1f}ms "
                f"{z['redraw_cpu_ms']:>4.1f}ms {z['partial_redraw_ms']:>5.1f}ms "
                f"{z['partial_redraw_cpu_ms']:>4.1f}ms {z['model_frame_ms']:>5.1f}ms {verdict:>15}"
            )
        del t
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
