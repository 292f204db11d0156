"""The detectors of what the forward computed (viewer.model.checks.detectors.values): each bug
planted in a small program on the engine (and on PyTorch where torch has it) is found, named
and placed; the correct twin beside it is silent; the bundled correct examples stay quiet."""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

import numpy as np
import pytest
from bug_demos import demonstrates

import autodiff.functions as F
import autodiff.layers as L
from autodiff import Parameter, Variable
from autodiff import trace as T
from autodiff.micrograd.engine import Value
from autodiff.trace import view_for_root
from viewer.model.checks.detectors import values as V
from viewer.model.checks.detectors.op_names import canonical_op
from viewer.model.checks.problems import CannotRun, GraphInput, Thresholds

LIMITS = Thresholds()
EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def engine(program):
    with T.record() as t:
        program()
    return t


def torch_trace(program):
    torch = pytest.importorskip("torch")
    from autodiff.trace import pytorch

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mse_loss's own broadcast warning
        with pytorch.record() as t:
            program(torch)
    return t


def only(problems, kind):
    assert [p.kind for p in problems] == [kind], [p.line() for p in problems]
    return problems[0]


def step_of(reader, op, phase="forward", nth=0):
    found = [s for s in reader.steps if s.phase == phase and canonical_op(s.op) == op]
    return found[nth]


# --- the op names -----------------------------------------------------------------------


def test_canonical_op_of_each_source():
    def program():
        x = Variable(np.ones((2, 1)))
        t = Variable(np.ones((2, 1)))
        h = F.sigmoid(F.tanh(F.relu(x)))
        F.mean_squared_error(h - t, t).backward()

    ops = {canonical_op(s.op) for s in engine(program).steps}
    assert {"relu", "tanh", "sigmoid", "sub", "mse_loss"} <= ops

    with T.record() as t:
        a = Value(2.0)
        ((a * 3).relu() + a.tanh()).backward()
    assert {canonical_op(s.op) for s in t.steps} == {"mul", "relu", "tanh", "add"}

    def torch_program(torch):
        x = torch.randn(3, 2, requires_grad=True)
        y = torch.sigmoid(torch.tanh(torch.relu(x)))
        torch.nn.functional.mse_loss(y - 1, torch.zeros(3, 2)).backward()

    ops = {canonical_op(s.op) for s in torch_trace(torch_program).steps}
    assert {"relu", "tanh", "sigmoid", "sub", "mse_loss"} <= ops
    assert canonical_op("BroadcastTo") == "expand" and canonical_op(None) == ""
    assert canonical_op("LeakyReLU") == canonical_op("leaky_relu") == "leaky_relu"


# --- dead-relu --------------------------------------------------------------------------


def relu_net(bias):
    def program():
        rng = np.random.default_rng(0)
        x = Variable(rng.normal(size=(16, 4)))
        layer = L.Linear(8)
        layer(x)  # its weights are made on first call
        layer.b.data[...] = bias
        F.sum(F.relu(layer(x))).backward()

    return engine(program)


def test_dead_relu_engine_planted_and_twin():
    t = relu_net(-100.0)  # every pre-activation negative: the layer is dead
    p = only(V.dead_relu(GraphInput(t, 3), LIMITS), "dead-relu")
    relu = step_of(t, "relu")
    assert p.severity == "warning" and p.graph == 3 and p.step == relu.index
    assert p.nodes == (relu.function, relu.outputs[0])
    assert "ReLU" in p.message and "100% of its 8 units" in p.message
    assert "LeakyReLU" in p.message
    assert V.dead_relu(GraphInput(relu_net(0.0)), LIMITS) == []


def test_dead_relu_needs_a_batch():
    def program():
        x = Variable(np.full((4, 3), -1.0))  # all dead, but 4 samples say little
        F.sum(F.relu(x)).backward()

    with pytest.raises(CannotRun, match="at least 8 samples"):
        V.dead_relu(GraphInput(engine(program)), LIMITS)
    p = only(V.dead_relu(GraphInput(engine(program)), Thresholds(min_batch=4)), "dead-relu")
    assert "100%" in p.message
    with T.record() as t:  # micrograd: one scalar per op, no batch
        Value(-1.0).relu().backward()
    with pytest.raises(CannotRun):
        V.dead_relu(GraphInput(t, source="micrograd"), LIMITS)


