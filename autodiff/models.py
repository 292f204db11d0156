"""Models: Layers with a whole-network ``forward``, named as in DeZero's ``dezero/models.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import autodiff.functions as F
from autodiff import utils
from autodiff.core import Variable
from autodiff.layers import Layer, Linear

__all__ = ["MLP", "Model", "Sequential"]


class Model(Layer):
    """A Layer that is a whole network; :meth:`plot` draws the graph of one forward pass."""

    def plot(self, *inputs: Any, to_file: str = "model.png") -> None:
        """Run ``forward(*inputs)`` and render its graph with Graphviz into ``to_file``."""
        y = self.forward(*inputs)
        return utils.plot_dot_graph(y, verbose=True, to_file=to_file)


class Sequential(Model):
    """Layers applied one after another; they are registered as ``l0``, ``l1``..."""

    def __init__(self, *layers: Layer | Callable[[Any], Any]) -> None:
        super().__init__()
        self.layers = list(layers)
        for i, layer in enumerate(self.layers):
            setattr(self, f"l{i}", layer)

    def forward(self, x: Any) -> Variable:
        for layer in self.layers:
            x = layer(x)
        return x


class MLP(Model):
    """A multi-layer perceptron: one :class:`Linear` per entry of ``fc_output_sizes``, with
    ``activation`` between them (none after the last)."""

    def __init__(
        self,
        fc_output_sizes: Sequence[int],
        activation: Callable[[Any], Variable] = F.sigmoid,
    ) -> None:
        super().__init__()
        if len(fc_output_sizes) == 0:
            raise ValueError("MLP: fc_output_sizes is empty; give at least one layer size")
        self.activation = activation
        self.layers = []
        for i, out_size in enumerate(fc_output_sizes):
            layer = Linear(out_size)
            setattr(self, f"l{i}", layer)
            self.layers.append(layer)

    def forward(self, x: Any) -> Variable:
        *hidden, last = self.layers
        for layer in hidden:
            x = self.activation(layer(x))
        return last(x)
