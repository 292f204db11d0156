"""autodiff.trace.pytorch.record(statistics_only=True): torch's backward graph, order and
gradients' statistics, without forward values.

Each test runs a torch program once, with the recorder and with torch's own hooks on every
node in the same run, and compares the trace with what torch reported: the order, each
step's gradients' statistics, the leaves' ``.grad`` after each pass; and checks that no
forward value is made up. Also: what the values recording's shortcuts for speed keep (its
dispatch mode off during a backward pass that runs no forward op)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from autodiff.trace import pytorch  # noqa: E402
from autodiff.trace.pytorch._ops import node_op_name  # noqa: E402


def _watch(*roots):
    """torch's own report: hooks on every node behind ``roots`` (AccumulateGrad aside), what
    torch ran, in order, with copies of the grad_outputs and grad_inputs."""
    log = []
    seen = set()
    todo = [r.grad_fn for r in roots if r.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(id(node))
        node.register_hook(_hook(log, node.name()))
        todo.extend(p for p, _ in node.next_functions)
    return log


def _hook(log, name):
    def copies(gs):
        return [None if g is None else g.detach().numpy().copy() for g in gs]

    def hook(grad_inputs, grad_outputs):
        log.append((name, copies(grad_outputs), copies(grad_inputs)))

    return hook


def _assert_stats(snap, a, what=""):
    """``snap`` holds the statistics of array ``a``, and no copy of it."""
    assert snap is not None, what
    assert snap.array is None, what
    assert snap.shape == a.shape, what
    finite = a[np.isfinite(a)].astype(np.float64)
    assert (snap.nan, snap.inf) == (int(np.isnan(a).sum()), int(np.isinf(a).sum())), what
    got = [snap.min, snap.max, snap.mean, snap.norm]
    want = [finite.min(), finite.max(), finite.mean(), np.linalg.norm(finite)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=what)


def _assert_steps_match(t, log, backward_pass=None):
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
                _assert_stats(mine, theirs, name)
        produced = [g for g in gxs if g is not None]
        recorded = [g for g in s.input_grads if g is not None]
        assert len(recorded) == len(produced), name
        for mine, theirs in zip(recorded, produced, strict=True):
            _assert_stats(mine, theirs, name)


def _param(t, name):
    (vid,) = [v for v in t.parameters() if t.node(v)["name"] == name]
    return vid


def _assert_no_values(t):
    """No forward value anywhere: none recorded, none made up."""
    for s in t.steps:
        if s.phase == "forward":
            assert all(v is None for v in s.values), s
    last = len(t.steps) - 1
    for v in t.variables:
        assert t.value_at(v, last) is None, v


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 8)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        return self.out(torch.tanh(self.fc2(torch.relu(self.fc1(x)))))


def test_an_mlp_step_is_torchs_order_and_gradients_statistics_with_no_values():
    torch.manual_seed(0)
    model = MLP()
    x, y = torch.randn(5, 6), torch.tensor([0, 2, 1, 1, 0])
    with pytorch.record(statistics_only=True) as t:
        loss = nn.functional.cross_entropy(model(x), y)
        log = _watch(loss)
        loss.backward()
    assert t.values_kept is False
    assert any("statistics only" in n for n in t.notes)
    _assert_steps_match(t, log)
    _assert_no_values(t)
    last = len(t.steps) - 1
    for name, p in model.named_parameters():
        _assert_stats(t.grad_at(_param(t, name), last), p.grad.numpy(), name)
    (root,) = t.backward_roots
    assert {t.node(f)["op"] for f in t.functions} >= {
        "linear", "relu", "tanh", "log_softmax", "nll_loss"
    }  # fmt: skip
    assert {t.node(v)["name"] for v in t.parameters()} == {n for n, _ in model.named_parameters()}
    scopes = {t.node(f)["scope"] for f in t.functions if t.node(f)["op"] == "linear"}
    assert scopes == {"MLP/fc1", "MLP/fc2", "MLP/out"}
    loss_fn = next(f for f in t.functions if t.node(f)["op"] == "nll_loss")
    assert t.node(loss_fn)["scope"] == ""  # made outside the model
    assert t.node(root)["shape"] == () and t.node(root)["dtype"] == "float32"


def test_the_values_option_records_values_the_statistics_option_none():
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(5, 6)
    with pytorch.record() as kept:
        model(x).sum().backward()
    assert kept.values_kept is True
    assert any(v is not None for s in kept.steps if s.phase == "forward" for v in s.values)


def test_a_diamond_runs_in_torchs_order_and_a_fan_in_shows_the_summed_gradient():
    x = torch.tensor([0.3, -1.2, 2.0], requires_grad=True)
    with pytorch.record(statistics_only=True) as t:
        m = x.exp().sin().cos()
        s = x * 3
        out = (m + s).sum()
        log = _watch(out)
        out.backward()
    _assert_steps_match(t, log)
    assert [s.op for s in t.steps if s.phase == "backward"] == [
        "sum", "add", "mul", "cos", "sin", "exp"
    ]  # fmt: skip
    (xid,) = [v for v in t.variables if t.creator_of(v) < 0 and t.node(v)["shape"] == (3,)]
    _assert_stats(t.grad_at(xid, len(t.steps) - 1), x.grad.numpy(), "x")


def test_a_training_loop_shows_each_pass_and_zero_grad_between_them():
    torch.manual_seed(3)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 6), torch.tensor([0, 1, 2, 0])
    grads = []
    logs = []
    with pytorch.record(statistics_only=True) as t:
        for _ in range(3):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            logs.append(_watch(loss))
            loss.backward()
            grads.append(model.fc2.weight.grad.numpy().copy())
            opt.step()
    assert len(t.backward_roots) == 3
    vid = _param(t, "fc2.weight")
    for k in range(3):
        _assert_steps_match(t, logs[k], backward_pass=k)
        end = max(s.index for s in t.steps if s.backward_pass == k)
        _assert_stats(t.grad_at(vid, end), grads[k], f"pass {k}")
        if k:  # zero_grad() emptied it before the pass's graph
            first = min(s.index for s in t.steps if s.backward_pass == k)
            start = max(s.index for s in t.steps if s.backward_pass == k - 1) + 1
            assert t.steps[start].phase == "forward" and start < first
            assert t.grad_at(vid, start) is None
    _assert_no_values(t)


def test_a_forgotten_zero_grad_shows_the_summed_gradient():
    w = nn.Parameter(torch.tensor([1.0, -2.0]))
    with pytorch.record(statistics_only=True) as t:
        for _ in range(2):
            (w * w).sum().backward()
    (vid,) = t.parameters()
    second = min(s.index for s in t.steps if s.backward_pass == 1)
    _assert_stats(t.grad_at(vid, second - 1), w.grad.numpy() / 2, "first pass")
    _assert_stats(t.grad_at(vid, len(t.steps) - 1), w.grad.numpy(), "both passes")


def test_autograd_grad_and_a_retained_graph_are_passes():
    x = torch.tensor([0.5, 1.5], requires_grad=True)
    with pytorch.record(statistics_only=True) as t:
        y = (x * x).sin().sum()
        log = _watch(y)
        (gx,) = torch.autograd.grad(y, x, retain_graph=True)
        y.backward()
    assert len(t.backward_roots) == 2
    assert t.backward_roots[0] == t.backward_roots[1]  # the same graph, run twice
    _assert_steps_match(t, log[: len(log) // 2], backward_pass=0)
    _assert_steps_match(t, log[len(log) // 2 :], backward_pass=1)
    mul = [s for s in t.steps if s.phase == "backward" and s.op == "mul"]
    _assert_stats(mul[0].input_grads[0], (gx / 2).numpy(), "grad's pass")
    (xid,) = [v for v in t.variables if t.creator_of(v) < 0]
    _assert_stats(t.grad_at(xid, len(t.steps) - 1), x.grad.numpy(), "x")


def test_nan_and_inf_gradients_are_counted():
    x = torch.tensor([0.0, 1.0, -1.0, 4.0], requires_grad=True)
    with pytorch.record(statistics_only=True) as t:
        y = x.sqrt().sum()  # 1 / (2 sqrt(x)): inf at 0, nan at -1
        log = _watch(y)
        y.backward()
    _assert_steps_match(t, log)
    (xid,) = [v for v in t.variables if t.creator_of(v) < 0]
    g = t.grad_at(xid, len(t.steps) - 1)
    assert (g.nan, g.inf) == (1, 1)
    assert any(s.nonfinite for s in t.steps if s.phase == "backward")


def test_a_cnn_names_its_nodes_as_the_ops_a_user_called():
    torch.manual_seed(1)
    net = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(2 * 3 * 3, 4),
    )  # fmt: skip
    x = torch.randn(3, 1, 8, 8)
    with pytorch.record(statistics_only=True) as t:
        out = nn.functional.cross_entropy(net(x), torch.tensor([0, 1, 3]))
        log = _watch(out)
        out.backward()
    _assert_steps_match(t, log)
    ops = {t.node(f)["op"]: t.node(f)["scope"] for f in t.functions}
    assert ops["conv2d"] == "Sequential/0"
    assert ops["batch_norm"] == "Sequential/1"
    assert ops["max_pool2d"] == "Sequential/3"
    assert ops["linear"] == "Sequential/5"
    conv = next(f for f in t.functions if t.node(f)["op"] == "conv2d")
    (out_id,) = t.graph.successors(conv)
    assert t.node(out_id)["shape"] == (3, 2, 6, 6)


def test_node_names_map_to_the_ops_users_call():
    assert node_op_name("AddmmBackward0") == "linear"
    assert node_op_name("MaxPool2DWithIndicesBackward0") == "max_pool2d"
    assert node_op_name("NativeBatchNormBackward0") == "batch_norm"
    assert node_op_name("ConvolutionBackward0", 5) == "conv3d"
    assert node_op_name("ConvolutionBackward0", 4, transposed=True) == "conv_transpose2d"
    assert node_op_name("torch::autograd::CopySlices") == "copy_slices"
    assert node_op_name("ExpBackward0") == "exp"


def test_nothing_is_recorded_after_the_block_and_torch_is_as_it_was():
    backward, grad = torch.autograd.backward, torch.autograd.grad
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytorch.record(statistics_only=True) as t:
        assert torch.autograd.backward is not backward
        (x * 2).sum().backward()
    assert torch.autograd.backward is backward and torch.autograd.grad is grad
    steps = len(t.steps)
    (x * 3).sum().backward()
    assert len(t.steps) == steps and len(t.backward_roots) == 1
    with pytest.raises(RuntimeError), pytorch.record(statistics_only=True):
        raise RuntimeError("the program failed")
    assert torch.autograd.backward is backward and torch.autograd.grad is grad


def test_a_backward_on_another_thread_is_not_recorded():
    import threading

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytorch.record(statistics_only=True) as t:
        worker = threading.Thread(target=lambda: (x * 2).sum().backward())
        worker.start()
        worker.join()
    assert t.backward_roots == [] and x.grad is not None


def test_the_torch_internals_the_statistics_recorder_uses_still_answer():
    from autodiff.trace.pytorch import _internals as ti

    x = torch.randn(2, 3, requires_grad=True)
    y = (x * 2).sum()
    mul = y.grad_fn.next_functions[0][0]
    assert ti.output_metadata(mul) == [((2, 3), torch.float32)]
    acc = mul.next_functions[0][0]
    assert type(acc) is ti.ACCUMULATE_GRAD and ti.accumulated_leaf(acc) is x
    original = torch.autograd.backward
    calls = []

    def around(call, is_grad, roots, *args, **kwargs):
        calls.append((roots, is_grad))
        return call(roots, *args, **kwargs)

    restore = ti.wrap_backward(around)
    try:
        y.backward(retain_graph=True)  # Tensor.backward finds the wrapper
        torch.autograd.grad(y, x)
    finally:
        restore()
    assert [(r is y, is_grad) for r, is_grad in calls] == [(True, False), (True, True)]
    assert torch.autograd.backward is original


@pytest.mark.parametrize("statistics_only", [False, True])
def test_a_transposes_summarised_gradient_has_its_own_shape(statistics_only):
    torch.manual_seed(2)
    lin = nn.Linear(5, 3)
    with pytorch.record(max_array_size=0, statistics_only=statistics_only) as t:
        lin(torch.randn(4, 5)).sum().backward()
    (step,) = [s for s in t.steps if s.phase == "backward" and s.op == "t"]
    assert step.output_grads[0].shape == (5, 3)
    _assert_stats(step.input_grads[0], lin.weight.grad.numpy(), "t")
    weight = _param(t, "weight")
    _assert_stats(t.grad_at(weight, len(t.steps) - 1), lin.weight.grad.numpy(), "weight")


def test_gradients_summarised_early_when_many_are_held(monkeypatch):
    from autodiff.trace.pytorch import _gradients

    monkeypatch.setattr(_gradients, "HELD_ELEMENTS", 0)  # summarise after every step
    torch.manual_seed(4)
    model = MLP()
    x, y = torch.randn(5, 6), torch.tensor([0, 2, 1, 1, 0])
    with pytorch.record(statistics_only=True) as t:
        loss = nn.functional.cross_entropy(model(x), y)
        log = _watch(loss)
        loss.backward()
    _assert_steps_match(t, log)
    last = len(t.steps) - 1
    for name, p in model.named_parameters():
        _assert_stats(t.grad_at(_param(t, name), last), p.grad.numpy(), name)


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(300, 70),
        lambda: torch.randn(70, 300).t(),  # a transpose: read as its memory
        lambda: torch.randn(4, 30, 20, 8).permute(0, 3, 1, 2),
        lambda: torch.randn(100, 300)[:, :200],  # a slice: not one block of memory
        lambda: torch.randn(300, 70, dtype=torch.float64),
        lambda: torch.randn(300, 70, dtype=torch.bfloat16),
    ],
)
def test_a_large_tensors_statistics_whatever_its_layout(make):
    from autodiff.trace.pytorch._values import statistics

    t = make()
    a = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    _assert_stats(statistics(t), a, str(t.dtype))
    t = t.clone()  # the same layout
    every_7th = torch.arange(t.numel()).reshape(t.shape) % 7 == 0
    t.masked_fill_(every_7th, float("nan"))
    t[(0,) * t.ndim] = float("-inf")
    t[(1,) * t.ndim] = float("inf")
    a = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    _assert_stats(statistics(t), a, "with NaN and Inf")


@pytest.mark.parametrize("reentrant", [False, True])
def test_a_backward_that_recomputes_forward_ops_is_recorded_with_them(reentrant):
    # the values recording runs a backward pass with its dispatch mode off (its arithmetic
    # is the steps), except where the pass runs forward ops of the program: a checkpoint's
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(6)
    lin = nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    with pytorch.record() as t:
        y = checkpoint(lambda a: torch.tanh(lin(a)), x, use_reentrant=reentrant).sum()
        y.backward()
    again = [s.op for s in t.steps if s.phase == "forward" and s.during_backward == 0]
    assert again == ["t", "linear", "tanh"]


def test_a_values_recording_leaves_torch_as_it_was():
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    backward, grad = torch.autograd.backward, torch.autograd.grad
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytorch.record() as t:
        (x * 2).sum().backward()
        assert _get_current_dispatch_mode() is not None  # back on after the pass
        (x * 3).sum().backward()
    assert len(t.backward_roots) == 2 and len([s for s in t.steps if s.op == "mul"]) == 4
    assert _get_current_dispatch_mode() is None
    assert torch.autograd.backward is backward and torch.autograd.grad is grad


def test_one_step_feeding_two_fresh_leaves_shows_both_grads(monkeypatch):
    from autodiff.trace.pytorch import _gradients

    monkeypatch.setattr(_gradients, "HELD_ELEMENTS", 0)
    a = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = torch.tensor([0.5, 4.0, -1.0], requires_grad=True)
    with pytorch.record(statistics_only=True) as t:
        y = (a * b).exp().sum()
        log = _watch(y)
        y.backward()
    _assert_steps_match(t, log)
    last = len(t.steps) - 1
    leaves = [v for v in t.variables if t.creator_of(v) < 0]
    assert len(leaves) == 2
    got = sorted([t.grad_at(v, last).norm for v in leaves])
    np.testing.assert_allclose(got, sorted([float(a.grad.norm()), float(b.grad.norm())]), 1e-6)


def test_a_pass_worth_of_statistics_at_once_are_each_tensors_own():
    # statistics_of (a pass's gradients, summarised together: small ones in one numpy batch,
    # dense ones by torch's reductions and numpy's dot) gives each tensor its own statistics,
    # whatever the mix of sizes, layouts, dtypes and non-finite numbers
    from autodiff.trace.pytorch._values import statistics_of

    torch.manual_seed(8)
    with_nan = torch.randn(40, 50)
    with_nan[3, 4] = float("nan")
    with_inf = torch.randn(7)
    with_inf[2] = float("-inf")
    ts = [
        torch.tensor(2.5),  # a seed
        torch.randn(64, 10),
        torch.randn(256, 30).t(),  # a weight's gradient, transposed
        torch.randn(300, dtype=torch.float64),
        torch.randn(4, 30, 20, 8).permute(0, 3, 1, 2),
        torch.randn(100, 300)[:, :200],  # not one block of memory
        with_nan,
        with_inf,
        torch.randn(2000, dtype=torch.float64),
        torch.randn(1500, dtype=torch.bfloat16),
        torch.full((3000,), 1e30),  # squares that overflow float32
        torch.randn(5, requires_grad=True),
    ]
    snaps = statistics_of(ts)
    assert len(snaps) == len(ts)
    for i, (snap, t) in enumerate(zip(snaps, ts, strict=True)):
        t = t.detach()
        a = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
        _assert_stats(snap, a, f"tensor {i}")


def test_scopes_of_ops_between_modules_and_of_a_module_with_two_arguments():
    # a module boundary tags the nodes made since the last one: at a module's entry those
    # its arguments reach (made in the scope around it), at its exit those its output reaches
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, a, b):
            return self.lin(a) * b

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.two = Two()

        def forward(self, x):
            return self.two(torch.tanh(x), x.exp())  # both made in Outer, before Two runs

    torch.manual_seed(9)
    model = Outer()
    x = torch.randn(2, 3, requires_grad=True)
    with pytorch.record(statistics_only=True) as t:
        model(x).sum().backward()
    scopes = {t.node(f)["op"]: t.node(f)["scope"] for f in t.functions}
    assert scopes["tanh"] == "Outer" and scopes["exp"] == "Outer"
    assert scopes["linear"] == "Outer/two/lin"
    assert scopes["mul"] == "Outer/two"
    assert scopes["sum"] == ""


def test_a_pass_worth_of_statistics_at_once_in_edge_cases_are_each_tensors_own():
    # statistics_of's fast paths (a contiguous tensor's flat view, the small ones' numpy
    # batch) give what statistics() gives each tensor alone: empty tensors (one transposed),
    # NaN only, Inf among small ones, integers, sizes around the small batch's bound
    from autodiff.trace.pytorch._values import NUMPY_UP_TO, statistics, statistics_of

    torch.manual_seed(9)
    ts = [
        torch.zeros(0),
        torch.zeros(0, 5),
        torch.zeros(5, 0).t(),
        torch.full((2000,), float("nan")),
        torch.full((10,), float("nan")),
        torch.tensor([1.0, float("inf"), -2.0]),
        torch.arange(3000, dtype=torch.int64),
        torch.arange(7, dtype=torch.int32),
        torch.randn(1),
        torch.randn(NUMPY_UP_TO),
        torch.randn(NUMPY_UP_TO + 1),
        torch.randn(64, 256),
    ]
    batched = statistics_of(ts)
    for i, (snap, t) in enumerate(zip(batched, ts, strict=True)):
        one = statistics(t)
        assert (snap.shape, snap.dtype, snap.array) == (one.shape, one.dtype, None), i
        assert (snap.nan, snap.inf) == (one.nan, one.inf), i
        got = [snap.min, snap.max, snap.mean, snap.norm]
        want = [one.min, one.max, one.mean, one.norm]
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True, err_msg=str(i))
        if t.numel() and t.is_floating_point() and bool(torch.isfinite(t).all()):
            _assert_stats(snap, t.numpy(), str(i))


def test_each_recorded_node_has_the_rows_its_pass_reads():
    # the rows a pass's nodes get (written in one loop, _add_nodes): a forward step each with
    # its node's inputs and outputs, generations one up from the inputs, the outputs in their
    # function's scope, shaped as the gradients torch passed them, and torch's node name
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(32, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(3)
    with pytorch.record(statistics_only=True) as t:
        for _ in range(2):
            opt.zero_grad()
            model(torch.randn(2, 1, 6, 6)).sum().backward()
            opt.step()
    forward = {s.function: s for s in t.steps if s.phase == "forward"}
    assert sorted(forward) == sorted(t.functions) and len(t.functions) == 2 * 6
    for f in t.functions:
        node, step = t.node(f), forward[f]
        row = t.tables._info[f]
        assert (step.inputs, step.outputs) == (row.inputs, row.outputs)
        ins = [t.node(v)["generation"] for v in step.inputs]
        assert node["generation"] == max(ins, default=0)
        for v in step.outputs:
            assert t.node(v)["generation"] == node["generation"] + 1
            assert t.node(v)["scope"] == node["scope"] and t.node(v)["dtype"] == "float32"
    names = [t.node(f)["torch_node"] for f in t.functions]
    assert names[:6] == names[6:] and "ConvolutionBackward0" in names
    scopes = {t.node(f)["op"]: t.node(f)["scope"] for f in t.functions}
    assert scopes["conv2d"] == "Sequential/0" and scopes["relu"] == "Sequential/1"
    for s in t.steps:
        if s.phase == "backward":
            for v, g in zip(t.tables._info[s.function].outputs, s.output_grads, strict=True):
                assert g is not None and g.shape == t.node(v)["shape"]
