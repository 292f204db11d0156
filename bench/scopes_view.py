"""Module scopes in the viewer: how fast a big recorded model opens collapsed, how fast one
module expands and collapses, and the cost of a step redraw.

The graph is one recorded training step (forward and backward) of a deep MLP built of Layers:
a Model of ``--stages`` Stage layers, each a chain of ``--layers`` Linear layers with an
activation after each (sigmoid in even stages, tanh in odd ones, so consecutive stages are not
repeats and nothing folds). The default sizes make about 100 000 nodes.

Rows (medians of ``--repeats`` runs, wall clock):

1. time to scene: ``Document.load_graph`` at the default depth (the scopes read, the depth
   chosen, the visible graph laid out, the scene built) plus its first frame, with a runner as
   the window has one (the problem detectors of a graph this big run on it, after the graph
   is shown: timed once on their own); against laying out the whole graph (``compute_layout``
   + ``Scene``), as a graph without scopes opens;
2. with stages expanded until about ``--visible`` nodes show: expanding one more stage, and
   collapsing it again (Document.expand / collapse: visible graph, incremental layout, scene);
3. ``Scene.frame`` at depth 1, stepping through the steps one at a time.

Row 0 is the first open of the fresh recording (its steps and index decoded then, as a
viewer opening a new recording does), with ``--paint`` plus its first paint in an offscreen
GraphView.

Run: ``python -m bench.scopes_view`` (``--quick`` for small sizes, ``--full`` to also lay the
whole graph out, ``--paint`` for the Qt paint).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import autodiff.functions as F
from autodiff.layers import Layer, Linear
from autodiff.models import Model
from autodiff.trace import record
from viewer.model.document.document import Document
from viewer.model.document.work import Outcome, Work
from viewer.model.layout.compute import compute_layout
from viewer.model.scene.scene import Scene


class Stage(Layer):
    def __init__(self, width: int, layers: int, tanh: bool) -> None:
        super().__init__()
        self.n = layers
        self.tanh = tanh
        for i in range(layers):
            setattr(self, f"l{i}", Linear(width, in_size=width))

    def forward(self, h):
        act = F.tanh if self.tanh else F.sigmoid
        for i in range(self.n):
            h = act(getattr(self, f"l{i}")(h))
        return h


class DeepMLP(Model):
    def __init__(self, stages: int, layers: int, width: int) -> None:
        super().__init__()
        self.n = stages
        for i in range(stages):
            setattr(self, f"s{i}", Stage(width, layers, tanh=bool(i % 2)))
        self.out = Linear(1, in_size=width)

    def forward(self, h):
        for i in range(self.n):
            h = getattr(self, f"s{i}")(h)
        return self.out(h)


def recorded_step(stages: int, layers: int, width: int = 4):
    np.random.seed(0)
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((8, width)), rng.standard_normal((8, 1))
    model = DeepMLP(stages, layers, width)
    with record() as trace:
        loss = F.mean_squared_error(model(x), t)
        loss.backward()
    return trace


def _run(work: Work) -> Outcome:
    """Run ``work`` here, as a runner's thread would, and hand its outcome back."""
    try:
        outcome = Outcome("succeeded", work.function(*work.args, lambda *a: None, lambda: False))
    except Exception as e:  # reported as the runner would
        outcome = Outcome("failed", error=e)
    work.finish(outcome)
    return outcome


class _Runner:
    """The window's runner, on this thread: a layout runs at once, the problem detectors are
    held (the graph shows before they run)."""

    def __init__(self, held: list[Work]) -> None:
        self.held = held

    def submit(self, work: Work) -> None:
        if work.kind == "problems":
            self.held.append(work)
        else:
            _run(work)

    def cancel(self, kind: str) -> None:
        self.held[:] = [w for w in self.held if w.kind != kind]


