"""A backward step's recorded numbers under the names its formula reads, and the formula's
right side written with them.

A formula (:mod:`autodiff.formulas`) reads ``x``/``x0``.. (the forward inputs), ``y``/``y0``..
(the outputs), ``gy``/``gy0``.. (the gradients from above) and the Function's attributes
(``c`` of Pow). :func:`environment` gathers them from a reader at one step: values and
gradients from the recording, attributes from the live Function (a saved trace has none: they
are then listed as unknown). :func:`substitute` writes a right side with the numbers of one
element, in the arithmetic a learner reads (``5.437 · exp(1)``).
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from autodiff import formulas

__all__ = [
    "NUMBER_FUNCTIONS",
    "Environment",
    "broadcast_axes",
    "close",
    "contributing",
    "environment",
    "format_number",
    "is_elementwise",
    "live_function",
    "parse",
    "substitute",
    "substitute_checked",
    "values_at",
]

# the functions `.numbers` may call; any other call is written as the number it gives
NUMBER_FUNCTIONS = frozenset({"exp", "log", "sin", "cos", "tanh", "sqrt"})
# the functions that work element by element (a formula calling only these is elementwise)
_ELEMENTWISE_CALLS = NUMBER_FUNCTIONS | {"abs", "sign", "where"}
_ROLE = re.compile(r"(gy|x|y)(\d*)$")
# significant digits tried in turn until the written numbers give the recorded result
_DIGITS = (4, 6, 9, 17)


@dataclass(frozen=True)
class Environment:
    """The names a step's formulas may read: arrays (None where the recording kept only a
    summary), the attributes of the live Function, the node each role name stands for."""

    values: dict[str, Any]
    nodes: dict[str, int]
    out_shape: tuple[int, ...]
    live: bool


def environment(trace: Any, step: Any) -> Environment:
    """The roles of ``step`` (a backward Step of ``trace``) and their recorded arrays."""
    index = step.index
    values: dict[str, Any] = {}
    nodes: dict[str, int] = {}

    def put(prefix: str, ids: tuple[int, ...], arrays: list[Any]) -> None:
        for k, (node, array) in enumerate(zip(ids, arrays, strict=True)):
            values[f"{prefix}{k}"] = array
            nodes[f"{prefix}{k}"] = node
        if len(ids) == 1:
            values[prefix], nodes[prefix] = values[f"{prefix}0"], ids[0]

    put("x", step.inputs, [_array(trace.value_at(n, index)) for n in step.inputs])
    ys = [_array(trace.value_at(n, index)) for n in step.outputs]
    put("y", step.outputs, ys)
    gys = []
    for g, y in zip(step.output_grads, ys, strict=False):
        a = _array(g)
        # an output no gradient reached counts as zeros (as the engine's backward takes it)
        gys.append(np.zeros_like(y) if g is None and y is not None else a)
    gys += [None] * (len(step.outputs) - len(gys))
    put("gy", step.outputs, gys)
    live = live_function(trace, step.function)
    if live is not None:
        attributes = getattr(live, "__dict__", {})
        for name, value in attributes.items():
            if not name.startswith("_") and name not in values:
                values[name] = value
    out = gys[0] if gys and gys[0] is not None else (ys[0] if ys else None)
    out_shape = tuple(np.shape(out)) if out is not None else ()
    return Environment(values, nodes, out_shape, live is not None)


def live_function(trace: Any, node: int) -> Any:
    """The engine's Function of ``node`` while it is alive, else None (a saved trace)."""
    try:
        return trace.live(node)
    except (IndexError, KeyError):
        return None


def _array(snapshot: Any) -> Any:
    if snapshot is None:
        return None
    return snapshot.array  # None for a summarised (large) array


def parse(text: str) -> ast.Expression:
    """The right side of a formula as a Python expression tree (FormulaError if it is not in
    the notation)."""
    try:
        return ast.parse(formulas.to_python(text), mode="eval")
    except SyntaxError as e:
        raise formulas.FormulaError(f"formula {text!r} does not parse: {e.msg}") from None


def is_elementwise(tree: ast.Expression, env: Environment) -> bool:
    """Whether the formula works element by element: only elementwise calls and operators,
    no transpose or matrix product, every array broadcastable to the output's shape."""
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return False
        if isinstance(node, ast.Attribute):
            return False
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in _ELEMENTWISE_CALLS
        ):
            return False
        if isinstance(node, ast.Name) and node.id in env.values:
            value = env.values[node.id]
            if isinstance(value, tuple | list | str):
                return False
            try:
                np.broadcast_shapes(np.shape(value), env.out_shape)
            except ValueError:
                return False
    return True


