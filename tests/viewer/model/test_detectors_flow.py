"""The flow detectors (viewer/model/checks/detectors/flow.py, gradient_size.py): for each kind a
program with the bug planted and a correct twin close to it, on the engine and on PyTorch; the
bundled examples meant to be correct report nothing above info."""

from __future__ import annotations

import random

import numpy as np
import pytest
from bug_demos import demonstrates

import autodiff.functions as F
import autodiff.layers as L
from autodiff import Variable, optimizers
from autodiff.models import Model
from autodiff.trace import load, record, view_for_root
from viewer.model.checks.detectors import flow, gradient_size
from viewer.model.checks.problems import CannotRun, GraphInput, Thresholds, detect
from viewer.model.document.examples import list_examples
from viewer.model.expression.program import parse
from viewer.model.scripts.run import run_script

FLOW = (
    flow.unreached_parameter,
    flow.carried_gradient,
    gradient_size.vanishing_gradient,
    gradient_size.exploding_gradient,
    flow.nonfinite,
)


def views(trace, source: str = "engine") -> list[GraphInput]:
    """One GraphInput per backward pass, each a view of that pass (as a script's graph list)."""
    return [
        GraphInput(view_for_root(trace, root, b), b, source=source)
        for b, root in enumerate(trace.backward_roots)
    ]


def run(detector, graphs: list[GraphInput], limits: Thresholds | None = None) -> list:
    found = []
    for g in graphs:
        found += detector(g, limits or Thresholds())
    return found


def engine(program, *args, max_array_size: int = 4096, **kwargs) -> list[GraphInput]:
    with record(max_array_size=max_array_size) as t:
        program(*args, **kwargs)
    return views(t)


def torch_run(program, *args, **kwargs) -> list[GraphInput]:
    pytorch = pytest.importorskip("autodiff.trace.pytorch")
    with pytorch.record() as t:
        program(*args, **kwargs)
    return views(t, "torch")


def step_of(graph: GraphInput, problem):
    return graph.reader.steps[problem.step]


# ------------------------------------------------------------------------------------------
# Engine programs
# ------------------------------------------------------------------------------------------
class TwoLayer(Model):
    def __init__(self, cut: str | None = None) -> None:
        super().__init__()
        self.l1 = L.Linear(4)
        self.l2 = L.Linear(1)
        self.cut = cut

    def forward(self, x):
        h = F.tanh(self.l1(x))
        if self.cut == "data":
            h = Variable(h.data)  # the bug: a new leaf with h's value, no history
        elif self.cut == "unchain":
            h.unchain()
        elif self.cut == "unused":
            return self.l2(x[:, :1] * 0 + x[:, 1:2])
        return self.l2(h)


def fit(model, passes: int = 3, clear: bool = True, lr: float = 0.1, scale: float = 1.0):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3)) * scale
    y = x[:, :1] * 2.0 - x[:, 1:2]
    optimizer = optimizers.SGD(lr).setup(model)
    for _ in range(passes):
        loss = F.mean_squared_error(model(x), y)
        if clear:
            model.cleargrads()
        loss.backward()
        optimizer.update()


def seeded(model_class, *args):
    np.random.seed(0)
    return model_class(*args)


# ------------------------------------------------------------------------------------------
# PyTorch programs
# ------------------------------------------------------------------------------------------
def torch_two_layer(cut: str | None = None, passes: int = 2, zero: bool | str = True):
    torch = pytest.importorskip("torch")
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l1 = nn.Linear(3, 4)
            self.l2 = nn.Linear(4, 1)

        def forward(self, x):
            h = torch.tanh(self.l1(x))
            if cut == "detach":
                h = h.detach()
            elif cut == "data":
                h = h.data
            elif cut == "no_grad":
                with torch.no_grad():
                    h = torch.tanh(self.l1(x))
            return self.l2(h)

    torch.manual_seed(0)
    x = torch.randn(8, 3)
    y = x[:, :1] * 2 - x[:, 1:2]
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(passes):
        if zero is True:
            optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        if zero == "after forward":  # PyTorch's own tutorials' order
            optimizer.zero_grad()
        loss.backward()
        optimizer.step()


