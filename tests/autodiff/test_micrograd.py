"""autodiff.micrograd: micrograd's Value and nn, number for number, and recorded like any graph.

Two kinds of reference: the installed micrograd, run side by side in the test (skipped where
it is not installed, as in CI), and numbers micrograd printed once, pasted below as constants
(they are reference values, not the code under test)."""

from __future__ import annotations

import gc
import math
import random
import weakref

import pytest
from micrograd_demo import train

from autodiff import core, trace
from autodiff.micrograd.engine import Value
from autodiff.micrograd.nn import MLP, Layer, Module, Neuron

TOL = 1e-12


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)


# --- micrograd's two engine tests, on any Value class ---------------------------------------
def sanity_check(V: type) -> tuple[float, float]:
    x = V(-4.0)
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    y.backward()
    return y.data, x.grad


def more_ops(V: type) -> tuple[float, float, float]:
    a = V(-4.0)
    b = V(2.0)
    c = a + b
    d = a * b + b**3
    c += c + 1
    c += 1 + c + (-a)
    d += d * 2 + (b + a).relu()
    d += 3 * d + (b - a).relu()
    e = c - d
    f = e**2
    g = f / 2.0
    g += 10.0 / f
    g.backward()
    return g.data, a.grad, b.grad


def test_sanity_check_gives_micrograds_numbers():
    # printed by micrograd 0.1.0: y.data, x.grad
    assert sanity_check(Value) == (-20.0, 46.0)


def test_more_ops_give_micrograds_numbers():
    # printed by micrograd 0.1.0: g.data, a.grad, b.grad
    expected = (24.70408163265306, 138.83381924198252, 645.5772594752186)
    assert all(close(x, e) for x, e in zip(more_ops(Value), expected, strict=True))


def test_engine_tests_match_installed_micrograd():
    mg = pytest.importorskip("micrograd.engine")
    assert sanity_check(Value) == sanity_check(mg.Value)
    ours, theirs = more_ops(Value), more_ops(mg.Value)
    assert all(close(x, e) for x, e in zip(ours, theirs, strict=True))


def test_engine_tests_match_pytorch():
    """micrograd's test/test_engine.py compares with PyTorch, float64 (skipped where torch
    is not installed, as in CI): the same two programs on torch tensors; its tolerance is
    1e-6, ours 1e-12."""
    torch = pytest.importorskip("torch")

    def leaf(v: float):
        return torch.tensor(v, dtype=torch.float64, requires_grad=True)

    for program in (sanity_check, more_ops):
        theirs = [float(t) for t in program(leaf)]
        assert all(close(x, e) for x, e in zip(program(Value), theirs, strict=True))


def test_graph_attributes_and_repr_match_installed_micrograd():
    mg = pytest.importorskip("micrograd.engine")

    def build(V):
        a, b = V(3), V(-2.0)
        out = [a + b, a * b, a**2, (a * b).relu(), a - b, a / b, -a, 2 - a, 2 / b]
        return a, b, out

    a, b, ours = build(Value)
    ma, mb, theirs = build(mg.Value)
    assert [v._op for v in ours] == [v._op for v in theirs]
    assert [v.data for v in ours] == [v.data for v in theirs]
    assert [len(v._prev) for v in ours] == [len(v._prev) for v in theirs]
    assert ours[0]._prev == {a, b}
    ours[3].backward()
    theirs[3].backward()
    assert (repr(a), repr(b), repr(ours[3])) == (repr(ma), repr(mb), repr(theirs[3]))


def test_data_and_grad_are_plain_numbers_as_in_micrograd():
    a = Value(3)
    assert (a.data, a.grad, repr(a)) == (3, 0, "Value(data=3, grad=0)")
    b = a * 2.5 + 1
    b.backward()
    assert (b.grad, a.grad) == (1, 2.5)
    assert f"{a.grad:.2f}" == "2.50" and a.grad > 2 and a.grad + 1 == 3.5
    a.data += 1.0
    a.grad = 0
    assert repr(a) == "Value(data=4.0, grad=0)"
    assert Value(1.0, label="x").label == "x"


def test_gradients_accumulate_across_backward_calls_as_in_micrograd():
    a = Value(2.0)
    y = a * a + a
    y.backward()
    y.backward()
    # micrograd re-seeds y with 1, but a * a keeps the 1 it got: it passes on 2 this time,
    # so a gets (2 * 2 + 1) + (2 * 2 * 2 + 1)
    assert a.grad == 14.0
    assert y.grad == 1


def test_accumulation_matches_installed_micrograd():
    mg = pytest.importorskip("micrograd.engine")

    def twice(V):
        a = V(2.0)
        y = (a * a + a).relu() * a
        y.backward()
        y.backward()
        return a.grad

    assert twice(Value) == twice(mg.Value)


def test_tanh_exp_log_and_their_derivatives():
    x = Value(0.7)
    for op, f, df in [
        ("tanh", math.tanh, lambda v: 1 - math.tanh(v) ** 2),
        ("exp", math.exp, math.exp),
        ("log", math.log, lambda v: 1 / v),
    ]:
        x.grad = 0
        y = getattr(x, op)()
        y.backward()
        assert y._op == op
        assert y.data == f(0.7)
        assert close(x.grad, df(0.7))