def test_values_summarised_cannot_be_judged():
    def program():
        x = Variable(np.full((16, 4), -1.0))
        F.sum(F.relu(x) + F.tanh(x * 100)).backward()

    with T.record(max_array_size=8) as t:
        program()
    with pytest.raises(CannotRun, match="not summarised"):
        V.dead_relu(GraphInput(t), LIMITS)
    with pytest.raises(CannotRun, match="summarised"):
        V.saturated_activation(GraphInput(t), LIMITS)
    assert V.dead_relu(GraphInput(engine(program)), LIMITS)
    assert V.saturated_activation(GraphInput(engine(program)), LIMITS)


def test_dead_relu_torch_planted_and_twin():
    def program(bias):
        def run(torch):
            net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
            with torch.no_grad():
                net[0].bias.fill_(bias)
            net(torch.randn(16, 4)).sum().backward()

        return run

    t = torch_trace(program(-100.0))
    p = only(V.dead_relu(GraphInput(t, source="torch"), LIMITS), "dead-relu")
    relu = step_of(t, "relu")
    assert p.step == relu.index and p.nodes == (relu.function, relu.outputs[0])
    assert "layer Sequential/1 (relu)" in p.message
    assert V.dead_relu(GraphInput(torch_trace(program(0.1)), source="torch"), LIMITS) == []


# --- saturated-activation ---------------------------------------------------------------


def tanh_layer(scale):
    def program():
        rng = np.random.default_rng(1)
        x = Variable(rng.normal(size=(16, 4)) * scale)
        layer = L.Linear(8)
        F.sum(F.tanh(layer(x))).backward()

    return engine(program)


def test_saturated_engine_planted_and_twin():
    t = tanh_layer(200.0)
    p = only(V.saturated_activation(GraphInput(t), LIMITS), "saturated-activation")
    tanh = step_of(t, "tanh")
    assert p.severity == "warning" and p.step == tanh.index
    assert p.nodes == (tanh.function, tanh.outputs[0]) and "Tanh" in p.message
    assert "|tanh| > 0.97" in p.message
    assert V.saturated_activation(GraphInput(tanh_layer(0.1)), LIMITS) == []


def test_saturated_skips_scalars_and_small_outputs():
    def program():
        x = Variable(np.array(30.0))
        F.sum(F.tanh(x) * F.sigmoid(Variable(np.full(4, 30.0)))).backward()

    assert V.saturated_activation(GraphInput(engine(program)), LIMITS) == []


def test_saturated_torch_planted_and_twin():
    def program(scale):
        def run(torch):
            net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Sigmoid())
            net(torch.randn(16, 4) * scale).sum().backward()

        return run

    t = torch_trace(program(100.0))
    p = only(V.saturated_activation(GraphInput(t, source="torch"), LIMITS), "saturated-activation")
    sig = step_of(t, "sigmoid")
    assert p.step == sig.index and "layer Sequential/1 (sigmoid)" in p.message
    twin = torch_trace(program(0.1))
    assert V.saturated_activation(GraphInput(twin, source="torch"), LIMITS) == []


# --- broadcast-shape --------------------------------------------------------------------


def regression(target_shape, loss):
    def program():
        rng = np.random.default_rng(2)
        x = Variable(rng.normal(size=(10, 3)))
        t = Variable(rng.normal(size=target_shape), name="t")
        y = L.Linear(1)(x)
        y.name = "y_pred"
        loss(y, t).backward()

    return engine(program)


def squared_mean(y, t):
    return F.sum((y - t) ** 2) / len(y)


@pytest.mark.parametrize("loss", [squared_mean, F.mean_squared_error_simple])
def test_broadcast_engine_planted_and_twin(loss):
    t = regression((10,), loss)
    p = only(V.broadcast_shape(GraphInput(t), LIMITS), "broadcast-shape")
    sub = step_of(t, "sub")
    total = step_of(t, "sum")
    assert p.severity == "error" and p.step == sub.index
    assert p.nodes == (sub.function, *sub.inputs, total.function)
    assert "(10, 1) and (10,)" in p.message and "y_pred, t" in p.message
    assert "10 x 10" in p.message and "feeds Sum" in p.message and "reshape" in p.message
    assert V.broadcast_shape(GraphInput(regression((10, 1), loss)), LIMITS) == []


