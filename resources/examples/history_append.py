"""Bug: history.append(loss) keeps every iteration's whole graph alive.

Category: debugging

A training loop that logs its losses by appending the loss Variable itself to a list. The loss
holds its creator, the creator its inputs, and so on back to the data: each entry of the list
keeps that iteration's entire graph in memory, so memory grows with every step of training.

What to look for: --check (and the Problems panel) reports one graph-held warning: the passes'
graphs stayed alive from pass #1 (backward() on line 26), held by `history` (line 28).
The fix is to keep the number, not the Variable: history.append(float(loss.data))
(loss.item() in PyTorch).
"""

import autodiff.functions as F
from autodiff import datasets, models, optimizers

x, y = datasets.get_sine()
model = models.MLP((10, 1))
optimizer = optimizers.SGD(0.2).setup(model)
history = []

for i in range(8):
    loss = F.mean_squared_error(y, model(x))
    model.cleargrads()
    loss.backward()
    optimizer.update()
    history.append(loss)  # the bug: the Variable, and with it the graph
print("losses:", [round(float(v.data), 4) for v in history])
