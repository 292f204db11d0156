"""The recorder: graph structure, step order, accumulation, states, NaN/Inf, weak references."""

import copy
import gc
import subprocess
import sys
import weakref

import engine_steps
import networkx as nx
import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Function, Variable, no_grad, trace
from autodiff.trace import NodeState, Snapshot, Step
from autodiff.trace._recorder import _FREED


def _edges(t):
    return sorted((u, v, d["slot"]) for u, v, d in t.graph.edges(data=True))


def _ops(t, phase=None):
    return [s.op for s in t.steps if phase is None or s.phase == phase]


class _EngineSteps:
    """An observer that keeps what the engine reports, to compare the trace against."""

    def __init__(self):
        self.backward = []

    def on_backward_step(self, step):
        self.backward.append((type(step.function).__name__, step.index))


# ----------------------------------------------------------------------------------------
# Graph structure for the seeds' examples
# ----------------------------------------------------------------------------------------
def test_square_exp_square_graph_and_steps():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.square(F.exp(F.square(x)))
        y.backward()
    g = t.graph
    assert isinstance(g, nx.MultiDiGraph)
    assert len(t.variables) == 4 and len(t.functions) == 3
    assert [g.nodes[f]["op"] for f in t.functions] == ["Square", "Exp", "Square"]
    assert g.nodes[t.variables[0]]["name"] == "x"
    assert g.nodes[t.variables[0]]["kind"] == "variable"
    assert [g.nodes[f]["generation"] for f in t.functions] == [0, 1, 2]
    assert [g.nodes[v]["generation"] for v in t.variables] == [0, 1, 2, 3]
    assert _ops(t) == ["Square", "Exp", "Square", "Square", "Exp", "Square"]
    assert [s.phase for s in t.steps] == ["forward"] * 3 + ["backward"] * 3
    assert [s.index for s in t.steps] == list(range(6))
    # the recorded gradient of x is the engine's
    assert t.grad_at(t.variables[0], 5).array == pytest.approx(x.grad.data)
    expected = 2 * 0.5 * np.exp(0.25) * 2 * np.exp(0.25)
    assert float(x.grad.data) == pytest.approx(expected)
    assert t.steps[2].values[0].array == pytest.approx(np.exp(0.25) ** 2)
    assert t.backward_roots == [t.variables[-1]]


def test_x_plus_x_has_two_edges_and_accumulates():
    x = Variable(np.array(3.0), name="x")
    with trace.record() as t:
        y = F.add(F.add(x, x), x)
        y.backward()
    xid = t.variables[0]
    (f1, f2) = t.functions
    assert t.graph.number_of_edges(xid, f1) == 2
    assert t.graph.number_of_edges(xid, f2) == 1
    assert sorted(d["slot"] for _, _, d in t.graph.out_edges(xid, data=True)) == [0, 1, 1]
    assert t.steps[0].inputs == (xid, xid)
    backward = [s for s in t.steps if s.phase == "backward"]
    assert [s.op for s in backward] == ["Add", "Add"]
    # x already has the gradient from the outer Add when the inner one adds two more
    accs = backward[1].accumulations
    assert [(a.node, a.slot) for a in accs] == [(xid, 0), (xid, 1)]
    assert accs[0].old.array == 1.0 and accs[0].contribution.array == 1.0
    assert accs[0].new.array == 2.0 and accs[1].new.array == 3.0
    assert float(x.grad.data) == 3.0
    assert t.grad_at(xid, len(t.steps) - 1).array == 3.0
    assert t.grad_at(xid, backward[0].index).array == 1.0


def test_diamond():
    x = Variable(np.array(2.0), name="x")
    with trace.record() as t:
        a = F.square(x)
        y = F.add(F.square(a), F.square(a))
        y.backward()
    aid = t.steps[0].outputs[0]
    assert t.graph.out_degree(aid) == 2
    backward = [s for s in t.steps if s.phase == "backward"]
    # Add first, then the two squares (most recent first), then the first square
    assert [s.op for s in backward] == ["Add", "Square", "Square", "Square"]
    assert [s.function for s in backward[1:3]] == [t.functions[2], t.functions[1]]
    acc = [a for s in backward for a in s.accumulations]
    assert [(a.node, a.slot) for a in acc] == [(aid, 0)]
    assert acc[0].new.array == pytest.approx(acc[0].old.array + acc[0].contribution.array)
    assert float(x.grad.data) == pytest.approx(8 * 2.0**3)  # y = 2 x^4


