"""The trace's lazy reading side: one step at a time, the integer structure (ancestors, forward
steps, backward passes) and subgraphs, each checked against the full build; node timelines,
checked against states written by hand for a known program."""

import gc

import networkx as nx
import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Variable, trace
from autodiff.trace import NodeState, Snapshot


def _training_trace(iterations=3):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 3))
    target = rng.standard_normal((6, 1))
    w = Variable(rng.standard_normal((3, 1)), name="w")
    b = Variable(np.zeros(1), name="b")
    with trace.record(max_array_size=8) as t:
        for _ in range(iterations):
            loss = F.mean_squared_error(F.linear(x, w, b), target)
            loss.name = "loss"
            w.cleargrad()
            b.cleargrad()
            loss.backward()
            w.data -= 0.1 * w.grad.data
            b.data = b.data - 0.1 * b.grad.data
    return t, (w, b, loss)


def _newton_trace():
    x = Variable(np.array(2.0), name="x")
    with trace.record() as t:
        y = x**4 - 2 * x**2
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
    return t, (x, y, gx)


def _fan_out_trace():
    x = Variable(np.array(0.7), name="x")
    with trace.record() as t:
        a = F.sin(x)
        y = a * a + F.exp(a) + x
        y.backward(retain_grad=True)
    return t, (x, y)


TRACES = [_training_trace, _newton_trace, _fan_out_trace]


@pytest.mark.parametrize("make", TRACES)
def test_step_builds_the_same_step_as_steps(make):
    t, _ = make()
    one_by_one = [t.step(k) for k in reversed(range(len(t._raw)))][::-1]
    assert one_by_one == t.steps
    assert t.step(-1) == t.steps[-1]
    assert t.step(3) is t.steps[3]  # the list reuses the steps already built
    with pytest.raises(IndexError, match="out of range"):
        t.step(len(t.steps))


@pytest.mark.parametrize("make", TRACES)
def test_ancestors_and_creators_match_the_graph(make):
    t, _ = make()
    g = t.graph
    for n in g.nodes:
        assert t.ancestors(n) == nx.ancestors(g, n)
        if g.nodes[n]["kind"] == "variable":
            preds = list(g.predecessors(n))
            assert t.creator_of(n) == (preds[0] if preds else -1)
    with pytest.raises(KeyError, match="no node"):
        t.ancestors(len(g))


@pytest.mark.parametrize("make", TRACES)
def test_forward_steps_and_backward_passes_match_the_steps(make):
    t, _ = make()
    for s in t.steps:
        if s.phase == "forward":
            assert t.forward_step_of(s.function) == s.index
    for p in range(len(t.backward_roots)):
        expected = [
            s.index
            for s in t.steps
            if (s.phase == "backward" and s.backward_pass == p) or s.during_backward == p
        ]
        assert t.steps_of_pass(p) == expected
    assert t.steps_of_pass(len(t.backward_roots)) == []
    assert t.forward_step_of(t.variables[0]) == -1


def test_steps_of_a_create_graph_pass_include_its_gradient_graph():
    t, _ = _newton_trace()
    inside = [k for k in t.steps_of_pass(0) if t.step(k).phase == "forward"]
    assert inside and all(t.step(k).during_backward == 0 for k in inside)


