"""autodiff.trace.pytorch: torch's own graph, order and numbers, recorded into a Trace.

Each test runs a torch program once, with the recorder and with torch's own hooks on every
node of the graph in the same run, and compares what the trace holds with what torch
reported: the backward order, each step's gradients, the parameters' final gradients and the
loss."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from autodiff.trace import Trace, pytorch, view_for_root  # noqa: E402
from autodiff.trace.pytorch import _internals  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- torch's report
def _watch(*roots):
    """Hooks on every autograd node behind ``roots`` (AccumulateGrad aside): what torch ran,
    in order, with the grad_outputs it passed and the grad_inputs it produced."""
    log = []
    seen = set()
    todo = [r.grad_fn for r in roots if r.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(id(node))

        def hook(grad_inputs, grad_outputs, node=node):
            log.append(
                (
                    node.name(),
                    [None if g is None else g.detach().numpy().copy() for g in grad_outputs],
                    [None if g is None else g.detach().numpy().copy() for g in grad_inputs],
                )
            )

        node.register_hook(hook)
        todo.extend(p for p, _ in node.next_functions)
    return log


def _array(snap):
    return None if snap is None else snap.array


def _assert_steps_match(t, log, backward_pass=None):
    """The trace's backward steps (of one pass, or all) are torch's, in torch's order, with
    torch's gradients."""
    steps = [
        s
        for s in t.steps
        if s.phase == "backward" and (backward_pass is None or s.backward_pass == backward_pass)
    ]
    assert [t.node(s.function)["torch_node"] for s in steps] == [name for name, _, _ in log]
    for s, (name, gys, gxs) in zip(steps, log, strict=True):
        assert len(s.output_grads) == len(gys), name
        for mine, theirs in zip(s.output_grads, gys, strict=True):
            if theirs is None:
                assert mine is None, name
            else:
                np.testing.assert_array_equal(_array(mine), theirs, err_msg=name)
        produced = [g for g in gxs if g is not None]
        recorded = [_array(g) for g in s.input_grads if g is not None]
        assert len(recorded) == len(produced), name
        for mine, theirs in zip(recorded, produced, strict=True):
            np.testing.assert_array_equal(mine, theirs, err_msg=name)


def _param_node(t, name):
    found = [v for v in t.parameters() if t.node(v)["name"] == name]
    assert len(found) == 1, (name, [t.node(v)["name"] for v in t.parameters()])
    return found[0]


def _assert_final_grads(t, module):
    last = len(t.steps) - 1
    for name, p in module.named_parameters():
        vid = _param_node(t, name)
        if p.grad is None:
            assert t.grad_at(vid, last) is None, name
        else:
            np.testing.assert_array_equal(_array(t.grad_at(vid, last)), p.grad.numpy(), name)


def _loss_value(t, root):
    return _array(t.value_at(root, len(t.steps) - 1))


# ----------------------------------------------------------------------------- programs
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 8)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        return self.out(torch.tanh(self.fc2(torch.relu(self.fc1(x)))))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):  # torchvision's BasicBlock: the downsample branch made last
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.downsample(x)
        return self.relu(out)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(BasicBlock(2, 4))
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(self.layer1(x).mean(dim=(2, 3)))


def test_an_mlp_step_is_torchs_order_gradients_parameters_and_loss():
    torch.manual_seed(0)
    model = MLP()
    x, y = torch.randn(5, 6), torch.tensor([0, 2, 1, 1, 0])
    with pytorch.record() as t:
        loss = nn.functional.cross_entropy(model(x), y)
        log = _watch(loss)
        loss.backward()
    assert isinstance(t, Trace)
    _assert_steps_match(t, log)
    _assert_final_grads(t, model)
    (root,) = t.backward_roots
    np.testing.assert_array_equal(_loss_value(t, root), loss.detach().numpy())
    ops = {t.node(f)["op"] for f in t.functions}
    assert {"linear", "relu", "tanh", "log_softmax", "nll_loss"} <= ops
    nodes = {t.node(f)["torch_node"] for f in t.functions}
    assert {"AddmmBackward0", "ReluBackward0", "TanhBackward0", "NllLossBackward0"} <= nodes
    assert {t.node(v)["name"] for v in t.parameters()} == {n for n, _ in model.named_parameters()}
    fc1 = next(f for f in t.functions if t.node(f)["op"] == "linear")
    assert t.node(fc1)["scope"] == "MLP/fc1"


