"""Convolution and pooling, named as in DeZero's ``dezero/functions_conv.py``.

Images are ``(N, C, H, W)``; a convolution's weight is ``(OC, C, KH, KW)``, a transposed
convolution's ``(C, OC, KH, KW)``. ``kernel_size``, ``stride`` and ``pad`` are an int or a pair
``(height, width)``. :mod:`autodiff.functions` re-exports every name here.

As in DeZero, each derivative is again made of these primitives (the gradient of ``conv2d`` is
``deconv2d`` and :class:`Conv2DGradW`, that of max pooling a scatter whose own gradient is a
gather), so ``create_graph`` differentiates them again. A derivative calls the primitive
through ``ops.apply``: on arrays only its forward runs, on Variables it is recorded.

The arrays: a convolution copies each window of the (padded) image into a row, channels last
(``_patches``), and is then one matrix product; its adjoint adds the rows back into an image,
one strided slab per kernel position (``_add_windows``). :func:`im2col_array` and
:func:`col2im_array` are the same in DeZero's column order ``(C, KH, KW)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import NDArray

from autodiff import cuda
from autodiff._shapes import conv_pair, get_conv_outsize, get_deconv_outsize, is_count, pair
from autodiff.core import Constant, Function, Variable, as_variable
from autodiff.functions import linear

__all__ = [
    "average_pooling",
    "col2im",
    "conv2d",
    "conv2d_simple",
    "deconv2d",
    "im2col",
    "pooling",
    "pooling_simple",
]


# =============================================================================
# Arrays: im2col / col2im
# =============================================================================
def _check_images(op: str, shape: tuple[int, ...]) -> None:
    if len(shape) != 4:
        raise ValueError(f"{op}: expected an image batch of shape (N, C, H, W), got {shape}")
    if 0 in shape:
        raise ValueError(
            f"{op}: an image batch of shape {shape} is empty; N, C, H and W must be at least 1"
        )


def _kernel_stride_pad(op: str, kernel: Any, stride: Any, pad: Any) -> tuple:
    return (
        conv_pair(op, "kernel_size", kernel),
        conv_pair(op, "stride", stride),
        conv_pair(op, "pad", pad, least=0),
    )


def _out_size(op: str, shape: tuple[int, ...], kernel: Any, stride: Any, pad: Any) -> tuple:
    """``(KH, KW), (SH, SW), (PH, PW), (OH, OW)`` for an image of ``shape``; raises, naming the
    operation, when the input is not 4-D, is empty, an argument is not a size, or the kernel
    does not fit."""
    _check_images(op, shape)
    (KH, KW), (SH, SW), (PH, PW) = _kernel_stride_pad(op, kernel, stride, pad)
    H, W = shape[2:]
    OH, OW = get_conv_outsize(H, KH, SH, PH), get_conv_outsize(W, KW, SW, PW)
    if OH < 1 or OW < 1:
        raise ValueError(
            f"{op}: a kernel of {(KH, KW)} does not fit an input of {(H, W)} with padding "
            f"{(PH, PW)} (the input's shape is {tuple(shape)}); pad more or use a smaller kernel"
        )
    return (KH, KW), (SH, SW), (PH, PW), (OH, OW)


def _windows(img: NDArray, kernel: Any, stride: Any, pad: Any, op: str = "im2col") -> NDArray:
    """A view ``(N, C, OH, OW, KH, KW)`` of every window of the (zero-padded) image."""
    (KH, KW), (SH, SW), (PH, PW), (OH, OW) = _out_size(op, img.shape, kernel, stride, pad)
    if PH or PW:
        N, C, H, W = img.shape
        padded = cuda.get_array_module(img).zeros((N, C, H + 2 * PH, W + 2 * PW), dtype=img.dtype)
        padded[:, :, PH : PH + H, PW : PW + W] = img
        img = padded
    view = sliding_window_view(img, (KH, KW), axis=(2, 3))
    return view[:, :, : SH * (OH - 1) + 1 : SH, : SW * (OW - 1) + 1 : SW]


def im2col_array(
    img: NDArray, kernel_size: Any, stride: Any, pad: Any, to_matrix: bool = True
) -> NDArray:
    """The windows of ``img`` as ``(N*OH*OW, C*KH*KW)`` rows, or ``(N, C, KH, KW, OH, OW)``."""
    w = _windows(img, kernel_size, stride, pad)
    N, C, OH, OW, KH, KW = w.shape
    if to_matrix:
        return w.transpose(0, 2, 3, 1, 4, 5).reshape(N * OH * OW, C * KH * KW)
    return cuda.get_array_module(w).ascontiguousarray(w.transpose(0, 1, 4, 5, 2, 3))


def col2im_array(
    col: NDArray,
    img_shape: tuple[int, ...],
    kernel_size: Any,
    stride: Any,
    pad: Any,
    to_matrix: bool = True,
) -> NDArray:
    """The adjoint of :func:`im2col_array`: each window's values added back where it lies."""
    (KH, KW), _, _, (OH, OW) = _out_size("col2im", tuple(img_shape), kernel_size, stride, pad)
    N, C, _, _ = img_shape
    expected = (N * OH * OW, C * KH * KW) if to_matrix else (N, C, KH, KW, OH, OW)
    if col.shape != expected:
        layout = "(N*OH*OW, C*KH*KW)" if to_matrix else "(N, C, KH, KW, OH, OW)"
        raise ValueError(
            f"col2im: an image of shape {tuple(img_shape)} with kernel {(KH, KW)}, stride "
            f"{pair(stride)} and padding {pair(pad)} has windows {layout} = {expected}, got "
            f"{col.shape}"
        )
    if to_matrix:  # (N*OH*OW, C*KH*KW)
        col = col.reshape(N, OH, OW, C, KH, KW).transpose(4, 5, 0, 1, 2, 3)
    else:  # (N, C, KH, KW, OH, OW)
        col = col.transpose(2, 3, 0, 4, 5, 1)
    return _add_windows(col, img_shape, stride, pad)


