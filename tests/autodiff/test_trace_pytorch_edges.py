"""autodiff.trace.pytorch, both recorders: which tensor each edge of a custom
``autograd.Function``'s node links (a plain tensor and a number among its arguments), and a
non-leaf's gradient kept by ``retain_grad()``.

As in test_trace_pytorch.py, each program runs once, with the recorder and torch's own hooks
in the same run, and the trace is compared with what torch reported: the gradients each step
produced, edge by edge, each leaf's ``.grad``, and a retained non-leaf's ``.grad`` after each
pass."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from test_trace_pytorch_statistics import _assert_stats, _watch  # noqa: E402

from autodiff.trace import NodeState, pytorch  # noqa: E402
from autodiff.trace.pytorch import _internals  # noqa: E402

RECORDERS = pytest.mark.parametrize("statistics_only", [False, True], ids=["values", "stats"])


def _assert_same(snap, a, statistics_only, what=""):
    """The trace's gradient ``snap`` is torch's ``a``: its copy, or its statistics."""
    if statistics_only:
        _assert_stats(snap, np.asarray(a), what)
    else:
        assert snap is not None, what
        np.testing.assert_array_equal(snap.array, a, err_msg=what)


def _inputs_by_slot(t, fid):
    edges = sorted((d["slot"], u) for u, _, d in t.graph.in_edges(fid, data=True))
    return [u for _, u in edges]


class ScaledMulAdd(torch.autograd.Function):
    """``(x * w + b) * scale``, called with a plain tensor first and a number in between: the
    last op of its forward is on a tensor the forward made, not on its arguments."""

    @staticmethod
    def forward(ctx, x, scale, w, b):
        ctx.save_for_backward(x, w)
        ctx.scale = scale
        return (x * w + b) * scale

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w * ctx.scale, None, g * x * ctx.scale, g * ctx.scale


class ScaledMulAddThenNorm(ScaledMulAdd):
    """The same, with one more op after the one that makes its output."""

    @staticmethod
    def forward(ctx, x, scale, w, b):
        out = ScaledMulAdd.forward(ctx, x, scale, w, b)
        ctx.norm = out.norm()
        return out


@RECORDERS
@pytest.mark.parametrize("fn", [ScaledMulAdd, ScaledMulAddThenNorm])
def test_a_custom_functions_edges_link_the_tensors_it_was_called_with(fn, statistics_only):
    torch.manual_seed(3)
    x = torch.randn(3)
    w = nn.Parameter(torch.randn(3))
    b = torch.randn(3, requires_grad=True)
    with pytorch.record(statistics_only=statistics_only) as t:
        y = fn.apply(x, 2.0, w, b)
        node = y.grad_fn
        out = (y * y).sum()
        log = _watch(out)
        out.backward()
    name = fn.__name__
    assert [n for n, _, _ in log] == ["SumBackward0", "MulBackward0", f"{name}Backward"]
    (fid,) = [f for f in t.functions if t.node(f)["op"] == name]
    assert t.node(fid)["torch_node"] == f"{name}Backward"
    assert {t.node(f)["op"] for f in t.functions} == {name, "mul", "sum"}
    assert not t.cuts()  # the ops its forward ran are not the program's
    # torch's edges: x (no producer), w, b; the recorded inputs by slot
    assert [p is None for p, _ in node.next_functions] == [True, False, False]
    ins = _inputs_by_slot(t, fid)
    if statistics_only:  # no input data recorded: the edges with a producer only
        plain, (wid, bid) = None, ins
        edge_of = [1, 2]
    else:
        plain, wid, bid = ins
        edge_of = [0, 1, 2]
        assert t.node(plain)["constant"]
        np.testing.assert_array_equal(t.value_at(plain, 0).array, x.numpy())
        np.testing.assert_array_equal(t.value_at(wid, 0).array, w.detach().numpy())
        np.testing.assert_array_equal(t.value_at(bid, 0).array, b.detach().numpy())
        (yid,) = t.graph.successors(fid)
        np.testing.assert_array_equal(t.value_at(yid, len(t.steps) - 1).array, y.detach())
    assert t.node(wid)["parameter"] and not t.node(bid)["parameter"]
    # each slot's gradient is what torch produced for that edge
    (step,) = [s for s in t.steps if s.phase == "backward" and s.function == fid]
    gxs = log[-1][2]
    assert len(step.input_grads) == len(edge_of)
    for slot, edge in enumerate(edge_of):
        _assert_same(step.input_grads[slot], gxs[edge], statistics_only, f"slot {slot}")
    last = len(t.steps) - 1
    _assert_same(t.grad_at(wid, last), w.grad.numpy(), statistics_only, "w")
    _assert_same(t.grad_at(bid, last), b.grad.numpy(), statistics_only, "b")


class SplitSign(torch.autograd.Function):
    """``2 a`` and ``|a| + 1``, the second marked non-differentiable."""

    @staticmethod
    def forward(ctx, a):
        magnitude = a.abs() + 1.0
        ctx.mark_non_differentiable(magnitude)
        return a * 2, magnitude

    @staticmethod
    def backward(ctx, g, _):
        return g * 2


def test_a_custom_functions_output_without_history_is_its_cut():
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    v = torch.tensor([3.0, 0.5], requires_grad=True)
    with pytorch.record() as t:
        s, m = SplitSign.apply(w)
        with torch.no_grad():
            _, m2 = SplitSign.apply(v)
        (s * m * m2).sum().backward()
    # each output without history shows as one cut made by the Function from its input, not
    # as the ops its forward ran
    cuts = t.cuts()
    assert sorted(t.node(t.creator_of(c))["op"] for c in cuts) == ["SplitSign", "SplitSign"]
    assert {t.node(f)["op"] for f in t.functions} == {"SplitSign", "mul", "sum"}
    for c, leaf in zip(sorted(cuts), (w, v), strict=True):
        (source,) = t.graph.predecessors(t.creator_of(c))
        np.testing.assert_array_equal(t.value_at(source, 0).array, leaf.detach().numpy())


def test_a_custom_function_called_with_dispatch_disabled_is_not_the_programs():
    """What runs with torch's dispatch disabled is not the program's (the viewer's gradient
    check of a script's Function at a pass's end): no node of it is recorded."""
    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    with pytorch.record() as t:
        with _internals.no_dispatch():
            assert _internals.dispatch_disabled()
            unseen = ScaledMulAdd.apply(x, 2.0, w, w)
        assert not _internals.dispatch_disabled()
        (ScaledMulAdd.apply(x, 3.0, w, w) * 2).sum().backward()
    assert unseen.grad_fn is not None
    assert [t.node(f)["op"] for f in t.functions] == ["ScaledMulAdd", "mul", "sum"]


@RECORDERS
def test_a_non_leaf_that_retains_its_grad_shows_it_kept_after_each_pass(statistics_only):
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    with pytorch.record(statistics_only=statistics_only) as t:
        h = x * 3
        h.retain_grad()
        u = h.sin()
        loss = (u * h).sum()
        loss.backward(retain_graph=True)
        first = h.grad.clone()
        loss.backward()
    assert h.retains_grad and not u.retains_grad
    made = [s.outputs[0] for s in t.steps if s.phase == "forward"]  # h, u, u * h, loss
    hid, uid = made[0], made[1]
    for k, held in ((0, first), (1, h.grad)):
        end = t.steps_of_pass(k)[-1]
        # h: torch's .grad after the pass (the second adds to the first)
        _assert_same(t.grad_at(hid, end), held.numpy(), statistics_only, f"pass {k}")
        assert t.state_at(hid, end) != NodeState.GRAD_CLEARED
        # u: dropped once used, as torch keeps no gradient of it
        assert t.grad_at(uid, end) is None
        assert t.state_at(uid, end) == NodeState.GRAD_CLEARED
    # h's gradient shows from its producer's step on, not before
    (mul_step,) = [i for i in t.steps_of_pass(0) if t.steps[i].function == t.creator_of(hid)]
    _assert_same(t.grad_at(hid, mul_step), first.numpy(), statistics_only, "after mul")


def test_retain_grad_after_an_in_place_op_keeps_the_new_nodes_output():
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    with pytorch.record() as t:
        h = x * 3
        h.retain_grad()
        h.mul_(2)  # torch moves the hook that keeps .grad to the new node
        (h.sin() * h).sum().backward()
    muls = [f for f in t.functions if t.node(f)["op"] in ("mul", "mul_")]
    (before_id,) = t.graph.successors(muls[0])
    (after_id,) = t.graph.successors(muls[1])
    last = len(t.steps) - 1
    np.testing.assert_array_equal(t.grad_at(after_id, last).array, h.grad.numpy())
    assert t.grad_at(before_id, last) is None


def test_the_wrapped_apply_and_retain_grad_answer_and_are_put_back():
    calls = []

    def around(original, cls, args, kwargs):
        calls.append((cls.__name__, _internals.function_inputs(cls, args, kwargs)))
        return original(*args, **kwargs)

    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    apply = torch.autograd.Function.__dict__["apply"]
    undo = _internals.undo_all(
        _internals.wrap_function_apply(around),
        _internals.wrap_retain_grad(lambda t: calls.append(("retained", t))),
    )
    try:
        y = ScaledMulAdd.apply(x, 2.0, w, w)
        y.retain_grad()
    finally:
        undo()
    (name, inputs), (what, retained) = calls
    assert name == "ScaledMulAdd"
    assert all(a is b for a, b in zip(inputs, (x, w, w), strict=True))
    assert len(y.grad_fn.next_functions) == len(inputs)  # one edge per tensor argument
    assert what == "retained" and retained is y and y.retains_grad
    assert "retain_grad" not in torch.Tensor.__dict__
    assert torch.autograd.Function.__dict__["apply"] is apply
    ScaledMulAdd.apply(x, 2.0, w, w).retain_grad()
    assert len(calls) == 2
    # keyword arguments, as a Function with setup_context takes them: bound to forward's
    # parameters, in order
    y = Scaled.apply(x, scale=2.0, w=w)
    inputs = _internals.function_inputs(Scaled, (x,), {"scale": 2.0, "w": w})
    assert len(inputs) == 2 and inputs[0] is x and inputs[1] is w
    assert [p is None for p, _ in y.grad_fn.next_functions] == [True, False]


class Scaled(torch.autograd.Function):
    @staticmethod
    def forward(x, w, scale=1.0):
        return x * w * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.scale = inputs[2]

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return None, g * x * ctx.scale, None


# parameters of no module, bound at the top level as a script binds them
FREE_W = nn.Parameter(torch.tensor([1.0, 2.0]))
SHARED_A = SHARED_B = nn.Parameter(torch.tensor([3.0, 4.0, 5.0]))  # two names: neither says it
LIN = nn.Linear(2, 1)
LIN_WEIGHT = LIN.weight  # its module names it


@RECORDERS
def test_a_parameter_of_no_module_is_named_by_its_one_module_level_name(statistics_only):
    for p in (FREE_W, SHARED_A, LIN_WEIGHT):
        p.grad = None
    local = nn.Parameter(torch.tensor([6.0, 7.0, 8.0, 9.0]))  # a local names none
    with pytorch.record(statistics_only=statistics_only) as t:
        # LIN_WEIGHT is used before its module runs
        loss = (LIN_WEIGHT**2).sum() + (FREE_W**2).sum() + (SHARED_A**2).sum()
        loss = loss + (local**2).sum() + LIN(FREE_W).sum()
        loss.backward()
    by_shape = {t.node(v)["shape"]: t.node(v)["name"] for v in t.parameters()}
    assert by_shape == {(2,): "FREE_W", (3,): None, (4,): None, (1, 2): "weight", (1,): "bias"}
    assert (SHARED_A is SHARED_B) and LIN_WEIGHT is LIN.weight


def test_a_custom_function_called_with_keywords_links_each_to_its_edge():
    x = torch.tensor([1.0, 2.0])
    w = nn.Parameter(torch.tensor([3.0, -1.0]))
    with pytorch.record() as t:
        Scaled.apply(x, scale=2.0, w=w).sum().backward()
    (fid,) = [f for f in t.functions if t.node(f)["op"] == "Scaled"]
    plain, wid = _inputs_by_slot(t, fid)
    np.testing.assert_array_equal(t.value_at(plain, 0).array, x.numpy())
    assert t.node(wid)["parameter"]
    np.testing.assert_array_equal(t.grad_at(wid, len(t.steps) - 1).array, w.grad.numpy())
