"""Ownership: a graph is freed by reference counting alone once the user drops the output.

The cycle collector is off in these tests: the claim is that no reference cycle holds a graph,
so nothing waits for a collection."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import numpy as np
import pytest
from engine_steps import iter_backward

import autodiff.functions as F
from autodiff import Variable, trace


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _graph_refs(y: Variable) -> list[weakref.ref]:
    """Weak references to every Variable and Function reachable from ``y``'s creator."""
    refs, seen, stack = [weakref.ref(y)], set(), [y.creator]
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        refs.append(weakref.ref(f))
        for x in f.inputs:
            refs.append(weakref.ref(x))
            stack.append(x.creator)
    return refs


def _build(x: Variable, w: Variable) -> Variable:
    h = F.tanh(F.linear(F.reshape(x, (2, 3)), w) + 1.0)
    return F.sum(F.softmax(h) * h**2 - F.exp(h)[0] / 3.0)


# With create_graph, a retained gradient's graph holds the Variable it belongs to (d tanh uses
# tanh's output): a cycle, as in PyTorch. So retain_grad is combined with create_graph=False
# only, and leaves drop their gradient (cleargrad) before the check.
@pytest.mark.parametrize(
    ("retain_grad", "create_graph"), [(False, False), (True, False), (False, True)]
)
def test_dropping_the_output_frees_every_variable_and_function(
    no_cycle_collector, retain_grad, create_graph
):
    x = Variable(np.linspace(-1, 1, 6))
    w = Variable(np.ones((3, 2)))
    y = _build(x, w)
    y.backward(retain_grad=retain_grad, create_graph=create_graph)
    refs = _graph_refs(y)
    assert len(refs) > 20
    x_ref, w_ref = weakref.ref(x), weakref.ref(w)
    grad_refs = [weakref.ref(x.grad), weakref.ref(w.grad)]
    del y
    x.cleargrad()
    w.cleargrad()
    del x, w
    dead = [r() is None for r in refs + grad_refs + [x_ref, w_ref]]
    assert all(dead), f"{dead.count(False)} objects survived"


def test_functions_hold_outputs_weakly(no_cycle_collector):
    x = Variable(np.array(1.0))
    y = F.exp(x)
    f = y.creator
    y_ref = weakref.ref(y)
    del y
    assert y_ref() is None
    assert f.outputs[0]() is None
    assert f.inputs[0] is x  # inputs are held strongly


def test_intermediates_are_freed_while_the_leaf_lives(no_cycle_collector):
    x = Variable(np.ones(3))
    y = F.sum(F.sin(x) * 2.0)
    refs = _graph_refs(y)
    y.backward()
    del y
    alive = [r() for r in refs if r() is not None]
    assert alive == [x]


def test_iter_backward_steps_do_not_keep_the_graph_alive(no_cycle_collector):
    x = Variable(np.ones(3))
    y = F.sum(F.exp(x) * x)
    for step in iter_backward(y):
        del step
    refs = _graph_refs(y)
    del y
    assert all(r() is None or r() is x for r in refs)


def test_a_deep_chain_is_released_without_recursion_error(no_cycle_collector):
    x = Variable(np.array(0.5))
    y = x
    for _ in range(100_000):
        y = F.sin(y)
    y.backward()
    first = weakref.ref(x.grad)
    tail = weakref.ref(y.creator)
    del y
    assert tail() is None
    assert first() is not None  # the leaf's gradient stays with the leaf


def test_a_dropped_trace_frees_its_undecoded_tape_without_the_collector(no_cycle_collector):
    """The tape's weak references call back the tape itself (a cycle): the recorder empties
    it when dropped, so reference counting frees what the tape held (a worker runs with the
    collector off)."""
    x = Variable(np.ones(8))
    with trace.record() as t:
        y = (x * 2).sum()
        y.backward()
    copies = [v for e in t._recorder._tape if type(e) is tuple for v in e if type(v) is np.ndarray]
    assert copies, "the tape holds copies of the values"
    refs = [weakref.ref(c) for c in copies]
    del copies, t
    assert all(r() is None for r in refs)
