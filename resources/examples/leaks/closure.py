"""Closure: a Variable captured by a callback keeps its graph alive.

Category: leaks

make_logger returns a function that reads h whenever it is called; h is a free variable of
that function, stored in a closure cell. The callback is registered in a list that outlives
this script (the autodiff package stands in for any library's hook registry), so h and the
graph upstream of it stay alive: the audit reports them held by closure cell 'h' of log().
"""

import numpy as np

import autodiff
import autodiff.functions as F
from autodiff import Variable


def make_logger(x):
    h = F.tanh(x) * 2.0
    h.name = "h"

    def log():
        return float(h.data.sum())

    return log


autodiff.debug_hooks = [make_logger(Variable(np.array([0.1, 0.2]), name="x"))]
print("logged:", autodiff.debug_hooks[0]())
