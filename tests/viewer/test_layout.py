"""viewer.model.layout.layered: layering, ordering, coordinates, edge polylines, progress and
cancel."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from viewer.model.layout import placement as layout_placement
from viewer.model.layout.layered import (
    Layout,
    LayoutCancelled,
    count_crossings,
    layered_layout,
    layout_graph,
)


def autodiff_like_graph(n: int, seed: int) -> tuple[int, np.ndarray]:
    """A seeded DAG shaped like an autodiff trace: variables and functions alternate; a
    function takes 1-3 inputs (a recent variable, a fresh parameter, a skip connection or a
    shared graph input reused deep down) and makes one output variable."""
    rng = np.random.default_rng(seed)
    n_inputs = max(2, n // 200)
    variables = list(range(n_inputs))
    edges: list[tuple[int, int]] = []
    count = n_inputs
    while count < n:
        k = min(int(rng.choice([1, 2, 3], p=[0.45, 0.5, 0.05])), len(variables))
        inputs: set[int] = set()
        while len(inputs) < k:
            u = rng.random()
            if u < 0.65:
                back = min(int(rng.exponential(4.0)), len(variables) - 1)
                inputs.add(variables[-1 - back])
            elif u < 0.85:
                inputs.add(count)  # a fresh leaf: parameter or constant
                count += 1
            elif u < 0.95:
                inputs.add(variables[-1 - int(rng.integers(min(200, len(variables))))])
            else:
                inputs.add(variables[int(rng.integers(n_inputs))])
        function = count
        edges += [(v, function) for v in sorted(inputs)]
        edges.append((function, function + 1))
        variables.append(function + 1)
        count += 2
    return count, np.array(edges, dtype=np.int64)


def assert_valid(
    lay: Layout,
    n: int,
    edges: np.ndarray,
    widths: float | np.ndarray = 1.0,
    node_gap: float = 0.5,
    layer_gap: float = 1.0,
) -> None:
    assert lay.positions.shape == (n, 2)
    assert np.isfinite(lay.positions).all()
    if len(edges):
        assert (lay.layers[edges[:, 1]] > lay.layers[edges[:, 0]]).all()
    np.testing.assert_allclose(lay.positions[:, 1], lay.layers * layer_gap)
    w = np.broadcast_to(np.asarray(widths, dtype=float), (n,))
    for layer in np.unique(lay.layers):
        members = np.flatnonzero(lay.layers == layer)
        members = members[np.argsort(lay.positions[members, 0])]
        x = lay.positions[members, 0]
        need = (w[members[1:]] + w[members[:-1]]) / 2 + node_gap
        assert (np.diff(x) >= need - 1e-9).all(), f"nodes overlap in layer {layer}"


# ------------------------------------------------------------------------------------ basics
def test_empty_graph() -> None:
    lay = layered_layout(0, [])
    assert lay.positions.shape == (0, 2)
    assert lay.edge_paths == []
    assert lay.n_layers == 0


def test_single_node() -> None:
    lay = layered_layout(1, np.zeros((0, 2), int))
    assert lay.positions.shape == (1, 2)
    assert lay.layers.tolist() == [0]
    assert lay.positions[0, 1] == 0.0


def test_isolated_nodes_share_the_top_layer_without_overlap() -> None:
    lay = layered_layout(5, [])
    assert lay.layers.tolist() == [0] * 5
    assert_valid(lay, 5, np.zeros((0, 2), int))


def test_chain_is_a_vertical_line() -> None:
    n = 60
    edges = np.column_stack([np.arange(n - 1), np.arange(1, n)])
    lay = layered_layout(n, edges)
    assert lay.layers.tolist() == list(range(n))
    assert np.ptp(lay.positions[:, 0]) == 0.0
    assert lay.n_virtual == 0


def test_diamond_has_no_crossings() -> None:
    edges = np.array([(0, 1), (0, 2), (1, 3), (2, 3)])
    lay = layered_layout(4, edges)
    assert lay.layers.tolist() == [0, 1, 1, 2]
    assert count_crossings(lay.positions, edges) == 0
    assert lay.layer_crossings == 0


def test_x_plus_x_keeps_both_edges() -> None:
    # x -> add (twice), add -> y
    edges = np.array([(0, 1), (0, 1), (1, 2)])
    lay = layered_layout(3, edges)
    assert lay.layers.tolist() == [0, 1, 2]
    assert len(lay.edges) == 3 and len(lay.edge_paths) == 3
    np.testing.assert_array_equal(lay.edge_path(0), lay.edge_path(1))
    np.testing.assert_array_equal(lay.edge_path(0), lay.positions[[0, 1]])


def test_deterministic() -> None:
    n, edges = autodiff_like_graph(400, seed=3)
    a, b = layered_layout(n, edges), layered_layout(n, edges.copy())
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.edge_points, b.edge_points)
    np.testing.assert_array_equal(a.order, b.order)


# ---------------------------------------------------------------------------------- layering
def test_generated_graph_is_valid_with_varied_widths() -> None:
    n, edges = autodiff_like_graph(600, seed=1)
    widths = np.random.default_rng(0).uniform(0.3, 2.5, n)
    lay = layered_layout(n, edges, node_width=widths, node_gap=0.3, layer_gap=1.5)
    assert_valid(lay, n, edges, widths, node_gap=0.3, layer_gap=1.5)


def test_fresh_leaf_sits_just_above_its_consumer() -> None:
    # x -> f0 -> v0 -> f1 -> v1 ... -> f9 -> v9; leaf p feeds f9, shared input x feeds f9 too
    chain = [(i, i + 1) for i in range(20)]
    p = 21
    edges = np.array([*chain, (p, 19), (0, 19)])
    lay = layered_layout(22, edges)
    assert lay.layers[p] == lay.layers[19] - 1
    assert lay.layers[0] == 0  # the input stays above its first use


def _min_total_span(n: int, edges: np.ndarray) -> int:
    """By brute force over every assignment of n nodes to n layers."""
    layers = np.arange(n**n)[:, None] // n ** np.arange(n) % n
    span = layers[:, edges[:, 1]] - layers[:, edges[:, 0]]
    return int(span.sum(1)[(span >= 1).all(1)].min())


def test_layering_minimises_total_edge_span() -> None:
    rng = np.random.default_rng(7)
    for _ in range(12):
        n = 6
        pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.4]
        if not pairs:
            continue
        perm = rng.permutation(n)  # hide the topological order
        edges = perm[np.array(pairs)]
        lay = layered_layout(n, edges)
        span = lay.layers[edges[:, 1]] - lay.layers[edges[:, 0]]
        assert (span >= 1).all()
        assert int(span.sum()) == _min_total_span(n, edges)


def test_given_layers_are_used() -> None:
    edges = np.array([(0, 2), (1, 2), (2, 3)])
    lay = layered_layout(4, edges, layers=[0, 0, 3, 5])
    assert lay.layers.tolist() == [0, 0, 3, 5]
    assert len(lay.edge_path(0)) == 4  # routed through two virtual nodes
    with pytest.raises(ValueError, match="2 \\* generation"):
        layered_layout(4, edges, layers=[0, 0, 0, 1])


@pytest.mark.parametrize(
    ("edges", "message"),
    [([(0, 1), (1, 2), (2, 0)], "cycle"), ([(0, 0)], "self-loop"), ([(0, 5)], "outside")],
)
def test_bad_graphs_raise(edges: list[tuple[int, int]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        layered_layout(3, edges)


# -------------------------------------------------------------------------- crossings, paths
def test_count_crossings_simple_cases() -> None:
    pos = np.array([(0, 0), (1, 0), (0, 1), (1, 1)], dtype=float)
    assert count_crossings(pos, [(0, 3), (1, 2)]) == 1
    assert count_crossings(pos, [(0, 2), (1, 3)]) == 0
    assert count_crossings(pos, [(0, 3), (0, 2)]) == 0  # shared endpoint


def test_fast_straight_crossings_agree_with_count_crossings() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = 40
        layer = rng.integers(0, 6, n)
        a, b = rng.integers(0, n, 150), rng.integers(0, n, 150)
        keep = layer[a] < layer[b]
        edges = np.unique(np.column_stack([a[keep], b[keep]]), axis=0)
        x = rng.random(n) * 10
        expected = count_crossings(np.column_stack([x, layer]), edges)
        got = layout_placement.straight_crossings(x, layer, edges[:, 0], edges[:, 1])
        assert got == expected


def test_far_fewer_crossings_than_networkx_multipartite() -> None:
    n, edges = autodiff_like_graph(300, seed=0)
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges.tolist())
    for depth, generation in enumerate(nx.topological_generations(g)):
        for v in generation:
            g.nodes[v]["layer"] = depth
    pos = nx.multipartite_layout(g, subset_key="layer", align="horizontal")
    theirs = count_crossings(np.array([pos[i] for i in range(n)]), edges)
    ours = count_crossings(layered_layout(n, edges).positions, edges)
    assert ours * 4 < theirs, (ours, theirs)


def test_edge_paths_follow_the_layers() -> None:
    n, edges = autodiff_like_graph(300, seed=2)
    lay = layered_layout(n, edges, layer_gap=2.0)
    assert len(lay.edge_offsets) == len(edges) + 1
    for e, (u, v) in enumerate(edges):
        path = lay.edge_path(e)
        np.testing.assert_array_equal(path[0], lay.positions[u])
        np.testing.assert_array_equal(path[-1], lay.positions[v])
        assert len(path) == lay.layers[v] - lay.layers[u] + 1
        np.testing.assert_allclose(np.diff(path[:, 1]), 2.0)


def test_components_do_not_interleave() -> None:
    # two separate chains with a fan each
    edges = np.array([(0, 1), (0, 2), (1, 3), (2, 3), (4, 5), (4, 6), (5, 7), (6, 7)])
    lay = layered_layout(8, edges)
    x = lay.positions[:, 0]
    assert x[:4].max() < x[4:].min() or x[4:].max() < x[:4].min()
    assert count_crossings(lay.positions, edges) == 0


# ----------------------------------------------------------------------- progress and cancel
def test_progress_reaches_one() -> None:
    n, edges = autodiff_like_graph(500, seed=4)
    seen: list[float] = []
    layered_layout(n, edges, progress=seen.append)
    assert len(seen) >= 10
    assert all(0.0 <= f <= 1.0 for f in seen)
    assert seen == sorted(seen)
    assert seen[-1] == 1.0


@pytest.mark.parametrize("after", [0, 3, 12])
def test_cancel_raises(after: int) -> None:
    n, edges = autodiff_like_graph(500, seed=4)
    polls = iter(range(1000))
    with pytest.raises(LayoutCancelled):
        layered_layout(n, edges, should_cancel=lambda: next(polls) >= after)


# ----------------------------------------------------------------------------------- networkx
def test_layout_graph_with_multidigraph() -> None:
    g = nx.MultiDiGraph()
    g.add_edges_from([("x", "add"), ("x", "add"), ("add", "y"), ("y", "sin"), ("sin", "z")])
    g.add_edge("p", "sin")
    g.nodes["add"]["w"] = 0.6
    keys, lay = layout_graph(g, width_attr="w")
    assert keys == list(g.nodes)
    assert len(lay.edge_paths) == g.number_of_edges() == 6
    index = {k: i for i, k in enumerate(keys)}
    assert lay.layers[index["p"]] == lay.layers[index["sin"]] - 1
    assert lay.layers[index["z"]] == lay.layers.max()


# ---------------------------------------------------------------------------------- big graph
def test_twenty_thousand_nodes() -> None:
    n, edges = autodiff_like_graph(20_000, seed=0)
    lay = layered_layout(n, edges)
    assert lay.positions.shape == (n, 2)
    assert (lay.layers[edges[:, 1]] > lay.layers[edges[:, 0]]).all()
    assert len(lay.edge_offsets) == len(edges) + 1


# ---------------------------------------------------------------------------------------------
# Clusters (module frames)
# ---------------------------------------------------------------------------------------------
def _frame_rects(lay, widths, clusters):
    """Each cluster's frame as drawn: its nodes' boxes and nested frames, padded, titled."""
    from viewer.model.layout.clusters import frame_extents

    tree = clusters.tree()
    top, bottom = frame_extents(lay.positions[:, 1], clusters, tree)
    k = len(clusters.parent)
    left, right = np.full(k, np.inf), np.full(k, -np.inf)
    x = lay.positions[:, 0]
    np.minimum.at(left, clusters.of_node, x - widths / 2)
    np.maximum.at(right, clusters.of_node, x + widths / 2)
    for c in np.argsort(-tree.depth, kind="stable"):
        if c and np.isfinite(left[c]):
            left[c] -= clusters.pad
            right[c] += clusters.pad
            p = tree.parent[c]
            left[p], right[p] = min(left[p], left[c]), max(right[p], right[c])
    return tree, {
        c: (left[c], top[c], right[c], bottom[c]) for c in range(1, k) if np.isfinite(top[c])
    }


def _apart(a, b):
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


def test_clusters_keep_their_frames_apart_and_clear_of_other_nodes():
    from viewer.model.layout.layered import Clusters

    # x -> A(a0 -> a1) and B(p -> b0 <- a1), B inside P with a sibling C fed by x too; a
    # parameter-like leaf p of B; the output joins both
    # nodes: 0 x, 1 a0, 2 a1, 3 p, 4 b0, 5 c0, 6 c1, 7 out, 8 w (a leaf of A)
    edges = [(0, 1), (8, 1), (1, 2), (2, 4), (3, 4), (0, 5), (5, 6), (4, 7), (6, 7)]
    parent = np.array([0, 0, 0, 2, 2])  # 1 A, 2 P, 3 B (in P), 4 C (in P)
    of_node = np.array([0, 1, 1, 3, 3, 4, 4, 0, 1])
    widths = np.array([1.0, 0.9, 1.0, 1.0, 0.9, 0.9, 1.0, 0.9, 1.0])
    clusters = Clusters(of_node, parent, np.full(9, 0.225))
    lay = layered_layout(9, edges, node_width=widths, clusters=clusters)
    tree, rects = _frame_rects(lay, widths, clusters)
    boxes = np.column_stack(
        [
            lay.positions[:, 0] - widths / 2,
            lay.positions[:, 1] - 0.225,
            lay.positions[:, 0] + widths / 2,
            lay.positions[:, 1] + 0.225,
        ]
    )
    for c, rect in rects.items():
        for i, box in enumerate(boxes):
            if tree.anc[of_node[i], min(tree.depth[c], tree.depth[of_node[i]])] != c:
                assert _apart(box, rect), (c, i)
        for d, other in rects.items():
            nested = c in tree.anc[d] or d in tree.anc[c]
            if d != c and not nested:
                assert _apart(rect, other), (c, d)
    # B takes its input from A: it is laid out below the whole of A
    assert lay.layers[[3, 4]].min() > lay.layers[[1, 2, 8]].max()
    # the same graph without clusters is laid out as before
    plain = layered_layout(9, edges, node_width=widths)
    assert (
        plain.layers.tolist() != lay.layers.tolist()
        or plain.positions.tolist() != lay.positions.tolist()
    )


def test_clusters_are_checked_and_ignored_when_there_are_none():
    from viewer.model.layout.layered import Clusters

    with pytest.raises(ValueError, match="half height"):
        layered_layout(
            3, [(0, 1), (1, 2)], clusters=Clusters(np.array([0, 1]), np.array([0, 0]), np.zeros(2))
        )
    one = Clusters(np.zeros(3, np.int64), np.array([0]), np.zeros(3))  # only the root
    assert layered_layout(3, [(0, 1), (1, 2)], clusters=one).positions.tolist() == (
        layered_layout(3, [(0, 1), (1, 2)]).positions.tolist()
    )


def test_clusters_that_feed_each_other_are_laid_out_without_stacking():
    """A hostile file can put a node of A after one of B and B after A (scope instances that
    ran one after another never do): no stacking order exists, the layout is still valid."""
    from viewer.model.layout.layered import Clusters

    edges = [(0, 1), (1, 2), (2, 3)]
    clusters = Clusters(np.array([1, 2, 1, 2]), np.array([0, 0, 0]), np.full(4, 0.2))
    lay = layered_layout(4, edges, clusters=clusters)
    assert all(lay.layers[v] > lay.layers[u] for u, v in edges)
    assert np.isfinite(lay.positions).all()
