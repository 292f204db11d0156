"""The viewer on a torch recording (``autodiff.trace.pytorch``): what the screen shows of torch's
backward is what torch's own hooks saw in the same run; the inspector, find, module frames, the
NaN marks, the explanation and the gradient check say what torch did and claim nothing of
autodiff's formulas; a saved torch trace reloads and exports headless."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
TF = torch.nn.functional

from autodiff import trace as autodiff_trace  # noqa: E402
from autodiff.trace import pytorch  # noqa: E402
from viewer.model.checks.gradcheck import (  # noqa: E402
    TORCH_TRACE_REASON,
    check_trace,
    torch_unreachable_reason,
)
from viewer.model.document.document import Document  # noqa: E402
from viewer.model.panels.find import FindIndex  # noqa: E402


class Block(nn.Module):
    """A ResNet BasicBlock with a downsample branch, in-place ReLU and ``+=``."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, 2, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(
            nn.Conv2d(cin, cout, 1, 2, bias=False), nn.BatchNorm2d(cout)
        )

    def forward(self, x):
        out = TF.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        out += self.downsample(x)
        return TF.relu(out, inplace=True)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer1 = nn.Sequential(Block(2, 4))
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(self.layer1(x).mean((2, 3)))


def _reachable(root):
    """Every autograd node behind ``root`` but AccumulateGrad, each once."""
    seen, stack, out = set(), [root], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if type(node).__name__ != "AccumulateGrad":
            out.append(node)
        stack.extend(n for n, _ in node.next_functions)
    return out


def _keeper(seen, name):
    """A node hook that notes (name, grad_outputs, grad_inputs) as torch hands them over."""

    def hook(grad_inputs, grad_outputs):
        outs = [None if g is None else g.detach().clone() for g in grad_outputs]
        seen.append((name, outs, [g.detach().clone() for g in grad_inputs if g is not None]))

    return hook


@pytest.fixture(scope="module")
def resnet():
    """The ResNet block's recording, and what torch's own node hooks saw in the same run:
    the order the nodes ran, the gradients each got and sent, the parameters' ``.grad``."""
    torch.manual_seed(0)
    net = Net()
    x, y = torch.randn(2, 2, 6, 6), torch.tensor([0, 2])
    seen = []  # (torch node name, grad_outputs, grad_inputs) in the order torch ran them
    with pytorch.record() as t:
        loss = TF.cross_entropy(net(x), y)
        for node in _reachable(loss.grad_fn):
            node.register_hook(_keeper(seen, node.name()))
        loss.backward()
    grads = {name: p.grad.detach().clone().numpy() for name, p in net.named_parameters()}
    return t, seen, grads, float(loss.detach())


@pytest.fixture
def doc(resnet):
    d = Document()
    d.load_trace(resnet[0], "resnet")
    d.expand_all()
    return d


def _backward(doc):
    return [s for s in doc.trace.steps if s.phase == "backward"]


def test_stepping_the_backward_shows_torchs_order_and_gradients(resnet, doc):
    _, seen, _, _ = resnet
    steps = _backward(doc)
    assert [doc.trace.node(s.function)["torch_node"] for s in steps] == [n for n, _, _ in seen]
    for step, (name, grad_outputs, grad_inputs) in zip(steps, seen, strict=True):
        doc.playback.seek(step.index)
        # what reached the node: the output's gradient the inspector shows at this step
        shown = doc.inspect(step.outputs[0]).grad
        assert shown is not None and shown.array is not None, name
        np.testing.assert_allclose(shown.array, grad_outputs[0].numpy(), rtol=1e-6, atol=1e-7)
        # what it sent: the explanation's terms, each one of torch's grad_inputs
        terms = doc.explain_step(step.index).terms
        assert len(terms) == len(grad_inputs), name
        for term in terms:
            sent = np.asarray(term.result)
            assert any(
                g.shape == sent.shape and np.allclose(g.numpy(), sent, rtol=1e-6, atol=1e-7)
                for g in grad_inputs
            ), (name, term.slot)


def test_the_parameters_show_torchs_grad_after_the_pass(resnet, doc):
    t, _, grads, loss = resnet
    doc.playback.to_end()
    params = sorted(t.parameters())
    assert {t.node(p)["name"] for p in params} == set(grads)
    for p in params:
        info = doc.inspect(p)
        name = t.node(p)["name"]
        assert ("parameter", name) in info.as_rows()
        np.testing.assert_allclose(info.grad.array, grads[name], rtol=1e-6, atol=1e-7)
    # and the loss's value is the one torch computed
    first_backward = _backward(doc)[0]
    root = first_backward.outputs[0]
    assert float(doc.inspect(root).value.array) == pytest.approx(loss, rel=1e-6)