def broadcast_axes(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The axes of ``out_shape`` that broadcasting ``in_shape`` to it added or stretched."""
    lead = len(out_shape) - len(in_shape)
    axes = list(range(max(lead, 0)))
    for k, n in enumerate(in_shape):
        a = k + lead
        if 0 <= a < len(out_shape) and n == 1 and out_shape[a] != 1:
            axes.append(a)
    return tuple(axes)


def contributing(
    element: tuple[int, ...], in_shape: tuple[int, ...], out_shape: tuple[int, ...]
) -> Iterable[tuple[int, ...]]:
    """The indexes of an output of ``out_shape`` whose gradients sum into ``element`` of an
    input of ``in_shape`` broadcast to it."""
    lead = len(out_shape) - len(in_shape)
    ranges = []
    for a, n in enumerate(out_shape):
        k = a - lead
        if k < 0 or (in_shape[k] == 1 and n != 1):
            ranges.append(range(n))
        else:
            ranges.append(range(element[k], element[k] + 1))
    return itertools.product(*ranges)


def values_at(env: Environment, names: Iterable[str], index: tuple[int, ...]) -> dict[str, Any]:
    """Each name's number at ``index`` of the output's shape (arrays broadcast to it)."""
    out: dict[str, Any] = {}
    for name in names:
        value = env.values[name]
        if isinstance(value, np.ndarray) or np.isscalar(value):
            a = np.asarray(value)
            out[name] = np.broadcast_to(a, env.out_shape)[index].item() if a.ndim else a.item()
        else:
            out[name] = value
    return out


def format_number(value: float, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits, positional (no exponent)."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return np.format_float_positional(
        value, precision=digits, unique=False, fractional=False, trim="-"
    )


class _Placeholders(ast.NodeTransformer):
    """Names, and calls the numbers may not show, become placeholders for numbers."""

    def __init__(self, scalars: Mapping[str, Any]) -> None:
        self.scalars = scalars
        self.numbers: list[float] = []

    def _number(self, value: Any) -> ast.AST:
        self.numbers.append(float(value))
        return ast.Name(f"_n{len(self.numbers) - 1}_", ast.Load())

    def _evaluate(self, node: ast.AST) -> Any:
        return formulas.evaluate(ast.unparse(node), self.scalars)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self._number(self.scalars[node.id])

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return self._number(node.value)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name) and node.func.id in NUMBER_FUNCTIONS:
            node.args = [self.visit(a) for a in node.args]
            return node
        return self._number(self._evaluate(node))

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        return self._number(self._evaluate(node))


def substitute(text: str, scalars: Mapping[str, Any], digits: int = 4) -> str:
    """The right side of formula ``text`` with each name replaced by its number in
    ``scalars`` (one element's), in the notation (``·`` for a product);
    a call the numbers may not show (``where``...) is replaced by its value."""
    tree = _Placeholders(scalars)
    body = tree.visit(parse(text).body)
    source = ast.unparse(ast.fix_missing_locations(body))
    source = source.replace(" ** ", "**").replace(" * ", " · ")
    for k, v in enumerate(tree.numbers):
        number = format_number(v, digits)
        source = source.replace(f"_n{k}_", f"({number})" if number.startswith("-") else number, 1)
    return source


def substitute_checked(texts: list[tuple[str, Mapping[str, Any]]], want: float) -> str:
    """The sum of ``texts`` (each a formula and one element's numbers) written with the fewest
    digits (4 at least) whose value is ``want`` within 3e-4 (the contract asks 1e-3); ''
    when none is."""
    for digits in _DIGITS:
        parts = [substitute(text, scalars, digits) for text, scalars in texts]
        written = parts[0] if len(parts) == 1 else " + ".join(f"({p})" for p in parts)
        try:
            got = float(formulas.evaluate(written, {}))
        except (formulas.FormulaError, ArithmeticError, ValueError, TypeError):
            return ""
        if close(got, want, 3e-4):
            return written
    return ""


def close(got: float, want: float, rtol: float) -> bool:
    """``got`` is ``want`` within ``rtol`` (NaN is NaN, an infinity itself)."""
    if not (math.isfinite(got) and math.isfinite(want)):
        return got == want or (math.isnan(got) and math.isnan(want))
    return abs(got - want) <= rtol * max(abs(want), abs(got)) + 1e-300