def test_a_resnet_block_with_batchnorm_in_place_relu_and_plus_equals():
    torch.manual_seed(1)
    model = Net().train()
    x = torch.randn(2, 2, 5, 5)
    seen = {}
    block = model.layer1[0]
    # the value bn1 computed, before relu_ overwrote it in place
    block.bn1.register_forward_hook(lambda m, a, out: seen.update(bn1=out.detach().clone()))
    with pytorch.record() as t:
        loss = model(x).pow(2).sum()
        log = _watch(loss)
        loss.backward()
    _assert_steps_match(t, log)
    _assert_final_grads(t, model)
    np.testing.assert_array_equal(_loss_value(t, t.backward_roots[0]), loss.detach().numpy())
    # torch runs the downsample branch before bn2 / conv2 (not generation order)
    names = [t.node(s.function)["torch_node"] for s in t.steps if s.phase == "backward"]
    bn_steps = [
        t.node(s.function)["scope"]
        for s in t.steps
        if s.phase == "backward" and s.op == "batch_norm"
    ]
    assert bn_steps == ["Net/layer1/0/downsample/1", "Net/layer1/0/bn2", "Net/layer1/0/bn1"]
    assert names.count("AddBackward0") == 1  # out += identity
    paths = {r.path for r in t.scopes()}
    assert {"Net/layer1/0/conv1", "Net/layer1/0/downsample/1", "Net/fc"} <= paths
    assert _param_node(t, "layer1.0.conv1.weight") in t.parameters()
    bn1 = next(
        s
        for s in t.steps
        if s.phase == "forward" and t.node(s.function)["scope"] == "Net/layer1/0/bn1"
    )
    np.testing.assert_array_equal(bn1.values[0].array, seen["bn1"].numpy())
    convs = {
        t.node(s.function)["scope"]: s.inputs
        for s in t.steps
        if s.phase == "forward" and s.op == "conv2d"
    }
    conv1 = next(f for f in t.functions if t.node(f)["scope"] == "Net/layer1/0/conv1")
    params = t.function_params(conv1)  # what the inspector shows of torch's node
    assert params["aten"] == "aten.convolution.default"
    assert params["saved_weight"] == (4, 2, 3, 3) and params["padding"] == (1, 1)
    data = convs["Net/layer1/0/conv1"][0]  # the input: a constant both branches share
    assert convs["Net/layer1/0/downsample/0"][0] == data and t.node(data)["constant"]
    np.testing.assert_array_equal(t.value_at(data, 0).array, x.numpy())
    relu = [s for s in t.steps if s.phase == "forward" and s.op == "relu_"]
    assert relu and relu[0].inputs[0] == bn1.outputs[0]  # the in-place op's input: bn1's value


def test_a_diamond_runs_in_torchs_order_not_generation_order():
    x = torch.tensor([0.3, -1.2, 2.0], requires_grad=True)
    with pytorch.record() as t:
        m = x.exp().sin().cos()
        s = x * 3
        out = (m + s).sum()
        log = _watch(out)
        out.backward()
    _assert_steps_match(t, log)
    order = [s.op for s in t.steps if s.phase == "backward"]
    assert order == ["sum", "add", "mul", "cos", "sin", "exp"]
    generations = [s.generation for s in t.steps if s.phase == "backward"]
    assert generations != sorted(generations, reverse=True)
    (xid,) = [v for v in t.variables if t.node(v)["shape"] == (3,) and t.creator_of(v) < 0]
    np.testing.assert_array_equal(_array(t.grad_at(xid, len(t.steps) - 1)), x.grad.numpy())
    # x feeds exp and mul: the second contribution is an accumulation, old + new = sum
    accs = [a for s in t.steps for a in s.accumulations]
    assert [a.node for a in accs] == [xid]
    np.testing.assert_allclose(accs[0].new.array, x.grad.numpy())