def test_the_inspector_shows_torchs_node_its_aten_op_saved_shapes_and_module(doc):
    trace = doc.trace
    linear = next(f for f in trace.functions if trace.node(f)["op"] == "linear")
    rows = dict(doc.inspect(linear).as_rows())
    assert rows["torch node"] == "AddmmBackward0"
    assert rows["aten op"] == "aten.addmm.default"
    assert rows["saved mat1"] == "(2, 4)" and rows["saved mat2"] == "(4, 3)"
    assert rows["module"] == "Net/fc"
    conv = next(f for f in trace.functions if trace.node(f)["scope"] == "Net/layer1/0/conv1")
    rows = dict(doc.inspect(conv).as_rows())
    assert rows["torch node"] == "ConvolutionBackward0"
    assert rows["saved weight"] == "(4, 2, 3, 3)" and rows["saved input"] == "(2, 2, 6, 6)"
    assert rows["padding"] == "(1, 1)"
    weight = next(p for p in trace.parameters() if trace.node(p)["name"] == "layer1.0.conv1.weight")
    rows = dict(doc.inspect(weight).as_rows())
    assert rows["parameter"] == "layer1.0.conv1.weight" and rows["consumers"] == f"conv2d #{conv}"


def test_a_torch_nodes_tooltip_names_torchs_node(doc):
    trace, scene = doc.trace, doc.scene
    linear = next(f for f in trace.functions if trace.node(f)["op"] == "linear")
    tip = scene.node_tooltip(scene.index_of(linear), len(trace.steps) - 1)
    assert tip.split("\n")[0].startswith("linear (function")
    assert "torch: AddmmBackward0 (aten.addmm.default)" in tip.split("\n")


def test_find_reaches_torch_nodes_by_op_by_torch_name_and_parameters_by_name(doc):
    trace = doc.trace
    index = FindIndex(trace, doc.scene)
    linear = [f for f in trace.functions if trace.node(f)["op"] == "linear"]
    assert len(linear) == 1
    assert set(linear) <= set(index.search("linear").tolist())
    assert index.search("AddmmBackward0").tolist() == linear
    convs = {f for f in trace.functions if trace.node(f)["torch_node"] == "ConvolutionBackward0"}
    assert set(index.search("convolutionbackward0").tolist()) == convs and len(convs) == 3
    weight = [p for p in trace.parameters() if trace.node(p)["name"] == "layer1.0.bn2.weight"]
    assert index.search("layer1.0.bn2.weight").tolist() == weight


def test_module_frames_are_the_blocks_module_paths(doc):
    frames = {f.path: f for f in doc.scene.geometry.frames}
    for path in (
        "Net",
        "Net/layer1/0",
        "Net/layer1/0/conv1",
        "Net/layer1/0/downsample",
        "Net/layer1/0/downsample/1",
        "Net/fc",
    ):
        assert path in frames, sorted(frames)
    assert frames["Net/layer1/0"].title == "0 \N{MIDDLE DOT} Block"
    assert frames["Net/layer1/0/conv1"].title == "conv1 \N{MIDDLE DOT} Conv2d"
    # collapsed, the block is one box, which the inspector shows as the Block
    assert doc.collapse("Net/layer1/0")
    boxes = [i for i, k in enumerate(doc.scene.kinds) if k == "module"]
    assert [doc.scene.names[i] for i in boxes] == ["0"]
    info = doc.inspect(int(doc.scene.node_ids[boxes[0]]))
    assert info.kind == "module" and dict(info.module_rows)["class"] == "Block"


def test_nan_in_a_torch_forward_is_marked_at_its_first_step():
    w = nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    with pytorch.record() as t:
        h = w * 2.0
        y = torch.log(h)  # log of -4: NaN
        y.sum().backward()
    first = t.first_nonfinite()
    assert first is not None and first.op == "log" and first.phase == "forward"
    d = Document()
    d.load_trace(t, "nan")
    assert d.playback.first_nonfinite() == first.index
    d.playback.seek(first.index)
    scene, frame = d.scene, d.frame()
    out = first.outputs[0]
    assert frame.nonfinite[scene.index_of(out)]
    marks = [o for o in scene.overlays_at(scene.index_of(first.function)) if o.kind == "nonfinite"]
    assert len(marks) == 1 and "forward output" in marks[0].tooltip
    d.playback.seek(first.index - 1)
    assert not d.frame().nonfinite[scene.index_of(out)]