# ------------------------------------------------------------------------------------------
# unreached-parameter
# ------------------------------------------------------------------------------------------
def test_a_variable_made_from_data_cuts_the_first_layer_off():
    graphs = engine(fit, seeded(TwoLayer, "data"), passes=2)
    found = run(flow.unreached_parameter, graphs)
    assert [p.graph for p in found] == [0, 1]
    for p, g in zip(found, graphs, strict=True):
        assert (p.kind, p.severity) == ("unreached-parameter", "warning")
        assert "l1.W and l1.b" in p.message and "Variable(h.data)" in p.message
        (leaf,) = p.nodes  # the new leaf, the only node of the drawn graph: l1 is not in it
        assert leaf in g.reader.variables and g.reader.creator_of(leaf) == -1
        step = step_of(g, p)
        assert step.phase == "forward" and leaf in step.inputs and step.op == "Linear"


def test_an_unchain_is_named_with_the_op_it_cut_after():
    graphs = engine(fit, seeded(TwoLayer, "unchain"), passes=2)
    found = run(flow.unreached_parameter, graphs)
    assert len(found) == 2
    g, p = graphs[1], found[1]
    assert "l1.W and l1.b" in p.message and "unchain()" in p.message and "`Tanh`" in p.message
    names = [g.reader.node(n).get("name") for n in p.nodes]
    assert names[:2] == ["l1.W", "l1.b"]  # drawn as the detached history
    cut = p.nodes[2]
    assert g.reader.node(g.reader.base.creator_of(cut))["op"] == "Tanh"
    assert cut in step_of(g, p).inputs


def test_a_layer_whose_output_is_never_used_is_named_as_such():
    found = run(flow.unreached_parameter, engine(fit, seeded(TwoLayer, "unused"), passes=1))
    (p,) = found
    assert "l1.W and l1.b" in p.message and "reaches the loss" in p.message


def test_the_correct_twin_reaches_every_parameter():
    graphs = engine(fit, seeded(TwoLayer), passes=2)
    assert run(flow.unreached_parameter, graphs) == []


def test_a_saved_trace_keeps_what_names_the_cut(tmp_path):
    with record() as t:
        fit(seeded(TwoLayer, "unchain"), passes=2)
    t.to_json(tmp_path / "run.json")
    graphs = [
        GraphInput(view, g.graph, source="trace")
        for g, view in zip(
            views(t), [g.reader for g in views(load(tmp_path / "run.json"))], strict=True
        )
    ]
    found = run(flow.unreached_parameter, graphs)
    assert len(found) == 2 and all("unchain()" in p.message for p in found)


@pytest.mark.parametrize(
    ("cut", "words"),
    [
        ("detach", "`.detach()` (or `.data`)"),
        ("data", "`.detach()` (or `.data`)"),
        ("no_grad", "`linear` ran under `torch.no_grad()`"),
    ],
)
def test_torch_cuts_are_named(cut, words):
    graphs = torch_run(torch_two_layer, cut)
    found = run(flow.unreached_parameter, graphs)
    assert [p.graph for p in found] == [0, 1]
    for p, g in zip(found, graphs, strict=True):
        assert (p.kind, p.severity) == ("unreached-parameter", "warning")
        assert "l1.weight and l1.bias" in p.message and words in p.message
        assert p.nodes and all(n in g.reader.variables for n in p.nodes)
        assert step_of(g, p).phase == "forward"


def test_a_saved_torch_trace_still_names_no_grad(tmp_path):
    pytorch = pytest.importorskip("autodiff.trace.pytorch")
    with pytorch.record() as t:
        torch_two_layer("no_grad")
    t.to_json(tmp_path / "run.json")
    found = run(flow.unreached_parameter, views(load(tmp_path / "run.json"), "trace"))
    assert len(found) == 2
    assert all("`linear` ran under `torch.no_grad()`" in p.message for p in found)


