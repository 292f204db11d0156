"""A custom Function with a wrong backward: the gradient check finds it.

Category: debugging

Softplus(x) = log(1 + exp(x)) is written here as a new primitive, with a slip in its
backward that is easy to make and hard to see: the chain rule's inner factor exp(x) is
missing, so backward returns gy / (1 + exp(x)) = gy * sigmoid(-x) instead of gy * sigmoid(x).
Nothing crashes, the loss is right, only the gradients are wrong. Open this script in the
viewer and run the gradient check: Softplus is flagged red ("wrong backward") with its error,
while MatMul and Sum, checked the same way, pass. right_backward.py is the same program with
the derivative fixed.
"""

import numpy as np

import autodiff.functions as F
from autodiff import Function, Variable


class Softplus(Function):
    def forward(self, x):
        return np.logaddexp(0.0, x)  # log(1 + exp(x)) without overflow

    def backward(self, gy):
        (x,) = self.inputs
        return gy / (1 + F.exp(x))  # wrong: d/dx log(1 + e^x) = e^x / (1 + e^x)


def softplus(x):
    return Softplus()(x)


def main() -> Variable:
    rng = np.random.default_rng(0)
    x = Variable(rng.standard_normal((4, 3)), name="x")
    W = Variable(rng.standard_normal((3, 2)), name="W")
    loss = F.sum(softplus(F.matmul(x, W)))
    loss.name = "loss"
    loss.backward()
    print(f"loss = {float(loss.data):.6f}")
    print("dloss/dW from backprop:")
    print(W.grad.data)
    return loss


if __name__ == "__main__":
    main()
