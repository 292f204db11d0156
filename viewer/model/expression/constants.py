"""Constants of the expression language, folded with numpy: literals, nested lists, ``pi``,
the array constructors and arithmetic of those. Also the size checks shared with evaluation."""

from __future__ import annotations

import ast
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff.core import Variable
from viewer.model.expression.rules import (
    CONSTANT_NAMES,
    MAX_ELEMENTS,
    ExpressionError,
    error_at,
)


def fold(node: ast.AST, lines: list[str]) -> Any:
    """The constant ``node`` stands for; every failure is an ExpressionError at ``node``."""
    with np.errstate(all="ignore"):
        try:
            return fold_node(node, lines)
        except ExpressionError:
            raise
        except (ArithmeticError, ValueError, TypeError, IndexError, MemoryError) as e:
            # a numpy or Python error the checks above did not foresee: still the user's
            # program, never a crash
            raise error_at(f"{type(e).__name__}: {e}", node, lines) from None


def fold_node(node: ast.AST, lines: list[str]) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or node.value is None:
            return node.value
        return float(node.value) if isinstance(node.value, float) else node.value
    if isinstance(node, ast.Name):
        return CONSTANT_NAMES[node.id]
    if isinstance(node, ast.UnaryOp):
        value = fold_node(node.operand, lines)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left = fold_node(node.left, lines)
        right = fold_node(node.right, lines)
        check_result_size(node, (np.shape(left), np.shape(right)), node.op, lines)
        try:
            return apply_binop(node.op, np.asarray(left, dtype=np.float64), right)
        except (ValueError, TypeError) as e:
            raise error_at(str(e), node, lines) from None
    if isinstance(node, ast.Tuple):
        return tuple(fold_node(e, lines) for e in node.elts)
    if isinstance(node, ast.List):
        elements = [fold_node(e, lines) for e in node.elts]
        try:
            array = np.array(elements, dtype=np.float64)
        except ValueError:
            raise error_at(
                "the nested lists are ragged: every row needs the same length", node, lines
            ) from None
        if array.size > MAX_ELEMENTS:
            raise error_at(f"the list has more than {MAX_ELEMENTS} elements", node, lines)
        return array
    if isinstance(node, ast.Subscript):
        value = np.asarray(fold_node(node.value, lines))
        try:
            return value[index_value(node.slice)]
        except IndexError as e:
            raise error_at(str(e), node, lines) from None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return construct(node, lines)
    raise error_at(f"{type(node).__name__} is not a constant", node, lines)


def index_value(node: ast.AST) -> Any:
    def one(part: ast.AST) -> Any:
        if isinstance(part, ast.Slice):
            return slice(
                *(
                    None if p is None else literal_int(p)
                    for p in (part.lower, part.upper, part.step)
                )
            )
        return literal_int(part)

    if isinstance(node, ast.Tuple):
        return tuple(one(p) for p in node.elts)
    return one(node)