def test_torch_correct_twin_reaches_every_parameter():
    assert run(flow.unreached_parameter, torch_run(torch_two_layer)) == []


def test_no_parameters_or_no_backward_cannot_run():
    with record() as t:
        x = Variable(np.array(2.0))
        F.tanh(x).backward()
    with pytest.raises(CannotRun, match="no parameters"):
        flow.unreached_parameter(GraphInput(t), Thresholds())
    with record() as t:
        F.tanh(Variable(np.array(2.0)))
    for detector in FLOW[:4]:
        with pytest.raises(CannotRun, match="no backward"):
            detector(GraphInput(t), Thresholds())


# ------------------------------------------------------------------------------------------
# carried-gradient
# ------------------------------------------------------------------------------------------
def test_forgotten_cleargrads_is_found_from_the_second_pass():
    graphs = engine(fit, seeded(TwoLayer), passes=3, clear=False)
    found = run(flow.carried_gradient, graphs)
    assert [p.graph for p in found] == [1, 2]
    for p, g in zip(found, graphs[1:], strict=True):
        assert (p.kind, p.severity) == ("carried-gradient", "warning")
        assert "l1.W" in p.message and "l2.b" in p.message
        assert "model.cleargrads()" in p.message and "optimizer.zero_grad()" in p.message
        assert "unless you accumulate" in p.message
        names = {g.reader.node(n)["name"] for n in p.nodes}
        assert names == {"l1.W", "l1.b", "l2.W", "l2.b"}
        step = step_of(g, p)
        assert step.phase == "backward" and set(step.inputs) & set(p.nodes)


@pytest.mark.parametrize("clear", [False, True], ids=["forgotten", "cleared"])
def test_a_plain_variable_updated_by_hand_is_a_weight_the_data_is_not(clear):
    def program():
        x = Variable(np.array([[0.5, -1.0, 2.0]]), name="x")
        w = Variable(np.array([[0.1], [0.2], [-0.3]]), name="w")
        for _ in range(2):
            loss = F.sum(F.tanh(F.matmul(x, w)) ** 2)
            if clear:
                w.cleargrad()
            loss.backward()  # x's gradient is carried over too: it is data, never updated
            w.data -= 0.1 * w.grad.data

    graphs = engine(program)
    found = run(flow.carried_gradient, graphs)
    if clear:
        assert found == []
    else:
        (p,) = found
        assert p.graph == 1 and "gradient of w," in p.message
        assert [graphs[1].reader.node(n)["name"] for n in p.nodes] == ["w"]


def test_cleargrads_before_backward_carries_nothing():
    assert run(flow.carried_gradient, engine(fit, seeded(TwoLayer), passes=3)) == []


def test_torch_forgotten_zero_grad_is_found_and_its_twin_is_silent():
    graphs = torch_run(torch_two_layer, passes=3, zero=False)
    found = run(flow.carried_gradient, graphs)
    assert [p.graph for p in found] == [1, 2]
    for p, g in zip(found, graphs[1:], strict=True):
        assert p.severity == "warning"
        assert "l1.weight" in p.message and "optimizer.zero_grad()" in p.message
        names = set(g.reader.names(p.nodes))
        assert names == {"l1.weight", "l1.bias", "l2.weight", "l2.bias"}
        assert step_of(g, p).phase == "backward"
    assert run(flow.carried_gradient, torch_run(torch_two_layer, passes=3)) == []


def test_torch_zero_grad_between_forward_and_backward_carries_nothing():
    graphs = torch_run(torch_two_layer, passes=3, zero="after forward")
    assert run(flow.carried_gradient, graphs) == []


def micrograd_fit(zero: bool) -> None:
    from autodiff.micrograd.nn import MLP

    random.seed(1337)
    model = MLP(3, [4, 1])
    xs = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5]]
    for _ in range(3):
        loss = sum((model(x) - y) ** 2 for x, y in zip(xs, [1.0, -1.0], strict=True))
        if zero:
            model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= 0.05 * p.grad


