"""Layout benchmark: viewer.model.layout.layered against Graphviz dot, networkx and grandalf.

    python bench/layout.py                                  # sizes 100,1000,5000,20000
    python bench/layout.py --sizes 1000 --repeats 5
    python bench/layout.py --dot-timeout 600 --grandalf-max 5000
    python bench/layout.py --gen-dag ../shared/bench/gen_dag.py --json /tmp/layout.json

The graphs come from the reference generator ``gen_dag.py`` (``gen_graph(n, seed)``: variables
and functions alternating, fan-in and fan-out, fresh parameters, skip connections and shared
inputs reused deep down); it is looked up as ``../shared/bench/gen_dag.py`` beside the
repository unless ``--gen-dag`` names it. When ``autodiff`` imports, two graphs the engine
really builds are added: an MLP training step (the loss of one batch) and a scalar chain of
``y = sin(y) * y + y`` (``--chain-ops`` operations).

Per graph: our time (median of ``--repeats`` runs after a warm-up; this process's CPU time and
the elapsed time), our crossings, ``dot -Tplain`` in a subprocess with ``--dot-timeout`` (CPU
time of the child and elapsed time; skipped when dot is not installed, and at bigger sizes once
it timed out), networkx's multipartite layout (layers = topological generations) and grandalf's
Sugiyama layout up to ``--grandalf-max`` nodes. Crossings are counted on straight segments
between node centres, pairs sharing an endpoint excluded (the reference's definition). On a
shared machine the CPU times are the steady figures; the elapsed ones include waiting.
Nothing is written into the repository unless ``--json`` asks for it.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.reference_graphs import GEN_DAG, load_gen_dag  # noqa: E402
from viewer.model.layout.layered import count_crossings, layered_layout  # noqa: E402

Edges = list[tuple[int, int]]


# =============================================================================
# Graphs
# =============================================================================
def engine_graph(output: Any) -> tuple[int, Edges]:
    """Nodes and edges (variable -> function -> variable, one edge per argument slot) of the
    graph that made ``output``, walked from its creator without recursion."""
    index: dict[int, int] = {}
    held: list[Any] = []  # keeps every object alive, so id() stays unique during the walk

    def node(obj: Any) -> int:
        key = id(obj)
        if key not in index:
            index[key] = len(index)
            held.append(obj)
        return index[key]

    node(output)
    edges: Edges = []
    stack = [output.creator] if output.creator is not None else []
    done: set[int] = set()
    while stack:
        f = stack.pop()
        if id(f) in done:
            continue
        done.add(id(f))
        fi = node(f)
        for x in f.inputs:
            edges.append((node(x), fi))
            if x.creator is not None:
                stack.append(x.creator)
        for ref in f.outputs:
            y = ref()
            if y is not None:
                edges.append((fi, node(y)))
    return len(index), edges


def engine_graphs(chain_ops: int) -> list[tuple[str, int, Edges, Any]]:
    try:
        import autodiff.functions as F
        from autodiff import Variable
        from autodiff.models import MLP
    except Exception as e:  # the engine is optional here
        print(f"(autodiff not importable, engine graphs skipped: {e})")
        return []
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((100, 4)), rng.standard_normal((100, 1))
    model = MLP((16, 16, 16, 1))
    loss = F.mean_squared_error(model(x), t)
    n_mlp, mlp = engine_graph(loss)
    y = Variable(np.array(0.5))
    for _ in range(max(1, chain_ops // 3)):  # three operations per step
        y = F.sin(y) * y + y
    n_chain, chain = engine_graph(y)
    # the outputs are returned so that the graphs stay alive until the walk is done
    return [
        ("MLP step", n_mlp, mlp, loss),
        (f"sin chain {chain_ops} ops", n_chain, chain, y),
    ]


def to_dot(n: int, edges: Edges) -> str:
    lines = ["digraph g {", *(f'{i} [label="{i}"]' for i in range(n))]
    lines += [f"{a} -> {b}" for a, b in edges]
    return "\n".join([*lines, "}"]) + "\n"


# =============================================================================
# Layouts
# =============================================================================
def time_ours(n: int, edges: Edges, repeats: int) -> dict[str, Any]:
    e = np.array(edges, dtype=np.int64).reshape(-1, 2)
    cpu, wall = [], []
    result = None
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        result = layered_layout(n, e)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    assert result is not None
    return {
        "cpu_s": statistics.median(cpu),
        "wall_s": statistics.median(wall),
        "crossings": count_crossings(result.positions, e),
        "layers": result.n_layers,
        "virtual": result.n_virtual,
    }


def run_dot(n: int, edges: Edges, dot_text: str, timeout: float, workdir: Path) -> dict[str, Any]:
    dotfile = workdir / f"g{n}_{len(edges)}.dot"
    dotfile.write_text(dot_text)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    try:
        p = subprocess.run(
            ["dot", "-Tplain", str(dotfile)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"timeout_s": timeout}
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-200:]}
    pos = np.zeros((n, 2))
    for line in p.stdout.splitlines():
        f = line.split()
        if f and f[0] == "node":
            pos[int(f[1])] = (float(f[2]), float(f[3]))
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"cpu_s": cpu, "wall_s": wall, "crossings": count_crossings(pos, edges)}


def run_multipartite(n: int, edges: Edges) -> dict[str, Any]:
    import networkx as nx

    c0 = time.process_time()
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges)
    for depth, generation in enumerate(nx.topological_generations(g)):
        for v in generation:
            g.nodes[v]["layer"] = depth
    pos = nx.multipartite_layout(g, subset_key="layer", align="horizontal")
    cpu = time.process_time() - c0
    p = np.array([pos[i] for i in range(n)])
    return {"cpu_s": cpu, "crossings": count_crossings(p, edges)}


def run_grandalf(n: int, edges: Edges) -> dict[str, Any]:
    try:
        from grandalf.graphs import Edge, Graph, Vertex
        from grandalf.layouts import SugiyamaLayout
    except ImportError:
        return {"error": "grandalf not installed"}

    class View:
        w, h = 40.0, 20.0

    c0 = time.process_time()
    vertices = [Vertex(i) for i in range(n)]
    for v in vertices:
        v.view = View()
    g = Graph(vertices, [Edge(vertices[a], vertices[b]) for a, b in sorted(set(edges))])
    for component in g.C:
        sugiyama = SugiyamaLayout(component)
        sugiyama.init_all()
        sugiyama.draw(N=1.5)
    cpu = time.process_time() - c0
    p = np.array([v.view.xy for v in vertices], dtype=float)
    return {"cpu_s": cpu, "crossings": count_crossings(p, edges)}


# =============================================================================
# Report
# =============================================================================
def fmt_time(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    if "timeout_s" in r:
        return f"did not finish in {r['timeout_s']:g}s"
    if "error" in r:
        return "error"
    if "skipped" in r:
        return r["skipped"]
    return f"{r['cpu_s']:.3f}" + (f" ({r['wall_s']:.2f})" if "wall_s" in r else "")


def fmt_cross(r: dict[str, Any] | None) -> str:
    return str(r["crossings"]) if r and "crossings" in r else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="100,1000,5000,20000")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dot-timeout", type=float, default=60.0)
    ap.add_argument("--grandalf-max", type=int, default=1000)
    ap.add_argument("--chain-ops", type=int, default=2000)
    ap.add_argument("--no-engine", action="store_true", help="skip the autodiff graphs")
    ap.add_argument("--gen-dag", type=Path, default=GEN_DAG)
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)

    gen = load_gen_dag(args.gen_dag)
    graphs: list[tuple[str, int, Edges, Any]] = []
    for n in (int(s) for s in args.sizes.split(",") if s):
        nodes, edges = gen.gen_graph(n, args.seed)
        # dot gets the reference's own DOT text (labels and shapes), as in its measurements
        graphs.append(
            (f"gen_dag {n}", len(nodes), [tuple(e) for e in edges], gen.to_dot(nodes, edges))
        )
    if not args.no_engine:
        graphs += [
            (name, n, e, to_dot(n, e)) for name, n, e, _alive in engine_graphs(args.chain_ops)
        ]

    have_dot = shutil.which("dot") is not None
    if not have_dot:
        print("(dot not installed: Graphviz columns skipped)")
    layered_layout(3, [(0, 1), (1, 2)])  # warm-up
    rows: list[dict[str, Any]] = []
    dot_timed_out = False
    with tempfile.TemporaryDirectory() as tmp:
        for name, n, edges, dot_text in graphs:
            row: dict[str, Any] = {"graph": name, "nodes": n, "edges": len(edges)}
            row["ours"] = time_ours(n, edges, args.repeats)
            if have_dot and not (dot_timed_out and name.startswith("gen_dag")):
                row["dot"] = run_dot(n, edges, dot_text, args.dot_timeout, Path(tmp))
                if name.startswith("gen_dag") and "timeout_s" in row["dot"]:
                    dot_timed_out = True
            elif have_dot:
                row["dot"] = {"skipped": "skipped (timed out at a smaller size)"}
            row["multipartite"] = run_multipartite(n, edges)
            if n <= args.grandalf_max:
                row["grandalf"] = run_grandalf(n, edges)
            rows.append(row)
            print_row(row, header=len(rows) == 1)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
        print(f"wrote {args.json}")
    return 0


COLUMNS: list[tuple[str, int, Callable[[dict[str, Any]], str]]] = [
    ("graph", 22, lambda r: r["graph"]),
    ("nodes", 6, lambda r: str(r["nodes"])),
    ("edges", 6, lambda r: str(r["edges"])),
    ("ours cpu s (wall)", 18, lambda r: fmt_time(r["ours"])),
    ("ours X", 7, lambda r: fmt_cross(r["ours"])),
    ("dot cpu s (wall)", 24, lambda r: fmt_time(r.get("dot"))),
    ("dot X", 7, lambda r: fmt_cross(r.get("dot"))),
    ("ours/dot", 8, lambda r: ratio(r["ours"], r.get("dot"))),
    ("multipartite X", 14, lambda r: fmt_cross(r["multipartite"])),
    (
        "grandalf s",
        10,
        lambda r: f"{r['grandalf']['cpu_s']:.2f}" if "cpu_s" in r.get("grandalf", {}) else "-",
    ),
    ("grandalf X", 10, lambda r: fmt_cross(r.get("grandalf"))),
]


def ratio(ours: dict[str, Any], other: dict[str, Any] | None) -> str:
    if not other or "crossings" not in other:
        return "-"
    if other["crossings"] == 0:
        return "-" if ours["crossings"] else "1.00"
    return f"{ours['crossings'] / other['crossings']:.2f}"


def print_row(row: dict[str, Any], header: bool) -> None:
    if header:
        print(" | ".join(f"{title:>{w}}" for title, w, _ in COLUMNS))
        print("-+-".join("-" * w for _, w, _ in COLUMNS))
    print(" | ".join(f"{cell(row):>{w}}" for _, w, cell in COLUMNS), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
