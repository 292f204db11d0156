"""The calculator: backpropagation by hand, on four numbers.

L = (a * b + c) * f with a = 2, b = -3, c = 10, f = 5, so L = 20. One call to L.backward()
fills in how much L changes per unit change of each input: dL/da = f * b = -15,
dL/db = f * a = 10, dL/dc = f = 5 and dL/df = a * b + c = 4. The intermediate results
e = a * b and d = e + c keep their gradients too (retain_grad=True), so every node of the
graph shows one: follow the chain rule backwards from L.
"""

import numpy as np

from autodiff import Variable


def main() -> dict[str, float]:
    a = Variable(np.array(2.0), name="a")
    b = Variable(np.array(-3.0), name="b")
    c = Variable(np.array(10.0), name="c")
    f = Variable(np.array(5.0), name="f")

    e = a * b
    e.name = "e"
    d = e + c
    d.name = "d"
    L = d * f
    L.name = "L"
    L.backward(retain_grad=True)

    results = {"L": float(L.data)}
    print(f"L = (a*b + c) * f = {results['L']:g}")
    for v in (a, b, c, f, e, d):
        results[f"dL/d{v.name}"] = float(v.grad.data)
        print(f"dL/d{v.name} = {float(v.grad.data):g}")
    return results


if __name__ == "__main__":
    main()
