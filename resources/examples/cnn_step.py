"""A small CNN, three training steps: conv2d, max pooling and a linear head, as modules.

Category: training

Eight random 1x8x8 "images" whose class is whether their upper half is brighter than their
lower half. The network (a Model) is Conv2d(4, 3x3, pad 1) -> ReLU -> max pooling 2x2 ->
Linear(2), trained with softmax cross-entropy and SGD (lr 0.05) for three steps: the loss falls
at every step. Each layer's call is a scope: right-click > Depth 1 shows conv and fc as
boxes beside the ReLU and the pooling, and a double-click opens one again. Stepping through
the backward pass shows conv's gradients arriving: its input's through a deconv2d, its
weight's through a Conv2DGradW.
"""

import numpy as np

import autodiff.functions as F
from autodiff import Model
from autodiff.layers import Conv2d, Linear
from autodiff.optimizers import SGD


class SmallCNN(Model):
    def __init__(self) -> None:
        super().__init__()
        self.conv = Conv2d(4, kernel_size=3, pad=1, in_channels=1)
        self.fc = Linear(2, in_size=4 * 4 * 4)

    def forward(self, x):
        h = F.pooling(F.relu(self.conv(x)), kernel_size=2, stride=2)
        return self.fc(F.reshape(h, (len(x), -1)))


def main(steps: int = 3) -> list[float]:
    np.random.seed(0)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.0, 1.0, (8, 1, 8, 8)).astype(np.float32)
    t = (x[:, 0, :4].mean(axis=(1, 2)) > x[:, 0, 4:].mean(axis=(1, 2))).astype(np.int64)
    model = SmallCNN()
    optimizer = SGD(lr=0.05).setup(model)
    losses = []
    for step in range(steps):
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        losses.append(float(loss.data))
        print(f"step {step}: loss {losses[-1]:.5f}")
    return losses


if __name__ == "__main__":
    main()
