"""``python -m autodiff``: a short demo of the engine."""

import numpy as np

import autodiff.functions as F
from autodiff import Variable


def main() -> None:
    x = Variable(np.array(0.5), name="x")
    y = F.square(F.exp(F.square(x)))
    y.backward()
    print("y = square(exp(square(x))) at x = 0.5")
    print("y     =", y)
    print("dy/dx =", x.grad)


if __name__ == "__main__":
    main()