def test_backward_order_equals_engine_order():
    rng = np.random.default_rng(0)
    x = Variable(rng.standard_normal((3, 2)), name="x")
    w = Variable(rng.standard_normal((2, 4)), name="w")
    engine = _EngineSteps()
    engine_steps.add_observer(engine)
    try:
        with trace.record() as t:
            h = F.tanh(F.matmul(x, w))
            y = F.sum(h * h + F.sin(h))
            y.backward()
    finally:
        engine_steps.remove_observer(engine)
    backward = [s for s in t.steps if s.phase == "backward"]
    assert [(s.op, i) for i, s in enumerate(backward)] == engine.backward
    # forward steps come in call order
    assert _ops(t, "forward") == ["MatMul", "Tanh", "Mul", "Sin", "Add", "Sum"]


def test_steps_are_contract_dataclasses():
    x = Variable(np.array([1.0, 2.0]), name="x")
    with trace.record() as t:
        y = F.sum(x * x)
        y.backward()
    s = t.steps[0]
    assert isinstance(s, Step) and s.phase == "forward" and s.backward_pass == -1
    assert s.output_grads == () and s.input_grads == () and s.accumulations == ()
    assert isinstance(s.values[0], Snapshot)
    assert s.values[0].shape == (2,) and s.values[0].dtype == "float64"
    b = t.steps[-1]
    assert b.phase == "backward" and b.backward_pass == 0 and b.values == ()
    assert b.input_grads[0].array.tolist() == [1.0, 2.0]
    assert t.steps is t.steps  # one list, extended as recording goes on


# ----------------------------------------------------------------------------------------
# Constants, no_grad, states
# ----------------------------------------------------------------------------------------
def test_plain_operands_are_constant_nodes():
    x = Variable(np.array(3.0), name="x")
    with trace.record() as t:
        y = x * 2 + np.array(1.0)
        z = F.matmul(Variable(np.ones((1, 2))), np.ones((2, 1)))
    const = [v for v in t.variables if t.graph.nodes[v]["constant"]]
    assert len(const) == 3
    assert all(t.state_at(v, len(t.steps) - 1) is NodeState.CONSTANT for v in const)
    assert t.graph.nodes[t.variables[0]]["constant"] is False
    del y, z


def test_no_grad_records_nothing_and_marks_constants():
    x = Variable(np.array(3.0), name="x")
    with trace.record() as t:
        with no_grad():
            c = F.exp(x) * 2
        assert t.steps == [] and t.variables == []
        y = c + x
    cid = t.steps[0].inputs[0]
    assert t.graph.nodes[cid]["constant"]
    assert t.state_at(cid, 0) is NodeState.CONSTANT
    assert t.state_at(t.steps[0].inputs[1], 0) is NodeState.VALUE
    del y


def test_states_over_time():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.square(F.exp(x))
        y.backward()  # retain_grad=False: the intermediate gradient is dropped
    xid, hid, yid = t.variables
    states = {n: [t.state_at(n, i) for i in range(-1, len(t.steps))] for n in t.variables}
    V, G, C, N = NodeState.VALUE, NodeState.GRAD, NodeState.GRAD_CLEARED, NodeState.NOT_COMPUTED
    assert states[xid] == [V, V, V, V, G]
    assert states[hid] == [N, V, V, G, C]
    assert states[yid][:3] == [N, N, V]
    assert states[yid][3] in (G, C)  # the engine decides whether the output keeps its grad
    assert t.value_at(hid, -1) is None
    assert t.value_at(hid, 0).array == pytest.approx(np.exp(0.5))
    assert t.grad_at(hid, 2).array == pytest.approx(2 * np.exp(0.5))
    assert t.grad_at(hid, 3) is None
    fexp = t.functions[0]
    assert [t.state_at(fexp, i) for i in (-1, 0, 2, 3)] == [N, V, V, G]


