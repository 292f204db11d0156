"""The rules of the expression language: limits, the whitelist of callables, the operators and
statements it refuses, and ExpressionError with its source positions."""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import autodiff.functions as F
from autodiff.core import Variable

MAX_SOURCE_CHARS = 20_000
MAX_STATEMENTS = 500
MAX_DEPTH = 64  # nesting of brackets
MAX_TREE_DEPTH = 250  # nesting of the syntax tree (brackets, calls, operator chains like a+b+c:
# a sum of 248 terms; the checker and the evaluator recurse, and 500 exhausts the stack)
MAX_ELEMENTS = 1_000_000  # elements of any one array the program may create
# Budgets of one run (Budget, below): every array the program creates counts against
# MAX_TOTAL_ELEMENTS; the recorded steps (forward and backward, grad() included) against
# MAX_STEPS, so that nested grad() calls, whose graphs grow exponentially, stop early.
MAX_TOTAL_ELEMENTS = 20_000_000
MAX_STEPS = 200_000
MAX_EXPONENT = 1_000.0  # largest |c| in ``x ** c``
DEFAULT_LEAF_VALUE = 1.0


class ExpressionError(Exception):
    """A program was rejected or failed; ``line`` and ``col`` are 1-based (as editors show)."""

    def __init__(
        self,
        message: str,
        line: int = 1,
        col: int = 1,
        end_line: int | None = None,
        end_col: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col
        self.end_line = end_line if end_line is not None else line
        self.end_col = end_col if end_col is not None else col

    def __str__(self) -> str:
        return f"line {self.line}, column {self.col}: {self.message}"


@dataclass(frozen=True)
class NonFiniteWarning:
    """The first statement whose result holds NaN or Inf (the run itself succeeded)."""

    message: str
    line: int
    col: int


# =============================================================================
# The whitelist
# =============================================================================
@dataclass(frozen=True)
class FunctionSpec:
    """One callable name of the language.

    The first ``operands`` positional arguments are arrays or Variables; any further positional
    argument (a shape, an axis, a bound) must be a constant. ``keywords`` are the keyword
    arguments accepted, always constants.
    """

    name: str
    call: Callable[..., Any]
    operands: int
    max_args: int  # -1: any number
    keywords: tuple[str, ...] = ()
    signature: str = ""
    min_args: int = -1  # -1: same as operands

    @property
    def least(self) -> int:
        return self.operands if self.min_args < 0 else self.min_args


def _sqrt(x: Any) -> Variable:
    # sqrt(x) = x ** 0.5; the engine has no sqrt primitive and needs none
    return F.as_variable(x) ** 0.5


def _shape_args(args: tuple[Any, ...]) -> tuple[int, ...]:
    if len(args) == 1 and isinstance(args[0], tuple | list):
        return tuple(args[0])
    return tuple(args)


def _build_functions() -> dict[str, FunctionSpec]:
    ax = ("axis", "keepdims")
    table = [
        # name, callable, operands, max args, keywords, signature
        ("sin", F.sin, 1, 1, (), "sin(x)"),
        ("cos", F.cos, 1, 1, (), "cos(x)"),
        ("exp", F.exp, 1, 1, (), "exp(x)"),
        ("log", F.log, 1, 1, (), "log(x)"),
        ("tanh", F.tanh, 1, 1, (), "tanh(x)"),
        ("square", F.square, 1, 1, (), "square(x)"),
        ("sqrt", _sqrt, 1, 1, (), "sqrt(x) = x ** 0.5"),
        ("sigmoid", F.sigmoid, 1, 1, (), "sigmoid(x)"),
        ("relu", F.relu, 1, 1, (), "relu(x)"),
        ("leaky_relu", F.leaky_relu, 1, 2, (), "leaky_relu(x, slope=0.2)"),
        ("neg", F.neg, 1, 1, (), "neg(x) = -x"),
        ("add", F.add, 2, 2, (), "add(a, b)"),
        ("sub", F.sub, 2, 2, (), "sub(a, b)"),
        ("mul", F.mul, 2, 2, (), "mul(a, b)"),
        ("div", F.div, 2, 2, (), "div(a, b)"),
        ("matmul", F.matmul, 2, 2, (), "matmul(a, b)"),
        ("linear", F.linear, 2, 3, (), "linear(x, W, b)"),
        ("sum", F.sum, 1, 3, ax, "sum(x, axis=None, keepdims=False)"),
        ("mean", F.average, 1, 3, ax, "mean(x, axis=None, keepdims=False)"),
        ("average", F.average, 1, 3, ax, "average(x, axis=None, keepdims=False)"),
        ("max", F.max, 1, 3, ax, "max(x, axis=None, keepdims=False)"),
        ("min", F.min, 1, 3, ax, "min(x, axis=None, keepdims=False)"),
        ("clip", F.clip, 1, 3, (), "clip(x, low, high)"),
        ("softmax", F.softmax, 1, 2, ("axis",), "softmax(x, axis=1)"),
        ("log_softmax", F.log_softmax, 1, 2, ("axis",), "log_softmax(x, axis=1)"),
        ("mean_squared_error", F.mean_squared_error, 2, 2, (), "mean_squared_error(a, b)"),
        ("sigmoid_cross_entropy", F.sigmoid_cross_entropy, 2, 2, (), "sigmoid_cross_entropy(x, t)"),
        ("binary_cross_entropy", F.binary_cross_entropy, 2, 2, (), "binary_cross_entropy(p, t)"),
        ("transpose", lambda x, *axes: F.transpose(x, axes or None), 1, -1, (), "transpose(x)"),
        ("flatten", F.flatten, 1, 1, (), "flatten(x)"),
        ("expand_dims", F.expand_dims, 1, 2, ("axis",), "expand_dims(x, axis)"),
    ]
    specs = {}
    for name, call, operands, most, keywords, signature in table:
        specs[name] = FunctionSpec(name, call, operands, most, keywords, signature)
    specs["reshape"] = FunctionSpec(
        "reshape",
        lambda x, *shape, **kw: F.reshape(x, kw["shape"] if "shape" in kw else _shape_args(shape)),
        1,
        -1,
        ("shape",),
        "reshape(x, 2, 3) or reshape(x, shape=(2, 3))",
    )
    specs["broadcast_to"] = FunctionSpec(
        "broadcast_to",
        lambda x, *shape, **kw: F.broadcast_to(x, kw.get("shape", _shape_args(shape))),
        1,
        -1,
        ("shape",),
        "broadcast_to(x, shape)",
    )
    specs["sum_to"] = FunctionSpec(
        "sum_to",
        lambda x, *shape, **kw: F.sum_to(x, kw.get("shape", _shape_args(shape))),
        1,
        -1,
        ("shape",),
        "sum_to(x, shape)",
    )
    return specs


FUNCTIONS: dict[str, FunctionSpec] = _build_functions()

# Array constructors: every argument is a constant; they make plain arrays (constants), which
# become leaves when assigned to a name (``W = randn(3, 2)``).
CONSTRUCTORS: dict[str, tuple[tuple[str, ...], str]] = {
    "randn": (("shape", "seed"), "randn(2, 3, seed=0): standard normal, seeded"),
    "zeros": (("shape",), "zeros(2, 3)"),
    "ones": (("shape",), "ones(2, 3)"),
    "arange": ((), "arange(stop) or arange(start, stop, step)"),
    "linspace": ((), "linspace(start, stop, num)"),
}
GRAD = "grad"
CONSTANT_NAMES = {"pi": math.pi}
KNOWN_CALLABLES = (*FUNCTIONS, *CONSTRUCTORS, GRAD)

BINOPS: dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Pow: "**",
    ast.MatMult: "@",
}
REJECTED_OPS: dict[type, str] = {
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.BitXor: "^",
}
REJECTED_NODES: dict[type, str] = {
    ast.Attribute: "attributes (a.b) are not allowed; call functions by name, e.g. transpose(x)",
    ast.Lambda: "lambdas are not allowed",
    ast.ListComp: "comprehensions are not allowed; use arange/ones/zeros or a literal list",
    ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed",
    ast.GeneratorExp: "generator expressions are not allowed",
    ast.Compare: "comparisons are not supported; the language computes numbers",
    ast.BoolOp: "and/or are not supported; the language computes numbers",
    ast.IfExp: "conditional expressions are not supported",
    ast.Dict: "dictionaries are not allowed",
    ast.Set: "sets are not allowed",
    ast.JoinedStr: "strings are not allowed",
    ast.NamedExpr: "the walrus operator := is not allowed; use an assignment statement",
    ast.Starred: "star arguments are not allowed",
    ast.Await: "await is not allowed",
    ast.Yield: "yield is not allowed",
    ast.YieldFrom: "yield is not allowed",
}
STATEMENT_NAMES: dict[type, str] = {
    ast.Import: "imports are not allowed",
    ast.ImportFrom: "imports are not allowed",
    ast.FunctionDef: "function definitions are not allowed",
    ast.AsyncFunctionDef: "function definitions are not allowed",
    ast.ClassDef: "class definitions are not allowed",
    ast.For: "loops are not allowed",
    ast.AsyncFor: "loops are not allowed",
    ast.While: "loops are not allowed",
    ast.If: "if statements are not allowed",
    ast.With: "with statements are not allowed",
    ast.AsyncWith: "with statements are not allowed",
    ast.Try: "try statements are not allowed",
    ast.Raise: "raise is not allowed",
    ast.Return: "return is not allowed",
    ast.Delete: "del is not allowed",
    ast.Global: "global is not allowed",
    ast.Nonlocal: "nonlocal is not allowed",
    ast.Assert: "assert is not allowed",
    ast.Pass: "pass is not allowed",
    ast.Break: "break is not allowed",
    ast.Continue: "continue is not allowed",
    ast.AnnAssign: "annotated assignments are not allowed; write x = 0.5",
}


def position_of_offset(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    line = before.count("\n") + 1
    col = offset - (before.rfind("\n") + 1) + 1
    return line, col


def node_position(node: ast.AST, lines: list[str]) -> tuple[int, int]:
    line = getattr(node, "lineno", 1) or 1
    offset = getattr(node, "col_offset", 0) or 0
    return line, byte_to_char_col(lines, line, offset) + 1


def byte_to_char_col(lines: list[str], line: int, byte_offset: int) -> int:
    # ast columns are UTF-8 byte offsets; editors count characters.
    if 1 <= line <= len(lines):
        return len(lines[line - 1].encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))
    return byte_offset


def error_at(message: str, node: ast.AST, lines: list[str]) -> ExpressionError:
    line, col = node_position(node, lines)
    end_line = getattr(node, "end_lineno", None) or line
    end_offset = getattr(node, "end_col_offset", None)
    end_col = byte_to_char_col(lines, end_line, end_offset) + 1 if end_offset is not None else col
    return ExpressionError(message, line, col, end_line, end_col)
