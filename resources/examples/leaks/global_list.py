"""Global list: an intermediate kept in a module-level list keeps its graph alive.

Category: leaks

Each training step appends the hidden activation h to a "debugging" list that lives in a
module outliving this script (the autodiff package stands in for any library module with a
cache). h holds its creator, which holds its inputs: every h keeps its whole upstream chain
alive, and the audit reports each of them as referenced by global 'debug_cache' (list) [i].
"""

import numpy as np

import autodiff
import autodiff.functions as F
from autodiff import Variable

autodiff.debug_cache = []  # a long-lived global list

x = Variable(np.array([[0.5, -1.0, 2.0]]), name="x")
w = Variable(np.array([[0.1], [0.2], [-0.3]]), name="w")
for step in range(2):
    h = F.tanh(F.matmul(x, w))
    h.name = f"h{step}"
    autodiff.debug_cache.append(h)  # the leak: kept "for later inspection"
    loss = F.sum(h * h)
    w.cleargrad()
    loss.backward()
    w.data -= 0.1 * w.grad.data
print("cached activations:", [float(v.data.sum()) for v in autodiff.debug_cache])
del h, loss
