"""Bug: a learning rate too large for the loss, so every step overshoots and the loss grows.

Category: debugging

Linear regression on 100 points of y = 2x + 1, with x in [0, 1], by plain gradient descent at
learning rate 1. Gradient descent on this loss is stable only below about 0.79 (2 over the
largest curvature of the loss): at 1 each step jumps past the minimum to a point farther away
than where it started, and the loss more than doubles at every step.

What to look for: --check (and the Problems panel) reports a diverging-loss warning: the loss
grew over 9 passes in a row, from pass #1 on: the learning rate is too large. The fix is a
smaller one, the 0.1 of linear_regression.py.
"""

import numpy as np

import autodiff.functions as F
from autodiff import Parameter

rng = np.random.default_rng(0)
x = rng.random((100, 1))
y = 2 * x + 1
w = Parameter(np.zeros((1, 1)), name="w")
b = Parameter(np.zeros(1), name="b")
lr = 1.0  # the bug: stable only below about 0.79

for i in range(10):
    loss = F.mean_squared_error(F.matmul(x, w) + b, y)
    w.cleargrad()
    b.cleargrad()
    loss.backward()
    w.data -= lr * w.grad.data
    b.data -= lr * b.grad.data
    print(f"iter {i}  loss {float(loss.data):.4g}")