def test_retain_grad_keeps_gradients():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.square(F.exp(x))
        y.backward(retain_grad=True)
    assert all(s.cleared == () for s in t.steps)
    assert t.state_at(t.variables[1], len(t.steps) - 1) is NodeState.GRAD


def test_freed_during_recording():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.exp(F.square(x))
        n_steps = len(t.steps)
        del y
        z = F.sin(x)  # a step after the graph was let go
    assert all(t.freed(n) for n in t.variables[1:3])
    # right after the last step of the graph it was alive; it shows as freed from the next
    assert t.state_at(t.variables[2], n_steps - 1) is NodeState.VALUE
    assert t.state_at(t.variables[2], n_steps) is NodeState.FREED
    assert t.state_at(t.variables[0], n_steps) is NodeState.VALUE
    del z
    assert t.live(t.variables[0]) is x


def test_a_recorded_output_has_one_weak_reference_the_tape_keeps():
    # The engine makes the output's reference with the recorder's callback: the recorder
    # keeps it instead of a second one, and the death still reaches the tape in its place.
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.exp(x)
        assert weakref.getweakrefcount(y) == 1
        assert t.live(t.variables[1]) is y and y.creator.outputs[0]() is y
        n_steps = len(t.steps)
        del y
        F.sin(x)
    assert t.state_at(t.variables[1], n_steps - 1) is NodeState.VALUE
    assert t.state_at(t.variables[1], n_steps) is NodeState.FREED


def test_each_output_of_a_two_output_function_has_one_weak_reference():
    class Halves(Function):
        def forward(self, x):
            return x / 2, x / 2

        def backward(self, gy0, gy1):
            return (gy0 + gy1) / 2

    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        a, b = Halves()(x)
        assert [weakref.getweakrefcount(v) for v in (a, b)] == [1, 1]
        n_steps = len(t.steps)
        del b
        F.sin(a)
    assert t.state_at(t.variables[1], n_steps) is NodeState.VALUE
    assert t.state_at(t.variables[2], n_steps) is NodeState.FREED
    del a


def test_an_output_outliving_its_function_is_freed_in_its_place():
    # unchain() frees the Function while its output lives on: the output's death, later,
    # is still written where it happened
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        h = F.exp(x)
        f = weakref.ref(h.creator)
        h.unchain()
        assert f() is None
        F.sin(x)
        n_steps = len(t.steps)
        del h
        F.cos(x)
    hid = t.variables[1]
    assert t.state_at(hid, n_steps - 1) is NodeState.VALUE
    assert t.state_at(hid, n_steps) is NodeState.FREED
    assert t.freed(t.functions[0])


def test_two_recorders_at_once_each_see_every_death():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as outer, trace.record() as inner:
        y = F.exp(x)
        assert weakref.getweakrefcount(y) == 3  # the engine's plain one and each tape's
        n_steps = len(inner.steps)
        del y
        F.sin(x)
    for t in (outer, inner):
        assert t.state_at(t.variables[1], n_steps) is NodeState.FREED


def test_names_given_after_the_op_are_picked_up():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.exp(x)
        y.name = "y"
    assert t.graph.nodes[t.variables[1]]["name"] == "y"
    assert t.node(t.variables[1])["name"] == "y"
    del y


def test_a_name_given_to_a_variable_that_dies_before_the_end_is_kept():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        h = F.exp(x)
        h.name = "h"
        y = F.sin(h)
        del h, y  # freed while recording: the name was written down when it was given
        F.cos(x)  # a step after they were freed
    (hid,) = [n for n in t.variables if t.graph.nodes[n]["name"] == "h"]
    assert t.freed(hid) and t.state_at(hid, len(t.steps) - 1) is NodeState.FREED


def test_an_output_unchained_and_reused_stays_one_node():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        h = F.exp(x)
        h.unchain()  # now a leaf to the engine; still the same object to the trace
        y = F.sin(h)
        y.backward()
    assert len(t.variables) == 3  # x, h, y
    sin = t.functions[1]
    exp_output = t.graph.nodes[t.functions[0]]
    assert [u for u, _ in t.graph.in_edges(sin)] == [t.functions[0] + 1]
    assert exp_output["op"] == "Exp"