def test_broadcast_needs_a_reduction_and_spares_a_bias():
    def program():
        a = Variable(np.ones((5, 1)))
        b = Variable(np.ones(5))
        outer = a * b  # an outer product used as it is: no loss compares it
        bias = Variable(np.ones((5, 3))) + Variable(np.ones(3))
        (outer.sum() * 0).backward()
        F.sum(bias).backward()

    problems = V.broadcast_shape(GraphInput(engine(program)), LIMITS)
    # a * b feeds a sum: it is the bug's shape; the bias add is not
    assert [p.message.split(":")[0] for p in problems] == ["Mul (node 2)"]


def test_broadcast_torch_planted_and_twin():
    def program(target, mse):
        def run(torch):
            net = torch.nn.Linear(3, 1)
            x, t = torch.randn(10, 3), torch.randn(*target)
            if mse:
                torch.nn.functional.mse_loss(net(x), t).backward()
            else:
                ((net(x) - t) ** 2).mean().backward()

        return run

    for mse, op in ((True, "expand"), (False, "sub")):
        t = torch_trace(program((10,), mse))
        p = only(V.broadcast_shape(GraphInput(t, source="torch"), LIMITS), "broadcast-shape")
        assert p.step == step_of(t, op).index and "(10, 1)" in p.message
        assert ("mse_loss" if mse else "mean") in p.message
        twin = torch_trace(program((10, 1), mse))
        assert V.broadcast_shape(GraphInput(twin, source="torch"), LIMITS) == []


# --- stale-value ------------------------------------------------------------------------


def weighted_sum(change):
    def program():
        x = Variable(np.array([1.0, 2.0, 3.0]), name="x")
        W = Parameter(np.array([0.5, -1.0, 2.0]), name="W")
        y = F.sum(x * W)
        if change == "before":
            y.backward()
        if change == "in place":
            W.data[...] = 0.0
        elif change == "rebound":
            W.data = W.data * 2
        elif change == "same value":
            W.data = W.data.copy()
        if change != "before":
            y.backward()
        W.data -= 0.1 * W.grad.data  # the optimizer step after backward: fine

    return engine(program)


@pytest.mark.parametrize("change", ["in place", "rebound"])
def test_stale_engine_planted(change):
    t = weighted_sum(change)
    p = only(V.stale_value(GraphInput(t, 1), LIMITS), "stale-value")
    mul = step_of(t, "mul", "backward")
    W = t.names(t.variables).index("W")
    assert p.severity == "error" and p.graph == 1 and p.step == mul.index
    assert p.nodes == (mul.function, t.variables[W])
    assert (
        p.message.startswith("W changed after the forward of Mul")
        and "after backward()" in p.message
    )


@pytest.mark.parametrize("change", ["before", "same value"])
def test_stale_engine_twins(change):
    assert V.stale_value(GraphInput(weighted_sum(change)), LIMITS) == []


def test_stale_reaches_views_and_saved_traces(tmp_path):
    t = weighted_sum("in place")
    mul = step_of(t, "mul", "backward")
    W = t.variables[t.names(t.variables).index("W")]
    assert t.stale_inputs(mul.index) == (W,)
    assert t.stale_inputs(step_of(t, "mul").index) == ()  # a forward step
    view = view_for_root(t, t.backward_roots[0], 0)
    local = view.local_step(mul.index)
    assert view.stale_inputs(local) == (W,)
    assert only(V.stale_value(GraphInput(view), LIMITS), "stale-value").step == local
    t.to_json(tmp_path / "t.json")
    assert T.load(tmp_path / "t.json").stale_inputs(mul.index) == (W,)
    T.trace_to_npz(t, tmp_path / "t.npz")  # the form a script's worker sends
    assert T.trace_from_npz(tmp_path / "t.npz").stale_inputs(mul.index) == (W,)


def test_stale_add_reads_no_value():
    def program():
        x = Variable(np.array([1.0, 2.0]), name="x")
        y = F.sum(x + 1.0)
        x.data[...] = 5.0  # Add's backward does not read x: the gradient is right
        y.backward()

    t = engine(program)
    assert any(t.stale_inputs(s.index) for s in t.steps)
    assert V.stale_value(GraphInput(t), LIMITS) == []


