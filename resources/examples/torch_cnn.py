"""A small PyTorch CNN, three training steps: conv2d, batch norm, max pooling, a linear head.

Category: pytorch
Requires: torch

Eight random 1x8x8 "images" whose class is whether their upper half is brighter than their
lower half. The network is Conv2d(1, 4, 3x3, pad 1) -> BatchNorm2d -> ReLU -> MaxPool2d(2) ->
Linear(64, 2), trained with cross-entropy and torch.optim.SGD (lr 0.1) for three steps: the
loss falls at every step. Stepping through a backward pass shows ConvolutionBackward0 giving
the gradients of conv's weight and bias (the images are data: torch computes no gradient
for them), NativeBatchNormBackward0 those of the batch norm's.
"""

import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(h.flatten(1))


def main(steps: int = 3) -> list[float]:
    torch.manual_seed(0)
    x = torch.rand(8, 1, 8, 8)
    t = (x[:, 0, :4].mean(dim=(1, 2)) > x[:, 0, 4:].mean(dim=(1, 2))).long()
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), t)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: loss {losses[-1]:.6f}")
    return losses


if __name__ == "__main__":
    main()
