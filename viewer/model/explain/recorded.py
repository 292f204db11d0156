"""A backward step's recorded numbers under the names its formula reads, and the formula's
right side written with them.

A formula (:mod:`autodiff.formulas`) reads ``x``/``x0``.. (the forward inputs), ``y``/``y0``..
(the outputs), ``gy``/``gy0``.. (the gradients from above) and the Function's attributes
(``c`` of Pow). :func:`environment` gathers them from a reader at one step: values and
gradients from the recording, attributes from the live Function or, once it is gone, those the
recording kept (``function_params``: small plain data; others are then listed as unknown).
:func:`substitute` writes a right side with the numbers of one element, in the arithmetic a
learner reads (``5.437 · exp(1)``).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import itertools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from autodiff import formulas
from viewer.model.explain import torch_ops

__all__ = [
    "NUMBER_FUNCTIONS",
    "Environment",
    "broadcast_axes",
    "close",
    "contributing",
    "elementwise_frame",
    "environment",
    "format_number",
    "formulas_of",
    "live_function",
    "names_in",
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
    xs = [values[f"x{k}"] for k in range(len(step.inputs))]
    if all(x is not None for x in xs):
        values["xs"] = tuple(xs)
    if step.op in formulas.MATRIX_PRODUCTS and all(
        values.get(n) is not None for n in ("x0", "x1", "gy")
    ):
        # MatMul's texts read 1-D operands as a row and a column (numpy's matmul does)
        with contextlib.suppress(ValueError):
            values.update(formulas.matrix_view(values))
    live = live_function(trace, step.function)
    # the live Function's own attributes; once it is gone (a saved trace, a script's graph) the
    # small ones the recording kept (Pow's c, Sum's axis...)
    attributes = getattr(live, "__dict__", {}) if live is not None else _params(trace, step)
    for name, value in attributes.items():
        if not name.startswith("_") and name not in values:
            values[name] = value
    out = gys[0] if gys and gys[0] is not None else (ys[0] if ys else None)
    out_shape = tuple(np.shape(out)) if out is not None else ()
    return Environment(values, nodes, out_shape, live is not None)


def _params(trace: Any, step: Any) -> dict[str, Any]:
    try:
        return trace.function_params(step.function)
    except (IndexError, KeyError):
        return {}


def live_function(trace: Any, node: int) -> Any:
    """The engine's Function of ``node`` while it is alive, else None (a saved trace)."""
    try:
        return trace.live(node)
    except (IndexError, KeyError):
        return None


def formulas_of(trace: Any, step: Any) -> tuple[str, ...] | None:
    """The formula texts of ``step``'s Function: its class's while it lives, else its op's
    (a saved trace); None for a Function without (the user's own) and for torch's op, whose
    backward is torch's code whatever autodiff's primitive of that name does."""
    if torch_ops.is_torch_function(trace, step.function):
        return None
    live = live_function(trace, step.function)
    n = len(step.inputs)
    return formulas.slot_formulas(live, n) if live is not None else _formulas_of_op(step.op, n)


@functools.lru_cache(maxsize=256)
def _formulas_of_op(op: str, n_inputs: int) -> tuple[str, ...] | None:
    return formulas.slot_formulas(op, n_inputs)


@functools.lru_cache(maxsize=1024)
def names_in(text: str) -> frozenset[str]:
    """The names formula ``text`` reads (its functions excluded)."""
    return frozenset(formulas.names_in(text))


@functools.lru_cache(maxsize=1024)
def _shape_of(text: str) -> tuple[bool, bool, frozenset[str]]:
    """(whether it has a matrix product or an attribute, whether it calls only elementwise
    functions, the names it reads) of formula ``text``."""
    tree = parse(text)
    structural = any(
        (isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult)) or isinstance(n, ast.Attribute)
        for n in ast.walk(tree)
    )
    calls_ok = all(
        isinstance(n.func, ast.Name) and n.func.id in _ELEMENTWISE_CALLS
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
    )
    return structural, calls_ok, names_in(text)


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