def timed(work, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def paint(doc: Document) -> float:
    """Seconds to put the document's scene in a GraphView and paint it once (offscreen)."""
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6 import QtWidgets

    from viewer.qt.graph.view import GraphView

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    view = GraphView()
    view.resize(1200, 800)
    view.show()
    app.processEvents()
    t0 = time.perf_counter()
    scene = doc.scene
    view.set_graph(scene.geometry, label_lines=scene.max_label_lines())
    view.set_frame(doc.frame())
    view.viewport().repaint()
    app.processEvents()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=100)
    parser.add_argument("--layers", type=int, default=166)
    parser.add_argument("--visible", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--full", action="store_true", help="also lay the whole graph out")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--paint", action="store_true", help="time the first paint (Qt)")
    args = parser.parse_args()
    if args.quick:
        args.stages, args.layers, args.visible, args.repeats = 20, 20, 1000, 3
    trace = recorded_step(args.stages, args.layers)
    n = len(trace.variables) + len(trace.functions)
    print(f"graph: {n} nodes, {len(trace.steps)} steps, {len(trace.scopes()) - 1} scopes")

    held: list[Work] = []

    def open_graph() -> Document:
        # as the window opens it: the problem detectors of a big graph go to its runner and
        # run after the graph is shown (timed on their own below)
        doc = Document()
        doc.runner = _Runner(held)
        doc.load_graph(trace, "deep mlp", "trace")
        doc.frame()
        return doc

    t0 = time.perf_counter()
    first = open_graph()
    first.set_depth(1)
    first.frame()
    t_cold = time.perf_counter() - t0
    print(
        f"0. first open of the fresh recording at depth 1 (decoding its steps and index "
        f"too): {t_cold * 1e3:.0f} ms"
    )
    if args.paint:
        print(f"   + painted in an offscreen window: {paint(first) * 1e3:.0f} ms")
    t_open = timed(open_graph, args.repeats)
    doc = open_graph()
    print(
        f"1. time to scene at the default depth: {t_open * 1e3:.0f} ms "
        f"({doc.scene.n_nodes} nodes shown)"
    )
    held.clear()
    doc = open_graph()
    (problems,) = [w for w in held if w.kind == "problems"]
    t0 = time.perf_counter()
    outcome = _run(problems)
    print(
        f"   then the problem detectors, off the GUI thread: {(time.perf_counter() - t0) * 1e3:.0f}"
        f" ms ({outcome.kind})"
    )

    def open_at_depth_1() -> Document:
        doc = open_graph()
        doc.set_depth(1)
        doc.frame()
        return doc

    t_open1 = timed(open_at_depth_1, args.repeats)
    print(f"   opened at depth 1: {t_open1 * 1e3:.0f} ms ({open_at_depth_1().scene.n_nodes} nodes)")
    if args.full:

        def whole() -> None:
            layout = compute_layout(trace)
            Scene(trace, layout).frame(-1)

        t_full = timed(whole, 1)
        print(f"   laying out the whole graph ({n} nodes) + scene: {t_full * 1e3:.0f} ms")

    doc.set_depth(1)
    doc.frame()
    stage = 0
    while doc.scene.n_nodes < args.visible and stage < args.stages - 1:
        doc.expand(f"DeepMLP/s{stage}")
        doc.frame()
        stage += 1
    target = f"DeepMLP/s{stage}"
    shown = doc.scene.n_nodes
    expand_times, collapse_times = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        doc.expand(target)
        doc.frame()  # what the view draws next
        expand_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        doc.collapse(target)
        doc.frame()
        collapse_times.append(time.perf_counter() - t0)
    print(
        f"2. at {shown} nodes shown: expand one stage {statistics.median(expand_times) * 1e3:.0f}"
        f" ms, collapse it {statistics.median(collapse_times) * 1e3:.0f} ms"
    )

    doc.set_depth(1)
    scene = doc.scene
    # a stretch of forward steps and one of backward steps, one step at a time
    half = scene.n_steps // 2
    steps = [*range(half - 1500, half), *range(scene.n_steps - 1500, scene.n_steps)]
    scene.frame(steps[0] - 1)
    frame_times = []
    for k in steps:
        t0 = time.perf_counter()
        scene.frame(k)
        frame_times.append(time.perf_counter() - t0)
    print(
        f"3. Scene.frame at depth 1 ({scene.n_nodes} nodes): median "
        f"{statistics.median(frame_times) * 1e3:.2f} ms, 99th percentile "
        f"{np.percentile(frame_times, 99) * 1e3:.2f} ms over {len(frame_times)} steps"
    )


if __name__ == "__main__":
    main()
