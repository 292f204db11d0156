"""A shared input used by every step of a long loop (a hub): its layout grows linearly, it is
drawn once with every use attached, and small graphs are laid out as before."""

from __future__ import annotations

import numpy as np

import autodiff.functions as F
from autodiff import trace as trace_module
from autodiff.core import Variable
from viewer.model.layout.compute import compute_layout
from viewer.model.layout.layered import layered_layout
from viewer.model.layout.layering import hubs
from viewer.model.scene.build import scene_of


def hub_edges(steps: int) -> tuple[int, np.ndarray]:
    """``y = sin(y) + x * c`` for ``steps`` steps as a graph: x is node 0, y0 node 1; a step
    adds sin, sin's output, the constant c, mul, mul's output, add and add's output."""
    edges, y, count = [], 1, 2
    for _ in range(steps):
        sin, s, c, mul, m, add, out = range(count, count + 7)
        count += 7
        edges += [(y, sin), (sin, s), (0, mul), (c, mul), (mul, m), (s, add), (m, add), (add, out)]
        y = out
    return count, np.array(edges, dtype=np.int64)


def hub_trace(steps: int) -> tuple[trace_module.Trace, Variable]:
    with trace_module.record() as t:
        x = Variable(np.array(0.5), name="x")
        y = Variable(np.array(1.0), name="y0")
        for _ in range(steps):
            y = F.sin(y) + x * 0.001
        y.backward()
    return t, x


def laid_out_nodes(steps: int) -> int:
    n, edges = hub_edges(steps)
    layout = layered_layout(n, edges)
    return layout.n_nodes + layout.n_virtual


def test_a_hubs_layout_grows_linearly() -> None:
    small, big = laid_out_nodes(200), laid_out_nodes(800)
    assert big <= 4.5 * small, (small, big)


def test_the_hub_is_the_only_hub_and_its_consumers_sit_where_they_are_used() -> None:
    n, edges = hub_edges(200)
    layout = layered_layout(n, edges)
    assert np.flatnonzero(hubs(n, edges[:, 0], edges[:, 1], layout.layers)).tolist() == [0]
    # every edge but x's spans one layer: mul and its constant sink to the add they feed
    span = layout.layers[edges[:, 1]] - layout.layers[edges[:, 0]]
    assert (span[edges[:, 0] != 0] == 1).all()
    assert span[edges[:, 0] == 0].max() > 100


def test_a_hubs_edges_are_drawn_through_few_points_from_it_to_each_use() -> None:
    t, _ = hub_trace(150)
    layout = compute_layout(t)
    points_small = len(layout.edge_points)
    assert points_small <= 4 * layout.n_edges
    bigger = compute_layout(hub_trace(600)[0])
    assert len(bigger.edge_points) <= 4.5 * points_small
    for e, (u, v) in enumerate(layout.edges.tolist()):
        path = layout.edge_points[layout.edge_offsets[e] : layout.edge_offsets[e + 1]]
        assert np.allclose(path[0], layout.positions[u])
        assert np.allclose(path[-1], layout.positions[v])


def test_the_shared_variable_is_one_node_with_every_use_and_the_summed_gradient() -> None:
    t, x = hub_trace(150)
    layout = compute_layout(t)
    scene = scene_of(t, layout, "light")
    (x_id,) = (v for v in t.variables if t.node(v).get("name") == "x")
    at = np.flatnonzero(scene.layout.node_ids == x_id)
    assert len(at) == 1  # drawn once: selecting it selects the one variable
    uses = np.flatnonzero(layout.edges[:, 0] == at[0])
    assert len(uses) == 150
    consumers = layout.node_ids[layout.edges[uses, 1]]
    assert set(t.ops(consumers)) == {"Mul"}
    # the gradient shown on it is the sum over its 150 uses, as the engine summed it: each
    # use sends back 0.001 times a chain of cosines, at most 0.001, so one use is not enough
    shown = float(t.node(x_id)["grad"].array)
    assert shown == float(x.grad.data)
    assert shown > 0.01


def test_small_fan_outs_are_not_hubs() -> None:
    # 60 steps of the same loop, and an input shared by 40 consumers side by side
    n, edges = hub_edges(60)
    assert not hubs(n, edges[:, 0], edges[:, 1], layered_layout(n, edges).layers).any()
    fan = np.array([(0, i) for i in range(1, 41)], dtype=np.int64)
    assert not hubs(41, fan[:, 0], fan[:, 1], layered_layout(41, fan).layers).any()


def test_the_loop_stays_a_vertical_chain_beside_the_hubs_trunk() -> None:
    # the picture's width does not grow with the loop: no wedge of edges from a drifting chain
    widths = []
    for steps in (200, 800):
        n, edges = hub_edges(steps)
        x0, _, x1, _ = layered_layout(n, edges).bounds(1.0)
        widths.append(x1 - x0)
    assert widths[1] <= widths[0] + 1e-9 < 6, widths
