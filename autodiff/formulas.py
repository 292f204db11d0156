"""The local derivative of each primitive as text, and the one evaluator of that text.

Every primitive :class:`~autodiff.core.Function` carries ``formula``: one string per input
slot, written beside its ``derivative`` code, in the notation a learner reads::

    Square.formula = ("gx = gy · 2 · x",)
    Mul.formula = ("gx0 = gy · x1", "gx1 = gy · x0")

The left side names the gradient (``gx`` for a one-input Function, ``gx0``, ``gx1``... else);
the right side is an expression of

* ``gy`` (``gy0``, ``gy1``... for several outputs): the gradient arriving from above;
* ``x`` (``x0``, ``x1``...): the forward inputs; ``y`` (``y0``...): the forward outputs;
  ``xs``: every input, in order (read by Concat's text, whose number of inputs varies);
* the Function's own public attributes by name (``c`` of Pow, ``axis``, ``stride``...);
* numbers, ``+ - · × / ** ^ @ ( )``, ``−`` (a minus sign), ``ᵀ`` (the matrix transpose: the
  last two axes swapped, as in a stacked matrix product), ``²`` / ``³``, the comparisons
  ``> < ≥ ≤ ==`` (a mask of 1s and 0s), and ``.shape`` / ``.ndim`` / ``.size``;
* the functions of :data:`FUNCTIONS`: exp, log, sin, cos, tanh, sqrt, abs, sign, where, and
  the array operations a derivative is written with (sum_to, broadcast_to, reshape, expand,
  im2col, col2im...; each one's docstring says what it does).

Conventions the texts keep:

* **Broadcasting.** A text is the gradient *before* broadcasting is undone, as the
  primitive's ``derivative`` returns it (``Add``: ``gx1 = gy`` even when ``x1`` was broadcast);
  backward then sums it over the broadcast axes. :func:`to_input` does that sum (and drops the
  axis a matrix product adds to a 1-D operand): it gives what the input receives.
* **Matrix products.** MatMul's and Linear's texts (``gx0 = gy @ x1ᵀ``, ``gx1 = x0ᵀ @ gy``)
  read their operands as matrices; a 1-D operand is read as numpy's matmul reads it, a row
  ``x0`` or a column ``x1``. Evaluate the texts of the ops in :data:`MATRIX_PRODUCTS` in
  :func:`matrix_view` of the environment, then :func:`to_input`.
* **Optional inputs.** Linear, Conv2d and Deconv2d have a text for the bias (``gx2``); a call
  without a bias has two inputs and uses the first two texts.
* **Any number of inputs.** Concat has one text, ``gxk = ...``: ``k`` stands for the slot.
  :func:`slot_formulas` gives one text per slot of a call, ``k`` replaced by the number.
* **Slots that never receive a gradient** (SoftmaxCrossEntropy's integer labels) have the text
  ``gx1 = 0``; backward gives them None, so a recording holds no gradient for them and an
  explanation has no term for them.

:func:`evaluate` computes a right side with numpy; it parses with :mod:`ast` against a
whitelist (never ``eval``). The drift test (``tests/autodiff/test_formulas.py``) evaluates
every primitive's text on random inputs against the primitive's own ``derivative``, and fails
for a primitive without a text, so the text cannot drift from the code. The viewer's
explanations substitute a step's recorded numbers into the same text.

:func:`formula_of` finds the text of a Function, a Function class, or an op name as a trace
records it (the class name, ``'Square'``) or as micrograd's ``Value._op`` spells it (``'+'``,
``'*'``, ``'**2'``, ``'tanh'``...).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from autodiff import _shapes
from autodiff import formula_arrays as _arrays

__all__ = [
    "FUNCTIONS",
    "MATRIX_PRODUCTS",
    "FormulaError",
    "evaluate",
    "formula_of",
    "gradient_name",
    "matrix_view",
    "names_in",
    "right_side",
    "slot_formulas",
    "to_input",
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
    "len": len,
    "sum_to": _shapes.sum_to,
    "broadcast_to": _shapes.broadcast_to,
    "reshape": np.reshape,
    "transpose": np.transpose,
    # the array operations of autodiff.formula_arrays, by their own names
    **{name: getattr(_arrays, name) for name in _arrays.__all__},
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
    ("≥", ">="),
    ("≤", "<="),
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
    ast.Eq: lambda a, b: a == b,
}
_ATTRIBUTES = frozenset({"T", "shape", "ndim", "size"})


# ``gx0 =`` at the start of a text (not the ``==`` of a comparison)
_LEFT = re.compile(r"\s*(\w+)\s*=(?!=)")


def right_side(text: str) -> str:
    """The expression of ``gx = expression`` (the text itself when it has no left side)."""
    m = _LEFT.match(text)
    return text[m.end() :].strip() if m else text.strip()


def gradient_name(text: str) -> str:
    """The left side of ``gx0 = ...`` ('gx0'); '' when the text has none."""
    m = _LEFT.match(text)
    return m.group(1) if m else ""


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
            value = np.asarray(self.visit(node.value))
            if node.attr == "T" and value.ndim > 2:  # the matrix transpose of stacked matrices
                return np.swapaxes(value, -1, -2)
            return getattr(value, node.attr)
        if isinstance(node, ast.Tuple):
            return tuple(self.visit(e) for e in node.elts)
        raise FormulaError(f"{type(node).__name__} is not part of a formula's notation")


# -----------------------------------------------------------------------------------------
# What a text's value means for the input
# -----------------------------------------------------------------------------------------
def to_input(value: Any, shape: tuple[int, ...]) -> Any:
    """The gradient input of ``shape`` receives from a text's ``value``: summed over the axes
    broadcasting added or stretched (the text is the gradient before that sum), and without
    the axis a matrix product added to a 1-D operand. A smaller value (a scalar ``gy`` for an
    array input) is broadcast. ValueError when no such reading fits."""
    value = np.asarray(value)
    shape = tuple(shape)
    if value.shape == shape:
        return value
    if value.ndim < len(shape):
        return _shapes.broadcast_to(value, shape)
    # a 1-D operand of a matrix product was a row (x0) or a column (x1)
    readings = [shape] + ([(1, *shape), (*shape, 1)] if len(shape) == 1 else [])
    for reading in readings:
        try:
            return _shapes.sum_to(value, reading).reshape(shape)
        except ValueError:
            continue
    raise ValueError(f"a gradient of shape {value.shape} does not fit an input of shape {shape}")


#: the ops whose texts are evaluated in :func:`matrix_view` of their environment
MATRIX_PRODUCTS = frozenset({"MatMul", "Linear"})


def matrix_view(env: Mapping[str, Any]) -> dict[str, Any]:
    """``env`` as MatMul's and Linear's texts read it: a 1-D ``x0`` as the row ``(1, k)``, a
    1-D ``x1`` as the column ``(k, 1)``, and ``gy`` with the two axes of their product
    (numpy's matmul reads 1-D operands so). The texts' values then go through
    :func:`to_input`."""
    out = dict(env)
    x0, x1 = np.asarray(env["x0"]), np.asarray(env["x1"])
    if x0.ndim == 1:
        x0 = x0.reshape(1, -1)
    if x1.ndim == 1:
        x1 = x1.reshape(-1, 1)
    batch = np.broadcast_shapes(x0.shape[:-2], x1.shape[:-2])
    gy = np.asarray(env["gy"]).reshape((*batch, x0.shape[-2], x1.shape[-1]))
    out.update(x0=x0, x1=x1, gy=gy, gy0=gy)
    return out


# -----------------------------------------------------------------------------------------
# Which text belongs to which Function
# -----------------------------------------------------------------------------------------
def formula_of(function: Any) -> tuple[str, ...] | None:
    """The ``formula`` of a Function instance, a Function class, or an op name: a recorded
    one ('Square', as a saved trace names it) or micrograd's ``Value._op`` ('+', '**2',
    'tanh'); None when it has none (a user's Function: its derivative is the user's own
    code)."""
    if isinstance(function, str):
        cls = _classes_by_name().get(function) or _micrograd_class(function)
        return None if cls is None else cls.__dict__.get("formula")
    cls = function if isinstance(function, type) else type(function)
    return cls.__dict__.get("formula")  # own, not inherited: a subclass may differ


def slot_formulas(function: Any, n_inputs: int) -> tuple[str, ...] | None:
    """One text per input slot of a call with ``n_inputs`` inputs: Concat's ``gxk`` text once
    per slot with ``k`` the slot's number, the first ``n_inputs`` texts of a Function whose
    bias is optional; None without a formula, or when the formula has no text for a slot."""
    texts = formula_of(function)
    if texts is None:
        return None
    if len(texts) == 1 and gradient_name(texts[0]) == "gxk":
        right = right_side(texts[0])
        names = ["gx"] if n_inputs == 1 else [f"gx{k}" for k in range(n_inputs)]
        return tuple(f"{name} = {_SLOT.sub(str(k), right)}" for k, name in enumerate(names))
    if len(texts) < n_inputs:
        return None
    return texts[:n_inputs]


_SLOT = re.compile(r"\bk\b")  # the slot's number in a text for any number of inputs


def _classes_by_name() -> dict[str, type]:
    # every primitive is defined once autodiff.functions (which re-exports functions_conv) is
    from autodiff import functions  # noqa: F401
    from autodiff.core import Function

    found: dict[str, type] = {}
    stack = list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        # the engine's own class wins over a program's of the same name
        if "formula" in cls.__dict__ and (
            cls.__name__ not in found or cls.__module__.startswith("autodiff.")
        ):
            found[cls.__name__] = cls
    return found


def _micrograd_class(op: str) -> type | None:
    # micrograd's op names ('+', '**-1', 'tanh'), read from the module that defines them:
    # imported only when such a name is asked for
    from autodiff.micrograd.engine import function_class_of_op

    return function_class_of_op(op)
