"""Backward steps as objects, for tests: the engine reports each step only as the arguments of
``on_backward_event`` (what the recorder needs); these tests read them as objects.

* :func:`iter_backward` runs ``output.backward(...)`` and returns its steps, in order.
* :func:`add_observer` / :func:`remove_observer` attach an observer that may also define
  ``on_backward_step(step)``, ``on_variable(variable)`` and ``on_constant(variable)``: events
  the engine had once and no part of the product listened to. They are derived here from the
  engine's own events (a Function's inputs and outputs as it runs forward).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from autodiff import core
from autodiff.core import Constant, Variable


def _as_grad(g: Any) -> Variable | None:
    if g is None or isinstance(g, Variable):
        return g
    return Variable(g)


class Step:
    """One Function's step of backward: what ``on_backward_event`` was given, and its index."""

    def __init__(self, function, output_grads, input_grads, accumulated, cleared, index):
        self.function = function
        self.output_grads_raw = output_grads
        self.input_grads_raw = input_grads
        self.accumulated_raw = accumulated
        self.cleared = cleared
        self.index = index

    @property
    def output_grads(self) -> tuple:
        return tuple(_as_grad(g) for g in self.output_grads_raw)

    @property
    def input_grads(self) -> tuple:
        return tuple(_as_grad(g) for g in self.input_grads_raw)

    @property
    def accumulated(self) -> tuple:
        return tuple(
            (slot, _as_grad(old), _as_grad(new)) for slot, old, new in self.accumulated_raw
        )


class _Steps:
    """The engine's observer: numbers the steps of each backward pass and hands them on."""

    def __init__(self, handler) -> None:
        self._handler = handler
        self._index = 0

    def on_backward_begin(self, output, retain_grad, create_graph) -> None:
        self._index = 0

    def on_backward_event(self, function, output_grads, input_grads, accumulated, cleared):
        step = Step(function, output_grads, input_grads, accumulated, cleared, self._index)
        self._index += 1
        self._handler(step)


def iter_backward(
    output: Variable, retain_grad: bool = False, create_graph: bool = False
) -> Iterator[Step]:
    """Run backward from ``output`` and return its steps, in the order the engine ran them."""
    steps: list[Step] = []
    observer = _Steps(steps.append)
    core.add_observer(observer)
    try:
        output.backward(retain_grad=retain_grad, create_graph=create_graph)
    finally:
        core.remove_observer(observer)
    return iter(steps)


class _Adapter:
    """An observer with the extra events, as the engine sees it."""

    def __init__(self, observer: Any) -> None:
        self.observer = observer
        self._variables = getattr(observer, "on_variable", None)
        self._constants = getattr(observer, "on_constant", None)
        steps = getattr(observer, "on_backward_step", None)
        self._steps = _Steps(steps) if steps is not None else None
        self._seen: set[int] = set()  # creation orders already reported by on_variable
        for event in ("on_backward_end", "on_rename"):
            handler = getattr(observer, event, None)
            if handler is not None:
                setattr(self, event, handler)

    def on_forward(self, function, inputs, outputs, recorded) -> None:
        for v in inputs:
            if v._order not in self._seen:
                self._seen.add(v._order)
                if self._variables is not None:
                    self._variables(v)
                if self._constants is not None and type(v) is Constant:
                    self._constants(v)
        for v in outputs:
            self._seen.add(v._order)
            if self._variables is not None:
                self._variables(v)
        handler = getattr(self.observer, "on_forward", None)
        if handler is not None:
            handler(function, inputs, outputs, recorded)

    def on_backward_begin(self, output, retain_grad, create_graph) -> None:
        if self._steps is not None:
            self._steps.on_backward_begin(output, retain_grad, create_graph)
        handler = getattr(self.observer, "on_backward_begin", None)
        if handler is not None:
            handler(output, retain_grad, create_graph)

    def on_backward_event(self, function, output_grads, input_grads, accumulated, cleared):
        if self._steps is not None:
            self._steps.on_backward_event(function, output_grads, input_grads, accumulated, cleared)
        handler = getattr(self.observer, "on_backward_event", None)
        if handler is not None:
            handler(function, output_grads, input_grads, accumulated, cleared)


_adapters: dict[int, _Adapter] = {}


def add_observer(observer: Any) -> None:
    adapter = _adapters.setdefault(id(observer), _Adapter(observer))
    core.add_observer(adapter)


def remove_observer(observer: Any) -> None:
    adapter = _adapters.pop(id(observer), None)
    if adapter is not None:
        core.remove_observer(adapter)
