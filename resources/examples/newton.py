"""Newton's method with second derivatives: minimise y = x^4 - 2x^2 from x = 2.

Category: higher-order

Each iteration computes dy/dx with backward(create_graph=True), so the gradient is itself a
graph, then backpropagates through that graph for d2y/dx2 and moves x by -f'(x) / f''(x).
From x = 2 it reaches the minimum at x = 1 in about six iterations (gradient descent needs
hundreds). The viewer shows each backward pass, including the gradient graph that the
second derivative runs through.
"""

import numpy as np

from autodiff import Variable


def f(x: Variable) -> Variable:
    return x**4 - 2 * x**2


def main(iterations: int = 7) -> float:
    x = Variable(np.array(2.0), name="x")
    for i in range(iterations):
        y = f(x)
        x.cleargrad()
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        gx2 = x.grad
        print(f"{i}: x = {float(x.data):.10f}  f'(x) = {float(gx.data):.3e}")
        x.data = x.data - gx.data / gx2.data
    return float(x.data)


if __name__ == "__main__":
    main()