# The convolutions themselves lay windows out channels last, (N*OH*OW, KH*KW*C): every copy
# below then moves runs of C contiguous values, about twice as fast as DeZero's (C, KH, KW)
# order, whose runs are KW long (3 for a 3x3 kernel).
def _patches(x: NDArray, kernel: tuple[int, int], stride: Any, pad: Any, op: str) -> NDArray:
    """The windows of ``x`` ``(N, C, H, W)`` as rows ``(N*OH*OW, KH*KW*C)``."""
    (KH, KW), (SH, SW), (PH, PW), (OH, OW) = _out_size(op, x.shape, kernel, stride, pad)
    N, C, H, W = x.shape
    xp = cuda.get_array_module(x)
    if PH or PW:
        img = xp.zeros((N, H + 2 * PH, W + 2 * PW, C), dtype=x.dtype)
        img[:, PH : PH + H, PW : PW + W, :] = x.transpose(0, 2, 3, 1)
    else:
        img = x.transpose(0, 2, 3, 1)
    col = xp.empty((N, OH, OW, KH, KW, C), dtype=x.dtype)
    for j in range(KH):
        for i in range(KW):
            col[:, :, :, j, i, :] = img[:, j : j + SH * OH : SH, i : i + SW * OW : SW, :]
    return col.reshape(N * OH * OW, KH * KW * C)


def _add_windows(col: NDArray, img_shape: tuple[int, ...], stride: Any, pad: Any) -> NDArray:
    """Windows ``col`` ``(KH, KW, N, OH, OW, C)`` (any strides) added back into an image of
    ``img_shape`` ``(N, C, H, W)``: the adjoint of :func:`_patches`. Each kernel position adds
    one slab; contiguous slabs (deconv2d's) add fastest."""
    KH, KW, N, OH, OW, C = col.shape
    H, W = img_shape[2:]
    (SH, SW), (PH, PW) = pair(stride), pair(pad)
    xp = cuda.get_array_module(col)
    img = xp.zeros((N, H + 2 * PH, W + 2 * PW, C), dtype=col.dtype)
    for j in range(KH):
        for i in range(KW):
            img[:, j : j + SH * OH : SH, i : i + SW * OW : SW, :] += col[j, i]
    return xp.ascontiguousarray(img[:, PH : PH + H, PW : PW + W, :].transpose(0, 3, 1, 2))


def _channels_last(W: NDArray) -> NDArray:
    # a weight (A, B, KH, KW) as a matrix (A, KH*KW*B), to match _patches' rows
    return W.transpose(0, 2, 3, 1).reshape(W.shape[0], -1)


