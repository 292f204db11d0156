"""autodiff.trace.pytorch: the paths that keep recording cheap (the dispatch mode taken off
where no op of the program's graph can run) record what the slow paths record.

- An optimizer's ``step()`` runs with the recorder's dispatch mode off; its updates show as
  the parameters' new values when the next graph begins. A step given a closure (LBFGS), which
  runs the program's forward and backward, keeps the mode on; after a step that raised, the
  next module call (or backward pass, or step) puts the mode back.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from autodiff.trace import pytorch  # noqa: E402


def _dispatch_depth() -> int:
    return torch._C._len_torch_dispatch_stack()


class _Probe(torch.optim.SGD):
    """SGD that notes how many dispatch modes were on while its step ran."""

    def __init__(self, params, fail=False):
        super().__init__(params, lr=0.1)
        self.depths: list[int] = []
        self.fail = fail

    @torch.no_grad()
    def step(self, closure=None):
        self.depths.append(_dispatch_depth())
        if self.fail:
            raise RuntimeError("the step failed")
        return super().step(closure)


def _weights_at_each_forward(t, vid):
    """The parameter's value at the first step of each pass's forward."""
    starts = [0]
    for k in range(len(t.backward_roots) - 1):
        starts.append(max(s.index for s in t.steps if s.backward_pass == k) + 1)
    return [t.value_at(vid, i) for i in starts]


def test_an_optimizer_step_runs_unseen_and_its_updates_show_at_the_next_forward():
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    opt = _Probe(lin.parameters())
    x = torch.randn(4, 3)
    seen = []
    with pytorch.record() as t:
        outside = _dispatch_depth()
        for _ in range(3):
            opt.zero_grad()
            seen.append(lin.weight.detach().numpy().copy())
            lin(x).square().sum().backward()
            opt.step()
    assert outside == 1
    assert opt.depths == [0, 0, 0]  # the recorder's mode was off for each step
    assert _dispatch_depth() == 0
    # no node for anything the step did: each pass's graph is the forward's ops alone
    assert [s.op for s in t.steps if s.phase == "forward"] == ["t", "linear", "pow", "sum"] * 3
    (wid,) = [v for v in t.parameters() if t.node(v)["name"] == "weight"]
    for recorded, expected in zip(_weights_at_each_forward(t, wid), seen, strict=True):
        np.testing.assert_array_equal(recorded.array, expected)


def test_a_step_with_a_closure_records_the_passes_it_runs():
    torch.manual_seed(0)
    lin = nn.Linear(3, 1)
    x, y = torch.randn(5, 3), torch.randn(5, 1)
    opt = torch.optim.LBFGS(lin.parameters(), max_iter=3)
    calls = []

    def closure():
        opt.zero_grad()
        loss = nn.functional.mse_loss(lin(x), y)
        loss.backward()
        calls.append(loss.item())
        return loss

    with pytorch.record() as t:
        opt.step(closure)
    assert len(calls) >= 2
    assert len(t.backward_roots) == len(calls)
    for k, root in enumerate(t.backward_roots):
        end = max(s.index for s in t.steps if s.backward_pass == k)
        np.testing.assert_allclose(t.value_at(root, end).array, calls[k], rtol=1e-6)


def test_after_a_step_that_raised_the_next_module_call_records_again():
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    opt = _Probe(lin.parameters(), fail=True)
    x = torch.randn(4, 3)
    with pytorch.record() as t:
        lin(x).sum().backward()
        with pytest.raises(RuntimeError, match="the step failed"):
            opt.step()
        # the step's end never came: the next module call puts the mode back
        (torch.relu(lin(x)) * 2).sum().backward()
        outside = _dispatch_depth()
    assert outside == 1
    assert _dispatch_depth() == 0
    ops = [s.op for s in t.steps if s.phase == "forward"]
    assert ops == ["t", "linear", "sum", "t", "linear", "relu", "mul", "sum"]
    assert len(t.backward_roots) == 2


def _stats(snap):
    return (snap.shape, snap.min, snap.max, snap.mean, snap.norm, snap.nan, snap.inf)


def test_summarised_values_are_the_statistics_of_what_torch_computed():
    """Large values (gradients handed on, a weight and its transpose: their statistics
    shared) are the statistics of the tensors torch computed, number for number."""
    from autodiff.trace.pytorch._values import summary as statistics  # (as recorded before)

    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 48), nn.ReLU(), nn.Linear(48, 3)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(40, 64), torch.tensor([0, 1, 2, 1] * 10)
    reported = []  # per pass: torch's (node name, grad_outputs, grad_inputs), cloned
    outputs = []  # per pass: each module's output, cloned
    weights = []  # per pass: the first layer's weight as its forward read it
    hooks = [m.register_forward_hook(lambda m, a, out: outputs[-1].append(out.detach().clone()))
             for m in model]  # fmt: skip
    with pytorch.record(max_array_size=64) as t:
        for _ in range(2):
            opt.zero_grad()
            outputs.append([])
            weights.append(model[0].weight.detach().clone())
            loss = nn.functional.cross_entropy(model(x), y)
            log = []
            todo, seen = [loss.grad_fn], set()
            while todo:
                node = todo.pop()
                if node is None or node in seen:
                    continue
                seen.add(node)

                def hook(gi, go, node=node, log=log):
                    clone = lambda gs: [None if g is None else g.detach().clone() for g in gs]  # noqa: E731
                    log.append((node.name(), clone(go), clone(gi)))

                if type(node).__name__ != "AccumulateGrad":
                    node.register_hook(hook)
                todo.extend(p for p, _ in node.next_functions)
            loss.backward()
            reported.append(log)
            opt.step()
    for h in hooks:
        h.remove()
    summarised = 0
    for k, log in enumerate(reported):
        steps = [s for s in t.steps if s.phase == "backward" and s.backward_pass == k]
        assert [t.node(s.function)["torch_node"] for s in steps] == [n for n, _, _ in log]
        for s, (name, gys, gxs) in zip(steps, log, strict=True):
            mine = [g for g in (*s.output_grads, *s.input_grads) if g is not None]
            theirs = [g for g in (*gys, *gxs) if g is not None]
            assert len(mine) == len(theirs), name
            for snap, g in zip(mine, theirs, strict=True):
                if g.numel() > 64:
                    summarised += 1
                    assert snap.array is None, name
                    assert _stats(snap) == _stats(statistics(g)), name
                else:
                    np.testing.assert_array_equal(snap.array, g.numpy(), err_msg=name)
    assert summarised > 20
    # forward values: each module's output, and the weight each pass's forward read
    (wid,) = [v for v in t.parameters() if t.node(v)["name"] == "0.weight"]
    for recorded, w in zip(_weights_at_each_forward(t, wid), weights, strict=True):
        assert _stats(recorded) == _stats(statistics(w))
    forward = [s for s in t.steps if s.phase == "forward" and s.op in ("linear", "relu")]
    made = [o for per_pass in outputs for o in per_pass]
    assert len(forward) == len(made)
    for s, out in zip(forward, made, strict=True):
        assert _stats(s.values[0]) == _stats(statistics(out))