def elementwise_frame(text: str, env: Environment) -> tuple[int, ...] | None:
    """The shape formula ``text`` works in element by element (its arrays and the output's
    broadcast together), or None when it does not work element by element: a matrix product,
    a transpose, a call that is neither elementwise nor a number (``len(x0 − x1)`` is one)."""
    structural, calls_ok, names = _shape_of(text)
    if structural:
        return None
    if not calls_ok:
        for call in _calls(text):
            try:
                if np.ndim(formulas.evaluate(call, env.values)) != 0:
                    return None
            except (formulas.FormulaError, ArithmeticError, ValueError, TypeError):
                return None
    shapes = [env.out_shape]
    for name in names:
        value = env.values.get(name)
        if isinstance(value, tuple | list | str):
            continue  # read by a call that gives a number (checked above)
        if value is not None:
            shapes.append(np.shape(value))
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


@functools.lru_cache(maxsize=1024)
def _calls(text: str) -> tuple[str, ...]:
    """The calls of ``text`` to functions that are not elementwise, as source."""
    return tuple(
        ast.unparse(n)
        for n in ast.walk(parse(text))
        if isinstance(n, ast.Call)
        and not (isinstance(n.func, ast.Name) and n.func.id in _ELEMENTWISE_CALLS)
    )


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


def values_at(
    env: Environment, names: Iterable[str], index: tuple[int, ...], frame: tuple[int, ...]
) -> dict[str, Any]:
    """Each name's number at ``index`` of ``frame`` (arrays broadcast to it); a value that is
    not an array (a tuple of shapes) as it is."""
    out: dict[str, Any] = {}
    for name in names:
        value = env.values[name]
        if isinstance(value, np.ndarray) or np.isscalar(value):
            a = np.asarray(value)
            out[name] = np.broadcast_to(a, frame)[index].item() if a.ndim else a.item()
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

    def __init__(self, scalars: Mapping[str, Any], full: Mapping[str, Any]) -> None:
        self.scalars = scalars
        self.full = full
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
        source = ast.unparse(node)
        with contextlib.suppress(formulas.FormulaError, ArithmeticError, ValueError, TypeError):
            whole = formulas.evaluate(source, self.full)  # a number of the whole arrays (len)
            if np.ndim(whole) == 0:
                return self._number(whole)
        return self._number(self._evaluate(node))

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        return self._number(self._evaluate(node))


def substitute(
    text: str, scalars: Mapping[str, Any], digits: int = 4, full: Mapping[str, Any] | None = None
) -> str:
    """The right side of formula ``text`` with each name replaced by its number in
    ``scalars`` (one element's), in the notation (``·`` for a product); a call the numbers
    may not show is replaced by its value: over the ``full`` arrays when that is a number
    (``len``), else over the element's (``where``)."""
    tree = _Placeholders(scalars, scalars if full is None else full)
    body = tree.visit(parse(text).body)
    source = ast.unparse(ast.fix_missing_locations(body))
    # in the formulas' notation: x^(c − 1) above is 0.5^(2 − 1) below, not 0.5**(2 - 1)
    source = source.replace(" ** ", "^").replace(" * ", " · ").replace(" - ", " − ")
    for k, v in enumerate(tree.numbers):
        number = format_number(v, digits)
        source = source.replace(f"_n{k}_", f"({number})" if number.startswith("-") else number, 1)
    return source


def substitute_checked(
    texts: list[tuple[str, Mapping[str, Any]]], want: float, full: Mapping[str, Any]
) -> str:
    """The sum of ``texts`` (each a formula and one element's numbers) written with the fewest
    digits (4 at least) whose value is ``want`` within 3e-4 (the contract asks 1e-3); ''
    when none is."""
    for digits in _DIGITS:
        parts = [substitute(text, scalars, digits, full) for text, scalars in texts]
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
