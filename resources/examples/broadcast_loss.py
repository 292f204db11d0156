"""Bug: a (N, 1) prediction minus (N,) targets broadcasts the loss to (N, N).

Category: debugging

Linear regression on 50 points of y = 2x + 1, but the targets were made as a flat vector of
shape (50,) while the model predicts a column of shape (50, 1). numpy broadcasting turns
y_pred - y into a (50, 50) matrix that pairs every prediction with every target, and the
hand-written mean squared error averages that: no error is raised, the loss falls, and the
fit heads for the wrong line (w 0, b the mean of y). F.mean_squared_error refuses the shapes.

What to look for: --check (and the Problems panel) reports a broadcast-shape error at the Sub
whose output (50, 50) is larger than both inputs, (50, 1) and (50,), feeding the loss. The fix
is y.reshape(-1, 1), as linear_regression.py makes its targets.
"""

import numpy as np

import autodiff.functions as F
from autodiff import Parameter

rng = np.random.default_rng(0)
x = rng.random((50, 1))
y = 2 * x[:, 0] + 1  # the bug: shape (50,), not (50, 1)
w = Parameter(np.zeros((1, 1)), name="w")
b = Parameter(np.zeros(1), name="b")

for i in range(5):
    y_pred = F.matmul(x, w) + b
    diff = y_pred - y  # (50, 50)
    loss = F.sum(diff**2) / diff.size
    w.cleargrad()
    b.cleargrad()
    loss.backward()
    w.data -= 0.1 * w.grad.data
    b.data -= 0.1 * b.grad.data
    print(f"iter {i}  loss {float(loss.data):.4f}")