def test_micrograd_forgotten_zero_grad_is_found_and_its_twin_is_silent():
    with record() as t:
        micrograd_fit(zero=False)
    graphs = [GraphInput(g.reader, g.graph, source="micrograd") for g in views(t)]
    found = run(flow.carried_gradient, graphs)
    assert [p.graph for p in found] == [1, 2]
    assert "model.zero_grad() (micrograd)" in found[0].message
    assert len(found[0].nodes) == 4 * (3 + 1) + (4 + 1)  # every weight and bias of the MLP
    with record() as t:
        micrograd_fit(zero=True)
    assert run(flow.carried_gradient, views(t, "micrograd")) == []
    # micrograd's weights are plain Values: the detectors that need parameters say so
    for detector in (
        flow.unreached_parameter,
        gradient_size.vanishing_gradient,
        gradient_size.exploding_gradient,
    ):
        with pytest.raises(CannotRun, match="no parameters"):
            detector(views(t, "micrograd")[0], Thresholds())


@pytest.mark.parametrize(
    ("stem", "line", "names"),
    [
        ("cnn_step", "        model.cleargrads()\n", {"conv.W", "fc.W"}),
        ("torch_mlp", "        optimizer.zero_grad()\n", {"hidden.0.weight", "out.bias"}),
    ],
)
def test_a_bundled_example_without_its_clearing_line_carries_its_gradients(
    tmp_path, stem, line, names
):
    (example,) = [e for e in list_examples() if e.stem == stem]
    if example.missing:
        pytest.skip(f"needs {example.missing}")
    source = example.read()
    assert source.count(line) == 1
    buggy = tmp_path / f"{stem}.py"
    buggy.write_text(source.replace(line, ""))
    for path, bug in ((example.path, False), (buggy, True)):
        result = run_script(path)
        assert result.ok, result.error
        graphs = [GraphInput(result.view(i), i) for i in range(len(result.graphs))]
        found = run(flow.carried_gradient, graphs)
        # every pass after the first adds to what the one before left
        assert [p.graph for p in found] == (list(range(1, len(graphs))) if bug else [])
        for p in found:
            assert names <= set(graphs[p.graph].reader.names(p.nodes))


# ------------------------------------------------------------------------------------------
# vanishing-gradient
# ------------------------------------------------------------------------------------------
class Deep(Model):
    """Six tanh layers; ``tiny``: weights initialised 100 times too small."""

    def __init__(self, tiny: bool) -> None:
        super().__init__()
        self.layers = []
        for i in range(7):
            layer = L.Linear(1 if i == 6 else 16, in_size=3 if i == 0 else 16)
            if tiny:
                layer.W.data *= 0.01
            setattr(self, f"l{i}", layer)
            self.layers.append(layer)

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = F.tanh(layer(x))
        return self.layers[-1](x)


def test_a_deep_stack_with_tiny_weights_vanishes_at_the_first_layers():
    (g,) = engine(fit, seeded(Deep, True), passes=1)
    found = gradient_size.vanishing_gradient(g, Thresholds())
    layers = [p.message.split("'")[0] for p in found]
    assert layers and layers[0] == "layer Deep/l0"
    assert all(p.kind == "vanishing-gradient" and p.severity == "warning" for p in found)
    assert all("orders of magnitude below Deep/l6" in p.message for p in found)
    first = found[0]
    assert {g.reader.node(n)["name"] for n in first.nodes} == {"l0.W", "l0.b"}
    assert g.reader.steps[first.step].phase == "backward"
    looser = Thresholds(vanishing_orders=30.0)
    assert gradient_size.vanishing_gradient(g, looser) == []  # the threshold is the limit