def test_stale_micrograd_planted_and_twin():
    def program(change):
        with T.record() as t:
            a, b = Value(2.0), Value(-3.0)
            out = a * b
            if change:
                b.data = 10.0  # micrograd's backward reads b.data: the gradient of a is 10
            out.backward()
        return t, a

    t, a = program(True)
    assert a.grad == 10.0
    p = only(V.stale_value(GraphInput(t, source="micrograd"), LIMITS), "stale-value")
    assert p.step == step_of(t, "mul", "backward").index
    t, a = program(False)
    assert a.grad == -3.0 and V.stale_value(GraphInput(t, source="micrograd"), LIMITS) == []


def test_stale_cannot_run_without_backward():
    def forward_only():
        F.sum(Variable(np.ones(3)) * 2)

    with pytest.raises(CannotRun, match="no backward"):
        V.stale_value(GraphInput(engine(forward_only)), LIMITS)


def torch_training(change):
    """Two steps of a small torch net; ``change`` says what the program does to fc2's weight
    between a forward and its backward (``.data``), or ``None``: the update after backward."""

    def run(torch):
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = torch.nn.Linear(3, 4)
                self.fc2 = torch.nn.Linear(4, 1)

            def forward(self, x):
                return self.fc2(torch.tanh(self.fc1(x)))

        net = Net()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        x, y = torch.randn(8, 3), torch.randn(8, 1)
        for i in range(2):
            loss = torch.nn.functional.mse_loss(net(x), y)
            if change == "fc2 .data" and i == 1:
                net.fc2.weight.data.sub_(0.5)  # torch's version counter does not see .data
            elif change == "fc1 .data" and i == 1:
                net.fc1.weight.data.sub_(0.5)
            opt.zero_grad()
            loss.backward()
            opt.step()

    return torch_trace(run)


def test_stale_torch_planted_data_change_names_the_parameter_and_layer():
    t = torch_training("fc2 .data")
    p = only(V.stale_value(GraphInput(t, 0, source="torch"), LIMITS), "stale-value")
    linear = step_of(t, "linear", "backward", nth=2)  # pass 1's first: fc2's
    assert p.severity == "error" and p.step == linear.index and t.steps[p.step].backward_pass == 1
    weight = t.variables[t.names(t.variables).index("fc2.weight")]
    assert weight in t.parameters()
    # the linear's input is fc2.weight.t(), a view of the weight: the weight is named
    assert p.nodes[0] == linear.function and p.nodes[-1] == weight
    assert p.message.startswith(
        "fc2.weight changed after the forward of layer Net/fc2 (linear) used it"
    )


@pytest.mark.parametrize("change", [None, "fc1 .data"])
def test_stale_torch_twins(change):
    # None: the update after backward; fc1: its linear saved x, not the weight (x needs no
    # gradient), so torch's backward reads no changed value
    t = torch_training(change)
    assert V.stale_value(GraphInput(t, source="torch"), LIMITS) == []
    if change:
        linear = step_of(t, "linear", "backward", nth=3)  # pass 1's fc1
        assert t.stale_inputs(linear.index)  # changed, but not read


def test_stale_torch_change_torch_sees_raises_itself():
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(5, 3)
    net(x).sum().backward()
    loss = net(x).sum()
    opt.step()  # in place on the saved weight of the second linear: its version changes
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_stale_torch_saved_trace_and_view_same_finding(tmp_path):
    t = torch_training("fc2 .data")
    live = only(V.stale_value(GraphInput(t, source="torch"), LIMITS), "stale-value")
    t.to_json(tmp_path / "torch.json")
    loaded = T.load(tmp_path / "torch.json")
    again = only(V.stale_value(GraphInput(loaded, source="trace"), LIMITS), "stale-value")
    assert (again.step, again.nodes, again.message) == (live.step, live.nodes, live.message)
    view = view_for_root(t, t.backward_roots[1], 1)
    in_view = only(V.stale_value(GraphInput(view, 1, source="torch"), LIMITS), "stale-value")
    assert view.global_step(in_view.step) == live.step and in_view.message == live.message
    first = view_for_root(t, t.backward_roots[0], 0)
    assert V.stale_value(GraphInput(first, 0, source="torch"), LIMITS) == []


def test_stale_torch_reported_only_where_torch_saved_the_value():
    def run(torch):
        w = torch.randn(3, requires_grad=True)
        y = (w * torch.randn(3)).sum()  # mul saves the other factor only: w's grad is right
        w.data.mul_(0)
        y.backward()

    t = torch_trace(run)
    mul = step_of(t, "mul", "backward")
    assert t.stale_inputs(mul.index) == (mul.inputs[0],)  # w changed, but not read
    assert V.stale_value(GraphInput(t, source="torch"), LIMITS) == []


