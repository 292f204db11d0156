"""The local derivative of each primitive as text, and the one evaluator of that text.

Every primitive :class:`~autodiff.core.Function` carries ``formula``: one string per input
slot, written beside its ``derivative`` code, in the notation a learner reads::

    Square.formula = ("gx = gy · 2 · x",)
    Mul.formula = ("gx0 = gy · x1", "gx1 = gy · x0")

The left side names the gradient (``gx`` for a one-input Function, ``gx0``, ``gx1``... else);
the right side is an expression of

* ``gy`` (``gy0``, ``gy1``... for several outputs): the gradient arriving from above;
* ``x`` (``x0``, ``x1``...): the forward inputs; ``y`` (``y0``...): the forward outputs;
* the Function's own attributes by name (``c`` of Pow, ``axis``...);
* numbers, ``+ - · × / ** ^ @ ( )``, ``−`` (a minus sign), ``ᵀ`` (transpose), ``²`` / ``³``;
* the functions of :data:`FUNCTIONS` (exp, log, sin, cos, tanh, sqrt, and the array
  operations a derivative is written with: sum_to, broadcast_to...).

:func:`evaluate` computes a right side with numpy; it parses with :mod:`ast` against a
whitelist (never ``eval``). The drift test (``tests/autodiff/test_formulas.py``) evaluates
every primitive's text on random inputs against the primitive's own ``derivative``, so the
text cannot drift from the code. The viewer's explanations substitute a step's recorded
numbers into the same text.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from autodiff import _shapes

__all__ = [
    "FUNCTIONS",
    "FormulaError",
    "evaluate",
    "formula_of",
    "gradient_name",
    "names_in",
    "right_side",
    "to_python",
]


class FormulaError(ValueError):
    """A formula that is not in the notation above, or names something not given."""


def _where(condition: Any, a: Any, b: Any) -> Any:
    return np.where(condition, a, b)


# The functions a formula may call, by name: what each does on arrays.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sqrt": np.sqrt,
    "abs": np.abs,
    "sign": np.sign,
    "where": _where,
    "sum_to": _shapes.sum_to,
    "broadcast_to": _shapes.broadcast_to,
    "reshape": np.reshape,
    "transpose": np.transpose,
}

# The notation's signs as Python spells them.
_SIGNS = (
    ("·", "*"),
    ("×", "*"),
    ("−", "-"),
    ("ᵀ", ".T"),
    ("²", "**2"),
    ("³", "**3"),
    ("^", "**"),
    ("√", "sqrt"),
)

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
    ast.MatMult: lambda a, b: a @ b,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Gt: lambda a, b: a > b,
    ast.Lt: lambda a, b: a < b,
    ast.GtE: lambda a, b: a >= b,
    ast.LtE: lambda a, b: a <= b,
}
_ATTRIBUTES = frozenset({"T", "shape", "ndim", "size"})


def right_side(text: str) -> str:
    """The expression of ``gx = expression`` (the text itself when it has no ``=``)."""
    _, sep, right = text.partition("=")
    return right.strip() if sep else text.strip()


def gradient_name(text: str) -> str:
    """The left side of ``gx0 = ...`` ('gx0'); '' when the text has none."""
    left, sep, _ = text.partition("=")
    return left.strip() if sep else ""


def to_python(text: str) -> str:
    """The right side of ``text`` in Python's spelling (``·`` as ``*``, ``ᵀ`` as ``.T``...)."""
    out = right_side(text)
    for sign, python in _SIGNS:
        out = out.replace(sign, python)
    return out


def names_in(text: str) -> set[str]:
    """The names the right side of ``text`` reads (functions excluded)."""
    tree = _parse(text)
    called = {
        n.func.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def evaluate(
    text: str, env: Mapping[str, Any], functions: Mapping[str, Callable[..., Any]] | None = None
) -> Any:
    """The value of the right side of ``text`` with the names of ``env`` (arrays, numbers,
    shapes) and the functions of :data:`FUNCTIONS` (or ``functions``). FormulaError for
    anything outside the notation or a name not in ``env``."""
    calls = FUNCTIONS if functions is None else {**FUNCTIONS, **functions}
    return _Evaluator(env, calls).run(_parse(text))


def _parse(text: str) -> ast.Expression:
    source = to_python(text)
    try:
        return ast.parse(source, mode="eval")
    except SyntaxError as e:
        raise FormulaError(f"formula {text!r} does not parse: {e.msg}") from None


class _Evaluator:
    def __init__(self, env: Mapping[str, Any], calls: Mapping[str, Callable[..., Any]]) -> None:
        self.env = env
        self.calls = calls

    def run(self, tree: ast.Expression) -> Any:
        return self.visit(tree.body)

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                raise FormulaError(f"the formula reads {node.id!r}, which was not given")
            return self.env[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](self.visit(node.left), self.visit(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = self.visit(node.operand)
            return -value if isinstance(node.op, ast.USub) else +value
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            left, right = self.visit(node.left), self.visit(node.comparators[0])
            return _COMPARE[type(node.ops[0])](left, right)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
            function = self.calls.get(node.func.id)
            if function is None:
                raise FormulaError(f"the formula calls {node.func.id!r}, which is not known")
            return function(*[self.visit(a) for a in node.args])
        if isinstance(node, ast.Attribute) and node.attr in _ATTRIBUTES:
            return getattr(np.asarray(self.visit(node.value)), node.attr)
        if isinstance(node, ast.Tuple):
            return tuple(self.visit(e) for e in node.elts)
        raise FormulaError(f"{type(node).__name__} is not part of a formula's notation")


# -----------------------------------------------------------------------------------------
# Which text belongs to which Function
# -----------------------------------------------------------------------------------------
def formula_of(function: Any) -> tuple[str, ...] | None:
    """The ``formula`` of a Function instance, a Function class, or a recorded op name
    ('Square', as a saved trace names it); None when it has none (a user's Function: its
    derivative is the user's own code)."""
    if isinstance(function, str):
        cls = _classes_by_name().get(function)
        return None if cls is None else cls.__dict__.get("formula")
    cls = function if isinstance(function, type) else type(function)
    return cls.__dict__.get("formula")  # own, not inherited: a subclass may differ


def _classes_by_name() -> dict[str, type]:
    from autodiff.core import Function

    found: dict[str, type] = {}
    stack = list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if "formula" in cls.__dict__:
            found.setdefault(cls.__name__, cls)
    return found
