"""micrograd Values as the engine's observers see them: only while one is attached.

Each Value an op makes while :func:`autodiff.trace.record` (or any observer) listens gets a
``core.Variable`` holding its data as a 0-d float64 array (``Value._node``), made by a
``core`` Function of the matching class (``Add``, ``Mul``, ``Pow``, ``ReLU``, ``Tanh``,
``Exp``, ``Log``; an op a program builds by hand, ``Value(t, (x,), 'sigmoid')``, gets a
class named after its ``_op``) whose inputs are the children's Variables. The observers hear
``on_forward`` for it, and ``Value.backward()`` reports each node's step with the shares it
added and the sums it made, so the recorder's steps carry micrograd's own numbers.

Ownership is the engine's: a Value holds its Variable, the Variable its creator, the creator
its inputs; the Function holds its output by weakref. Dropping the Values frees it all.

A Value that existed before (a parameter, a constant) becomes a leaf Variable when first
used. Programs change leaves between iterations (``p.data += -lr * p.grad``,
``zero_grad()``): the leaves' Variables are brought up to date before the first op after a
backward pass and before each backward pass, which is when the recorder looks at them.
"""

from __future__ import annotations

import weakref
from typing import Any, Protocol

import numpy as np

from autodiff import core

_F64 = np.float64
_array = np.array
_ref = weakref.ref
_Variable = core.Variable

# the leaves' Values whose Variables follow them (weakly: a dropped Value leaves the set)
_leaves: weakref.WeakSet = weakref.WeakSet()
_stale = [True]  # whether the leaves' Variables may lag behind their Values


class RecordedValue(Protocol):
    """What this module reads and writes of a micrograd ``Value``: the engine's Value
    (:mod:`autodiff.micrograd.engine`, which calls this module) has this shape."""

    data: Any
    grad: Any
    _children: tuple[RecordedValue, ...]
    _op: str
    _label: str
    _node: core.Variable | None  # the Variable reported to observers
    _rule: Any  # the local chain rule of a built-in op, or None
    _custom: Any  # a program's own ``_backward`` closure, or None


class ValueOp(core.Function):
    """An op a program built by hand as micrograd does (``Value(data, children, op)`` and a
    ``_backward`` closure): its derivative is the closure, which the engine cannot re-run."""

    def forward(self, *xs: Any) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__}: a micrograd op built by hand has no forward to re-run"
        )


_by_op: dict[str, type] = {}


def _hand_made_class(op: str) -> type:
    cls = _by_op.get(op)
    if cls is None:
        name = op if op.isidentifier() else "ValueOp"
        cls = _by_op[op] = type(name, (ValueOp,), {"__module__": __name__})
    return cls


# an op's rule -> the core Function it is reported as, made from its output node (filled in by
# autodiff.micrograd.engine, which defines the rules)
FUNCTION_OF_RULE: dict[Any, Any] = {}


def _function_of(v: RecordedValue) -> core.Function:
    make = FUNCTION_OF_RULE.get(v._rule)
    if make is None:
        return _hand_made_class(v._op or "ValueOp")()
    return make(v)


def _leaf(v: RecordedValue) -> core.Variable:
    """The Variable of a child: made a leaf on first use, kept up to date if it is one."""
    x = v._node
    if x is None:
        x = v._node = _Variable(_array(float(v.data)), v._label or None)
        g = v.grad
        if g != 0:
            x.grad = _Variable(_array(float(g)))
        _leaves.add(v)
    elif x.creator is None:
        _sync(v, x)
    return x


def _sync(v: RecordedValue, x: core.Variable) -> None:
    """Bring a leaf's Variable to its Value's data and grad (a grad of 0 is none)."""
    d = v.data
    if x.data.item() != d:
        x.data = _array(float(d))
    g = v.grad
    held = x.grad
    if held is None:
        if g != 0:
            x.grad = _Variable(_array(float(g)))
    elif g == 0:  # zero_grad(), or a backward that added nothing: a held 0 is none too
        x.grad = None
    elif held.data.item() != g:
        x.grad = _Variable(_array(float(g)))


def _sync_leaves() -> None:
    for v in list(_leaves):
        x = v._node
        if x is not None:
            _sync(v, x)
    _stale[0] = False


def record_op(out: RecordedValue) -> None:
    """Report the op that made ``out`` to the observers (its children's Variables in, a new
    Variable for ``out``)."""
    if _stale[0]:
        _sync_leaves()
    inputs = [_leaf(c) for c in out._children]
    y = _Variable(_array(float(out.data)), out._label or None)
    f = _function_of(out)
    f._order = next(core._creation_counter)
    generation = max(x.generation for x in inputs)
    f.generation = generation
    f.inputs = inputs
    f.outputs = [_ref(y)]
    y.creator = f
    y.generation = generation + 1
    out._node = y
    for handler in core._on_forward:
        handler(f, inputs, [y], True)


def backward(root: RecordedValue, topo: list[RecordedValue]) -> None:
    """``root.backward()`` with observers attached: micrograd's sums, each node's step
    reported as the engine's backward loop reports a Function's (``root.grad`` is set)."""
    if core._on_forward:
        for v in topo:  # nodes made before anyone listened: reported now
            if v._node is None and v._children:
                record_op(v)
    _sync_leaves()
    y = _leaf(root) if root._node is None or root._node.creator is None else root._node
    y.grad = _Variable(_array(float(root.grad)))
    core._notify("on_backward_begin", y, True, False)
    events = core._on_backward_event
    for v in reversed(topo):
        rule = v._rule
        if rule is None and v._custom is None:
            continue
        children = v._children
        if rule is not None:
            shares = rule(v)
            gxs = []
            accumulated = []
            for slot, (child, share) in enumerate(zip(children, shares, strict=True)):
                old = child.grad
                child.grad = new = old + share
                gxs.append(_F64(share))
                if old != 0:
                    accumulated.append((slot, _F64(old), _F64(new)))
        else:  # a closure: its shares are what it added
            olds = {}
            for child in children:
                olds.setdefault(child, child.grad)
            v._custom()
            gxs = []
            accumulated = []
            placed = set()
            for slot, child in enumerate(children):
                if child in placed:
                    gxs.append(None)
                    continue
                placed.add(child)
                old, new = olds[child], child.grad
                gxs.append(_F64(new - old))
                if old != 0:
                    accumulated.append((slot, _F64(old), _F64(new)))
        node = v._node
        f = node.creator if node is not None else None
        if f is None or not events:
            continue  # a node that became a leaf Variable before its graph was backpropagated
        gys = (_F64(v.grad),)
        for handler in events:
            handler(f, gys, tuple(gxs), tuple(accumulated), ())
    for v in topo:
        x = v._node
        if x is not None:
            x.grad = _Variable(_array(float(v.grad)))
    _stale[0] = True
    core._notify("on_backward_end", y)
