"""A micrograd program, unchanged but for its imports: a tiny MLP of scalar Values.

Category: training

Written for karpathy/micrograd and run on autodiff.micrograd (the imports read
``autodiff.micrograd.`` instead of ``micrograd.``): MLP(3, [4, 4, 1]) fits four points with a
squared-error loss, three steps of gradient descent (lr 0.05), and prints the numbers micrograd
prints for it (18.432196, 8.705391, 4.462660).
Every Value is a node of the graph: each neuron's call is a scope (MLP/layer0/n2), so the
viewer shows the layers and neurons as boxes, and stepping through backward shows each
scalar's gradient arriving.
"""

import random

from autodiff.micrograd.engine import Value  # noqa: F401 (micrograd's programs import it)
from autodiff.micrograd.nn import MLP


def main(steps: int = 3) -> list[float]:
    random.seed(1337)
    model = MLP(3, [4, 4, 1])
    xs = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
    ys = [1.0, -1.0, -1.0, 1.0]
    losses = []
    for k in range(steps):
        preds = [model(x) for x in xs]
        loss = sum((yp - y) ** 2 for yp, y in zip(preds, ys, strict=True))
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= 0.05 * p.grad
        losses.append(loss.data)
        print(f"step {k}: loss {loss.data:.6f}")
    return losses


if __name__ == "__main__":
    main()