def test_pow_takes_only_numbers():
    with pytest.raises(TypeError, match="only int and float powers"):
        Value(2.0) ** Value(3.0)


def sigmoid(x: Value) -> Value:
    # an op written as in the seed article: a Value built by hand and its _backward closure
    s = 1 / (1 + math.exp(-x.data))
    out = Value(s, (x,), "sigmoid")

    def _backward():
        x.grad += s * (1 - s) * out.grad

    out._backward = _backward
    return out


def test_an_op_built_by_hand_backpropagates():
    x = Value(0.3)
    y = sigmoid(x * 2) * 3
    y.backward()
    s = 1 / (1 + math.exp(-0.6))
    assert close(x.grad, 3 * s * (1 - s) * 2)
    assert y._prev == {y._children[0], y._children[1]}


def test_backward_step_by_step_by_hand_as_in_the_lecture():
    a, b = Value(2.0, label="a"), Value(-3.0, label="b")
    c = a * b
    c.label = "c"
    c.grad = 1.0
    c._backward()
    assert (a.grad, b.grad) == (-3.0, 2.0)
    Value(1.0)._backward()  # a leaf's does nothing


def test_a_deep_chain_backpropagates_without_recursion():
    x = Value(1.0)
    y = x
    for _ in range(100_000):
        y = y + 0.0
    y.backward()
    assert x.grad == 1


# --- nn -------------------------------------------------------------------------------------
def test_mlp_initialisation_is_micrograds_for_a_seed():
    mn = pytest.importorskip("micrograd.nn")
    for seed in (0, 7):
        random.seed(seed)
        theirs = mn.MLP(3, [4, 4, 1])
        random.seed(seed)
        ours = MLP(3, [4, 4, 1])
        assert [p.data for p in ours.parameters()] == [p.data for p in theirs.parameters()]
        assert repr(ours) == repr(theirs)


def test_modules_as_in_micrograd():
    random.seed(3)
    m = MLP(2, [3, 1])
    # micrograd 0.1.0 after random.seed(3): the first neuron's weights, bias, then the next's
    assert [p.data for p in m.parameters()][:4] == [
        -0.5240707458162173,
        0.08845845059190371,
        0,
        -0.2600896669038415,
    ]
    assert len(m.parameters()) == 3 * 3 + 4
    assert repr(m) == (
        "MLP of [Layer of [ReLUNeuron(2), ReLUNeuron(2), ReLUNeuron(2)], "
        "Layer of [LinearNeuron(3)]]"
    )
    assert isinstance(m, Module) and isinstance(m.layers[0], Layer)
    n = Neuron(2, nonlin=False)
    out = n([1.0, 2.0])
    assert out.data == n.w[0].data + 2.0 * n.w[1].data
    out.backward()
    n.zero_grad()
    assert all(p.grad == 0 for p in n.parameters())
    assert Module().parameters() == []


# micrograd 0.1.0 ran tests/autodiff/micrograd_demo.train(Value, MLP, 3, n=40) once and
# printed these (loss, accuracy) pairs
DEMO_40_POINTS_3_STEPS = [
    (0.9128120198107214, 0.5),
    (1.6564152269391672, 0.8),
    (1.3512453482586906, 0.7),
]


def test_demo_training_gives_micrograds_losses():
    ours = train(Value, MLP, 3, n=40)
    for (loss, acc), (e_loss, e_acc) in zip(ours, DEMO_40_POINTS_3_STEPS, strict=True):
        assert close(loss, e_loss) and acc == e_acc


def test_demo_training_matches_installed_micrograd():
    mg, mn = pytest.importorskip("micrograd.engine"), pytest.importorskip("micrograd.nn")
    ours = train(Value, MLP, 3, n=100)
    theirs = train(mg.Value, mn.MLP, 3, n=100)
    for (loss, acc), (e_loss, e_acc) in zip(ours, theirs, strict=True):
        assert close(loss, e_loss) and acc == e_acc


# --- recorded like any graph ----------------------------------------------------------------
def test_without_a_recorder_values_make_no_engine_objects():
    assert not core._observers
    y = (Value(2.0) * 3).relu()
    y.backward()
    assert y._node is None and y._children[0]._node is None


def test_a_recorded_graph_has_every_op_as_a_step_with_micrograds_numbers():
    a, b = Value(-4.0, label="a"), Value(2.0, label="b")
    with trace.record() as t:
        c = a * b + b**3
        d = (c - a).relu() / 2.0
        d.backward()
    forward = [s for s in t.steps if s.phase == "forward"]
    backward = [s for s in t.steps if s.phase == "backward"]
    # c - a is c + (a * -1), / 2.0 is * 2.0**-1 (a number): Mul Pow Add Mul Add ReLU Mul
    assert [s.op for s in forward] == ["Mul", "Pow", "Add", "Mul", "Add", "ReLU", "Mul"]
    assert len(backward) == len(forward)
    assert t.backward_roots == [t.outputs()[-1]]
    last = len(t.steps) - 1
    ids = {t.node(n)["name"]: n for n in t.variables if t.node(n)["name"]}
    assert t.grad_at(ids["a"], last).array == a.grad
    assert t.grad_at(ids["b"], last).array == b.grad
    values = {s.outputs[0]: s.values[0].array for s in forward}
    assert values[t.backward_roots[0]] == d.data
    # a fan-in: b feeds Mul and Pow, its gradient is summed (an accumulation step)
    assert any(acc.node == ids["b"] for s in backward for acc in s.accumulations)


