"""Strong outputs: a Function that keeps its outputs makes a reference cycle.

Category: leaks

The seeds' design before weakref: KeepOutputs stores the Variables it returns. Each output
refers to its creator (y.creator) and the creator now refers back to the output, so once the
script drops y, reference counting can no longer free them: y, KeepOutputs and everything
upstream of it (including x) survive until the cycle collector runs. The audit reports them
with reason 'cycle'.
"""

import numpy as np

import autodiff.functions as F
from autodiff import Function, Variable


class KeepOutputs(Function):
    """y = 2x, but it keeps a strong reference to its outputs (the bug)."""

    def __call__(self, *inputs):
        outputs = super().__call__(*inputs)
        self.kept = outputs  # output.creator -> self -> output: a cycle
        return outputs

    def forward(self, x):
        return 2 * x

    def backward(self, gy):
        return 2 * gy


x = Variable(np.array(1.5), name="x")
y = KeepOutputs()(F.exp(x))
y.name = "y"
y.backward()
print("dy/dx =", x.grad)
del y
