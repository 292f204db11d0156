"""A small MLP: one forward and backward pass through a two-layer network.

Category: training

Five points of y = sin(2 pi x), a hidden layer of 4 sigmoid units and a linear output, written
with F.linear and Parameters so every weight is a node of the graph. After loss.backward()
each weight holds its gradient; one step of gradient descent (lr = 0.2) lowers the loss.
"""

import numpy as np

import autodiff.functions as F
from autodiff import Parameter, Variable


def main() -> tuple[float, float]:
    rng = np.random.default_rng(0)
    x = Variable(np.linspace(0.0, 1.0, 5).reshape(5, 1), name="x")
    t = Variable(np.sin(2 * np.pi * x.data), name="t")
    W1 = Parameter(0.5 * rng.standard_normal((1, 4)), name="W1")
    b1 = Parameter(np.zeros(4), name="b1")
    W2 = Parameter(0.5 * rng.standard_normal((4, 1)), name="W2")
    b2 = Parameter(np.zeros(1), name="b2")
    params = (W1, b1, W2, b2)

    def predict(x: Variable) -> Variable:
        h = F.sigmoid(F.linear(x, W1, b1))
        return F.linear(h, W2, b2)

    loss = F.mean_squared_error(predict(x), t)
    loss.name = "loss"
    loss.backward()
    before = float(loss.data)
    for p in params:
        p.data -= 0.2 * p.grad.data
    after = float(F.mean_squared_error(predict(x), t).data)
    print(f"loss {before:.4f} -> {after:.4f} after one step")
    return before, after


if __name__ == "__main__":
    main()