def test_summarised_arrays_are_read_through_their_statistics():
    (g,) = engine(fit, seeded(Deep, True), passes=1, max_array_size=0)
    w = next(n for n in g.reader.parameters() if g.reader.node(n)["name"] == "l0.W")
    assert g.reader.grad_at(w, len(g.reader.steps) - 1).array is None  # a summary
    found = gradient_size.vanishing_gradient(g, Thresholds())
    assert found and found[0].message.startswith("layer Deep/l0'")
    graphs = engine(fit, seeded(Line), passes=1, lr=0.001, scale=30.0, max_array_size=0)
    assert run(gradient_size.exploding_gradient, graphs)
    graphs = engine(fit, seeded(TwoLayer, "data"), passes=1, max_array_size=0)
    (p,) = run(flow.unreached_parameter, graphs)
    assert "Variable(h.data)" in p.message


def test_the_same_stack_initialised_as_usual_does_not_vanish():
    (g,) = engine(fit, seeded(Deep, False), passes=1)
    assert gradient_size.vanishing_gradient(g, Thresholds()) == []


def test_torch_sigmoid_stack_with_tiny_init_vanishes_and_a_tanh_stack_does_not():
    torch = pytest.importorskip("torch")
    from torch import nn

    def program(tiny: bool) -> None:
        torch.manual_seed(0)
        layers = []
        for i in range(6):
            layers += [nn.Linear(3 if i == 0 else 16, 16), nn.Sigmoid() if tiny else nn.Tanh()]
        model = nn.Sequential(*layers, nn.Linear(16, 1))
        if tiny:
            with torch.no_grad():
                for m in model:
                    if isinstance(m, nn.Linear):
                        m.weight.mul_(0.01)
        x = torch.randn(8, 3)
        ((model(x) - 1.0) ** 2).mean().backward()

    (g,) = torch_run(program, True)
    found = gradient_size.vanishing_gradient(g, Thresholds())
    assert found and found[0].message.startswith("layer Sequential/0'")
    assert "below Sequential/12" in found[0].message
    assert set(g.reader.names(found[0].nodes)) == {"0.weight", "0.bias"}
    assert found[0].severity == "warning" and step_of(g, found[0]).phase == "backward"
    (g,) = torch_run(program, False)
    assert gradient_size.vanishing_gradient(g, Thresholds()) == []


def test_one_layer_cannot_compare():
    class One(Model):
        def __init__(self) -> None:
            super().__init__()
            self.l1 = L.Linear(1)

        def forward(self, x):
            return self.l1(x)

    (g,) = engine(fit, seeded(One), passes=1)
    with pytest.raises(CannotRun, match="fewer than 2 layers"):
        gradient_size.vanishing_gradient(g, Thresholds())


# ------------------------------------------------------------------------------------------
# exploding-gradient
# ------------------------------------------------------------------------------------------
class Line(Model):
    def __init__(self) -> None:
        super().__init__()
        self.fc = L.Linear(1)

    def forward(self, x):
        return self.fc(x[:, :1])


def test_unscaled_inputs_give_gradients_far_larger_than_the_weights():
    graphs = engine(fit, seeded(Line), passes=2, lr=0.001, scale=30.0)
    found = run(gradient_size.exploding_gradient, graphs)
    assert found and {p.graph for p in found} == {0, 1}
    p = found[0]
    g = graphs[p.graph]
    assert (p.kind, p.severity) == ("exploding-gradient", "warning")
    assert p.message.startswith("fc.W's gradient") and "times its value's" in p.message
    assert "smaller learning rate" in p.message and "clip" in p.message
    assert g.reader.node(p.nodes[0])["name"] == "fc.W"
    assert g.reader.steps[p.step].phase == "backward"


def test_the_same_fit_on_scaled_inputs_is_silent_even_with_a_zero_bias():
    graphs = engine(fit, seeded(Line), passes=3, lr=0.1)
    assert run(gradient_size.exploding_gradient, graphs) == []
    # the bias starts at 0 (its gradient is many times its value) but stays under the floor
    g = graphs[0]
    bias = next(n for n in g.reader.parameters() if g.reader.node(n)["name"] == "fc.b")
    assert g.reader.value_at(bias, -1).norm == 0.0
    assert 0 < g.reader.grad_at(bias, len(g.reader.steps) - 1).norm < Thresholds().exploding_floor


