"""Find, the overview and the names kept at far zoom on a big graph.

The graph is one recorded chain of ``--nodes`` nodes (a ``sin`` after another) cut into
``autodiff.scope`` blocks of ``--block`` Functions each, opened in a Document (collapsed to
boxes, as the viewer opens it), so every row is about the sizes the viewer meets.

Rows (medians of ``--repeats`` runs, wall clock):

1. find: indexing the trace (``FindIndex``, with the scene shown), a query matching one
   block's nodes and one matching half of the graph, and revealing a match (``Document.reveal``);
2. overview: rasterising the whole graph, expanded (``rasterise``: nodes and edges), into
   200 x 200 pixels;
3. labels at far zoom (``--paint``): a full repaint of an offscreen GraphView of the expanded
   graph at fit with no names kept and with every ``--named``-th node kept named.

Run: ``python -m bench.find_overview`` (``--quick`` for small sizes, ``--paint`` for the Qt
rows).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

import autodiff
import autodiff.functions as F
from autodiff import Variable
from autodiff.trace import record
from viewer.model.document.document import Document
from viewer.model.layout.compute import compute_layout
from viewer.model.panels.find import FindIndex
from viewer.model.panels.overview import overview_map, rasterise
from viewer.model.scene.scene import Scene


def scoped_chain(n_nodes: int, block: int):
    with record() as trace:
        y = Variable(np.array(0.5), name="x")
        for b in range(max(1, n_nodes // (2 * block))):
            with autodiff.scope(f"s{b}"):
                for _ in range(block):
                    y = F.sin(y)
        y.backward()
    return trace


def median_ms(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=100_000)
    p.add_argument("--block", type=int, default=100, help="Functions per scope block")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--named", type=int, default=100, help="every n-th node named (--paint)")
    p.add_argument("--quick", action="store_true", help="10 000 nodes, 3 repeats")
    p.add_argument("--paint", action="store_true", help="also the Qt paint rows")
    args = p.parse_args(argv)
    if args.quick:
        args.nodes, args.repeats = 10_000, 3
    trace = scoped_chain(args.nodes, args.block)
    doc = Document()
    doc.sync_layout_limit = 10**9
    doc.load_graph(trace, "chain", "trace")
    n = len(trace.variables) + len(trace.functions)
    print(f"{n} nodes, {doc.scene.n_nodes} shown collapsed")

    index = FindIndex(trace, doc.scene)
    build = median_ms(lambda: FindIndex(trace, doc.scene), args.repeats)
    block = median_ms(lambda: index.search("s7"), args.repeats)
    half = median_ms(lambda: index.search("sin"), args.repeats)
    print(f"1. find: index {build:.0f} ms; query 's7' {block:.1f} ms, 'sin' {half:.1f} ms", end="")
    hit = int(index.search(f"s{max(1, n // (4 * args.block))}")[0])
    start = time.perf_counter()
    doc.reveal(hit)
    print(f"; reveal {1000 * (time.perf_counter() - start):.0f} ms")

    scene = Scene(trace, compute_layout(trace))
    geo = scene.geometry
    omap = overview_map(geo.bounds(), 200, 200)
    both = median_ms(
        lambda: rasterise(omap, geo.positions, geo.half_sizes, geo.edge_points, geo.edge_offsets),
        args.repeats,
    )
    boxes = median_ms(lambda: rasterise(omap, geo.positions, geo.half_sizes), args.repeats)
    print(f"2. overview of {geo.n_nodes} nodes: {both:.1f} ms ({boxes:.1f} ms without edges)")

    if args.paint:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6 import QtWidgets

        from viewer.qt.graph.view import GraphView

        app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
        view = GraphView()
        view.resize(1600, 1000)
        view.show()
        view.set_graph(geo)
        view.set_frame(scene.frame(scene.n_steps - 1))
        app.processEvents()
        plain = median_ms(view.viewport().repaint, args.repeats)
        named = np.zeros(geo.n_nodes, dtype=bool)
        named[:: args.named] = True
        view.set_named_nodes(named)
        app.processEvents()
        with_names = median_ms(view.viewport().repaint, args.repeats)
        print(
            f"3. repaint at fit: {plain:.0f} ms; with {int(named.sum())} named "
            f"({view._labels.painted_names} drawn): {with_names:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
