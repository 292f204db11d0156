"""compute_layout reads a trace through its reading interface (variables, functions, edges(),
node()) and never builds the networkx graph; its layout is the one that laying out ``t.graph``
with networkx's node and edge order gives."""

import networkx as nx
import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Function, Variable, trace
from autodiff.trace import view_for_root
from viewer.model.document.document import Document
from viewer.model.document.examples import list_examples
from viewer.model.expression.program import evaluate
from viewer.model.layout.compute import (
    WIDTH_SAMPLE,
    compute_layout,
    function_box_width,
    layout_from_positions,
    variable_box_width,
)
from viewer.model.layout.layered import layers_at_least, layout_graph
from viewer.model.scene.scene import Scene


# =============================================================================
# The reference: the layout of the networkx graph ``t.graph``
# =============================================================================
def _networkx_layout(t, by_generation=False):
    """(node ids, positions, layers, edges, slots, polylines, variable width) from laying out
    ``t.graph``: nodes in ``graph.nodes`` order, edges in ``graph.edges`` order."""
    graph = t.graph
    attrs = [a for _, a in graph.nodes(data=True) if a["kind"] == "variable"]
    width = variable_box_width(attrs[:WIDTH_SAMPLE])
    functions = [n for n, a in graph.nodes(data=True) if a["kind"] == "function"]
    function_width = function_box_width(t, functions)
    options = {}
    if width > 1.0 or function_width > 1.0:
        options["node_width"] = np.array(
            [width if graph.nodes[n]["kind"] == "variable" else function_width for n in graph.nodes]
        )
    if by_generation:
        layer = {
            n: 2 * (a["generation"] or 0) + (a["kind"] == "function")
            for n, a in graph.nodes(data=True)
        }
        for n in nx.topological_sort(graph):
            for p in graph.predecessors(n):
                layer[n] = max(layer[n], layer[p] + 1)
        options["layers"] = [layer[n] for n in graph.nodes]
    keys, lay = layout_graph(graph, **options)
    index = {k: i for i, k in enumerate(keys)}
    edges = [(index[u], index[v]) for u, v in graph.edges()]
    slots = [d["slot"] for _, _, d in graph.edges(data=True)]
    return keys, lay.positions, lay.layers, edges, slots, lay.edge_paths, width


def _assert_same_layout(t, by_generation=False):
    keys, positions, layers, edges, slots, paths, width = _networkx_layout(t, by_generation)
    laid = compute_layout(t, by_generation=by_generation)
    assert laid.node_ids.tolist() == keys
    np.testing.assert_array_equal(laid.positions, positions)
    np.testing.assert_array_equal(laid.layers, layers)
    assert laid.edges.tolist() == [list(e) for e in edges]  # the same edges in the same order
    assert laid.edge_slots.tolist() == slots
    assert len(laid.edge_offsets) == len(paths) + 1
    for e, path in enumerate(paths):
        np.testing.assert_array_equal(
            laid.edge_points[laid.edge_offsets[e] : laid.edge_offsets[e + 1]], path
        )
    assert laid.variable_width == width


# =============================================================================
# Graphs
# =============================================================================
def _example_traces():
    return [
        pytest.param(example.read(), id=example.stem)
        for example in list_examples()
        if example.kind == "expression"
    ]


def _fan_out():
    x = Variable(np.array([0.5, 1.5]), name="x")
    with trace.record() as t:
        parts = [F.sin(x), F.exp(x), x * x, F.tanh(x), F.square(x), x + 1.0]
        y = parts[0]
        for p in parts[1:]:
            y = y + p
        F.sum(y).backward()
    t._keep = (x, y)
    return t


class _Halves(Function):
    """Two outputs: the first and the second element."""

    def forward(self, x):
        return x[0], x[1]

    def backward(self, g0, g1):
        return Variable(np.stack([g0.data, g1.data]))


def _multi_output():
    x = Variable(np.array([1.0, 2.0]), name="x")
    with trace.record() as t:
        a, b = _Halves()(x)
        y = a * b + F.sin(b)
        y.backward()
    t._keep = (x, a, b, y)
    return t


def _double_edge():
    x = Variable(np.array(3.0), name="x")
    with trace.record() as t:
        y = x + x
        z = y * y * x
        z.backward()
    t._keep = (x, y, z)
    return t


def _training(iterations=5):
    rng = np.random.default_rng(1)
    inputs, target = rng.standard_normal((6, 3)), rng.standard_normal((6, 1))
    w = Variable(rng.standard_normal((3, 1)), name="w")
    b = Variable(np.zeros(1), name="b")
    with trace.record() as t:
        for _ in range(iterations):
            loss = F.mean_squared_error(F.sigmoid(F.matmul(inputs, w) + b), target)
            w.cleargrad()
            b.cleargrad()
            loss.backward()
            w.data = w.data - 0.1 * w.grad.data
    t._keep = (w, b)
    return t


def _view_of_one_pass():
    t = _training()
    return view_for_root(t, t.backward_roots[2], 2)


