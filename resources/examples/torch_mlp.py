"""A PyTorch MLP trained for a few steps: torch's own backward, in torch's order.

Category: pytorch
Requires: torch

A 2-8-8-1 network of torch.nn.Linear and tanh learns y = sin(x0) + x1 on 32 random points,
with MSE and torch.optim.SGD (lr 0.1) for four steps; each step prints its loss, and the loss
falls at every step. The viewer records each loss.backward() as one graph (the graph list
has four): stepping through a backward pass shows torch's nodes (AddmmBackward0 is linear,
TanhBackward0...) in the order torch's engine ran them, with the gradients torch passed, and
each parameter's .grad once torch accumulated it. Scopes are module paths (MLP/hidden/0), the
parameters are named as named_parameters() names them (hidden.0.weight).
"""

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh())
        self.out = nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.hidden(x))


def main(steps: int = 4) -> list[float]:
    torch.manual_seed(0)
    x = torch.rand(32, 2) * 2 - 1
    y = (torch.sin(x[:, 0]) + x[:, 1]).unsqueeze(1)
    model = MLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: loss {losses[-1]:.6f}")
    return losses


if __name__ == "__main__":
    main()
