"""The array operations the primitives' formula texts call (:data:`autodiff.formulas.FUNCTIONS`).

Each is what a derivative does to whole arrays, under the name a text reads: ``expand`` gives
a reduction's gradient its axes back, ``im2col`` / ``col2im`` cut an image into windows and add
them back, ``rows`` lays an image batch out one row per pixel... They are computed with the
engine's own helpers (:mod:`autodiff._shapes`, :mod:`autodiff.functions_conv`), so an
evaluated text equals the derivative. Arguments are positional (a text has no keywords).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff import _shapes
from autodiff import functions as _functions
from autodiff import functions_conv as _conv

__all__ = [
    "area",
    "at_max",
    "batch_std",
    "channel_mean",
    "channel_sum",
    "col2im",
    "expand",
    "get_item",
    "im2col",
    "inverse_axes",
    "keep_sum",
    "matrix",
    "normalize",
    "onehot",
    "part",
    "per_channel",
    "put_at",
    "rows",
    "scatter_add",
    "softmax",
    "spread",
    "take_at",
    "unrows",
    "unwindows",
    "windows",
]


# ----------------------------------------------------------------------------- shapes
def expand(g: Any, axis: Any, shape: tuple[int, ...]) -> NDArray:
    """A reduction's result ``g`` (a sum's or max's over ``axis`` of an array of ``shape``) with
    the reduced axes back as size 1, so it broadcasts against the input; as it is when they
    were kept."""
    g = np.asarray(g)
    if g.ndim == len(shape):
        return g
    return g.reshape(_shapes.max_backward_shape(np.empty(shape, dtype=np.int8), axis))


def keep_sum(a: Any, axis: Any) -> NDArray:
    """``a`` summed over ``axis``, the axis kept (size 1) so the sum broadcasts back."""
    return np.sum(a, axis=axis, keepdims=True)


def inverse_axes(axes: Any) -> tuple[int, ...] | None:
    """The permutation that undoes ``transpose(a, axes)`` (None, the reversal, undoes None)."""
    if axes is None:
        return None
    n = len(axes)
    return tuple(int(i) for i in np.argsort([ax % n for ax in axes]))


def part(gy: Any, axis: int, k: int, xs: Any) -> NDArray:
    """The stretch of ``gy`` along ``axis`` where input ``k`` of ``concat(xs, axis)`` lies."""
    gy = np.asarray(gy)
    axis %= gy.ndim
    start = sum(np.shape(x)[axis] for x in xs[:k])
    stop = start + np.shape(xs[k])[axis]
    return gy[(slice(None),) * axis + (slice(start, stop),)]


def get_item(a: Any, slices: Any) -> NDArray:
    """``a[slices]``."""
    return np.asarray(a)[slices]


def scatter_add(gy: Any, slices: Any, shape: tuple[int, ...]) -> NDArray:
    """Zeros of ``shape`` with ``gy`` added at ``slices`` (an index given twice adds twice)."""
    gy = np.asarray(gy)
    return _functions._scatter_add(gy, slices, tuple(shape))


# ----------------------------------------------------------------------------- softmax, labels
def softmax(a: Any, axis: Any) -> NDArray:
    """``exp(a) / sum(exp(a))`` along ``axis``."""
    return _functions._softmax_data(np.asarray(a), axis)


def onehot(t: Any, x: Any) -> NDArray:
    """One row per label of ``t``: 1 in the label's column, as many columns as ``x`` has."""
    x = np.asarray(x)
    return np.eye(x.shape[1], dtype=x.dtype)[np.asarray(t)]


# ----------------------------------------------------------------------------- channels
def _channel_axes(ndim: int) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i != 1)


def channel_sum(a: Any) -> NDArray:
    """``a`` ``(N, C)`` or ``(N, C, H, W)`` summed over every axis but the channel's: ``(C,)``."""
    a = np.asarray(a)
    return a.sum(axis=_channel_axes(a.ndim))


def channel_mean(a: Any) -> NDArray:
    """The mean of each channel of ``a`` (every axis but 1), shaped to broadcast back."""
    a = np.asarray(a)
    return a.mean(axis=_channel_axes(a.ndim), keepdims=True)


def per_channel(v: Any, x: Any) -> NDArray:
    """``v`` ``(C,)``, one value per channel, shaped to broadcast along ``x``'s axis 1."""
    x = np.asarray(x)
    return np.asarray(v).reshape((1, -1) + (1,) * (x.ndim - 2))


def batch_std(x: Any, eps: float) -> NDArray:
    """Each channel's standard deviation over the batch, ``sqrt(var + eps)``, broadcastable."""
    centred = np.asarray(x) - channel_mean(x)
    return np.sqrt(channel_mean(centred * centred) + eps)


def normalize(x: Any, eps: float) -> NDArray:
    """``x`` normalised with its batch's statistics per channel: ``(x − mean) / batch_std``."""
    return (np.asarray(x) - channel_mean(x)) / batch_std(x, eps)