def test_a_copy_of_a_recorded_variable_is_another_node():
    w = Variable(np.array([1.0, 2.0]), name="w")
    with trace.record() as t:
        a = F.sum(w * 2.0)
        w2 = copy.deepcopy(w)
        b = F.sum(w2 * 3.0)
    assert len([n for n in t.variables if t.graph.nodes[n]["name"] == "w"]) == 2
    del a, b


def test_reading_while_recording_then_going_on_gives_the_same_trace():
    """The tape is decoded in pieces as it is read; reading in the middle changes nothing."""

    def run(peek):
        x = Variable(np.array(0.3), name="x")
        with trace.record() as t:
            y = x
            for i in range(6):
                y = F.sin(y) * y
                if peek and i % 2:
                    t.graph  # noqa: B018  (decodes what was recorded so far)
                    t.steps  # noqa: B018
            y.backward()
            del y
        return t

    a, b = run(False), run(True)
    assert [(s.phase, s.op, s.inputs, s.outputs) for s in a.steps] == [
        (s.phase, s.op, s.inputs, s.outputs) for s in b.steps
    ]
    assert [e[:4] for e in a._extra] == [e[:4] for e in b._extra]  # FREED events included
    assert any(e[3] == _FREED for e in a._extra)
    assert list(a.graph.nodes) == list(b.graph.nodes)
    assert sorted(a.graph.edges(keys=True)) == sorted(b.graph.edges(keys=True))


def test_objects_freed_after_recording_are_not_part_of_the_trace():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.exp(F.sin(x))
    n_events = len(t._extra)
    del y
    gc.collect()
    assert len(t._extra) == n_events
    last = len(t.steps) - 1
    assert all(t.state_at(n, last) is not NodeState.FREED for n in t.variables)
    assert t.freed(t.variables[-1])  # the liveness query still answers the truth


@pytest.mark.parametrize("create_graph", [False, True])
def test_output_grads_equal_what_the_engine_handed_each_step(create_graph):
    """A one-output step's received gradient is not stored twice: the trace puts back what
    the consumers' steps (or the seed) gave, and a gradient handed on unchanged (Add) is that
    one; both must be exactly what the engine passed."""
    engine = []

    def arrays(grads):
        return [None if g is None else np.array(getattr(g, "data", g), dtype=float) for g in grads]

    class Grads:
        def on_backward_step(self, step):
            engine.append((arrays(step.output_grads_raw), arrays(step.input_grads_raw)))

    x = Variable(np.array([0.5, -1.0, 2.0]), name="x")
    observer = Grads()
    with trace.record() as t:
        engine_steps.add_observer(observer)
        try:
            h = F.sin(x) * x  # x fans out; h fans out below
            y = F.sum(h * h + F.exp(h))
            y.backward(create_graph=create_graph)
            y.backward(create_graph=create_graph)  # a second pass: nothing carried over
        finally:
            engine_steps.remove_observer(observer)
    recorded = [
        (arrays([g.array for g in s.output_grads]), arrays([g and g.array for g in s.input_grads]))
        for s in t.steps
        if s.phase == "backward"
    ]
    assert len(recorded) == len(engine) > 6
    assert "Add" in [s.op for s in t.steps]  # hands the gradient it received on unchanged
    for (got_out, got_in), (expected_out, expected_in) in zip(recorded, engine, strict=True):
        for got, expected in ((got_out, expected_out), (got_in, expected_in)):
            assert len(got) == len(expected)
            for a, b in zip(got, expected, strict=True):
                if b is None:
                    assert a is None
                else:
                    np.testing.assert_array_equal(a, b)


def test_leaf_updated_between_uses_gets_a_new_value():
    w = Variable(np.array([1.0, 2.0]), name="w")
    with trace.record() as t:
        for _ in range(2):
            loss = F.sum(w * w)
            w.cleargrad()
            loss.backward()
            w.data -= 0.1 * w.grad.data
    wid = t.variables[0]
    first = t.steps[0].index
    second = next(s.index for s in t.steps if s.phase == "forward" and s.index > first + 2)
    assert t.value_at(wid, first).array.tolist() == [1.0, 2.0]
    assert t.value_at(wid, second).array.tolist() == pytest.approx([0.8, 1.6])