class Im2col(Function):
    formula = ("gx = col2im(gy, x.shape, kernel_size, stride, pad, to_matrix)",)

    def __init__(self, kernel_size: Any, stride: Any, pad: Any, to_matrix: bool) -> None:
        _kernel_stride_pad("im2col", kernel_size, stride, pad)
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad
        self.to_matrix = to_matrix

    def forward(self, x):
        self.input_shape = x.shape
        return im2col_array(x, self.kernel_size, self.stride, self.pad, self.to_matrix)

    def derivative(self, ops, gy):
        back = Col2im(self.input_shape, self.kernel_size, self.stride, self.pad, self.to_matrix)
        return ops.apply(back, gy)


def im2col(
    x: Any, kernel_size: Any, stride: Any = 1, pad: Any = 0, to_matrix: bool = True
) -> Variable:
    """The windows a ``kernel_size`` filter sees in ``x`` ``(N, C, H, W)``: ``(N*OH*OW,
    C*KH*KW)`` with ``to_matrix``, else ``(N, C, KH, KW, OH, OW)``."""
    return Im2col(kernel_size, stride, pad, to_matrix)(x)


class Col2im(Function):
    formula = ("gx = im2col(gy, kernel_size, stride, pad, to_matrix)",)

    def __init__(
        self, input_shape: tuple, kernel_size: Any, stride: Any, pad: Any, to_matrix: bool
    ) -> None:
        _kernel_stride_pad("col2im", kernel_size, stride, pad)
        if not (
            isinstance(input_shape, tuple | list)
            and len(input_shape) == 4
            and all(is_count(n) for n in input_shape)
        ):
            raise ValueError(
                f"col2im: input_shape must be the image's shape (N, C, H, W), four positive "
                f"ints, not {input_shape!r}"
            )
        self.input_shape = tuple(int(n) for n in input_shape)
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad
        self.to_matrix = to_matrix

    def forward(self, x):
        args = (self.kernel_size, self.stride, self.pad, self.to_matrix)
        return col2im_array(x, self.input_shape, *args)

    def derivative(self, ops, gy):
        return ops.apply(Im2col(self.kernel_size, self.stride, self.pad, self.to_matrix), gy)


def col2im(
    x: Any,
    input_shape: tuple,
    kernel_size: Any,
    stride: Any = 1,
    pad: Any = 0,
    to_matrix: bool = True,
) -> Variable:
    """The adjoint of :func:`im2col`: windows added back into an image of ``input_shape``."""
    return Col2im(input_shape, kernel_size, stride, pad, to_matrix)(x)


# =============================================================================
# conv2d / deconv2d
# =============================================================================
def _rows(x: NDArray) -> NDArray:
    # (N, C, H, W) -> (N*H*W, C): one row per pixel
    return x.transpose(0, 2, 3, 1).reshape(-1, x.shape[1])


def _check_channels(op: str, x: Any, W: Any, b: Any, axis: int) -> None:
    """Refuse, naming ``op`` and the shapes, an input that is not a non-empty image batch, a
    weight (``(OC, C, KH, KW)``, or ``(C, OC, KH, KW)`` when ``axis`` is 0) that does not
    match its channels or is empty, and a bias that is not ``(OC,)``."""
    _check_images(op, x.shape)
    layout = "(OC, C, KH, KW)" if axis == 1 else "(C, OC, KH, KW)"
    if W.ndim != 4 or W.shape[axis] != x.shape[1] or 0 in W.shape:
        raise ValueError(
            f"{op}: an input of shape {x.shape} (N, C, H, W) needs a weight of shape {layout} "
            f"with C = {x.shape[1]} and no empty axis, got {W.shape}"
        )
    OC = W.shape[1 - axis]
    if b is not None and b.shape != (OC,):
        raise ValueError(
            f"{op}: the bias must have shape ({OC},), one value per output channel of the "
            f"weight {W.shape} {layout}, got {b.shape}"
        )


