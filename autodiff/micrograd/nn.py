"""micrograd's neural network of Values: ``Module``, ``Neuron``, ``Layer``, ``MLP``.

The weights are drawn as micrograd draws them (``random.uniform(-1, 1)`` per weight, neuron by
neuron, layer by layer; each bias starts at 0), so after ``random.seed(k)`` a network holds the
very numbers micrograd's would, and a neuron sums its inputs in micrograd's order (from the
bias, one ``w * x`` at a time), so training runs through the same floating-point operations.

While a recorder listens, each MLP, layer and neuron call is a named scope (``MLP/layer1/n3``)
the viewer can fold into one box.
"""

from __future__ import annotations

import random
from typing import Any

from autodiff import core
from autodiff.micrograd.engine import Value

__all__ = ["MLP", "Layer", "Module", "Neuron"]


class Module:
    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = 0

    def parameters(self) -> list[Value]:
        return []


class Neuron(Module):
    def __init__(self, nin: int, nonlin: bool = True) -> None:
        self.w = [Value(random.uniform(-1, 1)) for _ in range(nin)]
        self.b = Value(0)
        self.nonlin = nonlin

    def __call__(self, x: Any) -> Value:
        act = self.b
        for wi, xi in zip(self.w, x, strict=False):  # micrograd: the shorter one
            act = act + wi * xi
        return act.relu() if self.nonlin else act

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]

    def __repr__(self) -> str:
        return f"{'ReLU' if self.nonlin else 'Linear'}Neuron({len(self.w)})"


class Layer(Module):
    def __init__(self, nin: int, nout: int, **kwargs: Any) -> None:
        self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]

    def __call__(self, x: Any) -> Value | list[Value]:
        if core._on_scope:
            out = []
            for k, n in enumerate(self.neurons):
                with core.scope(f"n{k}"):
                    out.append(n(x))
        else:
            out = [n(x) for n in self.neurons]
        return out[0] if len(out) == 1 else out

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]

    def __repr__(self) -> str:
        return f"Layer of [{', '.join(str(n) for n in self.neurons)}]"


class MLP(Module):
    def __init__(self, nin: int, nouts: list[int]) -> None:
        sizes = [nin, *nouts]
        last = len(nouts) - 1
        self.layers = [Layer(sizes[i], sizes[i + 1], nonlin=i != last) for i in range(len(nouts))]

    def __call__(self, x: Any) -> Any:
        if core._on_scope:
            with core.scope("MLP"):
                for k, layer in enumerate(self.layers):
                    with core.scope(f"layer{k}"):
                        x = layer(x)
            return x
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self) -> str:
        return f"MLP of [{', '.join(str(layer) for layer in self.layers)}]"