def literal_int(node: ast.AST) -> int:
    if isinstance(node, ast.UnaryOp):
        value = literal_int(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    return int(node.value)  # type: ignore[attr-defined]


def apply_binop(op: ast.AST, left: Any, right: Any) -> Any:
    if isinstance(op, ast.Add):
        return left + right
    if isinstance(op, ast.Sub):
        return left - right
    if isinstance(op, ast.Mult):
        return left * right
    if isinstance(op, ast.Div):
        return left / right
    if isinstance(op, ast.Pow):
        return left**right
    if isinstance(op, ast.MatMult):
        return left @ right
    raise TypeError(f"unsupported operator {type(op).__name__}")


def check_result_size(
    node: ast.AST, shapes: tuple[tuple[int, ...], ...], op: ast.AST, lines: list[str]
) -> None:
    """Refuse an operation whose result would exceed MAX_ELEMENTS, before computing it."""
    if isinstance(op, ast.MatMult):
        shape = matmul_shape(*shapes)
        if shape is None:
            return  # the engine reports the mismatch with its own message
    else:
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            return  # the engine reports the mismatch with its own message
    size = math.prod(shape)
    if size > MAX_ELEMENTS:
        raise error_at(
            f"the result would have {size} elements (shape {shape}); the limit is {MAX_ELEMENTS}",
            node,
            lines,
        )


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape of ``a @ b`` (numpy's rules: batch dimensions broadcast); None when the
    shapes do not fit (the engine says why)."""
    if not a or not b:
        return None
    a2 = a if len(a) > 1 else (1, *a)
    b2 = b if len(b) > 1 else (*b, 1)
    try:
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        return None
    shape = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b) == 1:
        shape = shape[:-1]
    return shape


def call_result_size(name: str, shapes: list[tuple[int, ...]], shape_arg: Any) -> int | None:
    """Elements of what function ``name`` would return for operands of ``shapes`` (the
    functions that can make an array bigger than their operands); None: not bigger."""
    try:
        if name in ("add", "sub", "mul", "div") and len(shapes) == 2:
            return math.prod(np.broadcast_shapes(*shapes))
        if name == "matmul" and len(shapes) == 2:
            shape = matmul_shape(*shapes)
            return None if shape is None else math.prod(shape)
        if name == "linear" and len(shapes) >= 2:
            shape = matmul_shape(shapes[0], shapes[1])
            if shape is not None and len(shapes) == 3:
                shape = np.broadcast_shapes(shape, shapes[2])
            return None if shape is None else math.prod(shape)
        if name == "broadcast_to" and shape_arg is not None:
            dims = tuple(shape_arg) if isinstance(shape_arg, tuple | list) else (shape_arg,)
            return math.prod(int(d) for d in dims)
    except (ValueError, TypeError, OverflowError):
        return None  # not a valid call: the engine says why
    return None


def int_shape(value: Any, node: ast.AST, lines: list[str]) -> tuple[int, ...]:
    items = value if isinstance(value, tuple | list) else (value,)
    shape = []
    for item in items:
        f = float(np.asarray(item).reshape(())) if np.size(item) == 1 else float("nan")
        if not math.isfinite(f) or f != int(f) or f < 0:
            raise error_at(f"a shape needs non-negative integers, got {item!r}", node, lines)
        shape.append(int(f))
    return tuple(shape)


def construct(node: ast.Call, lines: list[str]) -> NDArray:
    name = node.func.id  # type: ignore[attr-defined]
    args = [fold_node(a, lines) for a in node.args]
    keywords = {k.arg: fold_node(k.value, lines) for k in node.keywords}
    if name in ("randn", "zeros", "ones"):
        if "shape" in keywords:
            if args:
                raise error_at(f"{name}: give the shape once (positional or shape=)", node, lines)
            args = [keywords["shape"]]
        if len(args) == 1 and isinstance(args[0], tuple):
            args = list(args[0])
        shape = int_shape(tuple(args), node, lines)
        size = math.prod(shape)
        if size <= MAX_ELEMENTS and max(shape, default=0) > MAX_ELEMENTS:
            raise error_at(
                f"{name}{shape}: a dimension of {max(shape)} is over the limit of "
                f"{MAX_ELEMENTS} elements",
                node,
                lines,
            )
        if size > MAX_ELEMENTS:
            raise error_at(
                f"{name}{shape} would have {size} elements; the limit is {MAX_ELEMENTS}",
                node,
                lines,
            )
        if name == "zeros":
            return np.zeros(shape)
        if name == "ones":
            return np.ones(shape)
        # Unless given, the seed is the call's position: the same text gives the same numbers.
        seed = keywords.get("seed")
        seed = (node.lineno, node.col_offset) if seed is None else int_shape(seed, node, lines)
        return np.random.default_rng(seed).standard_normal(shape)
    if name == "arange":
        if not 1 <= len(args) <= 3:
            raise error_at("arange takes 1 to 3 arguments: arange(start, stop, step)", node, lines)
        numbers = [scalar(a, node, lines) for a in args]
        start, stop, step = (
            (0.0, numbers[0], 1.0)
            if len(numbers) == 1
            else (*numbers[:2], numbers[2] if len(numbers) == 3 else 1.0)
        )
        if step == 0:
            raise error_at("arange: the step must not be zero", node, lines)
        span = (stop - start) / step
        if not all(math.isfinite(v) for v in (start, stop, step, span)):
            raise error_at(
                f"arange({start:g}, {stop:g}, {step:g}): the bounds and the count must be finite",
                node,
                lines,
            )
        count = max(math.ceil(span), 0)
        if count > MAX_ELEMENTS:
            raise error_at(
                f"arange would have {count} elements; the limit is {MAX_ELEMENTS}", node, lines
            )
        return np.arange(start, stop, step, dtype=np.float64)
    if name == "linspace":
        if len(args) != 3:
            raise error_at("linspace takes 3 arguments: linspace(start, stop, num)", node, lines)
        start, stop = (scalar(a, node, lines) for a in args[:2])
        (num,) = int_shape(args[2], node, lines)
        if num > MAX_ELEMENTS:
            raise error_at(
                f"linspace would have {num} elements; the limit is {MAX_ELEMENTS}", node, lines
            )
        return np.linspace(start, stop, num)
    raise error_at(f"{name} is not a constructor", node, lines)


def scalar(value: Any, node: ast.AST, lines: list[str]) -> float:
    array = np.asarray(value)
    if array.size != 1:
        raise error_at("expected a single number", node, lines)
    return float(array.reshape(()))


def as_leaf_array(
    value: Any, name: str, node: ast.AST | None = None, lines: list[str] | None = None
) -> NDArray:
    try:
        array = np.array(value.data if isinstance(value, Variable) else value, dtype=np.float64)
    except (TypeError, ValueError):
        message = f"the value of {name} must be a number or an array of numbers"
        if node is not None:
            raise error_at(message, node, lines or []) from None
        raise ExpressionError(message) from None
    if array.size > MAX_ELEMENTS:
        message = f"the value of {name} has {array.size} elements; the limit is {MAX_ELEMENTS}"
        if node is not None:
            raise error_at(message, node, lines or [])
        raise ExpressionError(message)
    return array
