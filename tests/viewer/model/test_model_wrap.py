"""A tall, narrow graph is set in side-by-side bands for a view wider than it is: bigger when
fitted, each node in one place, each edge still joining its two nodes."""

import numpy as np
import pytest

from viewer.model.expression.program import evaluate
from viewer.model.layout.compute import compute_layout
from viewer.model.scene.scene import Scene
from viewer.model.scene.wrap import MAX_WRAPPED_NODES, MIN_GAIN, wrap_rows


def make_scene(text):
    trace = evaluate(text).trace
    return None, Scene(trace, compute_layout(trace))


SEED = "x = 0.5\ny = square(exp(square(x)))"


def _fit_scale(geometry, aspect):
    x0, y0, x1, y1 = geometry.bounds()
    return min(aspect / (x1 - x0), 1.0 / (y1 - y0))


@pytest.mark.parametrize(
    "text", [SEED, "x = 1.5\nd = x - x\ny = log(d) * x", "x = 0.5\ny = tanh(tanh(tanh(tanh(x))))"]
)
def test_a_chain_wraps_into_bands_that_fit_bigger(text):
    _, scene = make_scene(text)
    plain = scene.geometry
    wrapped = wrap_rows(plain, scene.edges, 0.85)
    assert wrapped is not None
    assert _fit_scale(wrapped, 0.85) >= MIN_GAIN * _fit_scale(plain, 0.85)
    # no two boxes overlap
    half = wrapped.half_sizes
    pos = wrapped.positions
    for i in range(len(pos)):
        for j in range(i + 1, len(pos)):
            apart = np.abs(pos[i] - pos[j]) >= half[i] + half[j] - 1e-9
            assert apart.any(), (scene.names[i], scene.names[j])
    # every edge still starts and ends at its nodes, and keeps its arrow head
    for e, (u, v) in enumerate(scene.edges):
        path = wrapped.edge_points[wrapped.edge_offsets[e] : wrapped.edge_offsets[e + 1]]
        np.testing.assert_allclose(path[0], pos[u])
        np.testing.assert_allclose(path[-1], pos[v])
    assert len(wrapped.arrow_points) == 3 * wrapped.n_edges
    # the bands read left to right: a node's band is never left of its inputs' band
    for u, v in scene.edges:
        assert pos[v][0] >= pos[u][0] - 1.0 or pos[v][1] > pos[u][1]


def test_a_view_as_tall_as_the_chain_leaves_it_in_one_column():
    _, scene = make_scene(SEED)
    assert wrap_rows(scene.geometry, scene.edges, 0.15) is None


def test_scene_wrap_to_goes_back_to_one_column():
    _, scene = make_scene(SEED)
    plain = scene.geometry.positions.copy()
    assert scene.wrap_to(465, 544) is True  # the graph view of a 1024x700 window
    assert not np.array_equal(scene.geometry.positions, plain)
    assert scene.wrap_to(465, 544) is False  # the same shape: nothing changes
    assert scene.wrap_to(100, 1000) is True
    np.testing.assert_array_equal(scene.geometry.positions, plain)
    y = scene.names.index("y")
    assert scene.wrap_to(465, 544) and scene.node_at(*scene.geometry.positions[y]) == y


def test_no_more_bands_than_make_the_labels_readable():
    _, scene = make_scene(SEED)
    # 1361 x 924 (a 1920x1080 window): one column already draws 11 px labels
    assert scene.wrap_to(1361, 924) is False
    x0, _, x1, _ = scene.geometry.bounds()
    assert x1 - x0 < 1.5
    # the same shape, smaller: bands, but not more than needed
    assert scene.wrap_to(1361 / 3, 924 / 3) is True
    banded = scene.geometry
    widest = wrap_rows(scene._plain_geometry, scene.edges, 1361 / 924)
    assert banded.bounds()[2] <= widest.bounds()[2]


def test_big_graphs_are_not_wrapped():
    n = MAX_WRAPPED_NODES // 2 + 1
    _, scene = make_scene("x = 0.5\n" + "".join("x = tanh(x)\n" for _ in range(n)) + "y = x")
    assert scene.n_nodes > MAX_WRAPPED_NODES
    assert wrap_rows(scene.geometry, scene.edges, 0.85) is None


def _segments(path):
    return [(path[i], path[i + 1]) for i in range(len(path) - 1)]


def _overlap(s, t, tol=1e-9):
    """Whether two axis-parallel segments lie on one line and share a stretch of it."""
    (a, b), (c, d) = s, t
    for axis in (0, 1):
        other = 1 - axis
        if (
            abs(a[other] - b[other]) < tol
            and abs(c[other] - d[other]) < tol
            and abs(a[other] - c[other]) < tol
        ):
            lo = max(min(a[axis], b[axis]), min(c[axis], d[axis]))
            hi = min(max(a[axis], b[axis]), max(c[axis], d[axis]))
            if hi - lo > tol:
                return True
    return False


@pytest.mark.parametrize("aspect", [1.2, 2.0])
def test_two_edges_into_the_next_band_never_share_a_line(aspect):
    """tanh(x) * x**2 wrapped: both inputs of Mul cross into the next band; each takes a
    lane of its own, so the picture shows two edges, not one."""
    _, scene = make_scene("x = 1.0\ny = tanh(x) * x**2")
    wrapped = wrap_rows(scene.geometry, scene.edges, aspect)
    if wrapped is None:
        pytest.skip("not wrapped at this aspect")
    paths = [
        wrapped.edge_points[wrapped.edge_offsets[e] : wrapped.edge_offsets[e + 1]]
        for e in range(wrapped.n_edges)
    ]
    crossing = [p for p in paths if len(p) > 2]
    assert len(crossing) >= 2  # the case at hand: more than one edge crosses
    for i in range(len(paths)):
        for j in range(i + 1, len(paths)):
            for s in _segments(paths[i]):
                for t in _segments(paths[j]):
                    assert not _overlap(s, t), (i, j, s, t)