def test_stale_torch_statistics_only_cannot_run():
    pytest.importorskip("torch")
    import inspect

    from autodiff.trace import pytorch

    if "statistics_only" not in inspect.signature(pytorch.record).parameters:
        pytest.skip("pytorch.record has no statistics_only option here")

    def run(torch):
        w = torch.nn.Linear(3, 1)
        loss = w(torch.randn(4, 3)).sum()
        w.weight.data.sub_(1.0)
        loss.backward()

    import torch

    with pytorch.record(statistics_only=True) as t:
        run(torch)
    with pytest.raises(CannotRun, match=r"statistics_only=True"):
        V.stale_value(GraphInput(t, source="torch"), LIMITS)


TRAINING = """
import numpy as np
import autodiff.functions as F
from autodiff import models, optimizers

rng = np.random.default_rng(0)
x = rng.uniform(size=(20, 1))
y = np.sin(2 * np.pi * x)
model = models.MLP((8, 1))
optimizer = optimizers.SGD(0.2).setup(model)
for i in range(4):
    loss = F.mean_squared_error(model(x), y)
    {order}
"""


@pytest.mark.parametrize("planted", [True, False])
def test_stale_in_a_training_script(tmp_path, planted):
    from viewer.model.scripts.run import run_script

    order = "model.cleargrads()\n    loss.backward()\n    optimizer.update()"
    if planted:  # the last pass's step taken between this pass's forward and its backward
        order = "if i:\n        optimizer.update()\n    model.cleargrads()\n    loss.backward()"
    path = tmp_path / "train.py"
    path.write_text(TRAINING.replace("{order}", order))
    result = run_script(path)
    assert result.ok, result.error
    found = {
        i: V.stale_value(GraphInput(result.view(i), i, script=str(path)), LIMITS)
        for i in range(len(result.graphs))
    }
    if not planted:
        assert all(problems == [] for problems in found.values())
        return
    assert len(found) == 4 and found[0] == [] and all(found[i] for i in range(1, 4))
    view = result.view(1)
    problem = found[1][0]
    assert problem.severity == "error" and problem.graph == 1
    assert view.steps[problem.step].phase == "backward"
    # linear's backward reads W, not b (its gradient is the sum of gy): only W is named
    assert [view.names(p.nodes[1:]) for p in found[1]] == [["l1.W"], ["l0.W"]]
    assert problem.message.startswith("l1.W changed after the forward of layer MLP/l1 (Linear)")


# --- redundant-computation --------------------------------------------------------------


def twice(shape, reuse):
    def program():
        x = Variable(np.linspace(-1, 1, int(np.prod(shape))).reshape(shape), name="x")
        a = F.tanh(x)
        b = a if reuse else F.tanh(x)
        F.sum(a * b).backward()

    return engine(program)


def test_redundant_engine_planted_and_twin():
    t = twice((4, 3), reuse=False)
    p = only(V.redundant_computation(GraphInput(t), LIMITS), "redundant-computation")
    first, second = step_of(t, "tanh"), step_of(t, "tanh", nth=1)
    assert p.severity == "warning" and p.step == second.index
    assert p.nodes == (first.function, second.function, first.outputs[0], second.outputs[0])
    assert f"steps {first.index + 1} and {second.index + 1}" in p.message and "on x" in p.message
    assert "compute it once and reuse the variable" in p.message
    assert V.redundant_computation(GraphInput(twice((4, 3), reuse=True)), LIMITS) == []


def test_redundant_scalar_is_info_and_unused_result_is_not_waste():
    p = only(
        V.redundant_computation(GraphInput(twice((), reuse=False)), LIMITS), "redundant-computation"
    )
    assert p.severity == "info"

    def unused():
        x = Variable(np.ones(5), name="x")
        F.tanh(x)  # made and dropped: not a second use
        F.sum(F.tanh(x)).backward()

    assert V.redundant_computation(GraphInput(engine(unused)), LIMITS) == []


