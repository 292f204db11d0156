"""micrograd's ``Value``: a scalar, its gradient and the op that made it.

A micrograd program runs unchanged once ``from micrograd.engine import Value`` reads
``from autodiff.micrograd.engine import Value``, and prints micrograd's numbers: the forward
arithmetic is micrograd's, composite ops are built from the same primitives (``a - b`` is
``a + (-b)``, ``-a`` is ``a * -1``, ``a / b`` is ``a * b**-1``) and each gradient is added with
the same expression. ``data`` and ``grad`` are plain Python numbers (``grad`` starts at 0, and
``backward()`` seeds the output's with 1, as micrograd does).

Differences from micrograd (none changes a number):

* ``_prev`` is a set made from the children on each read; the node keeps them in a tuple, so
  backward's order (and the last bit of a gradient summed over several paths) is the same on
  every run. micrograd's depends on its set's iteration order.
* Backward walks the graph without recursion: any depth works.
* ``tanh``, ``exp`` and ``log`` are there (micrograd's lecture defines them; its package has
  only ``relu``), and ``label`` (the lecture's) is kept.
* A power that is not an int or a float raises TypeError (micrograd asserts).

While :func:`autodiff.trace.record` listens, each op is also reported to the engine's
observers as a ``core`` Function and Variables (:mod:`autodiff.micrograd._recorded`), so
traces, the viewer, the leak audit and the gradient check see micrograd graphs like any other.
With no observer an op costs one tuple check more than it would without that.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from autodiff import core
from autodiff import functions as F
from autodiff.micrograd import _recorded

__all__ = ["Value", "function_class_of_op"]

_new = object.__new__


class Value:
    """Stores a single scalar value and its gradient."""

    __slots__ = (
        "__weakref__",
        "_arg",
        "_children",
        "_custom",
        "_label",
        "_node",
        "_op",
        "_rule",
        "data",
        "grad",
    )

    def __init__(
        self, data: Any, _children: Iterable[Value] = (), _op: str = "", label: str = ""
    ) -> None:
        self.data = data
        self.grad = 0
        self._children = tuple(_children)
        self._op = _op
        self._label = label
        # the local chain rule: a function of this node returning each child's share of its
        # gradient (the built-in ops), or None; _custom: a user's `_backward` closure
        self._rule: Callable[[Value], tuple] | None = None
        self._custom: Callable[[], None] | None = None
        self._arg: Any = None  # the exponent of a power
        self._node: Any = None  # the core.Variable reported to observers (while recorded)
        if self._children and core._on_forward and core.observing():
            _recorded.record_op(self)

    # --- what micrograd programs read and write --------------------------------------------
    @property
    def _prev(self) -> set[Value]:
        return set(self._children)

    @property
    def label(self) -> str:
        return self._label

    @label.setter
    def label(self, value: str) -> None:
        self._label = value
        if self._node is not None:
            self._node.name = value or None  # a recorder hears the new name

    @property
    def _backward(self) -> Callable[[], None]:
        """This node's step of backward, as micrograd's closure: adds its gradient's share to
        each child's ``grad``."""
        if self._custom is not None:
            return self._custom
        if self._rule is None:
            return _nothing
        return lambda: _apply_rule(self)

    @_backward.setter
    def _backward(self, fn: Callable[[], None]) -> None:
        self._custom = fn
        self._rule = None

    def __repr__(self) -> str:
        return f"Value(data={self.data}, grad={self.grad})"

    # --- primitives: forward, and beside it each child's share of the gradient g -------------
    def __add__(self, other: Any) -> Value:
        other = other if isinstance(other, Value) else Value(other)
        return _result(self.data + other.data, (self, other), "+", _add_rule)

    def __mul__(self, other: Any) -> Value:
        other = other if isinstance(other, Value) else Value(other)
        return _result(self.data * other.data, (self, other), "*", _mul_rule)

    def __pow__(self, other: Any) -> Value:
        if not isinstance(other, int | float):
            raise TypeError(
                f"Value ** {type(other).__name__}: only int and float powers are supported "
                "(as in micrograd)"
            )
        return _result(self.data**other, (self,), f"**{other}", _pow_rule, other)

    def relu(self) -> Value:
        return _result(0 if self.data < 0 else self.data, (self,), "ReLU", _relu_rule)

    def tanh(self) -> Value:
        return _result(math.tanh(self.data), (self,), "tanh", _tanh_rule)

    def exp(self) -> Value:
        return _result(math.exp(self.data), (self,), "exp", _exp_rule)

    def log(self) -> Value:
        return _result(math.log(self.data), (self,), "log", _log_rule)

    # --- composites, as micrograd builds them ----------------------------------------------
    def __neg__(self) -> Value:  # -self
        return self * -1

    def __radd__(self, other: Any) -> Value:  # other + self
        return self + other

    def __sub__(self, other: Any) -> Value:  # self - other
        return self + (-other)

    def __rsub__(self, other: Any) -> Value:  # other - self
        return other + (-self)

    def __rmul__(self, other: Any) -> Value:  # other * self
        return self * other

    def __truediv__(self, other: Any) -> Value:  # self / other
        return self * other**-1

    def __rtruediv__(self, other: Any) -> Value:  # other / self
        return other * self**-1

    # --- backward ------------------------------------------------------------------------
    def backward(self) -> None:
        """Backpropagate from this node: its ``grad`` becomes 1 and every node upstream adds
        its share, in reverse topological order. Gradients accumulate across calls (reset the
        parameters' with ``Module.zero_grad()``), as in micrograd."""
        topo = _topological_order(self)
        self.grad = 1
        if core.observing():
            _recorded.backward(self, topo)
            return
        for v in reversed(topo):
            rule = v._rule
            if rule is not None:
                shares = rule(v)
                children = v._children
                if len(children) == 2:
                    a, b = children
                    a.grad += shares[0]
                    b.grad += shares[1]
                else:
                    children[0].grad += shares[0]
            elif v._custom is not None:
                v._custom()