def test_the_explanation_says_torch_computed_it_and_claims_no_autodiff_formula(doc):
    steps = {doc.trace.node(s.function)["torch_node"]: s for s in _backward(doc)}
    linear = doc.explain_step(steps["AddmmBackward0"].index)
    text = "\n".join(linear.lines())
    assert "your own" not in text
    assert "torch's autograd node AddmmBackward0 (aten op aten.addmm.default)" in text
    assert "the numbers were not computed from it" in text and "m1 @ m2" in text
    assert all(t.numbers == "" for t in linear.terms)  # no autodiff formula evaluated
    conv = doc.explain_step(steps["ConvolutionBackward0"].index)
    # a convolution's weight gradient is not a broadcast sum, whatever the shapes
    assert all(t.broadcast == "" for t in conv.terms)
    batch_norm = "\n".join(doc.explain_step(steps["NativeBatchNormBackward0"].index).lines())
    assert "No formula is shown for batch_norm: its backward is torch's own code." in batch_norm
    # the chain-rule products read the recording, never a formula
    loss_root = _backward(doc)[0].outputs[0]
    weight = next(p for p in doc.trace.parameters() if doc.trace.node(p)["name"] == "fc.weight")
    assert doc.trace.node(loss_root) is not None
    doc.chain(weight)


def test_an_op_autodiff_has_a_formula_for_is_not_explained_with_it():
    """``mul`` is named as autodiff's Mul is; torch's node is still torch's."""
    a = nn.Parameter(torch.tensor([1.5, -2.0]))
    with pytorch.record() as t:
        (a * a).sum().backward()
    d = Document()
    d.load_trace(t, "mul")
    step = next(s for s in t.steps if s.phase == "backward" and s.op == "mul")
    text = "\n".join(d.explain_step(step.index).lines())
    assert "torch's autograd node MulBackward0" in text and "g_a = gy · b" in text
    assert "gx0 = gy · x1" not in text  # autodiff's Mul formula is not claimed


def test_the_gradient_check_says_it_cannot_rerun_torchs_nodes(resnet):
    report = check_trace(resnet[0])
    assert report.functions == () and report.reason == TORCH_TRACE_REASON


def test_a_saved_torch_trace_reloads_with_the_same_rows_and_explanation(resnet, tmp_path):
    path = tmp_path / "resnet.json"
    resnet[0].to_json(path)
    loaded = autodiff_trace.load(path)
    d = Document()
    d.load_trace(loaded, "saved")
    d.expand_all()
    linear = next(f for f in loaded.functions if loaded.node(f)["op"] == "linear")
    rows = dict(d.inspect(linear).as_rows())
    assert rows["torch node"] == "AddmmBackward0" and rows["module"] == "Net/fc"
    assert rows["saved mat2"] == "(4, 3)"
    text = "\n".join(d.explain_step(_backward(d)[0].index).lines())
    assert "torch's autograd node NllLossBackward0" in text and "your own" not in text
    assert check_trace(loaded, saved=True).reason == TORCH_TRACE_REASON


class _WrongSquare(torch.autograd.Function):
    """x² with a wrong backward (3x, not 2x): the program's own code."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * g * x


def test_a_custom_function_is_the_programs_own_code_not_torchs():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytorch.record() as t:
        _WrongSquare.apply(x).sum().backward()
    d = Document()
    d.load_trace(t, "custom")
    step = next(s for s in t.steps if s.phase == "backward" and s.op == "_WrongSquare")
    explanation = d.explain_step(step.index)
    text = "\n".join(explanation.lines())
    assert "_WrongSquare is a custom torch.autograd.Function: its backward is your own code" in text
    assert "torch's own code" not in text and "torch's op" not in text
    assert (
        explanation.terms[0].formula
        == "gx comes from _WrongSquare.backward: your own code, run by torch"
    )
    # the numbers are what the program's backward returned: 3 · 1 · 2 at element [1]
    assert np.asarray(explanation.terms[0].result).tolist() == [3.0, 6.0]
    rows = dict(d.inspect(step.function).as_rows())
    assert rows["torch node"] == "_WrongSquareBackward"
    assert rows["aten op"] == "none: a custom autograd.Function (your own backward)"
    # recorded in this process: torch.autograd.gradcheck of the live class on the inputs kept
    report = check_trace(t)
    assert [(c.op, c.status) for c in report.wrong_functions] == [("_WrongSquare", "wrong")]
    assert check_trace(t, saved=True).reason == torch_unreachable_reason(["_WrongSquare"])


class _Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(self.fc(x)) + x


class _Deep(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*[_Layer() for _ in range(4)])
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.blocks(x))


def test_repeated_modules_fold_into_one_box_and_unfold():
    torch.manual_seed(0)
    with pytorch.record() as t:
        _Deep()(torch.randn(3, 4)).sum().backward()
    d = Document()
    d.load_trace(t, "deep")

    def boxes():
        return [d.scene.names[i] for i, k in enumerate(d.scene.kinds) if k == "module"]

    run = d.scope_tree()[0].children[0].children
    assert [n.path for n in run] == [f"_Deep/blocks/{k}" for k in range(4)]
    assert run[0].fold_count == 4 and run[0].cls == "_Layer"
    assert boxes() == ["_Layer \N{MULTIPLICATION SIGN} 4"]
    assert d.unfold("_Deep/blocks/0")
    assert boxes() == ["0", "1", "2", "3"]
    d.expand_all()
    frames = {f.path for f in d.scene.geometry.frames}
    assert {f"_Deep/blocks/{k}/fc" for k in range(4)} <= frames


def test_each_parameter_shows_its_grad_from_the_step_torch_accumulated_it(resnet, doc):
    """AccumulateGrad is folded into the step after which torch ran it: the parameter has no
    gradient before that step and torch's final ``.grad`` from it on (one pass)."""
    t, _, grads, _ = resnet
    steps = _backward(doc)
    for p in sorted(t.parameters()):
        name = t.node(p)["name"]
        made = next(s.index for s in steps if p in s.inputs)
        doc.playback.seek(made - 1)
        assert doc.inspect(p).grad is None, name
        for at in (made, steps[-1].index):
            doc.playback.seek(at)
            np.testing.assert_allclose(doc.inspect(p).grad.array, grads[name], rtol=1e-6)