def test_a_leaf_changed_past_its_first_element_gets_a_new_value_an_unchanged_one_none():
    w = Variable(np.array([1.0, 2.0, 3.0]), name="w")
    x = Variable(np.array([0.5, 0.5, 0.5]), name="x")  # the same input every iteration
    with trace.record() as t:
        for i in range(3):
            F.sum(w * x).backward()
            if i == 0:
                w.data[2] = 7.0  # in place, the first element unchanged
    wid, xid = t.variables[0], t.variables[1]
    firsts = [s.index for s in t.steps if s.phase == "forward" and s.op == "Mul"]
    assert [t.value_at(wid, k).array.tolist() for k in firsts] == [
        [1.0, 2.0, 3.0],
        [1.0, 2.0, 7.0],
        [1.0, 2.0, 7.0],
    ]
    x_values = {id(t.value_at(xid, k)) for k in firsts}
    assert len(x_values) == 1  # one value: nothing new was recorded for the unchanged input


def test_same_raw_compares_bits_small_and_large():
    from autodiff.trace import _recorder

    for n in (3, 300_000):  # as bytes, and (over a megabyte) as unsigned integers
        a = np.linspace(-1.0, 1.0, n)
        b = a.copy()
        assert _recorder._same_raw(a, b)
        b[-1] = np.nextafter(b[-1], 2.0)
        assert not _recorder._same_raw(a, b)
        z, nz = np.zeros(n), np.zeros(n)
        nz[n // 2] = -0.0  # equal values, other bits: a change
        assert not _recorder._same_raw(z, nz)
        c = a[::-1]  # not contiguous
        assert _recorder._same_raw(c, c.copy())


def test_a_scalar_leaf_is_recorded_again_only_when_its_bits_change():
    # a 0-d float64 leaf is kept as a float: equal nonzero values are the same value, but a
    # zero that changes sign and a NaN that stays NaN are compared as bits, at a segment's
    # start, when a pass begins (after the forward read it) and at a second use in a segment
    x = Variable(np.array(0.0), name="x")
    values = [0.0, -0.0, -0.0, np.nan, np.nan, 2.5, 2.5]
    with trace.record() as t:
        for i, v in enumerate(values):
            x.data = np.array(v)  # a new array each time, the value given
            y = x * x
            if i == 4:
                x.data = np.array(-0.0)  # after the forward read it: stale at the pass
            x.cleargrad()
            y.backward()
    xid = t.variables[0]
    seen = [e.raw for e in t.tables._extra if e.node == xid and e.kind == 0]  # its values
    bits = [np.float64(v).tobytes() for v in seen]
    expected = [0.0, -0.0, np.nan, -0.0, 2.5]  # each change once, in order
    assert bits == [np.float64(v).tobytes() for v in expected]


# ----------------------------------------------------------------------------------------
# create_graph=True: gradient graphs recorded inside the backward pass
# ----------------------------------------------------------------------------------------
def test_create_graph_records_gradient_graph_in_true_order():
    x = Variable(np.array(2.0), name="x")
    with trace.record() as t:
        y = x**3
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
    assert float(x.grad.data) == pytest.approx(12.0)
    phases = [(s.phase, s.backward_pass, s.during_backward) for s in t.steps]
    assert phases[0] == ("forward", -1, -1)
    # the gradient computations run inside backward pass 0, before its step completes
    first_bwd = next(i for i, s in enumerate(t.steps) if s.phase == "backward")
    assert all(p == ("forward", -1, 0) for p in phases[1:first_bwd])
    assert first_bwd > 1
    assert t.steps[first_bwd].backward_pass == 0
    assert all(p[0] == "backward" and p[1] == 1 for p in phases[first_bwd + 1 :])
    assert t.backward_roots[0] == t.variables[1] or t.backward_roots[0] == t.steps[0].outputs[0]
    gid = t.backward_roots[1]
    assert t.graph.nodes[gid]["grad_of"] == t.variables[0]
    # generations continue through the gradient graph: each step's generation is the engine's
    gens = {s.function: s.generation for s in t.steps}
    assert all(t.graph.nodes[f]["generation"] == g for f, g in gens.items())


# ----------------------------------------------------------------------------------------
# NaN / Inf
# ----------------------------------------------------------------------------------------
def test_first_nonfinite_forward():
    x = Variable(np.array([1.0, 0.0]), name="x")
    with trace.record() as t, np.errstate(all="ignore"):
        y = F.sum(F.log(x) * 2)
        y.backward()
    bad = t.first_nonfinite()
    assert bad is not None and bad.phase == "forward" and bad.op == "Log"
    assert bad.nonfinite and bad.values[0].inf == 1 and not bad.values[0].finite


def test_first_nonfinite_backward():
    x = Variable(np.array([0.0, 4.0]), name="x")
    with trace.record() as t, np.errstate(all="ignore"):
        y = F.sum(x**0.5)
        y.backward()
    assert all(not s.nonfinite for s in t.steps if s.phase == "forward")
    bad = t.first_nonfinite()
    assert bad is not None and bad.phase == "backward" and bad.op == "Pow"
    assert bad.input_grads[0].inf == 1


def test_finite_trace_has_no_nonfinite_step():
    x = Variable(np.array(1.0))
    with trace.record() as t:
        F.exp(x).backward()
    assert t.first_nonfinite() is None


# ----------------------------------------------------------------------------------------
# Snapshots
# ----------------------------------------------------------------------------------------
def test_large_arrays_are_summarised():
    x = Variable(np.arange(10.0), name="x")
    with trace.record(max_array_size=4) as t:
        y = x * 1.0
    snap = t.steps[0].values[0]
    assert snap.array is None and snap.shape == (10,)
    assert (snap.min, snap.max, snap.mean) == (0.0, 9.0, 4.5)
    assert snap.norm == pytest.approx(np.linalg.norm(np.arange(10.0)))
    del y


def test_snapshot_copies_are_independent_of_later_mutation():
    x = Variable(np.array([1.0, 2.0]), name="x")
    with trace.record() as t:
        y = x * 1.0
    y.data[0] = 100.0
    assert t.steps[0].values[0].array.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError):
        t.steps[0].values[0].array[0] = 5.0


