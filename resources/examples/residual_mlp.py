"""A residual MLP of six identical blocks, trained for a few steps: modules you can fold.

Category: training

Each Block computes x + fc2(tanh(fc1(x))). The network is a Model holding an input layer, six
Blocks (b0 ... b5) and an output layer, so every Function it runs is recorded in a scope such
as ResidualMLP/b3/fc1. The viewer opens it with the six blocks folded into one box,
"Block × 6": double-click it (or press Enter) to unfold the blocks, double-click a block to
see its layers, right-click for collapse and depth 0-3. Five steps of SGD (lr 0.03) on
y = sin(x0) + x1 * x2 lower the loss at every step.
"""

import numpy as np

import autodiff.functions as F
from autodiff import Layer, Model, Variable
from autodiff.layers import Linear
from autodiff.optimizers import SGD

WIDTH = 8
BLOCKS = 6


class Block(Layer):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = Linear(width, in_size=width)
        self.fc2 = Linear(width, in_size=width)

    def forward(self, x: Variable) -> Variable:
        return x + self.fc2(F.tanh(self.fc1(x)))


class ResidualMLP(Model):
    def __init__(self, width: int = WIDTH, blocks: int = BLOCKS) -> None:
        super().__init__()
        self.inp = Linear(width, in_size=3)
        for i in range(blocks):
            setattr(self, f"b{i}", Block(width))
        self.blocks = blocks
        self.out = Linear(1, in_size=width)

    def forward(self, x: Variable) -> Variable:
        h = self.inp(x)
        for i in range(self.blocks):
            h = getattr(self, f"b{i}")(h)
        return self.out(h)


def main(steps: int = 5) -> list[float]:
    np.random.seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, (16, 3))
    t = (np.sin(x[:, 0]) + x[:, 1] * x[:, 2]).reshape(-1, 1)
    model = ResidualMLP()
    optimizer = SGD(lr=0.03).setup(model)
    losses = []
    for step in range(steps):
        loss = F.mean_squared_error(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        losses.append(float(loss.data))
        print(f"step {step}: loss {losses[-1]:.5f}")
    return losses


if __name__ == "__main__":
    main()
