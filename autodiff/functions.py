"""Differentiable functions, named as in DeZero's ``dezero/functions.py``.

Each primitive is a Function subclass with its derivative beside its forward, plus a lowercase
function. The derivative is written once, as ``derivative(ops, gy)`` (see
:class:`autodiff.core.Function`): backward runs it on plain arrays, or on Variables when the
backward pass must itself be differentiable (``create_graph``). Composites (``average``,
``sigmoid_simple``, ``mean_squared_error_simple``...) are written in terms of primitives and
need no derivative of their own.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from autodiff import _shapes, cuda
from autodiff.core import (
    Constant,
    Function,
    Variable,
    _switches,
    add,
    as_array,
    as_variable,
    div,
    mul,
    neg,
    pow,
    rdiv,
    rsub,
    sub,
)

__all__ = [
    "accuracy",
    "add",
    "average",
    "average_pooling",
    "batch_norm",
    "binary_cross_entropy",
    "broadcast_to",
    "clip",
    "col2im",
    "concat",
    "conv2d",
    "conv2d_simple",
    "cos",
    "deconv2d",
    "div",
    "dropout",
    "embed_id",
    "exp",
    "expand_dims",
    "flatten",
    "get_item",
    "im2col",
    "leaky_relu",
    "linear",
    "linear_simple",
    "log",
    "log_softmax",
    "matmul",
    "max",
    "mean",
    "mean_squared_error",
    "mean_squared_error_simple",
    "min",
    "mul",
    "neg",
    "pooling",
    "pooling_simple",
    "pow",
    "rdiv",
    "relu",
    "reshape",
    "rsub",
    "sigmoid",
    "sigmoid_cross_entropy",
    "sigmoid_simple",
    "sin",
    "softmax",
    "softmax_cross_entropy",
    "softmax_cross_entropy_simple",
    "softmax_simple",
    "square",
    "sub",
    "sum",
    "sum_to",
    "tanh",
    "transpose",
]


# ndarray.sum without numpy's Python-level wrapper around it: the same reduction, less overhead
# in the hot paths (the sums of Sum, Linear's bias gradient, mean_squared_error)
_add_reduce = np.add.reduce


# =============================================================================
# Elementwise
# =============================================================================
class Square(Function):
    formula = ("gx = gy · 2 · x",)

    def forward(self, x):
        return x**2

    def derivative(self, ops, gy):
        return 2 * ops.value(self.inputs[0]) * gy


def square(x: Any) -> Variable:
    return Square()(x)


class Exp(Function):
    formula = ("gx = gy · exp(x)",)

    def forward(self, x):
        return np.exp(x)

    def derivative(self, ops, gy):
        # d exp(x) = exp(x): reuse the output instead of recomputing it
        return gy * ops.value(self.outputs[0]())


def exp(x: Any) -> Variable:
    return Exp()(x)


class Log(Function):
    formula = ("gx = gy / x",)

    def forward(self, x):
        return np.log(x)

    def derivative(self, ops, gy):
        return gy / ops.value(self.inputs[0])


def log(x: Any) -> Variable:
    return Log()(x)


class Sin(Function):
    formula = ("gx = gy · cos(x)",)

    def forward(self, x):
        return np.sin(x)

    def derivative(self, ops, gy):
        return gy * ops.cos(ops.value(self.inputs[0]))


def sin(x: Any) -> Variable:
    return Sin()(x)


class Cos(Function):
    formula = ("gx = gy · (−sin(x))",)

    def forward(self, x):
        return np.cos(x)

    def derivative(self, ops, gy):
        return gy * -ops.sin(ops.value(self.inputs[0]))


def cos(x: Any) -> Variable:
    return Cos()(x)


class Tanh(Function):
    formula = ("gx = gy · (1 − y²)",)

    def forward(self, x):
        return np.tanh(x)

    def derivative(self, ops, gy):
        # d tanh(x) = 1 - tanh(x)^2
        y = ops.value(self.outputs[0]())
        return gy * (1 - y * y)


def tanh(x: Any) -> Variable:
    return Tanh()(x)


class Sigmoid(Function):
    formula = ("gx = gy · y · (1 − y)",)

    def forward(self, x):
        # tanh form: no overflow warning for large |x|
        return np.tanh(x * 0.5) * 0.5 + 0.5

    def derivative(self, ops, gy):
        # d sigmoid(x) = y (1 - y)
        y = ops.value(self.outputs[0]())
        return gy * y * (1 - y)


def sigmoid(x: Any) -> Variable:
    return Sigmoid()(x)


def sigmoid_simple(x: Any) -> Variable:
    # 1 / (1 + exp(-x)), from primitives
    x = as_variable(x)
    return 1 / (1 + exp(-x))


class ReLU(Function):
    formula = ("gx = gy · (x > 0)",)

    def forward(self, x):
        return np.maximum(x, 0.0).astype(x.dtype, copy=False)

    def derivative(self, ops, gy):
        return gy * (self.inputs[0].data > 0)


def relu(x: Any) -> Variable:
    return ReLU()(x)


class LeakyReLU(Function):
    formula = ("gx = gy · where(x > 0, 1, slope)",)

    def __init__(self, slope: float) -> None:
        self.slope = slope

    def forward(self, x):
        return np.where(x > 0, x, x * self.slope)

    def _mask(self, dtype: np.dtype) -> np.ndarray:
        # 1 where x > 0, slope elsewhere
        return np.where(self.inputs[0].data > 0, 1, self.slope).astype(dtype, copy=False)

    def derivative(self, ops, gy):
        return gy * self._mask(gy.dtype)


def leaky_relu(x: Any, slope: float = 0.2) -> Variable:
    return LeakyReLU(slope)(x)


class Clip(Function):
    formula = ("gx = gy · (x ≥ x_min) · (x ≤ x_max)",)

    def __init__(self, x_min: float, x_max: float) -> None:
        self.x_min = x_min
        self.x_max = x_max

    def forward(self, x):
        return np.clip(x, self.x_min, self.x_max)

    def _mask(self) -> np.ndarray:
        # the gradient passes where x was inside [x_min, x_max]
        x = self.inputs[0].data
        return (x >= self.x_min) * (x <= self.x_max)

    def derivative(self, ops, gy):
        return gy * self._mask()


def clip(x: Any, x_min: float, x_max: float) -> Variable:
    return Clip(x_min, x_max)(x)


# =============================================================================
# Shapes
# =============================================================================
class Reshape(Function):
    formula = ("gx = reshape(gy, x.shape)",)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def forward(self, x):
        self.x_shape = x.shape
        try:
            return x.reshape(self.shape)
        except ValueError as e:
            raise ValueError(
                f"reshape: cannot reshape an array of shape {x.shape} ({x.size} elements) "
                f"into shape {self.shape}"
            ) from e

    def derivative(self, ops, gy):
        return gy.reshape(self.x_shape)


def reshape(x: Any, shape: Any) -> Variable:
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    if isinstance(x, Variable) and x.shape == shape:
        return x
    return Reshape(shape)(x)


class Transpose(Function):
    formula = ("gx = transpose(gy, inverse_axes(axes))",)

    def __init__(self, axes: Any = None) -> None:
        self.axes = None if axes is None else tuple(axes)

    def forward(self, x):
        try:
            return x.transpose(self.axes)
        except ValueError as e:
            raise ValueError(
                f"transpose: axes {self.axes} do not match an array of shape {x.shape}"
            ) from e

    def _inverse_axes(self) -> tuple[int, ...] | None:
        if self.axes is None:
            return None
        n = len(self.axes)
        return tuple(int(i) for i in np.argsort([ax % n for ax in self.axes]))

    def derivative(self, ops, gy):
        return gy.transpose(self._inverse_axes())


def transpose(x: Any, axes: Any = None) -> Variable:
    return Transpose(axes)(x)


class Concat(Function):
    """Several arrays joined along ``axis`` (Chainer's ``concat``)."""

    formula = ("gxk = part(gy, axis, k, xs)",)

    def __init__(self, axis: int) -> None:
        self.axis = axis

    def forward(self, *xs):
        try:
            return np.concatenate(xs, axis=self.axis)
        except (ValueError, np.exceptions.AxisError) as e:
            shapes = ", ".join(str(x.shape) for x in xs)
            raise ValueError(f"concat: cannot join shapes {shapes} along axis {self.axis}") from e

    def derivative(self, ops, gy):
        # each input gets its own stretch of gy along the axis
        axis = self.axis % gy.ndim
        gxs, start = [], 0
        for x in self.inputs:
            stop = start + x.shape[axis]
            gxs.append(gy[(slice(None),) * axis + (slice(start, stop),)])
            start = stop
        return tuple(gxs)


def concat(xs: Any, axis: int = 1) -> Variable:
    xs = tuple(xs)
    if not xs:
        raise ValueError("concat: give at least one array")
    return Concat(axis)(*xs)


def expand_dims(x: Any, axis: int) -> Variable:
    x = as_variable(x)
    if not _is_int(axis):
        raise TypeError(f"expand_dims: axis must be an int, got {axis!r} ({type(axis).__name__})")
    n = x.ndim + 1  # the new axis may go at either end
    if not -n <= axis < n:
        raise ValueError(
            f"expand_dims: axis {axis} is out of range for an input of shape {x.shape} "
            f"(valid axes: {-n}..{n - 1})"
        )
    shape = list(x.shape)
    shape.insert(axis if axis >= 0 else len(shape) + axis + 1, 1)
    return reshape(x, tuple(shape))


def flatten(x: Any) -> Variable:
    """Flatten every axis but the first (the batch axis)."""
    x = as_variable(x)
    return reshape(x, (x.shape[0], -1))


class GetItem(Function):
    formula = ("gx = scatter_add(gy, slices, x.shape)",)

    def __init__(self, slices: Any) -> None:
        self.slices = slices

    def forward(self, x):
        try:
            return x[self.slices]
        except IndexError as e:
            raise IndexError(
                f"get_item: index {self.slices!r} is invalid for shape {x.shape}: {e}"
            ) from e

    def derivative(self, ops, gy):
        return ops.scatter_add(gy, self.slices, self.inputs[0].shape)


def _scatter_add(gy: np.ndarray, slices: Any, shape: tuple[int, ...]) -> np.ndarray:
    # add.at, not gx[slices] = gy: an index repeated in ``slices`` must add up
    xp = cuda.get_array_module(gy)
    gx = xp.zeros(shape, dtype=gy.dtype)
    xp.add.at(gx, slices, gy)
    return gx


class GetItemGrad(Function):
    """The gradient of ``x[slices]``: scatter-add ``gy`` into zeros of ``x``'s shape."""

    formula = ("gx = get_item(gy, slices)",)

    def __init__(self, slices: Any, in_shape: tuple[int, ...]) -> None:
        self.slices = slices
        self.in_shape = in_shape

    def forward(self, gy):
        return _scatter_add(gy, self.slices, self.in_shape)

    def derivative(self, ops, ggx):
        return ggx[self.slices]


def get_item(x: Any, slices: Any) -> Variable:
    if isinstance(slices, Variable):
        slices = slices.data
    return GetItem(slices)(x)


# =============================================================================
# Sums and broadcasting
# =============================================================================
def _normalize_axis(axis: Any, op: str = "") -> Any:
    """``axis`` as numpy takes it (a list becomes a tuple), after checking its type."""
    axis = tuple(axis) if isinstance(axis, list) else axis
    parts = axis if isinstance(axis, tuple) else (axis,)
    if axis is not None and not all(_is_int(a) for a in parts):
        raise TypeError(
            f"{op or 'axis'}: axis must be None, an int or a tuple of ints, got {axis!r} "
            f"({type(axis).__name__})"
        )
    return axis


def _is_int(a: Any) -> bool:
    return isinstance(a, int | np.integer) and not isinstance(a, bool)


def _check_axis(op: str, axis: Any, shape: tuple[int, ...]) -> None:
    """Name the operation, the axis and the shape when an axis is out of range."""
    if axis is None:
        return
    ndim = len(shape)
    for a in axis if isinstance(axis, tuple) else (axis,):
        if not -ndim <= a < ndim:
            valid = f"-{ndim}..{ndim - 1}" if ndim else "none (a scalar has no axes)"
            raise ValueError(
                f"{op}: axis {a} is out of range for an input of shape {shape} "
                f"(valid axes: {valid})"
            )


class Sum(Function):
    formula = ("gx = broadcast_to(expand(gy, axis, x.shape), x.shape)",)

    def __init__(self, axis: Any, keepdims: bool) -> None:
        self.axis = _normalize_axis(axis, "sum")
        self.keepdims = keepdims

    def forward(self, x):
        _check_axis("sum", self.axis, x.shape)
        self.x_shape = x.shape
        if type(x) is not np.ndarray:  # CuPy's: its own reduction
            return x.sum(axis=self.axis, keepdims=self.keepdims)
        return _add_reduce(x, axis=self.axis, keepdims=self.keepdims)

    def derivative(self, ops, gy):
        gy = _shapes.reshape_sum_backward(gy, self.x_shape, self.axis, self.keepdims)
        return ops.broadcast_to(gy, self.x_shape)


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Variable:
    return Sum(axis, keepdims)(x)


class SumTo(Function):
    formula = ("gx = broadcast_to(gy, x.shape)",)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def forward(self, x):
        self.x_shape = x.shape
        return _shapes.sum_to(x, self.shape)

    def derivative(self, ops, gy):
        return ops.broadcast_to(gy, self.x_shape)


def sum_to(x: Any, shape: tuple[int, ...]) -> Variable:
    x = as_variable(x)
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return SumTo(shape)(x)


class BroadcastTo(Function):
    formula = ("gx = sum_to(gy, x.shape)",)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def forward(self, x):
        self.x_shape = x.shape
        try:
            return _shapes.broadcast_to(x, self.shape)
        except ValueError as e:
            raise ValueError(
                f"broadcast_to: an array of shape {x.shape} cannot be broadcast to {self.shape}"
            ) from e

    def derivative(self, ops, gy):
        return ops.sum_to(gy, self.x_shape)


def broadcast_to(x: Any, shape: tuple[int, ...]) -> Variable:
    x = as_variable(x)
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return BroadcastTo(shape)(x)


def average(x: Any, axis: Any = None, keepdims: bool = False) -> Variable:
    x = as_variable(x)
    y = sum(x, axis, keepdims)
    return y * (y.data.size / x.data.size)


mean = average


# =============================================================================
# Matrix products
# =============================================================================
def _matmul_error(op: str, x: np.ndarray, W: np.ndarray) -> ValueError:
    if x.ndim == 0 or W.ndim == 0:
        why = "both operands need at least one dimension; use mul for scalars"
    else:
        why = f"{x.shape[-1]} != {W.shape[-2] if W.ndim > 1 else W.shape[0]}"
    return ValueError(f"{op}: shapes {x.shape} and {W.shape} are not aligned ({why})")


def _swap_last(x: Any) -> Any:
    # transpose of the last two axes (stacked matrices), the plain .T for 2-D
    if x.ndim == 2:
        return x.T
    return x.transpose((*range(x.ndim - 2), x.ndim - 1, x.ndim - 2))


def _matmul_grads(ops: Any, f: Function, gy: Any) -> tuple[Any, Any]:
    """Gradients of ``x @ W`` (``f``'s first two inputs) with numpy's rules: 1-D operands,
    stacked and broadcast batches.

    A Constant operand (a plain array such as a batch of data) gets None: nobody reads it, and
    its product is as costly as the weight's.
    """
    x_var, W_var = f.inputs[0], f.inputs[1]
    x, W = ops.value(x_var), ops.value(W_var)
    if x.ndim == 2 and W.ndim == 2:
        gx = None if type(x_var) is Constant else gy @ W.T
        gW = None if type(W_var) is Constant else x.T @ gy
        return gx, gW
    # make both at least 2-D as numpy does (a 1-D x is a row, a 1-D W a column), then sum the
    # gradients over broadcast batch axes and drop the added axes again
    x2 = x if x.ndim > 1 else x.reshape((1, x.shape[0]))
    W2 = W if W.ndim > 1 else W.reshape((W.shape[0], 1))
    batch = np.broadcast_shapes(x2.shape[:-2], W2.shape[:-2])
    gy2 = gy.reshape((*batch, x2.shape[-2], W2.shape[-1]))
    gx = ops.sum_to(gy2 @ _swap_last(W2), x2.shape)
    gW = ops.sum_to(_swap_last(x2) @ gy2, W2.shape)
    return gx.reshape(x.shape), gW.reshape(W.shape)


class MatMul(Function):
    formula = (
        "gx0 = gy @ x1ᵀ",
        "gx1 = x0ᵀ @ gy",
    )

    def forward(self, x, W):
        try:
            return np.matmul(x, W)
        except ValueError as e:
            raise _matmul_error("matmul", x, W) from e

    def derivative(self, ops, gy):
        return _matmul_grads(ops, self, gy)


def matmul(x: Any, W: Any) -> Variable:
    return MatMul()(x, W)


class Linear(Function):
    """``x @ W + b`` in one step; without a bias it has two inputs, not a None third."""

    formula = (
        "gx0 = gy @ x1ᵀ",
        "gx1 = x0ᵀ @ gy",
        "gx2 = gy",
    )

    def forward(self, x, W, b=None):
        try:
            y = np.matmul(x, W)
        except ValueError as e:
            raise _matmul_error("linear", x, W) from e
        if b is None:
            return y
        try:
            if b.dtype == y.dtype and b.ndim <= y.ndim:
                y += b  # in place: saves allocating a second (N, out) array
            else:
                y = y + b
        except ValueError as e:
            raise ValueError(
                f"linear: a bias of shape {b.shape} does not broadcast to the output's "
                f"shape {y.shape}"
            ) from e
        return y

    def derivative(self, ops, gy):
        gx, gW = _matmul_grads(ops, self, gy)
        if len(self.inputs) == 2:
            return gx, gW
        return gx, gW, gy  # the bias's share: backward sums it over the batch


def linear(x: Any, W: Any, b: Any = None) -> Variable:
    if b is None:
        return Linear()(x, W)
    return Linear()(x, W, b)


def linear_simple(x: Any, W: Any, b: Any = None) -> Variable:
    t = matmul(x, W)
    if b is None:
        return t
    y = t + b
    t.data = None  # the intermediate is not needed for backward: release its memory
    return y


# =============================================================================
# Max / min
# =============================================================================
class Max(Function):
    formula = ("gx = expand(gy, axis, x.shape) · (x == expand(y, axis, x.shape))",)

    def __init__(self, axis: Any = None, keepdims: bool = False) -> None:
        self.axis = _normalize_axis(axis, type(self).__name__.lower())
        self.keepdims = keepdims

    def forward(self, x):
        _check_axis("max", self.axis, x.shape)
        return x.max(axis=self.axis, keepdims=self.keepdims)

    def _mask_and_shape(self) -> tuple[np.ndarray, list[int]]:
        # the gradient goes to every element equal to the extreme (ties share it)
        x = self.inputs[0].data
        shape = _shapes.max_backward_shape(x, self.axis)
        y = self.outputs[0]().data.reshape(shape)
        return x == y, shape

    def derivative(self, ops, gy):
        mask, shape = self._mask_and_shape()
        return gy.reshape(shape) * mask


class Min(Max):
    formula = Max.formula

    def forward(self, x):
        _check_axis("min", self.axis, x.shape)
        return x.min(axis=self.axis, keepdims=self.keepdims)


def max(x: Any, axis: Any = None, keepdims: bool = False) -> Variable:
    return Max(axis, keepdims)(x)


def min(x: Any, axis: Any = None, keepdims: bool = False) -> Variable:
    return Min(axis, keepdims)(x)


# =============================================================================
# Softmax and losses
# =============================================================================
def softmax_simple(x: Any, axis: int = 1) -> Variable:
    x = as_variable(x)
    y = exp(x)
    sum_y = sum(y, axis=axis, keepdims=True)
    return y / sum_y


def _softmax_data(x: np.ndarray, axis: Any) -> np.ndarray:
    y = x - x.max(axis=axis, keepdims=True)
    y = np.exp(y)
    y /= y.sum(axis=axis, keepdims=True)
    return y


class Softmax(Function):
    formula = ("gx = y · (gy − keep_sum(y · gy, axis))",)

    def __init__(self, axis: int = 1) -> None:
        self.axis = _normalize_axis(axis, "softmax")

    def forward(self, x):
        _check_axis("softmax", self.axis, x.shape)
        return _softmax_data(x, self.axis)

    def derivative(self, ops, gy):
        # J^T gy = y * gy - y * sum(y * gy)
        y = ops.value(self.outputs[0]())
        gx = y * gy
        return gx - y * gx.sum(axis=self.axis, keepdims=True)


def softmax(x: Any, axis: int = 1) -> Variable:
    return Softmax(axis)(x)


class LogSoftmax(Function):
    formula = ("gx = gy − exp(y) · keep_sum(gy, axis)",)

    def __init__(self, axis: int = 1) -> None:
        self.axis = _normalize_axis(axis, "log_softmax")

    def forward(self, x):
        _check_axis("log_softmax", self.axis, x.shape)
        log_z = _shapes.logsumexp(x, self.axis)
        return x - log_z

    def derivative(self, ops, gy):
        # gy - softmax(x) * sum(gy), with softmax(x) = exp(y)
        return gy - ops.exp(ops.value(self.outputs[0]())) * gy.sum(axis=self.axis, keepdims=True)


def log_softmax(x: Any, axis: int = 1) -> Variable:
    return LogSoftmax(axis)(x)


def mean_squared_error_simple(x0: Any, x1: Any) -> Variable:
    x0, x1 = as_variable(x0), as_variable(x1)
    diff = x0 - x1
    return sum(diff**2) / len(diff)


class MeanSquaredError(Function):
    formula = (
        "gx0 = gy · 2 · (x0 − x1) / len(x0 − x1)",
        "gx1 = −gy · 2 · (x0 − x1) / len(x0 − x1)",
    )

    def forward(self, x0, x1):
        if x0.shape != x1.shape:
            # DeZero broadcasts (the book's step 59 compares a (1, 1) prediction with a (1,)
            # target); a broadcast that makes more elements than either side has is the
            # classic bug ((N, 1) against (N,) is (N, N)) and is refused
            try:
                shape = np.broadcast_shapes(x0.shape, x1.shape)
            except ValueError:
                shape = None
            # (this module's max is the op: the larger size, spelled out)
            if shape is None or math.prod(shape) != (x0.size if x0.size > x1.size else x1.size):
                raise ValueError(
                    f"mean_squared_error: shapes {x0.shape} and {x1.shape} differ"
                    + ("" if shape is None else f" and would broadcast to {shape}")
                    + "; pass a prediction and a target of the same shape"
                )
        diff = x0 - x1
        if type(diff) is not np.ndarray:  # CuPy's: its own reduction
            return (diff**2).sum() / len(diff)
        return _add_reduce(diff**2, axis=None) / len(diff)

    def derivative(self, ops, gy):
        # d/dx0 sum((x0 - x1)^2) / N = 2 (x0 - x1) / N
        diff = ops.value(self.inputs[0]) - ops.value(self.inputs[1])
        gx0 = gy * diff * (2.0 / len(diff))
        return gx0, -gx0


def mean_squared_error(x0: Any, x1: Any) -> Variable:
    return MeanSquaredError()(x0, x1)


def _check_labels(op: str, x: np.ndarray, t: np.ndarray) -> None:
    if x.ndim != 2 or t.ndim != 1 or t.shape[0] != x.shape[0]:
        raise ValueError(
            f"{op}: expected scores of shape (N, C) and integer labels of shape (N,), "
            f"got {x.shape} and {t.shape}"
        )


def softmax_cross_entropy_simple(x: Any, t: Any) -> Variable:
    x, t = as_variable(x), as_variable(t)
    _check_labels("softmax_cross_entropy_simple", x.data, t.data)
    n = x.shape[0]
    p = softmax(x)
    p = clip(p, 1e-15, 1.0)  # log(0) guard
    log_p = log(p)
    tlog_p = log_p[cuda.get_array_module(t.data).arange(n), t.data]
    return -1 * sum(tlog_p) / n


class SoftmaxCrossEntropy(Function):
    formula = (
        "gx0 = gy · (softmax(x0, 1) − onehot(x1, x0)) / len(x0)",
        "gx1 = 0",
    )

    def forward(self, x, t):
        _check_labels("softmax_cross_entropy", x, t)
        n = x.shape[0]
        log_z = _shapes.logsumexp(x, axis=1)
        log_p = x - log_z
        log_p = log_p[cuda.get_array_module(t).arange(n), t.ravel()]
        return -log_p.sum() / np.float32(n)

    def _onehot(self) -> np.ndarray:
        x, t = self.inputs
        return cuda.get_array_module(t.data).eye(x.shape[1], dtype=x.dtype)[t.data]

    def derivative(self, ops, gy):
        # (softmax(x) - onehot(t)) / N; the labels get no gradient
        x = ops.value(self.inputs[0])
        gy = gy * (1 / x.shape[0])
        return (ops.softmax(x, 1) - self._onehot()) * gy, None


def softmax_cross_entropy(x: Any, t: Any) -> Variable:
    return SoftmaxCrossEntropy()(x, t)


def sigmoid_cross_entropy(x: Any, t: Any) -> Variable:
    x, t = as_variable(x), as_variable(t)
    if x.ndim != t.ndim:
        t = reshape(t, x.shape)
    n = len(x)
    p = sigmoid(x)
    p = clip(p, 1e-15, 1.0)
    tlog_p = t * log(p) + (1 - t) * log(1 - p)
    return -1 * sum(tlog_p) / n


def binary_cross_entropy(p: Any, t: Any) -> Variable:
    p, t = as_variable(p), as_variable(t)
    if p.ndim != t.ndim:
        t = reshape(t, p.shape)
    n = len(t)
    p = clip(p, 1e-15, 0.999)
    tlog_p = t * log(p) + (1 - t) * log(1 - p)
    return -1 * sum(tlog_p) / n


def accuracy(y: Any, t: Any) -> Variable:
    """Fraction of rows whose arg-max equals the label; not differentiable."""
    y, t = as_variable(y), as_variable(t)
    pred = y.data.argmax(axis=1).reshape(t.shape)
    result = pred == t.data
    return Variable(as_array(result.mean()))


def dropout(x: Any, dropout_ratio: float = 0.5) -> Variable:
    """Inverted dropout while ``Config.train`` is True; the identity in ``test_mode()``."""
    x = as_variable(x)
    if _switches.train:
        xp = cuda.get_array_module(x.data)
        mask = xp.random.rand(*x.shape) > dropout_ratio
        scale = xp.array(1.0 - dropout_ratio).astype(x.dtype)
        return x * mask / scale
    return x


# =============================================================================
# Normalisation and embeddings (DeZero)
# =============================================================================
class BatchNorm(Function):
    """Batch normalisation of ``x`` (N, C) or (N, C, H, W) over every axis but the channel's.

    ``mean`` and ``var`` are the running averages (arrays of shape (C,)): while
    ``Config.train`` is True the batch's statistics normalise ``x`` and are folded into them in
    place (``avg = decay * avg + (1 - decay) * batch``, the variance unbiased); in test mode
    they normalise ``x`` instead.
    """

    # while training, normalize(x0, eps) and batch_std(x0, eps) use the batch's statistics,
    # which depend on every row of x; under test_mode() y is an affine map of x with the
    # running ones (where() picks the text of the mode the step ran in)
    formula = (
        "gx0 = where(train, "
        "(gy − channel_mean(gy) − normalize(x0, eps) · channel_mean(normalize(x0, eps) · gy))"
        " · per_channel(x1, x0) / batch_std(x0, eps), "
        "gy · per_channel(x1 / sqrt(avg_var + eps), x0))",
        "gx1 = where(train, channel_sum(normalize(x0, eps) · gy), "
        "channel_sum((x0 − per_channel(avg_mean, x0)) · gy) / sqrt(avg_var + eps))",
        "gx2 = channel_sum(gy)",
    )

    def __init__(self, mean: np.ndarray, var: np.ndarray, decay: float, eps: float) -> None:
        self.avg_mean = mean
        self.avg_var = var
        self.decay = decay
        self.eps = eps

    @staticmethod
    def _rows(x: Any) -> Any:
        # (N, C, H, W) -> (N*H*W, C): one row per position, one column per channel
        if x.ndim == 4:
            return x.transpose((0, 2, 3, 1)).reshape((-1, x.shape[1]))
        return x

    @staticmethod
    def _unrows(y: Any, shape: tuple[int, ...]) -> Any:
        if len(shape) == 4:
            n, c, h, w = shape
            return y.reshape((n, h, w, c)).transpose((0, 3, 1, 2))
        return y

    def forward(self, x, gamma, beta):
        if x.ndim not in (2, 4):
            raise ValueError(
                f"batch_norm: expected an input of shape (N, C) or (N, C, H, W), got {x.shape}"
            )
        if gamma.shape != (x.shape[1],) or beta.shape != (x.shape[1],):
            raise ValueError(
                f"batch_norm: gamma {gamma.shape} and beta {beta.shape} must have shape "
                f"({x.shape[1]},), one value per channel of the input {x.shape}"
            )
        if _switches.train and x.size == 0:
            raise ValueError(
                f"batch_norm: an empty batch of shape {x.shape} in training mode has no mean or "
                "variance: it would set the running mean and variance to NaN; skip empty "
                "batches (or run it under autodiff.test_mode())"
            )
        rows = self._rows(x)
        self.train = _switches.train
        if self.train:
            mean = rows.mean(axis=0)
            var = rows.var(axis=0)
            m = rows.shape[0]
            unbiased = m / (m - 1.0 if m > 2 else 1.0)  # as DeZero: m / max(m - 1, 1)
            self.avg_mean *= self.decay
            self.avg_mean += (1 - self.decay) * mean
            self.avg_var *= self.decay
            self.avg_var += (1 - self.decay) * unbiased * var
        else:
            mean, var = self.avg_mean, self.avg_var
        inv_std = 1 / np.sqrt(var + self.eps)
        y = (rows - mean) * (gamma * inv_std) + beta
        return self._unrows(y, x.shape)

    def derivative(self, ops, gy):
        x, gamma = ops.value(self.inputs[0]), ops.value(self.inputs[1])
        shape = x.shape
        x, gy = self._rows(x), self._rows(gy)
        if not self.train:  # an affine map of x with constant statistics
            inv_std = 1 / np.sqrt(self.avg_var + self.eps)
            xc = (x - self.avg_mean) * inv_std
            gx = gy * (gamma * inv_std)
            return self._unrows(gx, shape), (xc * gy).sum(axis=0), gy.sum(axis=0)
        # The statistics are recomputed from x (not kept from forward) so that, on Variables,
        # they are differentiated too: the second derivative is exact.
        m = x.shape[0]
        centred = x - x.sum(axis=0) * (1 / m)
        inv_std = ((centred * centred).sum(axis=0) * (1 / m) + self.eps) ** -0.5
        xc = centred * inv_std
        gbeta = gy.sum(axis=0)
        ggamma = (xc * gy).sum(axis=0)
        # d/dx of gamma * xc: the batch's mean and variance depend on every row
        gx = (gy - gbeta * (1 / m) - xc * (ggamma * (1 / m))) * (gamma * inv_std)
        return self._unrows(gx, shape), ggamma, gbeta


def batch_norm(
    x: Any,
    gamma: Any,
    beta: Any,
    mean: np.ndarray,
    var: np.ndarray,
    decay: float = 0.9,
    eps: float = 2e-5,
) -> Variable:
    """DeZero's ``batch_nrom`` (sic), by its right name; ``mean`` and ``var`` are updated in
    place while training."""
    return BatchNorm(mean, var, decay, eps)(x, gamma, beta)


def embed_id(x: Any, W: Any) -> Variable:
    """Rows of ``W`` picked by the integer ids ``x``: ``W[x]``, of shape ``x.shape + (D,)``."""
    if isinstance(x, Variable):
        x = x.data
    return get_item(W, as_array(x))


# =============================================================================
# Convolution and pooling (autodiff/functions_conv.py), re-exported as DeZero does
# =============================================================================
from autodiff.functions_conv import (  # noqa: E402
    average_pooling,
    col2im,
    conv2d,
    conv2d_simple,
    deconv2d,
    im2col,
    pooling,
    pooling_simple,
)
