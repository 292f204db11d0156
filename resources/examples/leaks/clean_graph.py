"""Clean graph: nothing survives once the output is dropped.

Category: leaks

Builds y = sum(tanh(x) * x), runs backward and reads x.grad, then deletes y. A Function holds
its outputs by weakref, so dropping y frees the whole graph by reference counting alone: the
audit finds no survivors (x, a leaf this script still holds, is not a leak).
"""

import numpy as np

import autodiff.functions as F
from autodiff import Variable

x = Variable(np.linspace(-1.0, 1.0, 5), name="x")
y = F.sum(F.tanh(x) * x)
y.name = "y"
y.backward()
print("dy/dx =", x.grad)
del y
