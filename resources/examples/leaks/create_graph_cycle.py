"""create_graph cycle: x.grad made with create_graph=True refers back to x.

Category: leaks

backward(create_graph=True) records the gradient computation as a graph: x.grad = 3 x^2 gy is
the output of Functions whose inputs include x itself, so x -> x.grad -> Mul -> ... -> Pow ->
x is a reference cycle. Without x.cleargrad() it outlives the script's names: the audit reports
x, x.grad and the gradient graph with reason 'cycle'.
"""

import numpy as np

from autodiff import Variable

x = Variable(np.array(2.0), name="x")
y = x**3
y.name = "y"
y.backward(create_graph=True)
print("dy/dx =", x.grad)  # 12.0
# x.cleargrad() here would break the cycle
del y
