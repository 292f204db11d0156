"""Linear regression: fit y = 2x + 1 by plain gradient descent.

100 noisy points on the line y = 2x + 1 (x uniform in [0, 1], Gaussian noise of standard
deviation 0.1). The model is one weight w and one bias b, both starting at 0; each iteration
computes the mean squared error, clears the old gradients (zero_grad), backpropagates and moves
every parameter a step of lr against its gradient. The fit ends near w = 2, b = 1.

The learning rate is the book's 0.1: with x in [0, 1] plain gradient descent on this loss is
stable for any lr below about 0.79 (2 over the largest eigenvalue of the loss's Hessian),
and 0.1 converges in a few hundred iterations.
"""

import numpy as np

import autodiff.functions as F
from autodiff import Model, Parameter


class LinearModel(Model):
    """y = x @ w + b, micrograd style: two parameters, nothing else."""

    def __init__(self) -> None:
        super().__init__()
        self.w = Parameter(np.zeros((1, 1)), name="w")
        self.b = Parameter(np.zeros(1), name="b")

    def forward(self, x):
        return F.matmul(x, self.w) + self.b


def main(iters: int = 500, lr: float = 0.1) -> dict[str, float]:
    rng = np.random.default_rng(0)
    x = rng.random((100, 1))
    y = 2 * x + 1 + 0.1 * rng.standard_normal((100, 1))

    model = LinearModel()
    for i in range(iters):
        y_pred = model(x)
        loss = F.mean_squared_error(y, y_pred)
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data -= lr * p.grad.data
        if i % 100 == 0 or i == iters - 1:
            w, b = float(model.w.data[0, 0]), float(model.b.data[0])
            print(f"iter {i:4d}  loss {float(loss.data):.5f}  w {w:.4f}  b {b:.4f}")

    w, b = float(model.w.data[0, 0]), float(model.b.data[0])
    results = {"w": w, "b": b, "loss": float(loss.data)}
    print(f"fitted y = {results['w']:.3f} x + {results['b']:.3f} (true: y = 2 x + 1)")
    return results


if __name__ == "__main__":
    main()
