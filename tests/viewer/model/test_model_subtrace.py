"""TraceView and view_for_root: one graph of a multi-graph trace, built from the trace's integer
structure, equal to what the generic path (every step, the whole networkx graph) gives."""

import bisect

import networkx as nx
import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Variable, trace
from autodiff.trace import view_for_root
from viewer.model.layout.compute import compute_layout
from viewer.model.node_states import node_timeline
from viewer.model.scene.scene import Scene


class _TraceLike:
    """The public Trace interface of older trace-likes: no step(), subgraph(), ancestors(),
    timeline()... so that view_for_root and TraceView take their generic path."""

    def __init__(self, t):
        self._t = t
        self.steps = t.steps
        self.graph = t.graph
        self.variables = t.variables
        self.functions = t.functions
        self.backward_roots = t.backward_roots
        self.max_array_size = t.max_array_size

    def __getattr__(self, name):
        if name in ("node", "live", "freed", "audit") or "_at" in name or "timeline" in name:
            return getattr(self._t, name)
        raise AttributeError(name)


def _training(iterations=4):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 2))
    target = rng.standard_normal((5, 1))
    w = Variable(rng.standard_normal((2, 1)), name="w")
    with trace.record() as t:
        for _ in range(iterations):
            loss = F.mean_squared_error(F.sigmoid(F.matmul(x, w)), target)
            w.cleargrad()
            loss.backward()
            w.data = w.data - 0.5 * w.grad.data
    return t, (w, loss)


def _newton():
    x = Variable(np.array(2.0), name="x")
    with trace.record() as t:
        y = x**4 - 2 * x**2
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
    return t, (x, y, gx)


def _views(t):
    for p, root in enumerate(t.backward_roots):
        yield root, p
        yield root, -1


@pytest.mark.parametrize("make", [_training, _newton])
def test_fast_and_generic_views_agree(make):
    t, _ = make()
    like = _TraceLike(t)
    for root, bpass in _views(t):
        fast, generic = view_for_root(t, root, bpass), view_for_root(like, root, bpass)
        assert fast._nodes == generic._nodes and fast._global == generic._global
        assert fast.steps == generic.steps
        # the same graph; the fast one in node id order (a subgraph view's copy follows the
        # order of a set of the ids when they are few)
        assert nx.utils.graphs_equal(fast.graph, generic.graph)
        assert list(fast.graph.nodes) == sorted(generic.graph.nodes)
        assert fast.variables == generic.variables and fast.functions == generic.functions
        assert fast.backward_roots == generic.backward_roots
        for n in fast.graph.nodes:
            timeline = fast.timeline(n)
            points = [p for p, _ in timeline]
            assert points == fast.change_points(n)
            assert node_timeline(fast, n) == timeline
            for i in range(-1, len(fast.steps)):
                state = timeline[bisect.bisect_right(points, i) - 1][1]
                assert state is generic.state_at(n, i)
                assert state is t.state_at_position(n, fast.position(i))


def test_a_view_builds_only_its_own_steps_and_graph():
    t, _ = _training(20)
    root, bpass = t.backward_roots[-1], len(t.backward_roots) - 1
    view = view_for_root(t, root, bpass)
    scene = Scene(view, compute_layout(view))
    assert t._steps == [] and t._graph is None  # nothing of the other 19 iterations
    assert scene.n_steps == len(view.steps) == len(t.steps) // 20
    assert view.steps[-1].phase == "backward" and view.backward_roots == [root]
