"""Shape helpers of backward, on ndarrays (and CuPy arrays): the engine's leaf (numpy only).

``autodiff.utils`` re-exports them under DeZero's names (``dezero.utils.sum_to``...).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "broadcast_to",
    "conv_pair",
    "get_conv_outsize",
    "get_deconv_outsize",
    "is_count",
    "logsumexp",
    "max_backward_shape",
    "pair",
    "reshape_sum_backward",
    "sum_to",
]

_add_reduce = np.add.reduce  # ndarray.sum without numpy's Python-level wrapper
_LEAD_AXES = [tuple(range(n)) for n in range(8)]


def _sum_method(x: Any, axis: Any, keepdims: bool = False) -> Any:
    # another array type (CuPy's): its own reduction, which numpy's add.reduce may not reach
    return x.sum(axis=axis, keepdims=keepdims)


def sum_to(x: NDArray, shape: tuple[int, ...]) -> NDArray:
    """Sum ``x`` over the axes that broadcasting added or stretched, down to ``shape``."""
    ndim = len(shape)
    lead = x.ndim - ndim
    if lead < 0:
        raise ValueError(f"sum_to: cannot sum an array of shape {x.shape} to shape {shape}")
    add_reduce = _add_reduce if type(x) is np.ndarray else _sum_method
    if lead > 0 and x.shape[lead:] == shape:
        # only leading axes were added (a bias over a batch): one reduction, nothing to squeeze
        added = _LEAD_AXES[lead] if lead < len(_LEAD_AXES) else tuple(range(lead))
        return add_reduce(x, axis=added)
    lead_axis = tuple(range(lead))
    axis = tuple(i + lead for i, sx in enumerate(shape) if sx == 1 and x.shape[i + lead] != 1)
    if not axis:
        y = add_reduce(x, axis=lead_axis) if lead else x
    else:
        y = add_reduce(x, axis=lead_axis + axis, keepdims=True)
        if lead > 0:
            y = y.squeeze(lead_axis)
    if y.shape != tuple(shape):
        raise ValueError(f"sum_to: cannot sum an array of shape {x.shape} to shape {shape}")
    return y


def reshape_sum_backward(gy: Any, x_shape: tuple[int, ...], axis: Any, keepdims: bool) -> Any:
    """Give ``gy`` (the gradient of a sum) back the axes the sum removed, so it broadcasts."""
    ndim = len(x_shape)
    tupled_axis = axis
    if axis is None:
        tupled_axis = None
    elif not isinstance(axis, tuple | list):
        tupled_axis = (axis,)

    if not (ndim == 0 or tupled_axis is None or keepdims):
        actual_axis = [a if a >= 0 else a + ndim for a in tupled_axis]
        shape = list(gy.shape)
        for a in sorted(actual_axis):
            shape.insert(a, 1)
    else:
        shape = gy.shape
    return gy.reshape(shape)


def logsumexp(x: NDArray, axis: int = 1) -> NDArray:
    """``log(sum(exp(x), axis))`` computed without overflow; keeps the reduced axis."""
    m = x.max(axis=axis, keepdims=True)
    y = x - m
    np.exp(y, out=y)
    s = y.sum(axis=axis, keepdims=True)
    np.log(s, out=s)
    m += s
    return m


def max_backward_shape(x: Any, axis: Any) -> list[int]:
    """The shape of ``max(x, axis)`` with the reduced axes kept as 1 (negative axes too)."""
    if axis is None:
        axis = range(x.ndim)
    elif isinstance(axis, int):
        axis = (axis,)
    axis = [ax % x.ndim for ax in axis] if x.ndim else []
    return [s if ax not in axis else 1 for ax, s in enumerate(x.shape)]


def broadcast_to(x: NDArray, shape: tuple[int, ...]) -> NDArray:
    """``x`` broadcast to ``shape`` as a writable array (a copy when the shape changes).

    ``np.broadcast_to`` alone returns a read-only view, and a gradient that cannot be updated
    in place (``grad.data *= rate``) is a trap.
    """
    if x.shape == shape:
        return x
    return np.broadcast_to(x, shape).copy()


# =============================================================================
# Convolution sizes (DeZero's utils.pair / get_conv_outsize / get_deconv_outsize)
# =============================================================================
def _is_int(x: Any) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


def is_count(n: Any) -> bool:
    """Whether ``n`` is an int (numpy's too, a bool not) of at least 1: a size or a count."""
    return _is_int(n) and n >= 1


def pair(x: Any) -> tuple[int, int]:
    """``(x, x)`` for an int, ``x`` itself for a pair: a kernel size, stride or padding."""
    if _is_int(x):
        return (int(x), int(x))
    if isinstance(x, tuple | list) and len(x) == 2 and _is_int(x[0]) and _is_int(x[1]):
        return (int(x[0]), int(x[1]))
    raise ValueError(f"pair: expected an int or a pair of ints (height, width), got {x!r}")


def conv_pair(op: str, name: str, value: Any, least: int = 1) -> tuple[int, int]:
    """:func:`pair` of ``op``'s argument ``name`` (a kernel size or stride: ``least`` 1; a
    padding: 0), refused unless it is an int or a pair of ints (numpy's too, bools not) of at
    least ``least``; the error names the op, the argument and the value."""
    try:
        both = pair(value)
    except ValueError:
        raise TypeError(
            f"{op}: {name} must be an int or a pair of ints (height, width), not {value!r} "
            f"({type(value).__name__})"
        ) from None
    if min(both) < least:
        bound = "positive" if least else "non-negative"
        raise ValueError(f"{op}: {name} must be {bound}, got {value!r}")
    return both


def get_conv_outsize(input_size: int, kernel_size: int, stride: int, pad: int) -> int:
    """The output length of a convolution (or pooling) along one axis."""
    return (input_size + pad * 2 - kernel_size) // stride + 1


def get_deconv_outsize(size: int, k: int, s: int, p: int) -> int:
    """The output length of a transposed convolution along one axis (the smallest input
    length that a convolution of kernel ``k``, stride ``s``, padding ``p`` maps to ``size``)."""
    return s * (size - 1) + k - 2 * p