def test_an_in_place_op_on_a_view_and_a_dropout_mask():
    torch.manual_seed(7)
    a = torch.randn(4, 3, requires_grad=True)
    with pytorch.record() as t:
        v = a.clone()
        v[0] += 1.0  # the base gets a node (CopySlices) the op does not return
        loss = (nn.functional.dropout(v, 0.5) * (a > 0)).sum()
        log = _watch(loss)
        loss.backward()
    _assert_steps_match(t, log)
    assert "torch::autograd::CopySlices" in {t.node(f)["torch_node"] for f in t.functions}
    assert not t.cuts()  # the mask and the comparison carry no gradient: no cut
    aid = next(v for v in t.variables if t.node(v)["shape"] == (4, 3) and t.creator_of(v) < 0)
    np.testing.assert_array_equal(_array(t.grad_at(aid, len(t.steps) - 1)), a.grad.numpy())


class MyExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        r = a.exp() * 1.0
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r


def test_a_custom_function_is_one_node_named_by_its_class():
    x = torch.tensor([0.5, -0.25], requires_grad=True)
    with pytorch.record() as t:
        out = (MyExp.apply(x) * 2).sum()
        log = _watch(out)
        out.backward()
    _assert_steps_match(t, log)
    custom = [f for f in t.functions if t.node(f)["op"] == "MyExp"]
    assert len(custom) == 1
    assert t.node(custom[0])["torch_node"] == "MyExpBackward"
    assert not [f for f in t.functions if t.node(f)["op"] == "exp"]  # its inside is not a node
    (xid,) = t.graph.predecessors(custom[0])
    np.testing.assert_array_equal(_array(t.grad_at(xid, len(t.steps) - 1)), x.grad.numpy())


def test_detach_data_and_no_grad_are_cuts_named_by_their_op():
    torch.manual_seed(2)
    w1 = nn.Parameter(torch.randn(3))
    w2 = nn.Parameter(torch.randn(3))
    w3 = nn.Parameter(torch.randn(3))
    w4 = nn.Parameter(torch.randn(3))
    with pytorch.record() as t:
        h = (w1 * 2).detach()
        with torch.no_grad():
            q = w3 * 5
        loss = (h * w2).sum() + (q * w4).sum() + (w2.data * w4).sum()
        log = _watch(loss)
        loss.backward()
    _assert_steps_match(t, log)
    assert w1.grad is None and w3.grad is None
    cuts = t.cuts()
    assert len(cuts) == 3
    cut_ops = sorted(t.node(t.creator_of(v))["op"] for v in cuts)
    assert cut_ops == ["detach", "detach", "mul"]  # .data is torch's detach too
    for v in cuts:
        assert t.node(t.creator_of(v))["torch_node"] is None
    last = len(t.steps) - 1
    for p in (w2, w4):
        (vid,) = [v for v in t.variables if t.node(v)["parameter"] and _same_leaf(t, v, p)]
        np.testing.assert_array_equal(_array(t.grad_at(vid, last)), p.grad.numpy())
    view = view_for_root(t, t.backward_roots[0], 0)
    assert view.detached()  # the history behind the cuts is drawn, not stepped through
    w1_node = next(v for v in t.parameters() if _same_leaf(t, v, w1))
    assert w1_node in view.detached() and t.grad_at(w1_node, last) is None


def _same_leaf(t, vid, p):
    value = t.value_at(vid, -1)
    return value is not None and np.array_equal(value.array, p.detach().numpy())


