"""Bug: cleargrads() forgotten, so every backward adds to the gradients of the pass before.

Category: debugging

The tutorial's sine regression (an MLP with 10 sigmoid units, SGD, learning rate 0.2) with
one line left out: model.cleargrads() before loss.backward(). backward() adds each gradient
to the one a parameter already holds, so from the second pass on every update follows the
sum of all the gradients so far, not this pass's. Nothing crashes and the loss still falls
for a while.

What to look for: --check (and the Problems panel) reports one carried-gradient warning that
names l0.W, l0.b, l1.W and l1.b, first in pass #2 and in every pass after it; the graph draws
those gradients as carried over. The fix is the missing line, as in sine_regression.py.
"""

import autodiff.functions as F
from autodiff import datasets, models, optimizers

x, y = datasets.get_sine()
model = models.MLP((10, 1))
optimizer = optimizers.SGD(0.2).setup(model)

for i in range(8):
    loss = F.mean_squared_error(y, model(x))
    # the bug: model.cleargrads() belongs here
    loss.backward()
    optimizer.update()
    print(f"iter {i}  loss {float(loss.data):.4f}")