# ----------------------------------------------------------------------------- convolution
def _kernel(kernel: Any) -> tuple[int, int]:
    # a kernel size, or a weight's shape (OC, C, KH, KW) whose last two are the kernel's
    if isinstance(kernel, tuple | list) and len(kernel) == 4:
        return int(kernel[2]), int(kernel[3])
    return _shapes.pair(kernel)


def im2col(x: Any, kernel: Any, stride: Any, pad: Any, to_matrix: Any = True) -> NDArray:
    """The windows of the image batch ``x`` a ``kernel`` (a size, or a weight's shape) sees:
    rows ``(N*OH*OW, C*KH*KW)``, or ``(N, C, KH, KW, OH, OW)`` when ``to_matrix`` is false."""
    return _conv.im2col_array(np.asarray(x), _kernel(kernel), stride, pad, bool(to_matrix))


def col2im(
    col: Any, shape: tuple, kernel: Any, stride: Any, pad: Any, to_matrix: Any = True
) -> NDArray:
    """The adjoint of :func:`im2col`: each window added back where it lies in an image of
    ``shape``."""
    args = (_kernel(kernel), stride, pad, bool(to_matrix))
    return _conv.col2im_array(np.asarray(col), tuple(shape), *args)


def windows(x: Any, kernel: Any, stride: Any, pad: Any) -> NDArray:
    """:func:`im2col` as ``(N, C, KH, KW, OH, OW)``: each window's values on axes 2 and 3."""
    return im2col(x, kernel, stride, pad, False)


def unwindows(w: Any, shape: tuple, kernel: Any, stride: Any, pad: Any) -> NDArray:
    """:func:`col2im` of windows ``(N, C, KH, KW, OH, OW)``."""
    return col2im(w, shape, kernel, stride, pad, False)


def rows(a: Any) -> NDArray:
    """An image batch ``(N, C, H, W)`` as rows ``(N*H*W, C)``: one row per pixel."""
    a = np.asarray(a)
    return a.transpose(0, 2, 3, 1).reshape(-1, a.shape[1])


def unrows(r: Any, shape: tuple) -> NDArray:
    """Rows ``(N*H*W, C)`` back into an image batch of ``shape`` ``(N, C, H, W)``."""
    N, C, H, W = shape
    return np.asarray(r).reshape(N, H, W, C).transpose(0, 3, 1, 2)


def matrix(W: Any) -> NDArray:
    """A weight ``(A, B, KH, KW)`` as a matrix ``(A, B*KH*KW)``, the columns in im2col's order."""
    W = np.asarray(W)
    return W.reshape(W.shape[0], -1)


def area(kernel: Any) -> int:
    """``KH * KW``: how many values a window holds."""
    KH, KW = _kernel(kernel)
    return KH * KW


def spread(gy: Any, kernel: Any) -> NDArray:
    """Each output's ``gy`` ``(N, C, OH, OW)`` copied to every place of its window:
    ``(N, C, KH, KW, OH, OW)``."""
    gy = np.asarray(gy)
    N, C, OH, OW = gy.shape
    KH, KW = _kernel(kernel)
    return np.broadcast_to(gy.reshape(N, C, 1, 1, OH, OW), (N, C, KH, KW, OH, OW))


def _flat_index(w: NDArray) -> NDArray:
    # (N, C, KH, KW, OH, OW) -> (N, C, OH, OW, KH*KW), the window's values last, row-major
    N, C, KH, KW, OH, OW = w.shape
    return w.transpose(0, 1, 4, 5, 2, 3).reshape(N, C, OH, OW, KH * KW)


def put_at(gy: Any, indexes: Any, kernel: Any) -> NDArray:
    """Windows ``(N, C, KH, KW, OH, OW)`` of zeros holding each output's ``gy`` at the place
    ``indexes`` (flat, row-major in the window) names."""
    gy = np.asarray(gy)
    N, C, OH, OW = gy.shape
    KH, KW = _kernel(kernel)
    flat = np.zeros((N, C, OH, OW, KH * KW), dtype=gy.dtype)
    np.put_along_axis(flat, np.asarray(indexes)[..., None], gy[..., None], axis=4)
    return flat.reshape(N, C, OH, OW, KH, KW).transpose(0, 1, 4, 5, 2, 3)


def take_at(w: Any, indexes: Any) -> NDArray:
    """From windows ``(N, C, KH, KW, OH, OW)``, each window's value at the place ``indexes``
    names: ``(N, C, OH, OW)``."""
    flat = _flat_index(np.asarray(w))
    return np.take_along_axis(flat, np.asarray(indexes)[..., None], axis=4)[..., 0]


def at_max(w: Any, gy: Any) -> NDArray:
    """Windows ``(N, C, KH, KW, OH, OW)`` of zeros holding each output's ``gy`` where its
    window ``w`` has its maximum (the first of equal ones, as max pooling picks it)."""
    w = np.asarray(w)
    indexes = _flat_index(w).argmax(axis=4)
    return put_at(gy, indexes, w.shape[2:4])
