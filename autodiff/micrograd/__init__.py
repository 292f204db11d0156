"""micrograd on this engine: ``autodiff.micrograd.engine.Value`` and ``autodiff.micrograd.nn``.

A micrograd program runs after one edit to its imports, ``micrograd.`` becoming
``autodiff.micrograd.``, prints the same numbers, and can be recorded and opened in the viewer
like any graph (``with autodiff.trace.record() as t: ...``).
"""

from autodiff.micrograd import engine, nn
from autodiff.micrograd.engine import Value

__all__ = ["Value", "engine", "nn"]