def test_redundant_torch_planted_and_twin():
    def program(reuse):
        def run(torch):
            net = torch.nn.Linear(3, 4)
            x = torch.randn(10, 3)
            a = net(x)
            b = a if reuse else net(x)  # torch makes W.t() again for the second call
            (a * b).sum().backward()

        return run

    t = torch_trace(program(False))
    p = only(
        V.redundant_computation(GraphInput(t, source="torch"), LIMITS), "redundant-computation"
    )
    assert p.severity == "warning" and "layer Linear (linear)" in p.message
    assert p.step == step_of(t, "linear", nth=1).index
    twin = torch_trace(program(True))
    assert V.redundant_computation(GraphInput(twin, source="torch"), LIMITS) == []


# --- no false alarms on the bundled correct examples -------------------------------------

DETECTORS = (
    V.dead_relu, V.saturated_activation, V.broadcast_shape, V.stale_value,
    V.redundant_computation,
)  # fmt: skip
CORRECT = sorted(
    p.name
    for p in EXAMPLES.iterdir()
    if p.suffix in (".py", ".expr")
    and p.name not in ("wrong_backward.py", "nan_log.expr")
    and not demonstrates(p.stem, ("dead-relu", "saturated-activation", "broadcast-shape"))
    and not demonstrates(p.stem, ("stale-value", "redundant-computation"))
)


def quiet(graph):
    loud = []
    for detector in DETECTORS:
        with contextlib.suppress(CannotRun):
            loud += [p for p in detector(graph, LIMITS) if p.severity != "info"]
    return loud


@pytest.mark.parametrize("name", CORRECT)
def test_correct_examples_report_nothing_above_info(name):
    path = EXAMPLES / name
    if path.suffix == ".expr":
        from viewer.model.expression.program import evaluate

        assert quiet(GraphInput(evaluate(path.read_text()).trace)) == []
        return
    if name.startswith("torch"):
        pytest.importorskip("torch")
    from viewer.model.scripts.run import run_script

    result = run_script(path)
    assert result.ok, result.error
    n = len(result.graphs)
    assert n
    for i in sorted({0, 1, n - 2, n - 1} & set(range(n))):  # first passes and last ones
        assert quiet(GraphInput(result.view(i), i)) == [], (name, i)


def test_redundant_is_within_one_pass_and_on_unchanged_inputs():
    """A recording of a training loop repeats `w * w` once per pass: each pass's own work, not
    the same computation twice; within a pass, an input changed in between is new work too."""
    import autodiff.functions as F
    from autodiff import Parameter
    from autodiff.trace import record
    from viewer.model.checks.detectors import values
    from viewer.model.checks.problems import GraphInput, Thresholds

    with record() as t:
        w = Parameter(np.array([1.0, 2.0]), name="w")
        for _ in range(4):
            w.cleargrad()
            loss = F.sum(w * w)
            loss.backward()
            w.data = w.data - 0.1 * w.grad.data
    assert values.redundant_computation(GraphInput(t), Thresholds()) == []
    with record() as t2:
        w = Parameter(np.array([1.0, 2.0]), name="w")
        a = w * w
        w.data = w.data * 2.0
        b = w * w
        F.sum(a + b).backward()
    assert values.redundant_computation(GraphInput(t2), Thresholds()) == []
    with record() as t3:  # the planted twin: the same product twice in one pass
        w = Parameter(np.array([1.0, 2.0]), name="w")
        F.sum(w * w + w * w).backward()
    (p,) = values.redundant_computation(GraphInput(t3), Thresholds())
    assert p.kind == "redundant-computation" and p.severity == "warning"


def test_a_messages_step_numbers_are_the_playbacks_as_its_row_says():
    """diamond.expr computes square(a) twice: the message names the two steps as the playback
    and the Problems panel's row count them (from 1), the row's step being the second."""
    import re

    from viewer.model import Document
    from viewer.model.checks.problem_list import problem_rows

    doc = Document()
    assert doc.load_example("diamond")
    (p,) = [p for p in doc.problems() if p.kind == "redundant-computation"]
    first, second = map(int, re.search(r"steps (\d+) and (\d+)", p.message).groups())
    (row,) = problem_rows([p], doc.shown_graph(), doc.problem_titles())
    assert row.where.endswith(f"step {second}") and second == p.step + 1
    for number in (first, second):  # each is a Square step of the playback, counted from 1
        doc.playback.seek(number - 1)
        assert doc.playback.current_step.op == "Square" and doc.playback.index == number - 1
    assert p.line().endswith(f"step {second}]")