def test_torch_unscaled_inputs_explode_and_scaled_ones_do_not():
    torch = pytest.importorskip("torch")
    from torch import nn

    def program(scale: float) -> None:
        torch.manual_seed(0)
        model = nn.Linear(1, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
        x = torch.randn(8, 1) * scale
        for _ in range(2):
            optimizer.zero_grad()
            ((model(x) - 2 * x) ** 2).mean().backward()
            optimizer.step()

    graphs = torch_run(program, 30.0)
    found = run(gradient_size.exploding_gradient, graphs)
    assert found and found[0].message.startswith("weight's gradient")
    assert found[0].severity == "warning" and "clip" in found[0].message
    assert graphs[found[0].graph].reader.names(found[0].nodes) == ["weight"]
    assert run(gradient_size.exploding_gradient, torch_run(program, 1.0)) == []


# ------------------------------------------------------------------------------------------
# nonfinite
# ------------------------------------------------------------------------------------------
def log_fit(shift: float):
    x = Variable(np.linspace(0.1, 0.9, 5), name="x")
    with np.errstate(invalid="ignore"):
        y = F.sum(F.log(x + shift))
        y.backward()


def test_log_of_a_negative_is_the_first_nan_in_a_value():
    (g,) = engine(log_fit, -2.0)
    (p,) = flow.nonfinite(g, Thresholds())
    assert (p.kind, p.severity) == ("nonfinite", "error")
    assert p.message.startswith("NaN first appears in the value") and "`Log`" in p.message
    step = step_of(g, p)
    assert step.phase == "forward" and step.op == "Log"
    assert p.nodes == (step.function, *step.outputs)


def test_a_nan_leaf_of_micrograd_is_found_where_it_is_first_used():
    from autodiff.micrograd.engine import Value

    with record() as t:
        (Value(float("nan")) * Value(2.0) + Value(1.0)).backward()
    (g,) = views(t, "micrograd")
    (p,) = flow.nonfinite(g, Thresholds())
    assert p.message.startswith("NaN first appears in the value") and "`Mul`" in p.message
    assert "inputs already hold NaN" in p.message and p.step == 0


def test_a_square_root_at_zero_is_the_first_inf_in_a_gradient():
    def program():
        x = Variable(np.array([0.0, 1.0, 4.0]), name="x")
        with np.errstate(divide="ignore"):
            F.sum(x**0.5).backward()

    (g,) = engine(program)
    (p,) = flow.nonfinite(g, Thresholds())
    assert p.message.startswith("Inf first appears in the gradient of x") and "`Pow`" in p.message
    assert step_of(g, p).phase == "backward"


def test_log_of_a_positive_is_finite():
    (g,) = engine(log_fit, 2.0)
    assert flow.nonfinite(g, Thresholds()) == []


def test_torch_log_of_a_negative_and_zero_over_zero_and_their_twin():
    torch = pytest.importorskip("torch")

    def program(bug: str) -> None:
        x = torch.linspace(0.1, 0.9, 5, requires_grad=True)
        if bug == "log":
            y = torch.log(x - 2.0)
        elif bug == "0/0":
            y = (x - x) / (x - x)
        elif bug == "sqrt(0)":
            y = torch.sqrt(x * 0)
        else:
            y = torch.log(x + 2.0)
        y.sum().backward()

    (g,) = torch_run(program, "log")
    (p,) = flow.nonfinite(g, Thresholds())
    assert p.severity == "error" and "`log`" in p.message and "value" in p.message
    step = step_of(g, p)
    assert step.phase == "forward" and p.nodes == (step.function, *step.outputs)
    (g,) = torch_run(program, "0/0")
    (p,) = flow.nonfinite(g, Thresholds())
    assert "NaN" in p.message and "`div`" in p.message
    (g,) = torch_run(program, "sqrt(0)")
    (p,) = flow.nonfinite(g, Thresholds())
    assert p.message.startswith("Inf first appears in the gradient") and "`sqrt`" in p.message
    assert step_of(g, p).phase == "backward"
    (g,) = torch_run(program, "fine")
    assert flow.nonfinite(g, Thresholds()) == []


# ------------------------------------------------------------------------------------------
# Through a script run, and no false alarms on the bundled examples
# ------------------------------------------------------------------------------------------
def test_a_script_without_cleargrads_is_reported_through_detect(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(
        "import numpy as np\n"
        "import autodiff.functions as F\n"
        "from autodiff import models, optimizers\n"
        "np.random.seed(0)\n"
        "x = np.random.rand(16, 2); y = x @ np.array([[1.0], [-2.0]])\n"
        "model = models.MLP((4, 1))\n"
        "opt = optimizers.SGD(0.1).setup(model)\n"
        "for i in range(3):\n"
        "    loss = F.mean_squared_error(model(x), y)\n"
        "    loss.backward()\n"
        "    opt.update()\n"
    )
    result = run_script(path)
    graphs = [
        GraphInput(result.view(i), i, source="engine", script=str(path))
        for i in range(len(result.graphs))
    ]
    report = detect(graphs)
    # one bug, one problem: the second and third passes' carried gradients are one line,
    # the second pass's, and each graph still has its own
    carried = [p for p in report.problems if p.kind == "carried-gradient"]
    assert [p.graph for p in carried] == [1]
    assert "l0.W" in carried[0].message
    assert carried[0].message.endswith("(in 2 of 3 kept passes, first in pass #2)")
    for k in (1, 2):
        (own,) = [p for p in report.for_graph(k) if p.kind == "carried-gradient"]
        assert "l0.W" in own.message and "kept passes" not in own.message
    assert "carried-gradient" in report.ran


# The examples meant to be correct, and those that demonstrate another kind's bug (a wrong
# backward, a graph held): the flow detectors find nothing above info in any of them.
SILENT = [
    e
    for e in list_examples()
    if not demonstrates(e.stem, {"unreached-parameter", "carried-gradient", "nonfinite"})
    and not demonstrates(e.stem, {"vanishing-gradient", "exploding-gradient"})
    and not e.missing
]


def _inputs(example) -> list[GraphInput]:
    if example.kind == "expression":
        return [GraphInput(parse(example.read()).run({}).trace, 0)]
    result = run_script(example.path)
    assert result.ok, result.error
    n = len(result.graphs)
    picked = sorted(set(range(min(n, 8))) | set(range(max(0, n - 8), n)))  # a long run's ends
    return [GraphInput(result.view(i), i) for i in picked]


@pytest.mark.parametrize("example", SILENT, ids=[e.stem for e in SILENT])
def test_examples_report_nothing_above_info(example):
    graphs = _inputs(example)
    ran = False
    for detector in FLOW:
        for g in graphs:
            try:
                found = detector(g, Thresholds())
            except CannotRun:
                continue
            ran = True
            assert [p for p in found if p.severity != "info"] == [], example.stem
    assert ran


def test_the_nan_example_reports_its_nan():
    (example,) = [e for e in list_examples() if e.stem == "nan_log"]
    (p,) = flow.nonfinite(_inputs(example)[0], Thresholds())
    assert p.kind == "nonfinite" and "`Log`" in p.message


def test_a_bias_beside_its_weight_is_not_a_vanishing_layer():
    """W's gradient ~1 and b's ~1e-6 in one linear: b ran no earlier than W, so its small
    gradient did not vanish on the way back (a diverging run's first pass looks like this)."""
    from autodiff import Parameter

    x = Variable(np.linspace(-1, 1, 8).reshape(8, 1))
    t = Variable(3 * x.data + 1e-6)
    W = Parameter(np.zeros((1, 1)), name="W")
    b = Parameter(np.zeros(1), name="b")
    with record() as tr:
        F.mean_squared_error(F.linear(x, W, b), t).backward()
    assert 0 < float(np.abs(b.grad.data).max()) < 1e-4 < float(np.abs(W.grad.data).max())
    assert gradient_size.vanishing_gradient(GraphInput(tr), Thresholds()) == []
