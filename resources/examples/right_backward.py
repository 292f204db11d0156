"""The same custom Function with a correct backward: the gradient check passes.

Category: debugging

wrong_backward.py with the derivative fixed: d/dx log(1 + exp(x)) = exp(x) / (1 + exp(x)),
that is sigmoid(x), written as 1 / (1 + exp(-x)). Open it in the viewer and run the gradient
check: every Function, Softplus included, agrees with central differences.
"""

import numpy as np

import autodiff.functions as F
from autodiff import Function, Variable


class Softplus(Function):
    def forward(self, x):
        return np.logaddexp(0.0, x)  # log(1 + exp(x)) without overflow

    def backward(self, gy):
        (x,) = self.inputs
        return gy / (1 + F.exp(-x))  # sigmoid(x) = e^x / (1 + e^x)


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