def test_a_double_backward_and_a_retained_graph_are_passes():
    x = torch.tensor([0.7, -0.4], requires_grad=True)
    with pytorch.record() as t:
        y = (x**3).sum()
        log1 = _watch(y)
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        total = g.sum()
        log2 = _watch(total)
        total.backward(retain_graph=True)
        first = x.grad.clone()
        total.backward()
    assert len(t.backward_roots) == 3
    _assert_steps_match(t, log1, backward_pass=0)
    # the gradient graph made during pass 0 is forward steps of that pass
    made = [s for s in t.steps if s.phase == "forward" and s.during_backward == 0]
    assert made
    n = len(log2) // 2
    _assert_steps_match(t, log2[:n], backward_pass=1)
    _assert_steps_match(t, log2[n:], backward_pass=2)
    xid = next(v for v in t.variables if t.node(v)["shape"] == (2,) and t.creator_of(v) < 0)
    pass1_end = max(s.index for s in t.steps if s.backward_pass == 1)
    np.testing.assert_array_equal(_array(t.grad_at(xid, pass1_end)), first.numpy())
    np.testing.assert_array_equal(_array(t.grad_at(xid, len(t.steps) - 1)), x.grad.numpy())


def test_a_checkpoint_recomputes_its_forward_inside_the_pass():
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(6)
    lin = nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    with pytorch.record() as t:
        y = checkpoint(lambda a: torch.tanh(lin(a)), x, use_reentrant=False).sum()
        log = _watch(y)
        y.backward()
    _assert_steps_match(t, log)
    again = [s.op for s in t.steps if s.phase == "forward" and s.during_backward == 0]
    assert again == ["t", "linear", "tanh"]
    xid = next(v for v in t.variables if t.node(v)["shape"] == (2, 3) and t.creator_of(v) < 0)
    np.testing.assert_array_equal(_array(t.grad_at(xid, len(t.steps) - 1)), x.grad.numpy())


def test_a_training_loop_shows_the_optimizer_and_zero_grad_between_passes():
    torch.manual_seed(3)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 6), torch.tensor([0, 1, 2, 0])
    losses = []
    weights = []  # fc2.weight as each iteration's forward read it
    with pytorch.record() as t:
        for _ in range(3):
            opt.zero_grad()
            weights.append(model.fc2.weight.detach().numpy().copy())
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert len(t.backward_roots) == 3
    vid = _param_node(t, "fc2.weight")
    for k, root in enumerate(t.backward_roots):
        end = max(s.index for s in t.steps if s.backward_pass == k)
        np.testing.assert_allclose(_array(t.value_at(root, end)), losses[k])
        # the iteration's first step: the weights the optimizer left, no gradient (zero_grad)
        before = max(
            [s.index for s in t.steps if s.phase == "backward" and s.backward_pass == k - 1],
            default=-1,
        )
        start = before + 1
        assert t.steps[start].phase == "forward"
        if k:
            assert t.grad_at(vid, start) is None
        np.testing.assert_array_equal(_array(t.value_at(vid, start)), weights[k])
        np.testing.assert_array_equal(_array(t.grad_at(vid, end)), _torch_grad_of_pass(t, k))
    np.testing.assert_array_equal(
        _array(t.grad_at(vid, len(t.steps) - 1)), model.fc2.weight.grad.numpy()
    )


def test_a_forgotten_zero_grad_shows_as_a_carried_gradient():
    from autodiff.trace import NodeState

    w = nn.Parameter(torch.tensor([1.0, -2.0]))
    with pytorch.record() as t:
        for _ in range(2):
            (w * w).sum().backward()  # no zero_grad: .grad sums both passes
    (vid,) = t.parameters()
    second = min(s.index for s in t.steps if s.backward_pass == 1)
    first_forward = max(s.index for s in t.steps if s.phase == "forward")
    assert t.state_at(vid, first_forward) is NodeState.GRAD_CARRIED
    assert t.grad_fate(vid, first_forward).adder == 1
    np.testing.assert_array_equal(_array(t.grad_at(vid, len(t.steps) - 1)), w.grad.numpy())
    np.testing.assert_array_equal(_array(t.grad_at(vid, second - 1)), w.grad.numpy() / 2)


