"""DeZero's ``dezero/cuda.py``: the GPU switch, CuPy when it is installed.

``gpu_enable`` says whether CuPy imported (decided once, when this module is imported, as in
DeZero). ``get_array_module(x)`` is numpy or CuPy, whichever holds ``x``; ``as_numpy`` and
``as_cupy`` move an array (or a Variable's) between the two. ``to_gpu()`` on a Variable, a
Layer or a DataLoader moves their arrays with ``as_cupy``; without CuPy it raises a
RuntimeError naming it.

numpy's functions dispatch to CuPy for CuPy arrays (``np.exp``, ``np.where``, ``np.matmul``:
NEP 13 and 18), so the engine asks for the array module only where it makes an array from a
shape or a number, or converts one.

This module is a leaf (numpy and CuPy only), so that the engine's core can import it: a
Variable is recognised by the array it holds in ``data``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

try:
    import cupy
except ImportError:
    cupy = None

__all__ = [
    "CUPY_MISSING",
    "as_cupy",
    "as_numpy",
    "cupy",
    "get_array_module",
    "gpu_enable",
    "is_cupy_array",
]

#: whether CuPy is installed (and so to_gpu() can move arrays)
gpu_enable: bool = cupy is not None

#: what to_gpu() says without CuPy
CUPY_MISSING = (
    "CuPy is not installed: to_gpu() needs it (pip install cupy-cuda12x, or the package for "
    "your CUDA version); autodiff.cuda.gpu_enable tells whether it is"
)


def _array(x: Any) -> Any:
    """The array itself, or the one a Variable holds in ``data``."""
    if isinstance(x, np.ndarray | np.generic) or is_cupy_array(x):
        return x
    return getattr(x, "data", x)


def is_cupy_array(x: Any) -> bool:
    """Whether ``x`` is a CuPy array (False whenever CuPy is not installed)."""
    return cupy is not None and isinstance(x, cupy.ndarray)


def get_array_module(x: Any) -> ModuleType:
    """``cupy`` for a CuPy array (or a Variable holding one), else ``numpy``."""
    if cupy is None:
        return np
    return cupy.get_array_module(_array(x))


def as_numpy(x: Any) -> np.ndarray:
    """``x`` (an array, a number or a Variable's array) as a numpy array, copied off the GPU
    when it is a CuPy array."""
    x = _array(x)
    if is_cupy_array(x):
        return cupy.asnumpy(x)
    if type(x) is np.ndarray:
        return x
    return np.asarray(x)


def as_cupy(x: Any) -> Any:
    """``x`` (an array, a number or a Variable's array) as a CuPy array on the GPU; raises
    RuntimeError when CuPy is not installed."""
    if cupy is None:
        raise RuntimeError(CUPY_MISSING)
    return cupy.asarray(_array(x))