class Conv2d(Function):
    """``conv2d(x, W, b)``; without a bias it has two inputs, not a None third."""

    formula = (
        "gx0 = col2im(rows(gy) @ matrix(x1), x0.shape, x1.shape, stride, pad)",
        "gx1 = reshape(rows(gy)ᵀ @ im2col(x0, x1.shape, stride, pad), x1.shape)",
        "gx2 = channel_sum(gy)",
    )

    def __init__(self, stride: Any = 1, pad: Any = 0) -> None:
        self.stride = conv_pair("conv2d", "stride", stride)
        self.pad = conv_pair("conv2d", "pad", pad, least=0)

    def forward(self, x, W, b=None):
        _check_channels("conv2d", x, W, b, 1)
        OC, _, KH, KW = W.shape
        col = _patches(x, (KH, KW), self.stride, self.pad, "conv2d")
        N, _, H, Wd = x.shape
        (SH, SW), (PH, PW) = self.stride, self.pad
        OH, OW = get_conv_outsize(H, KH, SH, PH), get_conv_outsize(Wd, KW, SW, PW)
        y = col @ _channels_last(W).T  # (N*OH*OW, OC)
        if b is not None:
            y += b
        return y.reshape(N, OH, OW, OC).transpose(0, 3, 1, 2)

    def derivative(self, ops, gy):
        x_var, W_var = self.inputs[0], self.inputs[1]
        x, W = ops.value(x_var), ops.value(W_var)
        # a Constant input (a batch of data) gets no gradient: nobody reads it
        gx = None
        if type(x_var) is not Constant:
            gx = ops.apply(Deconv2d(self.stride, self.pad, x.shape[2:]), gy, W)
        gW = ops.apply(Conv2DGradW(W.shape[2:], self.stride, self.pad), x, gy)
        if len(self.inputs) == 2:
            return gx, gW
        return gx, gW, gy.sum(axis=(0, 2, 3))


def conv2d(x: Any, W: Any, b: Any = None, stride: Any = 1, pad: Any = 0) -> Variable:
    """2-D convolution (cross-correlation) of ``x`` ``(N, C, H, W)`` with ``W`` ``(OC, C, KH,
    KW)`` plus ``b`` ``(OC,)``: ``(N, OC, OH, OW)``."""
    if b is None:
        return Conv2d(stride, pad)(x, W)
    return Conv2d(stride, pad)(x, W, b)


class Deconv2d(Function):
    """The transpose of :class:`Conv2d`; ``outsize`` picks among the sizes a strided
    convolution maps to the same output (default: the smallest)."""

    formula = (
        "gx0 = unrows(im2col(gy, x1.shape, stride, pad) @ matrix(x1)ᵀ, x0.shape)",
        "gx1 = reshape(rows(x0)ᵀ @ im2col(gy, x1.shape, stride, pad), x1.shape)",
        "gx2 = channel_sum(gy)",
    )

    def __init__(self, stride: Any = 1, pad: Any = 0, outsize: Any = None) -> None:
        self.stride = conv_pair("deconv2d", "stride", stride)
        self.pad = conv_pair("deconv2d", "pad", pad, least=0)
        self.outsize = None if outsize is None else conv_pair("deconv2d", "outsize", outsize)

    def forward(self, x, W, b=None):
        _check_channels("deconv2d", x, W, b, 0)
        _, OC, KH, KW = W.shape
        N, _, H, Wd = x.shape
        (SH, SW), (PH, PW) = self.stride, self.pad
        if self.outsize is None:
            out_h, out_w = get_deconv_outsize(H, KH, SH, PH), get_deconv_outsize(Wd, KW, SW, PW)
            if out_h < 1 or out_w < 1:
                raise ValueError(
                    f"deconv2d: an input of shape {x.shape} with kernel {(KH, KW)}, stride "
                    f"{self.stride} and padding {self.pad} gives an output of "
                    f"{(out_h, out_w)}; pad less"
                )
        else:
            out_h, out_w = self.outsize
            if (get_conv_outsize(out_h, KH, SH, PH), get_conv_outsize(out_w, KW, SW, PW)) != (
                H,
                Wd,
            ):
                raise ValueError(
                    f"deconv2d: outsize {(out_h, out_w)} does not fit an input of {(H, Wd)} "
                    f"with kernel {(KH, KW)}, stride {self.stride} and padding {self.pad}"
                )
        # (KH, KW, N*H*W, OC): each pixel's window, one contiguous slab per kernel position
        col = _rows(x) @ W.transpose(2, 3, 0, 1)
        col = col.reshape(KH, KW, N, H, Wd, OC)
        y = _add_windows(col, (N, OC, out_h, out_w), self.stride, self.pad)
        if b is not None:
            y += b.reshape(1, -1, 1, 1)
        return y

    def derivative(self, ops, gy):
        x_var, W_var = self.inputs[0], self.inputs[1]
        x, W = ops.value(x_var), ops.value(W_var)
        gx = None
        if type(x_var) is not Constant:
            gx = ops.apply(Conv2d(self.stride, self.pad), gy, W)
        gW = ops.apply(Conv2DGradW(W.shape[2:], self.stride, self.pad), gy, x)
        if len(self.inputs) == 2:
            return gx, gW
        return gx, gW, gy.sum(axis=(0, 2, 3))


