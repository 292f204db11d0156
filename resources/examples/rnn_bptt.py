"""An RNN learning a sine wave by truncated backpropagation through time.

Category: training

The book's step 59, small: an RNN of 10 hidden units and a Linear head read a noisy sine one
value at a time and predict the next. Every 10 steps the summed loss is backpropagated, then
``loss.unchain_backward()`` cuts the graph there, so the next backward stops at the cut instead
of running through the whole sequence. Three epochs over the first 60 points with Adam (alpha
0.003): the average loss falls every epoch. Each backward is a graph of its own in the Script
panel, and the hidden state a window starts from enters its graph as a leaf (marked 'cut'):
the window before it, which the cut detached, is drawn above it greyed, with dashed edges, and
the backward never runs there.
"""

import numpy as np

import autodiff.functions as F
from autodiff import Model
from autodiff.datasets import SinCurve
from autodiff.layers import RNN, Linear
from autodiff.optimizers import Adam

BPTT_LENGTH = 10
POINTS = 60


class SimpleRNN(Model):
    def __init__(self, hidden_size: int, out_size: int) -> None:
        super().__init__()
        self.rnn = RNN(hidden_size)
        self.fc = Linear(out_size)

    def reset_state(self) -> None:
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


def main(epochs: int = 3) -> list[float]:
    np.random.seed(0)
    data = SinCurve(train=True)
    model = SimpleRNN(10, 1)
    optimizer = Adam(alpha=0.003).setup(model)
    averages = []
    for epoch in range(epochs):
        model.reset_state()
        loss, count, total = 0, 0, 0.0
        for x, t in zip(data.data[:POINTS], data.label[:POINTS], strict=True):
            y = model(x.reshape(1, 1))
            loss += F.mean_squared_error(y, t.reshape(1, 1))
            count += 1
            if count % BPTT_LENGTH == 0:
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()
                optimizer.update()
                total += float(loss.data)
                loss = 0
        averages.append(total / (POINTS // BPTT_LENGTH))
        print(f"epoch {epoch + 1}: average loss {averages[-1]:.5f}")
    return averages


if __name__ == "__main__":
    main()