def test_each_step_keeps_the_value_the_program_held_then_through_in_place_writes():
    x = Variable(np.array([1.0, 2.0]), name="x")
    with trace.record() as t:
        y = x * 2.0  # [2, 4]
        y.data[...] = 0.0  # written in place while recording
        z = F.exp(y)  # reads the written array: exp(0) = 1
        z.data += 1.0
        s = F.sum(z)  # 4.0, from the written z
        s.data += 10.0  # a 0-d output, in place
        with no_grad():
            z += 5.0  # the engine's own in-place update under no_grad
        w = z * 1.0  # [7, 7]
    values = [step.values[0].array.tolist() for step in t.steps]
    assert values == [[2.0, 4.0], [1.0, 1.0], 4.0, [7.0, 7.0]]
    assert (y.data.tolist(), z.data.tolist(), float(s.data)) == ([0.0, 0.0], [7.0, 7.0], 14.0)
    del w


def test_snapshot_statistics_ignore_nonfinite_elements():
    s = Snapshot.of(np.array([1.0, np.nan, np.inf, 3.0]))
    assert (s.nan, s.inf, s.min, s.max, s.mean) == (1, 1, 1.0, 3.0, 2.0)
    assert not s.finite
    assert Snapshot.of(np.array([np.nan])) == Snapshot.of(np.array([np.nan]))


# ----------------------------------------------------------------------------------------
# from_output
# ----------------------------------------------------------------------------------------
def test_from_output_walks_in_generation_order():
    x = Variable(np.array(2.0), name="x")
    a = F.square(x)
    y = F.add(F.exp(a), F.square(a))
    t = trace.from_output(y)
    assert [s.phase for s in t.steps] == ["forward"] * 4
    assert [s.generation for s in t.steps] == [0, 1, 1, 2]
    # ties at generation 1 in creation order: exp was created before the second square
    assert _ops(t) == ["Square", "Exp", "Square", "Add"]
    assert t.graph.number_of_nodes() == 9
    assert t.live(t.steps[-1].outputs[0]) is y


