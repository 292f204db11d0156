"""micrograd's demo training (an MLP separating two moons, max-margin loss + L2, SGD with a
decaying step) written once for any pair of ``Value`` and ``MLP``: the tests run it on
micrograd and on ``autodiff.micrograd`` and compare. The moons are made with numpy."""

from __future__ import annotations

import random
from typing import Any

import numpy as np


def moons(n: int = 100, noise: float = 0.1, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half circles of ``n`` points (labels -1 and 1), with Gaussian noise."""
    rng = np.random.default_rng(seed)
    half = n // 2
    angle = rng.uniform(0.0, np.pi, n)
    X = np.empty((n, 2))
    X[:half, 0], X[:half, 1] = np.cos(angle[:half]), np.sin(angle[:half])
    X[half:, 0], X[half:, 1] = 1.0 - np.cos(angle[half:]), 0.5 - np.sin(angle[half:])
    X += rng.normal(0.0, noise, X.shape)
    y = np.where(np.arange(n) < half, -1.0, 1.0)
    return X, y


def loss(model: Any, Value: type, X: np.ndarray, y: np.ndarray) -> tuple[Any, float]:
    """The demo's loss: mean hinge loss ``relu(1 - y score)`` plus ``1e-4 * sum(p^2)``, and
    the accuracy."""
    inputs = [[Value(a) for a in row] for row in X]
    scores = [model(x) for x in inputs]
    losses = [(1 + -yi * score).relu() for yi, score in zip(y, scores, strict=True)]
    data_loss = sum(losses) * (1.0 / len(losses))
    reg_loss = 1e-4 * sum(p * p for p in model.parameters())
    right = [(yi > 0) == (score.data > 0) for yi, score in zip(y, scores, strict=True)]
    return data_loss + reg_loss, sum(right) / len(right)


def train(
    Value: type, MLP: type, steps: int, n: int = 100, seed: int = 1337
) -> list[tuple[float, float]]:
    """``steps`` of the demo's SGD on ``MLP(2, [16, 16, 1])``: (loss, accuracy) per step."""
    X, y = moons(n)
    random.seed(seed)
    model = MLP(2, [16, 16, 1])
    history = []
    for k in range(steps):
        total, accuracy = loss(model, Value, X, y)
        model.zero_grad()
        total.backward()
        learning_rate = 1.0 - 0.9 * k / 100
        for p in model.parameters():
            p.data -= learning_rate * p.grad
        history.append((float(total.data), float(accuracy)))
    return history
