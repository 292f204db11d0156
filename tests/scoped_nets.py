"""The model the scope tests record: ``Net`` holds an input Linear, ``blocks`` identical
residual Blocks (``b0``...) and an output Linear, so its Functions run in scopes
``Net/inp``, ``Net/b0/fc1``... and the Blocks fold into one box."""

import autodiff.functions as F
from autodiff.layers import Layer, Linear
from autodiff.models import Model

__all__ = ["Block", "Net"]


class Block(Layer):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = Linear(width, in_size=width)
        self.fc2 = Linear(width, in_size=width)

    def forward(self, x):
        return x + self.fc2(F.tanh(self.fc1(x)))


class Net(Model):
    def __init__(self, blocks: int = 4, width: int = 3) -> None:
        super().__init__()
        self.inp = Linear(width, in_size=2)
        for i in range(blocks):
            setattr(self, f"b{i}", Block(width))
        self.blocks = blocks
        self.out = Linear(1, in_size=width)

    def forward(self, x):
        h = self.inp(x)
        for i in range(self.blocks):
            h = getattr(self, f"b{i}")(h)
        return self.out(h)