@pytest.mark.parametrize("make", TRACES)
def test_subgraph_is_the_graphs_subgraph_in_id_order(make):
    t, _ = make()
    g = t.graph
    rng = np.random.default_rng(1)
    nodes = list(g.nodes)
    for size in (1, 3, len(nodes) // 2, len(nodes)):
        keep = [int(n) for n in rng.choice(nodes, size=size, replace=False)]
        sub = t.subgraph(keep)
        assert nx.utils.graphs_equal(sub, nx.MultiDiGraph(g.subgraph(keep)))
        assert list(sub.nodes) == sorted(keep)
        assert sub.graph == g.graph
        # edges by source, then as the source's successors were added, then by key
        expected = [
            (u, v, k) for u in sorted(keep) for v in g.succ[u] if v in keep for k in g.succ[u][v]
        ]
        assert list(sub.edges(keys=True)) == expected


def test_subgraph_is_built_without_the_whole_graph():
    t, _ = _training_trace(5)
    root = t.backward_roots[-1]
    sub = t.subgraph(t.ancestors(root) | {root})
    assert t._graph is None
    assert sub.nodes[root]["name"] == "loss"


def test_timelines_of_a_known_program_are_the_hand_written_ones():
    # y = square(exp(square(x))) at x = 0.5, backward with retain_grad=False: forward steps
    # 0-2; backward of the last Square (3: b gets its gradient, y's is dropped), of Exp (4: a
    # gets its gradient, b's is dropped), of the first Square (5: x, a leaf, keeps its own)
    with trace.record() as t:
        x = Variable(np.array(0.5), name="x")
        a = F.square(x)
        a.name = "a"
        b = F.exp(a)
        b.name = "b"
        y = F.square(b)
        y.name = "y"
        y.backward()
    N, V = NodeState.NOT_COMPUTED, NodeState.VALUE
    G, C = NodeState.GRAD, NodeState.GRAD_CLEARED
    x_, sq1, a_, exp_, b_, sq2, y_ = range(7)  # ids in the order the recorder met them
    assert [t.node(n)["name"] for n in (x_, a_, b_, y_)] == ["x", "a", "b", "y"]
    assert [t.node(n)["op"] for n in (sq1, exp_, sq2)] == ["Square", "Exp", "Square"]
    timelines = {
        x_: [(-1, V), (5, G)],
        sq1: [(-1, N), (0, V), (5, G)],
        a_: [(-1, N), (0, V), (4, G), (5, C)],
        exp_: [(-1, N), (1, V), (4, G)],
        b_: [(-1, N), (1, V), (3, G), (4, C)],
        sq2: [(-1, N), (2, V), (3, G)],
        y_: [(-1, N), (2, V), (3, C)],
    }
    for n, expected in timelines.items():
        assert t.timeline(n) == expected, n
        assert t.change_points(n) == [point for point, _ in expected]
    states = {  # after each step, from -1
        x_: [V, V, V, V, V, V, G],
        sq1: [N, V, V, V, V, V, G],
        a_: [N, V, V, V, V, G, C],
        exp_: [N, N, V, V, V, G, G],
        b_: [N, N, V, V, G, C, C],
        sq2: [N, N, N, V, G, G, G],
        y_: [N, N, N, V, C, C, C],
    }
    for n, expected in states.items():
        assert [t.state_at(n, i) for i in range(-1, 6)] == expected, n
    assert t.state_at(a_, 5, before=True) is G  # right before the step that uses it
    del x, a, b, y


def test_timeline_follows_recording():
    x = Variable(np.array(1.5), name="x")
    with trace.record() as t:
        y = F.exp(x)
        yid = t.steps[0].outputs[0]
        assert t.timeline(yid) == [(-1, NodeState.NOT_COMPUTED), (0, NodeState.VALUE)]
        y.backward(retain_grad=True)
        assert t.timeline(yid)[-1] == (1, NodeState.GRAD)
        del y
        gc.collect()
        z = F.sin(x)
    assert t.timeline(yid)[-1] == (2, NodeState.FREED)  # freed before step 2 (z = sin(x))
    del z


def test_graph_built_while_recording_follows_later_steps():
    x = Variable(np.array(0.3), name="x")
    with trace.record() as t:
        y = F.tanh(x)
        g = t.graph  # built now, extended later
        yid = t.steps[0].outputs[0]
        y.backward(retain_grad=True)
        z = F.exp(y)
    assert g is t.graph and g.number_of_nodes() == 5
    assert g.nodes[t.variables[0]]["grad"] == t.grad_at(t.variables[0], len(t.steps) - 1)
    assert g.nodes[yid]["grad"] is not None
    del z


def test_leaf_value_is_recorded_again_only_when_its_data_changes():
    x = Variable(np.array([1.0, np.nan]), name="x")
    with trace.record() as t:
        y1 = F.sin(x)
        y2 = F.cos(x)  # unchanged, NaN included: no new value
        x.data += 1.0  # in place
        y3 = F.exp(x)
        x.data = np.array([2.0, np.nan])  # a new array with the same bits
        y4 = F.exp(x)
    xid = t.variables[0]
    # the change made after step 1 shows with step 2, the first step that saw it
    assert t.change_points(xid) == [-1, 2]
    assert t.value_at(xid, 2).array[0] == 2.0
    del y1, y2, y3, y4


def test_ids_of_freed_objects_never_alias_new_ones():
    # Objects die and new ones are made in between recorded steps: CPython reuses their
    # addresses, the trace must still tell them apart.
    x = Variable(np.array(0.1), name="x")
    with trace.record() as t:
        for _ in range(50):
            y = F.sin(x)
            y = F.exp(y)
            del y
    assert t.graph.number_of_nodes() == 1 + 50 * 4
    for f in t.functions:
        (inp,) = t.graph.predecessors(f)
        assert inp == x_id_or_prev(t, f)


def x_id_or_prev(t, f):
    """What function ``f`` of the loop above read: x for sin, the sin's output for exp."""
    k = t.forward_step_of(f)
    step = t.step(k)
    return t.variables[0] if step.op == "Sin" else t.step(k - 1).outputs[0]


def test_snapshot_statistics_are_computed_when_first_read():
    import copy

    from autodiff.trace._snapshot import summarize, to_snapshot

    a = np.array([[1.0, -np.inf], [np.nan, 4.0]])
    lazy = to_snapshot(a.copy())
    assert lazy._stats is None and not lazy.finite and lazy._stats is None
    eager = summarize(a, keep_array=False)
    assert (lazy.min, lazy.max, lazy.mean, lazy.nan, lazy.inf) == (1.0, 4.0, 2.5, 1, 1)
    assert lazy.norm == eager.norm and lazy == Snapshot.of(a) and hash(lazy) == hash(eager)
    assert copy.deepcopy(lazy) == lazy
    with pytest.raises(AttributeError, match="read-only"):
        lazy.min = 0.0
    with pytest.raises(ValueError, match="read-only"):
        lazy.array[0, 0] = 2.0


def test_outputs_are_the_variables_made_and_never_used_without_building_the_graph():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        a = F.sin(x)
        b = F.exp(a)  # a is used: not an output
        c = F.cos(x)
        del a
    found = t.outputs()
    assert t._graph is None  # answered from the tables
    expected = sorted(n for n in t.variables if t.creator_of(n) >= 0 and t.graph.out_degree(n) == 0)
    assert found == expected == [t.variables[-2], t.variables[-1]]
    assert t.outputs(last=1) == [t.variables[-1]] and t.outputs(last=0) == []
    del b, c


def test_changes_between_iterations_show_from_the_next_segment():
    x = Variable(np.array([1.0, 2.0]), name="x")
    with trace.record() as t:
        y = F.sum(F.square(x))
        y.backward()  # x.grad = [2, 4]
        end1 = len(t.steps) - 1
        x.grad.data[...] = 0.0  # zeroed in place
        x.data = np.array([3.0, 4.0])
        y = F.sum(F.square(x))
        start2 = len(t.steps) - 2  # the second segment's first step
        x.grad = Variable(np.array([5.0, 5.0]))  # set by hand before backward
        y.backward()
    xid = t.variables[0]
    assert list(t.grad_at(xid, end1).array) == [2.0, 4.0]
    assert list(t.value_at(xid, end1).array) == [1.0, 2.0]  # the change is not shown early
    assert list(t.value_at(xid, start2, before=True).array) == [3.0, 4.0]
    assert list(t.grad_at(xid, start2, before=True).array) == [0.0, 0.0]
    assert t.grad_origin(xid, start2, before=True) is None  # set by the program
    last = len(t.steps) - 1
    assert list(t.grad_at(xid, last).array) == [11.0, 13.0]  # 5 + 2x, added to the hand-set


def test_a_gradient_replaced_by_another_with_the_same_first_element_shows():
    # the recorder knows a leaf's gradient by its object and its first element: another
    # Variable that starts the same is still another gradient
    x = Variable(np.array([1.0, 2.0]), name="x")
    with trace.record() as t:
        y = F.sum(F.square(x))
        y.backward()  # x.grad = [2, 4]
        x.grad = Variable(np.array([2.0, 7.0]))  # by hand: a new object, same first element
        y = F.sum(F.square(x))  # the next segment begins
        first = len(t.steps) - 2
    xid = t.variables[0]
    assert list(t.grad_at(xid, first, before=True).array) == [2.0, 7.0]
    assert t.grad_origin(xid, first, before=True) is None  # set by the program


def test_a_weight_changed_between_two_uses_in_one_segment_shows_at_the_second():
    # the segment's scan checks each leaf once; its first use after that is free, a later
    # use is checked again (linear's many-input path included)
    x = np.ones((1, 2))
    W = Variable(np.ones((2, 1)), name="W")
    b = Variable(np.zeros(1), name="b")
    with trace.record() as t:
        F.sum(F.linear(x, W, b)).backward()
        F.linear(x, W, b)  # a new segment: W's first use since its scan
        first = len(t.steps) - 1
        W.data[...] = 3.0  # changed in place before its second use
        F.linear(x, W, b)
        second = len(t.steps) - 1
    wid = next(v for v in t.variables if t.graph.nodes[v]["name"] == "W")
    assert t.value_at(wid, first).array.ravel().tolist() == [1.0, 1.0]
    assert t.value_at(wid, second).array.ravel().tolist() == [3.0, 3.0]


def test_a_weight_changed_after_the_forward_shows_as_stale_with_its_emptied_gradient():
    # when a backward pass begins the recorder checks every leaf once, for both its gradient
    # (cleargrad: emptied) and its value (changed in place or rebound since the forward read
    # it); the gradient events come first, then the new values, and backward's step reads
    # the new values: stale_inputs names those leaves
    x = np.ones((1, 2))
    W = Variable(np.ones((2, 1)), name="W")
    b = Variable(np.zeros(1), name="b")
    c = Variable(np.array([2.0]), name="c")  # used, left alone
    with trace.record() as t:
        F.sum(F.linear(x, W, b) * c).backward()
        y = F.sum(F.linear(x, W, b) * c)
        W.data[1, 0] = 5.0  # in place, not its first element
        b.data = np.array([4.0])  # rebound
        W.cleargrad()
        b.cleargrad()
        y.backward()
    ids = {t.graph.nodes[v]["name"]: v for v in t.variables if t.graph.nodes[v]["name"]}
    last = len(t.steps) - 1
    bwd = next(i for i in range(last, -1, -1) if t.step(i).phase == "backward"
               and t.step(i).op == "Linear")  # fmt: skip
    assert set(t.stale_inputs(bwd)) == {ids["W"], ids["b"]}
    assert t.value_at(ids["W"], last).array.ravel().tolist() == [1.0, 5.0]
    assert t.value_at(ids["b"], last).array.tolist() == [4.0]
    assert t.value_at(ids["c"], last).array.tolist() == [2.0]
    r = t.tables
    second = r.backward_roots[1]
    begin = next(i for i, e in enumerate(r._extra) if e.node == second)  # the pass's seed
    kinds = [(e.node, e.kind) for e in r._extra[:begin] if e.stamp == r._extra[begin].stamp]
    emptied = [k for k in kinds if k[1] == 4]
    values = [k for k in kinds if k[1] == 0]
    assert set(emptied) == {(ids["W"], 4), (ids["b"], 4)}
    assert set(values) == {(ids["W"], 0), (ids["b"], 0)}
    assert max(map(kinds.index, emptied)) < min(map(kinds.index, values))


def test_a_left_over_gradient_is_carried_only_where_a_later_backward_adds_to_it():
    # x is emptied before the second backward and not before the third: its gradient is a
    # previous one in the second window and carried over in the third, exactly there
    x = Variable(np.array(0.5), name="x")
    windows = []
    with trace.record() as t:
        for clear in (True, True, False):
            start = len(t.steps)
            y = F.sin(x) * x
            if clear:
                x.cleargrad()
            y.backward()
            windows.append((start, len(t.steps) - 1))
        z = F.exp(x)  # forward steps after the last backward
    xid = next(n for n in t.variables if t.node(n)["name"] == "x")
    P, C, G, V = NodeState.GRAD_PREVIOUS, NodeState.GRAD_CARRIED, NodeState.GRAD, NodeState.VALUE
    first_backward = [t.steps_of_pass(p)[0] for p in range(3)]
    # window 1: pass 0's gradient until the program empties it, right before its backward
    for step in range(windows[1][0], first_backward[1]):
        assert t.state_at(xid, step) is P
        assert t.grad_fate(xid, step) == (None, True)
    assert t.state_at(xid, first_backward[1], before=True) is V  # emptied: no gradient
    # window 2: nothing empties pass 1's gradient; pass 2 adds to it
    for step in range(windows[2][0], first_backward[2]):
        assert t.state_at(xid, step) is C
        assert t.grad_fate(xid, step) == (2, False)
        assert t.state_at(xid, step, before=True) is C
    assert t.state_at(xid, windows[2][1]) is G
    # after the last backward nothing adds to it: a previous gradient, never an alarm
    for step in range(windows[2][1] + 1, len(t.steps)):
        assert t.state_at(xid, step) is P and t.grad_fate(xid, step) == (None, False)
    # the timeline and state_at agree, and a node holding no left-over gradient has no fate
    for step, state in t.timeline(xid):
        assert t.state_at(xid, step) is state
    assert t.grad_fate(xid, windows[0][1]) == (None, False)
    del z


def _long_history_trace():
    """Leaves with long histories: 25 passes, some forgetting cleargrad (carried gradients),
    some clearing it between the forward and the backward, values changed in place and
    rebound, a create_graph pass, and intermediates freed."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 2))
    w = Variable(rng.standard_normal((2, 1)), name="w")
    b = Variable(np.zeros(1), name="b")
    with trace.record(max_array_size=8) as t:
        for i in range(25):
            loss = F.sum(F.tanh(F.linear(x, w, b)) ** 2)
            if i % 3:
                w.cleargrad()  # every third pass forgets it: w's gradient is carried
            if i % 5 == 4:
                b.cleargrad()
            loss.backward(create_graph=(i == 7))
            if i % 4 == 0:
                w.data -= 0.05 * w.grad.data
            else:
                w.data = w.data - 0.05 * w.grad.data
            b.data = b.data - 0.05 * b.grad.data
            if i % 6 == 5:
                b.cleargrad()  # emptied after the pass
    return t


def test_long_histories_read_through_their_table_as_event_by_event(monkeypatch):
    """A history longer than SHORT_HISTORY is read through a table of prefixes: every state,
    fate, value, gradient and origin, at every position of every node, is the one the
    event-by-event reading gives."""
    from autodiff.trace import _index

    def readings(short_history):
        monkeypatch.setattr(_index, "SHORT_HISTORY", short_history)
        t = _long_history_trace()
        ix = t._indexer
        last = 2 * len(t._raw)
        out = []
        long = 0
        for node in range(len(t._info)):
            long += len(ix._history(node)) > 16
            for pos in range(-1, last + 1):
                out.append(
                    (
                        node,
                        pos,
                        ix.state_at_position(node, pos),
                        ix.grad_fate_at_position(node, pos),
                        ix.grad_origin_at_position(node, pos),
                        _summary(ix.value_at_position(node, pos)),
                        _summary(ix.grad_at_position(node, pos)),
                    )
                )
        return out, long, ix

    linear, _, ix_linear = readings(10**9)
    tabled, long, ix_tabled = readings(0)
    assert not ix_linear._prefixes  # the first reading never made a table
    assert ix_tabled._prefixes and long >= 2  # w and b: the second read theirs from tables
    states = {r[2] for r in linear}
    assert {NodeState.GRAD_CARRIED, NodeState.GRAD_PREVIOUS, NodeState.FREED} <= states
    assert tabled == linear


def _summary(snapshot):
    if snapshot is None:
        return None
    return (snapshot.shape, None if snapshot.array is None else snapshot.array.tolist())


def test_a_history_out_of_position_order_is_read_event_by_event():
    """A hand-made history out of order gets no table (None), and is read as before."""
    from autodiff.trace._index import _prefix_of

    assert _prefix_of([(5, 0, None, None), (3, 0, None, None)]) is None
    assert _prefix_of([(3, 0, None, None), (5, 0, None, None)]) is not None