def _result(data: Any, children: tuple, op: str, rule: Callable, arg: Any = None) -> Value:
    """An op's output node (``__init__``'s work without its checks: this runs once per op)."""
    out = _new(Value)
    out.data = data
    out.grad = 0
    out._children = children
    out._op = op
    out._label = ""
    out._rule = rule
    out._custom = None
    out._arg = arg
    out._node = None
    if core._on_forward and core.observing():
        _recorded.record_op(out)
    return out


# Each rule returns, per child (argument slot), its share of the output's gradient; backward
# adds it to the child's grad. The expressions are micrograd's, so the sums are bit for bit.
def _add_rule(out: Value) -> tuple:
    g = out.grad
    return g, g


def _mul_rule(out: Value) -> tuple:
    a, b = out._children
    g = out.grad
    return b.data * g, a.data * g


def _pow_rule(out: Value) -> tuple:
    # d x^c = c x^(c-1)
    c = out._arg
    return ((c * out._children[0].data ** (c - 1)) * out.grad,)


def _relu_rule(out: Value) -> tuple:
    return ((out.data > 0) * out.grad,)


def _tanh_rule(out: Value) -> tuple:
    # d tanh(x) = 1 - tanh(x)^2
    return ((1 - out.data**2) * out.grad,)


def _exp_rule(out: Value) -> tuple:
    return (out.data * out.grad,)


def _log_rule(out: Value) -> tuple:
    return (out.grad / out._children[0].data,)


# what each op is reported as to the engine's observers (a recorder): the core Function with
# the same forward and derivative, so the gradient check can re-run it
_recorded.FUNCTION_OF_RULE.update(
    {
        _add_rule: lambda out: core.Add(),
        _mul_rule: lambda out: core.Mul(),
        _pow_rule: lambda out: core.Pow(out._arg),
        _relu_rule: lambda out: F.ReLU(),
        _tanh_rule: lambda out: F.Tanh(),
        _exp_rule: lambda out: F.Exp(),
        _log_rule: lambda out: F.Log(),
    }
)


# micrograd's op names (``Value._op``) -> the core Function class each op is reported as; a
# power's name carries its exponent ('**2', '**-1'). autodiff.formulas reads the local
# derivative's text from the class.
_CLASS_OF_OP: dict[str, type] = {
    "+": core.Add,
    "*": core.Mul,
    "ReLU": F.ReLU,
    "tanh": F.Tanh,
    "exp": F.Exp,
    "log": F.Log,
}


def function_class_of_op(op: str) -> type | None:
    """The core Function class micrograd's op ``op`` ('+', '*', '**2', 'ReLU', 'tanh', 'exp',
    'log') is reported as; None for another name (an op a program built by hand)."""
    if op.startswith("**") and len(op) > 2:
        return core.Pow
    return _CLASS_OF_OP.get(op)


def _apply_rule(v: Value) -> None:
    for child, share in zip(v._children, v._rule(v), strict=True):
        child.grad += share


def _nothing() -> None:
    return None


def _topological_order(root: Value) -> list[Value]:
    """Every node upstream of ``root``, each after all of its children (a depth-first
    post-order, iterative: a 100 000-deep chain works)."""
    topo: list[Value] = []
    visited: set[Value] = set()
    stack: list = [root]
    done = topo.append
    push = stack.append
    pop = stack.pop
    while stack:
        v = pop()
        if type(v) is tuple:  # its children are all placed: place it
            done(v[0])
            continue
        if v in visited:
            continue
        visited.add(v)
        children = v._children
        if not children:
            done(v)
            continue
        push((v,))
        for child in reversed(children):
            if child not in visited:
                push(child)
    return topo