def deconv2d(
    x: Any, W: Any, b: Any = None, stride: Any = 1, pad: Any = 0, outsize: Any = None
) -> Variable:
    """Transposed convolution of ``x`` ``(N, C, H, W)`` with ``W`` ``(C, OC, KH, KW)`` plus
    ``b`` ``(OC,)``: the gradient of :func:`conv2d` with respect to its input."""
    if b is None:
        return Deconv2d(stride, pad, outsize)(x, W)
    return Deconv2d(stride, pad, outsize)(x, W, b)


class Conv2DGradW(Function):
    """The gradient of ``conv2d(x, W)`` with respect to ``W``, from ``x`` and the output's
    gradient ``gy``: bilinear in the two, so its own gradients are a deconv2d and a conv2d."""

    formula = (
        "gx0 = col2im(rows(x1) @ matrix(gy), x0.shape, kernel_size, stride, pad)",
        "gx1 = unrows(im2col(x0, kernel_size, stride, pad) @ matrix(gy)ᵀ, x1.shape)",
    )

    def __init__(self, kernel_size: Any, stride: Any, pad: Any) -> None:
        self.kernel_size = pair(tuple(kernel_size))
        self.stride = pair(stride)
        self.pad = pair(pad)

    def forward(self, x, gy):
        col = _patches(x, self.kernel_size, self.stride, self.pad, "conv2d")
        OC, KH, KW = gy.shape[1], *self.kernel_size
        gW = (_rows(gy).T @ col).reshape(OC, KH, KW, x.shape[1])
        return cuda.get_array_module(gW).ascontiguousarray(gW.transpose(0, 3, 1, 2))

    def derivative(self, ops, ggW):
        x, gy = ops.value(self.inputs[0]), ops.value(self.inputs[1])
        gx = ops.apply(Deconv2d(self.stride, self.pad, x.shape[2:]), gy, ggW)
        ggy = ops.apply(Conv2d(self.stride, self.pad), x, ggW)
        return gx, ggy


def conv2d_simple(x: Any, W: Any, b: Any = None, stride: Any = 1, pad: Any = 0) -> Variable:
    """:func:`conv2d` from primitives: im2col, then one matrix product."""
    x, W = as_variable(x), as_variable(W)
    _check_channels("conv2d_simple", x, W, None if b is None else as_variable(b), 1)
    N = x.shape[0]
    OC, _, KH, KW = W.shape
    _, _, _, (OH, OW) = _out_size("conv2d_simple", x.shape, (KH, KW), stride, pad)
    col = im2col(x, (KH, KW), stride, pad, to_matrix=True)
    t = linear(col, W.reshape(OC, -1).transpose(), b)
    return t.reshape(N, OH, OW, OC).transpose(0, 3, 1, 2)


# =============================================================================
# pooling (max) / average_pooling
# =============================================================================
def _flat_windows(x: NDArray, kernel: Any, stride: Any, pad: Any, op: str) -> NDArray:
    # (N, C, OH, OW, KH*KW): each window's values in a row
    w = _windows(x, kernel, stride, pad, op)
    return w.reshape(*w.shape[:4], -1)


class Pooling(Function):
    """Max pooling; the padding is zeros, as in DeZero."""

    formula = (
        # each window's gy placed at its maximum, the windows added back into the image
        "gx = unwindows(at_max(windows(x, kernel_size, stride, pad), gy), "
        "x.shape, kernel_size, stride, pad)",
    )

    def __init__(self, kernel_size: Any, stride: Any = 1, pad: Any = 0) -> None:
        _kernel_stride_pad("pooling", kernel_size, stride, pad)
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad

    def forward(self, x):
        col = _flat_windows(x, self.kernel_size, self.stride, self.pad, "pooling")
        self.input_shape, self.dtype = x.shape, x.dtype
        # where each window's maximum is (the first of equal ones): the gradient goes there
        self.indexes = col.argmax(axis=4)
        return np.take_along_axis(col, self.indexes[..., None], axis=4)[..., 0]

    def derivative(self, ops, gy):
        return ops.apply(Pooling2DGrad(self), gy)