def _newton_view():
    x = Variable(np.array(2.0), name="x")
    with trace.record() as t:
        y = x**4 - 2 * x**2
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
    t._keep = (x, y, gx)
    return view_for_root(t, t.backward_roots[1], 1)


_BUILT = [_fan_out, _multi_output, _double_edge, _training, _view_of_one_pass, _newton_view]


# =============================================================================
# Tests
# =============================================================================
@pytest.mark.parametrize("text", _example_traces())
@pytest.mark.parametrize("by_generation", [False, True])
def test_an_example_is_laid_out_as_its_networkx_graph(text, by_generation):
    _assert_same_layout(evaluate(text).trace, by_generation)


@pytest.mark.parametrize("make", _BUILT, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("by_generation", [False, True])
def test_a_graph_is_laid_out_as_its_networkx_graph(make, by_generation):
    _assert_same_layout(make(), by_generation)


def test_a_multi_output_op_and_a_double_edge_keep_one_edge_per_slot():
    t = _multi_output()
    laid = compute_layout(t)
    halves = t.functions[0]
    i = int(np.flatnonzero(laid.node_ids == halves)[0])
    out = laid.edges[:, 0] == i
    assert laid.edge_slots[out].tolist() == [0, 1]
    t = _double_edge()
    laid = compute_layout(t)
    add = int(np.flatnonzero(laid.node_ids == t.functions[0])[0])
    x = int(np.flatnonzero(laid.node_ids == t.variables[0])[0])
    both = np.flatnonzero((laid.edges[:, 0] == x) & (laid.edges[:, 1] == add))
    assert laid.edge_slots[both].tolist() == [0, 1]


def test_a_big_graph_measures_the_first_variables_only():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = x
        for _ in range(WIDTH_SAMPLE):
            y = F.sin(y)
        y.name = "a name too long for any box " * 3  # variable number WIDTH_SAMPLE + 1
        y.backward()
    t._keep = (x, y)
    _assert_same_layout(t)
    assert compute_layout(t).variable_width < 2.0


def test_layout_from_positions_draws_the_edges_in_graph_order():
    t = _multi_output()
    ids = sorted(t.graph.nodes)
    positions = np.column_stack([np.arange(len(ids)), np.zeros(len(ids))]).astype(float)
    laid = layout_from_positions(t, ids[::-1], positions)  # any node order
    index = {n: i for i, n in enumerate(ids[::-1])}
    assert laid.edges.tolist() == [[index[u], index[v]] for u, v in t.graph.edges()]
    assert laid.edge_slots.tolist() == [d["slot"] for _, _, d in t.graph.edges(data=True)]
    some = ids[:4]
    part = layout_from_positions(t, some, positions[:4])
    kept = [(u, v) for u, v in t.graph.edges() if u in some and v in some]
    assert [(some[u], some[v]) for u, v in part.edges.tolist()] == kept


@pytest.mark.parametrize("make", _BUILT, ids=lambda f: f.__name__.strip("_"))
def test_laying_out_and_building_the_scene_build_no_networkx_graph(make):
    t = make()
    base = getattr(t, "base", t)
    Scene(t, compute_layout(t, by_generation=True))
    Scene(t, compute_layout(t))
    assert base._graph is None
    assert getattr(t, "_graph", None) is None


def test_a_document_opens_an_expression_and_a_trace_without_networkx():
    doc = Document()
    doc.load_expression("x = 0.5\ny = square(exp(square(x))) + x * x")
    assert doc.scene is not None and doc.scene.n_nodes == 11
    assert doc.trace._graph is None
    doc.layout_by_generation = True
    doc.load_expression("x = 2.0\ny = x ** 4 - 2 * x ** 2\ngx = grad(y, x)")
    assert doc.scene is not None and doc.trace._graph is None
    t = _training()
    doc.load_trace(t, "training")
    assert doc.trace is t and doc.scene.n_nodes == len(t.variables) + len(t.functions)
    view = view_for_root(t, t.backward_roots[-1], len(t.backward_roots) - 1)
    doc.load_trace(view, "one pass")
    assert doc.trace is view and doc.scene.n_nodes < len(t.variables)
    assert t._graph is None and view._graph is None
    assert nx.utils.graphs_equal(view.graph, t.graph.subgraph(view.graph.nodes))  # on demand


def test_layers_at_least_keeps_each_minimum_unless_a_predecessor_is_as_deep():
    edges = [(0, 2), (1, 2), (2, 3), (0, 3), (3, 4)]
    assert layers_at_least(5, edges, [0, 4, 1, 9, 0]).tolist() == [0, 4, 5, 9, 10]
    assert layers_at_least(5, edges, [0] * 5).tolist() == [0, 0, 1, 2, 3]
    assert layers_at_least(2, [], [3, 1]).tolist() == [3, 1]
    with pytest.raises(ValueError, match="cycle"):
        layers_at_least(3, [(0, 1), (1, 2), (2, 0)], [0, 0, 0])
    with pytest.raises(ValueError, match="entries for 3 nodes"):
        layers_at_least(3, [(0, 1)], [0, 0])