def _torch_grad_of_pass(t, k):
    """fc2.weight's gradient at the end of pass k: what TBackward0 of fc2 produced."""
    vid = _param_node(t, "fc2.weight")
    (step,) = [s for s in t.steps if s.backward_pass == k and s.inputs == (vid,) and s.op == "t"]
    return _array(step.input_grads[0])


def test_a_backward_that_fails_ends_its_pass():
    x = torch.randn(3, requires_grad=True)
    with pytorch.record() as t:
        once = (x * 3).sum()
        once.backward()
        with pytest.raises(RuntimeError, match="second time"):
            once.backward()  # the graph was freed: torch fails after its first node
        again = (x * 4).sum()
        log = _watch(again)
        again.backward()
    assert len(t.backward_roots) == 3
    assert [s.op for s in t.steps if s.phase == "backward" and s.backward_pass == 1] == ["sum"]
    _assert_steps_match(t, log, backward_pass=2)
    (xid,) = [v for v in t.variables if t.creator_of(v) < 0 and not t.node(v)["constant"]]
    np.testing.assert_array_equal(_array(t.grad_at(xid, len(t.steps) - 1)), x.grad.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 7.0, np.float32))


def test_large_values_are_summarised_and_small_ones_copied():
    x = torch.randn(50, 50, requires_grad=True)
    with pytorch.record(max_array_size=100) as t:
        y = (x * 2).sum()
        y.backward()
    fwd = next(s for s in t.steps if s.phase == "forward" and s.op == "mul")
    assert fwd.values[0].array is None
    assert fwd.values[0].max == pytest.approx(float((x.detach() * 2).max()))
    total = next(s for s in t.steps if s.phase == "forward" and s.op == "sum")
    assert total.values[0].array is not None
    doubled = (x.detach() * 2).numpy()
    assert fwd.values[0].mean == pytest.approx(float(doubled.mean()), abs=1e-5)
    assert fwd.values[0].norm == pytest.approx(float(np.linalg.norm(doubled)), rel=1e-5)
    assert fwd.values[0].shape == (50, 50) and fwd.values[0].dtype == "float32"


def test_a_large_parameter_changed_through_data_shows_its_new_statistics():
    w = nn.Parameter(torch.randn(40, 40))
    means = []
    with pytorch.record(max_array_size=10) as t:
        for _ in range(2):
            means.append(float(w.detach().mean()))
            (w.t() * 2).sum().backward()
            w.data.add_(1.0)  # no new version of w: only its numbers tell
            w.grad = None
    (vid,) = t.parameters()
    # the second iteration's first step: right after pass 0's last
    second = 1 + max(s.index for s in t.steps if s.phase == "backward" and s.backward_pass == 0)
    assert t.steps[second].phase == "forward"
    assert t.value_at(vid, 0).mean == pytest.approx(means[0], abs=1e-5)
    assert t.value_at(vid, second).mean == pytest.approx(means[1], abs=1e-5)
    assert means[1] == pytest.approx(means[0] + 1, abs=1e-5)
    transposed = next(s for s in t.steps if s.op == "t").values[0]
    assert transposed.mean == pytest.approx(means[0], abs=1e-5)  # shared with w's
    with pytorch.record(max_array_size=10) as t:
        first = w.t() * 1
        w.data.add_(1.0)  # between two reads of the same numbers
        second = w.t() * 1
    values = [s.values[0].mean for s in t.steps if s.op == "t"]
    assert values == pytest.approx(
        [float(first.detach().mean()), float(second.detach().mean())], abs=1e-5
    )
    assert values[1] == pytest.approx(values[0] + 1, abs=1e-5)


def test_a_large_value_with_nan_or_in_half_precision_is_summarised_with_care():
    x = torch.randn(30, 30, requires_grad=True)
    with pytorch.record(max_array_size=10) as t:
        y = x.log()  # NaN where x < 0
        z = x.to(torch.bfloat16) * 3
    log = next(s for s in t.steps if s.op == "log").values[0]
    assert log.nan == int((x.detach() < 0).sum()) and log.array is None
    np.testing.assert_allclose(log.max, float(y.detach().nan_to_num(-1e9).max()), rtol=1e-6)
    half = next(s for s in t.steps if s.op == "mul").values[0]
    assert half.dtype == "float32" and half.array is None  # numpy has no bfloat16
    assert half.max == pytest.approx(float(z.detach().float().max()))