class _PoolingIndexes(Function):
    """What the two linear maps of a max pooling share: its windows and where their maxima
    are, copied from ``pool`` (the Pooling or the other map), never a reference to it."""

    def __init__(self, pool: Any) -> None:
        self.kernel_size, self.stride, self.pad = pool.kernel_size, pool.stride, pool.pad
        self.indexes = pool.indexes
        self.input_shape, self.dtype = pool.input_shape, pool.dtype


class Pooling2DGrad(_PoolingIndexes):
    """The gradient of max pooling: each output's gradient sent to its window's maximum."""

    formula = ("gx = take_at(windows(gy, kernel_size, stride, pad), indexes)",)

    def forward(self, gy):
        KH, KW = pair(self.kernel_size)
        gcol = cuda.get_array_module(gy).zeros((*gy.shape, KH * KW), dtype=self.dtype)
        np.put_along_axis(gcol, self.indexes[..., None], gy[..., None], axis=4)
        # (N, C, OH, OW, KH, KW) -> (KH, KW, N, OH, OW, C), a view
        gcol = gcol.reshape(*gy.shape, KH, KW).transpose(4, 5, 0, 2, 3, 1)
        return _add_windows(gcol, self.input_shape, self.stride, self.pad)

    def derivative(self, ops, ggx):
        return ops.apply(Pooling2DWithIndexes(self), ggx)


class Pooling2DWithIndexes(_PoolingIndexes):
    """Each window of ``x`` read where the pooled input had its maximum (the adjoint of
    :class:`Pooling2DGrad`)."""

    formula = (
        "gx = unwindows(put_at(gy, indexes, kernel_size), x.shape, kernel_size, stride, pad)",
    )

    def forward(self, x):
        col = _flat_windows(x, self.kernel_size, self.stride, self.pad, "pooling")
        return np.take_along_axis(col, self.indexes[..., None], axis=4)[..., 0]

    def derivative(self, ops, gy):
        return ops.apply(Pooling2DGrad(self), gy)


def pooling(x: Any, kernel_size: Any, stride: Any = 1, pad: Any = 0) -> Variable:
    """Max pooling of ``x`` ``(N, C, H, W)`` over ``kernel_size`` windows."""
    return Pooling(kernel_size, stride, pad)(x)


def pooling_simple(x: Any, kernel_size: Any, stride: Any = 1, pad: Any = 0) -> Variable:
    """:func:`pooling` from primitives: im2col, then a max over each window."""
    x = as_variable(x)
    (KH, KW), _, _, (OH, OW) = _out_size("pooling_simple", x.shape, kernel_size, stride, pad)
    N, C = x.shape[:2]
    col = im2col(x, kernel_size, stride, pad, to_matrix=True)  # rows (n, oh, ow), cols (c, k)
    y = col.reshape(-1, KH * KW).max(axis=1)
    return y.reshape(N, OH, OW, C).transpose(0, 3, 1, 2)


class AveragePooling(Function):
    formula = (
        # each output's gy shared evenly by its window, the windows added back into the image
        "gx = unwindows(spread(gy, kernel_size) / area(kernel_size), "
        "x.shape, kernel_size, stride, pad)",
    )

    def __init__(self, kernel_size: Any, stride: Any = 1, pad: Any = 0) -> None:
        _kernel_stride_pad("average_pooling", kernel_size, stride, pad)
        self.kernel_size, self.stride, self.pad = kernel_size, stride, pad

    def forward(self, x):
        self.input_shape = x.shape
        col = _flat_windows(x, self.kernel_size, self.stride, self.pad, "average_pooling")
        return col.mean(axis=4)

    def derivative(self, ops, gy):
        # each window's share, 1 / (KH*KW) of its output's gradient, added back into place
        KH, KW = pair(self.kernel_size)
        N, C, OH, OW = gy.shape
        g = (gy * (1.0 / (KH * KW))).reshape(N, C, 1, 1, OH, OW)
        gcol = ops.broadcast_to(g, (N, C, KH, KW, OH, OW))
        back = Col2im(self.input_shape, (KH, KW), self.stride, self.pad, False)
        return ops.apply(back, gcol)


def average_pooling(x: Any, kernel_size: Any, stride: Any = 1, pad: Any = 0) -> Variable:
    """Average pooling of ``x`` ``(N, C, H, W)`` (the padding's zeros count in the mean)."""
    return AveragePooling(kernel_size, stride, pad)(x)
