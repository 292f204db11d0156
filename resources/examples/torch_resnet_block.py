"""A ResNet-style block in PyTorch: torch's backward order is not the generation order.

Category: pytorch
Requires: torch

One BasicBlock as torchvision writes it: conv1 -> bn1 -> relu (in place) -> conv2 -> bn2, then
a downsample branch (a strided 1x1 conv and its batch norm, made last), added in place
(out += identity), and a last in-place relu; a linear head and cross-entropy give one loss, and one
backward. Torch's engine runs the downsample branch's nodes before bn2 and conv2, although
they come later by generation: step through the backward to see it, in torch's order. The
in-place ops (relu_, add_) each make a new variable, so the values before them stay visible.
"""

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 2) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = nn.Sequential(
            nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = self.downsample(x)  # made last, as torchvision's BasicBlock makes it
        out += identity
        return self.relu(out)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = BasicBlock(2, 4)
        self.fc = nn.Linear(4 * 3 * 3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.block(x).flatten(1))


def main() -> float:
    torch.manual_seed(0)
    model = Net()
    x = torch.randn(4, 2, 6, 6)
    t = torch.tensor([0, 1, 2, 1])
    loss = nn.functional.cross_entropy(model(x), t)
    loss.backward()
    print(f"loss {loss.item():.6f}")
    print(f"conv1 weight grad norm {model.block.conv1.weight.grad.norm().item():.6f}")
    return loss.item()


if __name__ == "__main__":
    main()