def test_nothing_is_recorded_after_the_block_and_no_tensor_is_held():
    import gc
    import weakref

    x = torch.randn(3, requires_grad=True)
    with pytorch.record() as t:
        y = (x * 2).sum()
    ref = weakref.ref(y)
    y.backward()  # after the block: not recorded
    assert not [s for s in t.steps if s.phase == "backward"]
    del y
    gc.collect()
    assert ref() is None


def test_an_error_in_the_block_leaves_torch_as_it_was():
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="size"), pytorch.record() as t:
        y = x * 2
        y + torch.randn(4)
    assert _get_current_dispatch_mode() is None
    n = len(t.steps)
    nn.Linear(3, 1)(y).sum().backward()  # no module hook, no node hook of the recording left
    assert len(t.steps) == n and len(t.scopes()) == 1


def test_the_viewer_reads_and_saves_a_torch_trace(tmp_path):
    from viewer.model.document.document import Document

    torch.manual_seed(4)
    model = Net()
    with pytorch.record() as t:
        loss = model(torch.randn(2, 2, 4, 4)).sum()
        loss.backward()
    doc = Document()
    doc.load_trace(t, "torch")
    assert doc.trace is t and doc.scene.n_nodes == len(t.variables) + len(t.functions)
    view = view_for_root(t, t.backward_roots[0], 0)
    doc.load_trace(view, "one pass")
    assert doc.scene is not None
    doc.playback.seek(len(view.steps) - 1)
    t.to_json(tmp_path / "torch.json")
    from autodiff.trace import load

    again = load(tmp_path / "torch.json")
    assert len(again.steps) == len(t.steps)
    fid = next(f for f in t.functions if t.node(f)["op"] == "conv2d")
    assert again.function_params(fid)["torch_node"] == "ConvolutionBackward0"
    assert "conv2d" in t.to_dot()
    # torch's own node name travels into the exports, from the recording and from a saved one
    assert "ConvolutionBackward0" in t.to_dot() and "ConvolutionBackward0" in again.to_dot()
    again.to_graphml(tmp_path / "torch.graphml")
    import networkx as nx

    exported = nx.read_graphml(tmp_path / "torch.graphml")
    assert exported.nodes[str(fid)]["torch_node"] == "ConvolutionBackward0"
    from autodiff.trace import trace_from_npz, trace_to_npz

    trace_to_npz(t, tmp_path / "torch.npz")  # what a script's worker sends
    assert len(trace_from_npz(tmp_path / "torch.npz").steps) == len(t.steps)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.compile's own imports
def test_torch_compile_is_recorded_as_its_eager_ops_with_a_note():
    torch.manual_seed(5)
    model = MLP()
    compiled = torch.compile(model)
    x = torch.randn(2, 6)
    with pytorch.record() as t, pytest.warns(UserWarning, match="global hooks"):
        loss = compiled(x).sum()
        log = _watch(loss)
        loss.backward()
    _assert_steps_match(t, log)
    _assert_final_grads(t, model)
    assert len(t.notes) == 1 and "torch.compile" in t.notes[0]
    scopes = {t.node(f)["scope"] for f in t.functions}
    assert "MLP/fc1" in scopes  # the wrapper is no scope


def test_ops_on_another_thread_are_not_recorded():
    import threading

    x = torch.randn(3, requires_grad=True)
    other = []
    with pytorch.record() as t:
        worker = threading.Thread(target=lambda: other.append((x * 5).sum()))
        worker.start()
        worker.join()
        (x * 2).sum().backward()
    assert [s.op for s in t.steps if s.phase == "forward"] == ["mul", "sum"]
    assert other[0].grad_fn is not None


