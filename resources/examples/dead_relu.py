"""Bug: a bias initialised at -1 leaves most ReLUs of the first layer dead from the start.

Category: debugging

A 1-10-1 ReLU network fitting a sine curve on x in [0, 1]. Its first layer's bias starts at -1
instead of 0, so a unit whose weight is below 1 outputs w x - 1 < 0 for every input: the ReLU
gives 0 and passes back no gradient, and the unit never learns its way out. Here 8 of the 10
units are dead for every sample; the network fits with the 2 that are left.

What to look for: --check (and the Problems panel) reports one dead-relu warning on the ReLU in
Net, 80% of its units zero for every sample, in every pass. The fix is a bias that starts at 0
(or a small positive number), or a leaky ReLU.
"""

import autodiff.functions as F
from autodiff import Model, datasets, layers, optimizers


class Net(Model):
    def __init__(self) -> None:
        super().__init__()
        self.l0 = layers.Linear(10, in_size=1)
        self.l0.b.data[...] = -1.0  # the bug: a negative bias init
        self.l1 = layers.Linear(1, in_size=10)

    def forward(self, x):
        return self.l1(F.relu(self.l0(x)))


x, y = datasets.get_sine()
model = Net()
optimizer = optimizers.SGD(0.1).setup(model)
for i in range(5):
    loss = F.mean_squared_error(y, model(x))
    model.cleargrads()
    loss.backward()
    optimizer.update()
    print(f"iter {i}  loss {float(loss.data):.4f}")