def test_a_recorded_training_loop_shows_the_updated_weights():
    random.seed(1)
    model = MLP(2, [3, 1])
    xs, ys = [[0.5, -1.0], [1.5, 2.0]], [1.0, -1.0]
    w = model.layers[0].neurons[0].w[0]
    used = []
    with trace.record() as t:
        for _ in range(2):
            used.append(w.data)
            scores = [model(x) for x in xs]
            loss = sum((1 + -y * s).relu() for y, s in zip(ys, scores, strict=True))
            model.zero_grad()
            loss.backward()
            for p in model.parameters():
                p.data -= 0.1 * p.grad
    assert len(t.backward_roots) == 2 and used[0] != used[1]
    nid = next(n for n in t.variables if t.live(n) is w._node)
    last = len(t.steps) - 1
    # the value shown at the end is the one the second pass used (before its update)
    assert t.value_at(nid, last).array == used[1]
    first_backward = next(s.index for s in t.steps if s.phase == "backward")
    assert t.value_at(nid, first_backward).array == used[0]
    assert t.grad_at(nid, last).array == w.grad
    # each call ran in its scope: two points, two passes
    paths = [row.path for row in t.scopes()]
    assert paths.count("MLP/layer0/n2") == 4 and paths.count("MLP/layer1/n0") == 4


def test_the_viewer_plays_a_micrograd_graph_to_the_end():
    from viewer.model.document.document import Document

    x = Value(0.5, label="x")
    with trace.record() as t:
        y = (x * x + x.tanh()).relu() * 3
        y.backward()
    doc = Document()
    doc.load_graph(t, "mg", "trace")
    assert doc.last_error is None
    doc.playback.to_end()
    nid = next(n for n in t.variables if t.node(n)["name"] == "x")
    info = doc.inspect(nid)
    assert info.grad is not None and info.grad.max == x.grad
    assert info.value.max == x.data


def test_the_gradient_check_passes_on_a_live_micrograd_graph():
    from viewer.model.checks.gradcheck import check_trace

    x, w = Value(0.4, label="x"), Value(-1.3, label="w")
    with trace.record() as t:
        y = ((x * w + 2.0).tanh() ** 2 + (w * 0.5).exp()).log()
        y.backward()
    report = check_trace(t)
    assert report.ok and report.functions


def test_a_released_micrograd_graph_is_freed_by_reference_counting():
    gc.disable()
    try:
        with trace.record() as t:
            x = Value(1.5)
            y = (x * 2 + 1).relu() * x
            y.backward()
        refs = [weakref.ref(t.live(n)) for n in t.functions]
        del y
        assert all(r() is None for r in refs)
        assert t.audit().clean
    finally:
        gc.enable()


def test_a_graph_built_before_recording_is_reported_when_backpropagated():
    x = Value(3.0)
    y = x * x
    with trace.record() as t:
        y.backward()
    assert [s.op for s in t.steps] == ["Mul", "Mul"]
    assert x.grad == 6.0


def test_a_recorded_op_built_by_hand_is_a_step_named_after_its_op():
    from viewer.model.checks.gradcheck import check_trace

    x = Value(0.3, label="x")
    with trace.record() as t:
        y = sigmoid(x * 2) * 3
        y.backward()
    assert [(s.phase, s.op) for s in t.steps] == [
        ("forward", "Mul"),
        ("forward", "sigmoid"),
        ("forward", "Mul"),
        ("backward", "Mul"),
        ("backward", "sigmoid"),
        ("backward", "Mul"),
    ]
    s = 1 / (1 + math.exp(-0.6))
    step = t.steps[4]
    assert step.output_grads[0].array == 3.0
    assert close(float(step.input_grads[0].array), 3 * s * (1 - s))
    # its derivative is the program's closure: the check cannot re-run it, and says so
    report = check_trace(t)
    assert report.ok
    assert [c.status for c in report.functions if c.op == "sigmoid"] == ["skipped"]


def test_recording_changes_no_number():
    plain = train(Value, MLP, 2, n=20)
    with trace.record() as t:
        recorded = train(Value, MLP, 2, n=20)
    assert recorded == plain
    assert len(t.backward_roots) == 2


def test_a_label_given_while_recording_names_the_node():
    x = Value(2.0)
    with trace.record() as t:
        y = x * x
        y.label = "y"
        y.backward()
    names = [t.node(n)["name"] for n in t.variables]
    assert "y" in names