# ----------------------------------------------------------------------------- torch internals
def test_the_torch_internals_the_recorder_uses_still_answer():
    x = torch.randn(3, requires_grad=True)
    y = x.exp()
    node = y.grad_fn
    assert _internals.current_autograd_node() is None
    assert _internals.graph_task_id() == -1
    view = x[1:]
    assert _internals.view_base(view) is x and _internals.view_base(x) is None
    _internals.tag_node(node, 7)
    assert _internals.node_tag(y.grad_fn) == 7
    assert _internals.output_count(node) == 1
    assert _internals.output_count(torch.randn(4, requires_grad=True).split(2)[0].grad_fn) == 2
    acc = node.next_functions[0][0]
    assert _internals.accumulated_leaf(acc) is x
    assert _internals.accumulated_leaf(node) is None
    assert _internals.forward_class_name(MyExp.apply(x).grad_fn) == "MyExp"
    assert _internals.forward_class_name(node) is None
    w = torch.randn(3, 2, 3, 3, requires_grad=True)
    saved = dict(_internals.saved(nn.functional.conv2d(torch.randn(1, 2, 5, 5), w).grad_fn))
    assert saved["saved_weight"] == (3, 2, 3, 3) and saved["saved_input"] == (1, 2, 5, 5)
    assert saved["stride"] == (1, 1) and "weight_sym_sizes" not in saved
    events = []

    def hook(grad_inputs, grad_outputs):
        events.append(("hook", _internals.current_autograd_node() is not None))
        events.append(("task", _internals.graph_task_id() >= 0))
        _internals.queue_end_of_pass(lambda: events.append(("end", None)))

    node.register_hook(hook)
    # inside a dispatch mode, grad_fn is set only after the op returns
    inside = []

    def handle(func, args, kwargs):
        out = func(*args, **kwargs)
        inside.append(out.grad_fn if isinstance(out, torch.Tensor) else None)
        return out

    with _internals.DispatchMode(handle):
        z = x.sin()
    assert inside == [None] and z.grad_fn is not None
    y.sum().backward()
    assert events == [("hook", True), ("task", True), ("end", None)]
    calls = []
    handles = _internals.module_hooks(
        lambda m, a: calls.append(("pre", type(m).__name__)),
        lambda m, a, o: calls.append(("post", type(m).__name__)),
    )
    try:
        nn.Linear(2, 2)(torch.randn(1, 2))
    finally:
        for h in handles:
            h.remove()
    assert calls == [("pre", "Linear"), ("post", "Linear")]


# ----------------------------------------------------------------------------- imports
def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_without_torch_the_import_names_the_extra():
    out = _python(
        "import sys\nsys.modules['torch'] = None\n"
        "try:\n    from autodiff.trace import pytorch\n"
        "except ImportError as e:\n    print('ImportError:', e)\n"
    )
    assert out.returncode == 0, out.stderr
    assert 'pip install "autodiff-viewer[torch]"' in out.stdout


def test_the_runtime_never_imports_torch_unless_the_program_does():
    out = _python(
        "import sys\nimport autodiff.trace, autodiff.trace.formats, viewer.model, viewer.app\n"
        "print('torch' in sys.modules)"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_graph_an_earlier_recording_made_is_history_from_before_the_next_one():
    # a hidden state carried from one recording into the next (as a script's recording,
    # one per pass, meets it): its nodes are not the new recording's, the tensor is a leaf
    w = torch.nn.Parameter(torch.ones(2))
    with pytorch.record() as first:
        h = w * 2
    with pytorch.record() as t:
        loss = (h * 3).sum()
        log = _watch(loss)
        loss.backward()
    assert [t.node(s.function)["torch_node"] for s in first.steps] == ["MulBackward0"]
    # torch runs the earlier graph's node last; this recording has only its own nodes
    assert [name for name, _, _ in log] == ["SumBackward0", "MulBackward0", "MulBackward0"]
    _assert_steps_match(t, log[:2])
    (mul,) = [s for s in t.steps if s.phase == "forward" and s.op == "mul"]
    assert t.node(mul.inputs[0])["shape"] == (2,) and t.creator_of(mul.inputs[0]) < 0
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 6.0])
