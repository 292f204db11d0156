"""no_grad: a graph built under no_grad records nothing and leaks nothing.

Category: leaks

Inside no_grad() no Function keeps its inputs and no output gets a creator: the results are
plain constants. Nothing is recorded, so even the result kept in a long-lived list is not
flagged: it holds no graph.
"""

import numpy as np

import autodiff
import autodiff.functions as F
from autodiff import Variable, no_grad

x = Variable(np.array([1.0, 2.0, 3.0]), name="x")
with no_grad():
    y = F.sum(F.exp(x) * x)
autodiff.debug_results = [y]
print("y =", y)