def test_a_detach_cut_is_shown_as_a_cut_with_no_torch_node():
    w = nn.Parameter(torch.tensor([1.0, 2.0]))
    v = nn.Parameter(torch.tensor([0.5, -1.0]))
    with pytorch.record() as t:
        ((w * 2).detach() * v).sum().backward()
    d = Document()
    d.load_trace(t, "cut")
    cut = next(f for f in t.functions if t.node(f)["op"] == "detach")
    assert t.node(cut)["torch_node"] is None
    rows = dict(d.inspect(cut).as_rows())
    assert rows["torch node"] == "none: a cut (no autograd node)"
    assert "aten op" not in rows
    d.playback.to_end()
    by_value = {tuple(t.node(p)["value"].array.tolist()): p for p in t.parameters()}
    np.testing.assert_allclose(d.inspect(by_value[(0.5, -1.0)]).grad.array, [2.0, 4.0])
    assert d.inspect(by_value[(1.0, 2.0)]).grad is None
    # the gradient check says it checks none of torch's nodes; the cut is no Function to check
    report = check_trace(t)
    assert report.functions == () and report.reason == TORCH_TRACE_REASON


def test_data_exports_of_a_torch_trace_keep_its_modules_and_parameter_names(doc, tmp_path):
    said = []
    doc.error_raised.connect(said.append)
    doc.playback.to_end()
    dot, graphml = tmp_path / "g.dot", tmp_path / "g.graphml"
    assert doc.export_data(dot) and doc.export_data(graphml), said
    text = dot.read_text()
    assert "subgraph cluster" in text and "layer1.0.conv1.weight" in text and "conv2d" in text
    xml = graphml.read_text()
    assert "Net/layer1/0/downsample/1" in xml and "layer1.0.downsample.1.bias" in xml


def test_a_statistics_only_recording_shows_no_value_and_says_it_was_not_recorded():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    with pytorch.record(statistics_only=True) as t:
        net(torch.randn(5, 4)).sum().backward()
    d = Document()
    d.load_trace(t, "statistics")
    d.playback.to_end()
    weight = next(v for v in t.parameters() if t.node(v)["name"] == "0.weight")
    rows = dict(d.inspect(weight).as_rows())
    assert rows["value"] == "not recorded (statistics only)"
    grad = d.inspect(weight).grad
    assert grad is not None and grad.array is None  # statistics, no copy
    assert grad.norm == pytest.approx(float(net[0].weight.grad.norm()), rel=1e-5)
    linear = next(f for f in t.functions if t.node(f)["op"] == "linear")
    assert "value" not in dict(d.inspect(linear).as_rows())  # a function has none to miss
    with pytorch.record() as kept:
        net(torch.randn(5, 4)).sum().backward()
    d.load_trace(kept, "values")
    d.playback.to_end()
    weight = next(v for v in kept.parameters() if kept.node(v)["name"] == "0.weight")
    assert dict(d.inspect(weight).as_rows())["value"] != "not recorded (statistics only)"
