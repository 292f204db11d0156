"""Gradient check: catching a wrong backward in a hand-written Function.

A new primitive is a Function subclass with a forward (on arrays) and a backward (on
Variables). Here is y = x**3 twice: Cube has the right derivative, 3 x**2; BadCube forgets
the 3, a typical slip. utils.gradient_check compares each backward with central differences
(f(x + h) - f(x - h)) / 2h in float64: Cube passes, and for BadCube it prints a report of
the elements that disagree, with the backprop and numerical values side by side (backprop
is a third of the truth everywhere).

Category: debugging
"""

import numpy as np

from autodiff import Function, utils


class Cube(Function):
    def forward(self, x):
        return x**3

    def backward(self, gy):
        (x,) = self.inputs
        return 3 * x**2 * gy  # d(x^3)/dx = 3 x^2


class BadCube(Function):
    def forward(self, x):
        return x**3

    def backward(self, gy):
        (x,) = self.inputs
        return x**2 * gy  # wrong: the power rule's factor 3 is missing


def main() -> dict[str, object]:
    x = np.random.default_rng(0).standard_normal((2, 3))

    print("gradient_check(Cube): backward returns 3 x^2 * gy")
    cube_ok = utils.gradient_check(lambda v: Cube()(v), x)
    print("  passed" if cube_ok else "  FAILED")

    print("gradient_check(BadCube): backward returns x^2 * gy")
    bad_ok = utils.gradient_check(lambda v: BadCube()(v), x)
    print("  passed" if bad_ok else "  FAILED (as it should: see the report above)")

    return {"cube_passes": cube_ok, "bad_cube_passes": bad_ok}


if __name__ == "__main__":
    main()