def test_from_output_after_backward_replays_it_and_changes_nothing():
    x = Variable(np.array(0.5), name="x")
    y = F.tanh(x) * x**2
    y.backward()
    held = x.grad
    t = trace.from_output(y)
    assert [s.phase for s in t.steps] == ["forward"] * 3 + ["backward"] * 3
    assert x.grad is held and y.grad is None  # the program's gradients, untouched
    xid = t.variables[0]
    assert t.grad_at(xid, 2) is None  # no gradient during the forward phase
    assert float(t.grad_at(xid, 5).array) == float(held.data)
    # a gradient summed over two backward calls shows at the end as it is held
    y.backward()
    t2 = trace.from_output(y)
    assert float(t2.grad_at(xid, len(t2.steps) - 1).array) == float(x.grad.data)
    assert float(t2.grad_at(xid, 4).array) != float(x.grad.data)
    # other observers do not see the replay
    with trace.record() as outer:
        trace.from_output(y)
    assert outer.steps == []


def test_from_output_deep_chain_needs_no_recursion():
    x = Variable(np.array(0.0))
    y = x
    for _ in range(20_000):
        y = y + 1.0
    t = trace.from_output(y)
    assert len(t.steps) == 20_000
    assert float(t.steps[-1].values[0].array) == 20_000.0


# ----------------------------------------------------------------------------------------
# Weak references only
# ----------------------------------------------------------------------------------------
def test_recording_keeps_nothing_alive():
    gc.disable()
    try:
        x = Variable(np.array(0.5), name="x")
        with trace.record() as t:
            y = F.square(F.exp(x))
            y.backward(create_graph=True)
            _ = t.steps, t.graph
        refs = [weakref.ref(o) for o in (y, y.creator, x.grad)]
        x.cleargrad()
        del y, _
        assert all(r() is None for r in refs)
    finally:
        gc.enable()
    assert t.live(t.variables[0]) is x


def test_dropped_trace_is_freed_by_refcount():
    gc.disable()
    try:
        x = Variable(np.array(0.5))
        with trace.record() as t:
            y = F.exp(x)
        r = weakref.ref(t)
        del t
        assert r() is None
        del y  # the weakref callbacks find no trace and do nothing
    finally:
        gc.enable()


def test_outputs_outliving_their_trace_leave_no_cycle_behind():
    # Their weak references are their Functions' and carry the dropped tape's append: what
    # they append after the trace is gone is freed with the last of them, by refcount
    x = Variable(np.array(0.5))
    gc.collect()
    gc.disable()
    try:
        with trace.record() as t:
            ys = [F.exp(x) for _ in range(3)]
        tape = ys[0].creator.outputs[0].__callback__.__self__
        del t
        assert tape == []
        ys.pop()  # dies after its trace: its reference goes to the emptied tape
        assert len(tape) == 1
        del tape, ys
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_core_does_not_import_networkx():
    code = "import sys, autodiff, autodiff.core; print('networkx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_node_id_is_a_clear_error():
    with trace.record() as t:
        pass
    with pytest.raises(KeyError, match="no node 3"):
        t.state_at(3, 0)


def test_from_output_marks_plain_operands_constant():
    x = Variable(np.array(2.0), name="x")
    y = x * 3.0 + 1.0
    t = trace.from_output(y)
    const = [v for v in t.variables if t.graph.nodes[v]["constant"]]
    assert len(const) == 2
    assert t.state_at(const[0], len(t.steps) - 1) is NodeState.CONSTANT


def test_step_count_is_the_number_of_steps_without_building_them():
    x = Variable(np.array([1.0, 2.0]), name="x")
    counts = []
    with trace.record() as t:
        for i in range(3):
            x.cleargrad()
            y = F.sum(F.sin(x) * x)
            y.backward(create_graph=i == 2)
            del y  # freed: the tape holds its weak references' deaths too
            counts.append(t.step_count)
        assert t._tape  # still undecoded while recording
    assert counts[0] == 6 and counts[1] == 12 and counts[2] > 18
    assert not t._steps  # nothing built
    assert t.count_steps(at_most=10) == 11 and t.count_steps(at_most=100) == counts[-1]
    assert len(t.steps) == t.step_count == counts[-1]
    assert t.count_steps(at_most=10) == 11  # decoded now: the same answers


