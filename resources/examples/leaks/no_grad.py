"""no_grad: what is computed under no_grad records nothing and leaks nothing.

Category: leaks

The graph drawn is z = sum(x * x) with its backward, built outside no_grad and then dropped.
Inside no_grad() no Function keeps its inputs and no output gets a creator: y is a plain
constant. Nothing of y is recorded, so even though a long-lived list keeps it, the audit
flags nothing: y holds no graph.
"""

import numpy as np

import autodiff
import autodiff.functions as F
from autodiff import Variable, no_grad

x = Variable(np.array([1.0, 2.0, 3.0]), name="x")
z = F.sum(x * x)
z.name = "z"
z.backward()
print("dz/dx =", x.grad)
del z  # the recorded graph is freed with its output

with no_grad():
    y = F.sum(F.exp(x) * x)
autodiff.debug_results = [y]
print("y =", y, "(computed under no_grad: no creator)", y.creator)