def test_step_count_counts_steps_of_several_outputs_and_summarised_values_too():
    class Two(Function):
        def forward(self, x):
            return x, 2 * x

        def backward(self, gy0, gy1):
            return gy0 + 2 * gy1

    x = Variable(np.arange(6.0), name="x")
    with trace.record(max_array_size=4) as t:
        a, b = Two()(x)  # two outputs
        y = F.sum(F.sin(a) * b)  # sin and mul: six elements, summarised
        y.backward()
        counted = t.step_count
        assert t._tape  # counted on the tape, undecoded
    assert counted == len(t.steps) == 8


def test_a_trace_and_a_view_of_it_both_answer_the_reading_interface():
    from pathlib import Path

    from autodiff.trace import TraceReader, TraceView, view_for_root

    x = Variable(np.array([1.0, 2.0]), name="x")
    with trace.record() as t:
        for _ in range(2):
            x.cleargrad()
            F.sum(F.sin(x) * x).backward()
    view = view_for_root(t, t.backward_roots[1], 1)
    assert isinstance(t, TraceReader) and isinstance(view, TraceView)
    assert isinstance(view, TraceReader)
    members = [m for m in vars(TraceReader) if not m.startswith("_")]
    for reader in (t, view):
        missing = [m for m in members if not hasattr(reader, m)]
        assert missing == [], (type(reader).__name__, missing)
    # the viewer's model reads traces only through it
    model = Path(__file__).resolve().parents[2] / "viewer" / "model"
    untyped = [
        f"{p.name}:{i}"
        for p in sorted(model.glob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "trace: Any" in line
    ]
    assert untyped == []


def test_edges_as_integer_arrays_match_the_graph_for_a_trace_and_a_view():
    from autodiff.trace import view_for_root

    x = Variable(np.array([1.0, 2.0]), name="x")
    with trace.record() as t:
        for _ in range(2):
            x.cleargrad()
            F.sum(F.sin(x) * x + x * x).backward()  # x + x, x * x: two slots from one node
    pairs, slots = t.edges()
    assert pairs.shape == (len(slots), 2) and pairs.dtype == np.int64
    expected = sorted((u, v, d["slot"]) for u, v, d in t.graph.edges(data=True))
    rows = zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), slots.tolist(), strict=True)
    assert sorted(rows) == expected
    view = view_for_root(t, t.backward_roots[1], 1)
    vp, vs = view.edges()
    expected = sorted((u, v, d["slot"]) for u, v, d in view.graph.edges(data=True))
    rows = zip(vp[:, 0].tolist(), vp[:, 1].tolist(), vs.tolist(), strict=True)
    assert sorted(rows) == expected
    assert 0 < len(vs) < len(slots)


def test_a_view_sorts_its_nodes_into_variables_and_functions_without_a_graph():
    from autodiff.trace import view_for_root

    w = Variable(np.array([0.5, -1.0]), name="w")
    with trace.record() as t:
        for _ in range(3):
            w.cleargrad()
            F.sum(F.tanh(w) * w).backward()
    view = view_for_root(t, t.backward_roots[1], 1)
    variables, functions = view.variables, view.functions
    assert t._graph is None and view._graph is None
    assert variables == [n for n in view.graph.nodes if view.graph.nodes[n]["kind"] == "variable"]
    assert functions == [n for n in view.graph.nodes if view.graph.nodes[n]["kind"] == "function"]
    assert sorted(variables + functions) == list(view.graph.nodes)
    assert set(variables) <= set(t.variables) and set(functions) <= set(t.functions)
    assert t.variables[0] in variables  # the shared weight, recorded first
    assert 0 < len(functions) < len(t.functions)


def test_creator_of_in_a_trace_and_in_a_view_that_cuts_the_creator_off():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.sin(x)
        z = F.exp(y)
    nx_graph = t.graph
    for nid in t.variables:
        preds = list(nx_graph.predecessors(nid))
        assert t.creator_of(nid) == (preds[0] if preds else -1)
    y_id, z_id = t.variables[1], t.variables[2]
    exp_id = t.creator_of(z_id)
    view = trace.TraceView(t, [y_id, exp_id, z_id], [1])
    assert view.creator_of(z_id) == exp_id
    assert view.creator_of(y_id) == -1  # its creator (sin) is not in the view
    assert isinstance(view, trace.TraceReader) and isinstance(t, trace.TraceReader)
    del y, z
