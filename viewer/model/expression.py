"""The expression language typed into the viewer's editor.

A program is a sequence of statements, each an assignment (``a = square(x)``, ``a += x``) or an
expression; the value of the last statement is the output, on which backward runs. The text is
parsed with :mod:`ast` and checked node by node against a whitelist *before anything runs*:
nothing is ever passed to ``eval``, ``exec`` or ``compile``. The checked tree is then walked by a
small interpreter that calls the engine's functions.

* Arithmetic ``+ - * / ** @`` and unary ``-``; the exponent of ``**`` is a number.
* Calls to the engine's functions by name (:data:`FUNCTIONS`), array constructors
  ``randn zeros ones arange linspace`` and ``grad(y, x)`` for higher-order graphs.
* Numeric literals, nested lists for arrays, ``pi``, indexing with integer literals and slices.
* A name used before it is assigned is a *leaf*: a Variable named after itself, worth 1.0
  unless the caller gives a value. ``x = 0.5`` (a right side built from literals and
  constructors only) also makes ``x`` a leaf, with 0.5 as its default value.

Every rejection and every runtime failure is an :class:`ExpressionError` carrying a message for
people and the 1-based line and column of the offending code.
"""

from __future__ import annotations

import ast
import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

import autodiff.functions as F
from autodiff.core import Variable

__all__ = [
    "CONSTRUCTORS",
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_EXPONENT",
    "MAX_SOURCE_CHARS",
    "MAX_STATEMENTS",
    "MAX_TREE_DEPTH",
    "Evaluation",
    "ExpressionError",
    "FunctionSpec",
    "NonFiniteWarning",
    "Program",
    "evaluate",
    "format_value",
    "parse",
    "parse_value",
]

MAX_SOURCE_CHARS = 20_000
MAX_STATEMENTS = 500
MAX_DEPTH = 64  # nesting of brackets
MAX_TREE_DEPTH = 100  # nesting of the syntax tree (brackets, calls, operator chains like a+b+c)
MAX_ELEMENTS = 1_000_000  # elements of any one array the program may create
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
_GRAD = "grad"
_CONSTANT_NAMES = {"pi": math.pi}
_KNOWN_CALLABLES = (*FUNCTIONS, *CONSTRUCTORS, _GRAD)

_BINOPS: dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Pow: "**",
    ast.MatMult: "@",
}
_REJECTED_OPS: dict[type, str] = {
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.BitXor: "^",
}
_REJECTED_NODES: dict[type, str] = {
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
_STATEMENT_NAMES: dict[type, str] = {
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


# =============================================================================
# Parsing and checking
# =============================================================================
@dataclass
class Program:
    """A checked program, ready to run any number of times with different leaf values."""

    source: str
    leaves: tuple[str, ...]  # leaf names in order of first appearance
    defaults: dict[str, NDArray]  # each leaf's default value (1.0 unless ``x = <literal>``)
    output_name: str | None  # the name the last statement assigns, None for a bare expression
    _statements: list[ast.stmt] = field(repr=False)
    _constant_nodes: set[int] = field(repr=False)
    _leaf_statements: set[int] = field(repr=False)  # id() of ``x = <constant>`` leaf statements
    _lines: list[str] = field(repr=False)

    def run(
        self,
        values: Mapping[str, Any] | None = None,
        *,
        retain_grad: bool = False,
        max_array_size: int = 4096,
        nonfinite: str = "warn",
        backward: bool = True,
    ) -> Evaluation:
        """Evaluate with recording on, then run backward from the output.

        ``values`` overrides leaf defaults (names that are not leaves are ignored). Backward
        runs with ``retain_grad`` (False, the engine's default, shows intermediate gradients
        being dropped); a non-scalar output is seeded with ones. A NaN or Inf is reported in
        :attr:`Evaluation.nonfinite` (``nonfinite='warn'``) or raised (``'raise'``).
        """
        if nonfinite not in ("warn", "raise"):
            raise ValueError("nonfinite must be 'warn' or 'raise'")
        return _Interpreter(self, values or {}).run(
            retain_grad=retain_grad,
            max_array_size=max_array_size,
            nonfinite=nonfinite,
            backward=backward,
        )


@dataclass
class Evaluation:
    """What one run of a program produced.

    It holds the graph alive (``output`` and ``namespace``) so that the viewer can show live
    objects; :meth:`release` drops those references, after which a leak audit of ``trace``
    tells what is still alive and why.
    """

    trace: Any  # autodiff.trace.Trace
    output: Variable | None
    output_name: str | None
    namespace: dict[str, Any]
    leaves: dict[str, Variable]
    values: dict[str, NDArray]  # the leaf values used
    nonfinite: NonFiniteWarning | None = None

    def release(self) -> None:
        """Drop every reference this object holds to the engine's objects."""
        self.output = None
        self.namespace = {}
        self.leaves = {}

    @property
    def released(self) -> bool:
        return self.output is None and not self.namespace


def parse(text: str) -> Program:
    """Check ``text`` against the whitelist and return a :class:`Program`.

    Raises :class:`ExpressionError` (with line and column) for anything outside the language.
    """
    if not isinstance(text, str):
        raise TypeError("parse expects the program text as a str")
    lines = text.splitlines() or [""]
    if len(text) > MAX_SOURCE_CHARS:
        line, col = _position_of_offset(text, MAX_SOURCE_CHARS)
        raise ExpressionError(
            f"the program is too long ({len(text)} characters, at most {MAX_SOURCE_CHARS}); "
            "load a Python script for larger computations",
            line,
            col,
        )
    if "\x00" in text:
        line, col = _position_of_offset(text, text.index("\x00"))
        raise ExpressionError("the text contains a NUL character", line, col)
    _check_bracket_depth(text)
    try:
        tree = ast.parse(text, mode="exec")
    except SyntaxError as e:
        line = e.lineno or 1
        col = e.offset or 1
        raise ExpressionError(f"syntax error: {e.msg}", line, max(col, 1)) from None
    except (RecursionError, MemoryError):
        raise ExpressionError(
            "the program is nested too deeply; split it into several assignments", 1, 1
        ) from None
    checker = _Checker(lines)
    return checker.check_module(tree, text)


def evaluate(text: str, values: Mapping[str, Any] | None = None, **options: Any) -> Evaluation:
    """``parse(text).run(values, **options)``."""
    return parse(text).run(values, **options)


def parse_value(text: str) -> NDArray:
    """Parse a leaf value typed in the variables table: a constant of the language.

    ``"0.5"``, ``"-2"``, ``"[1, 2, 3]"``, ``"randn(3, 2)"``, ``"pi / 4"``. Returns a float64
    array; raises :class:`ExpressionError` for anything that is not a constant.
    """
    if not isinstance(text, str):
        return _as_leaf_array(text, "value")
    program = parse(text)
    if len(program._statements) != 1 or not isinstance(program._statements[0], ast.Expr):
        raise ExpressionError("a value is one constant, e.g. 0.5 or [1, 2, 3]", 1, 1)
    node = program._statements[0].value
    if id(node) not in program._constant_nodes:
        raise ExpressionError(
            "a value must be a constant (numbers, lists, randn/zeros/ones/arange)",
            *program_position(program, node),
        )
    return _as_leaf_array(_fold(node, program._lines), "value")


def program_position(program: Program, node: ast.AST) -> tuple[int, int]:
    return _node_position(node, program._lines)


def format_value(value: Any, max_elements: int = 6, precision: int = 4) -> str:
    """A short text for a value: ``0.5``, ``[1 2 3]``, ``(3, 4) mean=0.12``."""
    if isinstance(value, Variable):
        value = value.data
    if value is None:
        return "None"
    array = np.asarray(value)
    if array.size == 1:
        return _format_number(array.reshape(()).item(), precision)
    if array.size <= max_elements and array.ndim == 1:
        return "[" + " ".join(_format_number(v, precision) for v in array.tolist()) + "]"
    with np.errstate(all="ignore"):
        mean = float(np.mean(array)) if array.size else float("nan")
    return f"{array.shape} mean={_format_number(mean, precision)}"


def _format_number(v: Any, precision: int) -> str:
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    return f"{float(v):.{precision}g}"


def _position_of_offset(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    line = before.count("\n") + 1
    col = offset - (before.rfind("\n") + 1) + 1
    return line, col


def _check_bracket_depth(text: str) -> None:
    # Python's own parser gives up at 200 nested brackets with a terse message (or exhausts
    # the C stack on some inputs); refuse earlier, pointing at the bracket that went too deep.
    depth = 0
    for offset, ch in enumerate(text):
        if ch in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                line, col = _position_of_offset(text, offset)
                raise ExpressionError(
                    f"brackets are nested too deeply (more than {MAX_DEPTH}); "
                    "split the expression into several assignments",
                    line,
                    col,
                )
        elif ch in ")]}":
            depth = max(depth - 1, 0)


def _node_position(node: ast.AST, lines: list[str]) -> tuple[int, int]:
    line = getattr(node, "lineno", 1) or 1
    offset = getattr(node, "col_offset", 0) or 0
    return line, _byte_to_char_col(lines, line, offset) + 1


def _byte_to_char_col(lines: list[str], line: int, byte_offset: int) -> int:
    # ast columns are UTF-8 byte offsets; editors count characters.
    if 1 <= line <= len(lines):
        return len(lines[line - 1].encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))
    return byte_offset


def _error(message: str, node: ast.AST, lines: list[str]) -> ExpressionError:
    line, col = _node_position(node, lines)
    end_line = getattr(node, "end_lineno", None) or line
    end_offset = getattr(node, "end_col_offset", None)
    end_col = _byte_to_char_col(lines, end_line, end_offset) + 1 if end_offset is not None else col
    return ExpressionError(message, line, col, end_line, end_col)


def _tree_depth(tree: ast.AST) -> tuple[int, ast.AST]:
    """Depth of the deepest node, computed without recursion (chains like a+b+c+... are deep)."""
    deepest, deepest_node = 0, tree
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest, deepest_node = depth, node
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1))
    return deepest, deepest_node


class _Checker:
    """Walks the syntax tree once: rejects what is outside the language, finds the leaves."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.constant_nodes: set[int] = set()

    def fail(self, message: str, node: ast.AST) -> ExpressionError:
        return _error(message, node, self.lines)

    def check_module(self, tree: ast.Module, text: str) -> Program:
        statements = tree.body
        if not statements:
            raise ExpressionError(
                "nothing to evaluate: type an expression such as y = tanh(x) * x**2", 1, 1
            )
        if len(statements) > MAX_STATEMENTS:
            raise self.fail(
                f"too many statements ({len(statements)}, at most {MAX_STATEMENTS})",
                statements[MAX_STATEMENTS],
            )
        for statement in statements:
            depth, deepest = _tree_depth(statement)
            if depth > MAX_TREE_DEPTH:
                raise self.fail(
                    f"the expression is nested too deeply (depth {depth}, at most "
                    f"{MAX_TREE_DEPTH}); "
                    "split it into several assignments",
                    deepest,
                )

        bound: dict[str, int] = {}  # name -> line of its first assignment
        free_uses: dict[str, ast.AST] = {}  # leaf name -> first use
        leaves: list[str] = []
        defaults: dict[str, NDArray] = {}
        leaf_statements: set[int] = set()
        output_name: str | None = None

        for statement in statements:
            if type(statement) in _STATEMENT_NAMES:
                raise self.fail(_STATEMENT_NAMES[type(statement)], statement)
            if isinstance(statement, ast.Assign):
                if len(statement.targets) != 1:
                    raise self.fail("write one assignment per statement (no a = b = c)", statement)
                target = statement.targets[0]
                if not isinstance(target, ast.Name):
                    raise self.fail(
                        "only a plain name can be assigned (no a, b = ..., no x[0] = ...)", target
                    )
                value = statement.value
                self.check_expression(value)
                self._note_free_names(value, bound, free_uses, leaves)
                name = self._check_target(target, bound, free_uses)
                if id(value) in self.constant_nodes and name not in bound:
                    defaults[name] = _as_leaf_array(
                        _fold(value, self.lines), name, value, self.lines
                    )
                    leaves.append(name)
                    leaf_statements.add(id(statement))
                bound.setdefault(name, statement.lineno)
                output_name = name
            elif isinstance(statement, ast.AugAssign):
                target = statement.target
                if not isinstance(target, ast.Name):
                    raise self.fail("only a plain name can be assigned", target)
                if type(statement.op) not in _BINOPS:
                    raise self.fail(self._operator_message(statement.op), statement)
                if target.id not in bound and target.id not in free_uses:
                    raise self.fail(
                        f"{target.id} has no value yet; assign it before using {target.id} "
                        f"{_BINOPS[type(statement.op)]}= ...",
                        target,
                    )
                binop = ast.BinOp(
                    left=ast.Name(id=target.id, ctx=ast.Load()),
                    op=statement.op,
                    right=statement.value,
                )
                ast.copy_location(binop, statement)
                ast.copy_location(binop.left, target)
                self.check_expression(binop)
                self._note_free_names(statement.value, bound, free_uses, leaves)
                statement.value = binop  # the interpreter evaluates target = target op value
                self._check_target(target, bound, free_uses)
                bound.setdefault(target.id, statement.lineno)
                output_name = target.id
            elif isinstance(statement, ast.Expr):
                self.check_expression(statement.value)
                self._note_free_names(statement.value, bound, free_uses, leaves)
                output_name = None
            else:
                raise self.fail(
                    f"{type(statement).__name__} statements are not allowed: "
                    "write assignments and expressions only",
                    statement,
                )
        for name in leaves:
            if name not in defaults:
                defaults[name] = np.asarray(DEFAULT_LEAF_VALUE, dtype=np.float64)
        return Program(
            source=text,
            leaves=tuple(leaves),
            defaults=defaults,
            output_name=output_name,
            _statements=statements,
            _constant_nodes=self.constant_nodes,
            _leaf_statements=leaf_statements,
            _lines=self.lines,
        )

    def _check_target(
        self, target: ast.Name, bound: dict[str, int], free_uses: dict[str, ast.AST]
    ) -> str:
        name = target.id
        self._check_name(name, target)
        if name in _KNOWN_CALLABLES or name in _CONSTANT_NAMES:
            raise self.fail(
                f"{name} is a built-in name of the language; choose another name", target
            )
        if name in free_uses and name not in bound:
            use = free_uses[name]
            raise self.fail(
                f"{name} is used on line {use.lineno} before it is assigned here; "
                f"move this assignment above its first use",
                target,
            )
        return name

    def _note_free_names(
        self,
        node: ast.AST,
        bound: dict[str, int],
        free_uses: dict[str, ast.AST],
        leaves: list[str],
    ) -> None:
        for name_node in _names_in_order(node):
            name = name_node.id
            if name in bound or name in free_uses or name in _CONSTANT_NAMES:
                continue
            free_uses[name] = name_node
            leaves.append(name)

    def _check_name(self, name: str, node: ast.AST) -> None:
        if name.startswith("__") and name.endswith("__"):
            raise self.fail(f"dunder names like {name} are not allowed", node)
        if name.startswith("_"):
            raise self.fail(f"names may not start with an underscore ({name})", node)

    def _operator_message(self, op: ast.AST) -> str:
        symbol = _REJECTED_OPS.get(type(op), type(op).__name__)
        return f"the operator {symbol} is not supported; use + - * / ** @"

    def check_expression(self, node: ast.AST) -> bool:
        """Check ``node``; returns whether it is a constant (no Variable can flow into it)."""
        constant = self._check(node)
        if constant:
            self.constant_nodes.add(id(node))
        return constant

    def _check(self, node: ast.AST) -> bool:
        kind = type(node)
        if kind in _REJECTED_NODES:
            raise self.fail(_REJECTED_NODES[kind], node)
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or value is None:
                raise self.fail(f"{value} is only allowed as keepdims=True/False", node)
            if isinstance(value, complex):
                raise self.fail("complex numbers are not supported", node)
            if isinstance(value, str | bytes):
                raise self.fail("strings are not allowed", node)
            if not isinstance(value, int | float):
                raise self.fail(f"the literal {value!r} is not allowed", node)
            if isinstance(value, int) and abs(value) > 10**18:
                raise self.fail("the integer literal is too large", node)
            return True
        if isinstance(node, ast.Name):
            self._check_name(node.id, node)
            if node.id in _KNOWN_CALLABLES:
                raise self.fail(f"{node.id} is a function: call it, e.g. {node.id}(x)", node)
            return node.id in _CONSTANT_NAMES
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub | ast.UAdd):
                raise self.fail("only unary - and + are supported", node)
            return self.check_expression(node.operand)
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise self.fail(self._operator_message(node.op), node)
            left = self.check_expression(node.left)
            if isinstance(node.op, ast.Pow):
                self._check_exponent(node)
                return left
            right = self.check_expression(node.right)
            return left and right
        if isinstance(node, ast.Call):
            return self._check_call(node)
        if isinstance(node, ast.List):
            self._check_list(node)
            return True
        if isinstance(node, ast.Tuple):
            raise self.fail(
                "tuples are only allowed as shapes and axes, e.g. reshape(x, (2, 3))", node
            )
        if isinstance(node, ast.Subscript):
            constant = self.check_expression(node.value)
            self._check_index(node.slice)
            return constant
        raise self.fail(f"{type(node).__name__} is not allowed in an expression", node)

    def _check_exponent(self, node: ast.BinOp) -> None:
        exponent = node.right
        for inner in ast.walk(exponent):
            if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Pow):
                raise self.fail(
                    "exponent towers (a ** b ** c) are not allowed; compute the exponent first",
                    inner,
                )
        try:
            constant = self.check_expression(exponent)
        except ExpressionError:
            raise
        if not constant:
            raise self.fail(
                "the exponent of ** must be a number (x ** 2); "
                "for a variable exponent write exp(y * log(x))",
                exponent,
            )
        value = np.asarray(_fold(exponent, self.lines))
        if value.size != 1:
            raise self.fail("the exponent of ** must be a single number", exponent)
        c = float(value.reshape(()))
        if not math.isfinite(c) or abs(c) > MAX_EXPONENT:
            raise self.fail(
                f"the exponent {c:g} is too large (at most {MAX_EXPONENT:g} in absolute value)",
                exponent,
            )

    def _check_list(self, node: ast.List) -> None:
        for element in node.elts:
            if isinstance(element, ast.List):
                self._check_list(element)
            elif not self.check_expression(element):
                raise self.fail(
                    "list elements must be numbers; combine variables with functions instead",
                    element,
                )
        self.constant_nodes.add(id(node))

    def _check_index(self, node: ast.AST) -> None:
        parts = node.elts if isinstance(node, ast.Tuple) else [node]
        for part in parts:
            pieces = [part.lower, part.upper, part.step] if isinstance(part, ast.Slice) else [part]
            for piece in pieces:
                if piece is None:
                    continue
                if not _is_int_literal(piece):
                    raise self.fail(
                        "indexes must be integer literals or slices of them, e.g. x[0] or x[1:3]",
                        piece,
                    )

    def _check_constant_args(self, nodes: Iterable[ast.AST], what: str) -> None:
        for arg in nodes:
            if isinstance(arg, ast.Tuple):
                for element in arg.elts:
                    self._check_constant_args([element], what)
                self.constant_nodes.add(id(arg))
                continue
            if not self.check_expression(arg):
                raise self.fail(f"{what} must be a number", arg)

    def _check_keywords(self, node: ast.Call, allowed: tuple[str, ...], name: str) -> None:
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.fail("**keyword arguments are not allowed", keyword)
            if keyword.arg not in allowed:
                accepted = ", ".join(allowed) if allowed else "none"
                raise self.fail(
                    f"{name}() does not take the keyword {keyword.arg} (accepted: {accepted})",
                    keyword,
                )
            value = keyword.value
            if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                if keyword.arg != "keepdims":
                    raise self.fail(f"{keyword.arg} must be a number", value)
                continue
            if isinstance(value, ast.Constant) and value.value is None and keyword.arg == "axis":
                continue
            self._check_constant_args([value], keyword.arg)

    def _check_call(self, node: ast.Call) -> bool:
        func = node.func
        if not isinstance(func, ast.Name):
            if type(func) in _REJECTED_NODES:
                raise self.fail(_REJECTED_NODES[type(func)], func)
            raise self.fail("only functions called by name are allowed, e.g. exp(x)", func)
        name = func.id
        self._check_name(name, func)
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.fail(_REJECTED_NODES[ast.Starred], arg)
        if name == _GRAD:
            if node.keywords:
                raise self.fail("grad() takes no keyword arguments", node.keywords[0])
            if len(node.args) != 2:
                raise self.fail("grad takes two arguments: grad(y, x), the derivative dy/dx", node)
            self.check_expression(node.args[0])
            if not isinstance(node.args[1], ast.Name):
                raise self.fail("the second argument of grad must be a variable name", node.args[1])
            self.check_expression(node.args[1])
            return False
        if name in CONSTRUCTORS:
            keywords, _ = CONSTRUCTORS[name]
            self._check_keywords(node, keywords, name)
            self._check_constant_args(node.args, f"the arguments of {name}()")
            self.constant_nodes.add(id(node))
            _fold(node, self.lines)  # validates the shape and the element count
            return True
        spec = FUNCTIONS.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, _KNOWN_CALLABLES, n=3, cutoff=0.6)
            if close:
                hint = f"did you mean {' or '.join(close)}?"
            else:
                hint = f"known functions: {', '.join(sorted(_KNOWN_CALLABLES))}"
            raise self.fail(f"unknown function {name}(); {hint}", func)
        n = len(node.args)
        if n < spec.least or (spec.max_args >= 0 and n > spec.max_args):
            raise self.fail(f"{name}() takes {self._arity(spec)}: {spec.signature}", node)
        self._check_keywords(node, spec.keywords, name)
        constant = True
        for arg in node.args[: spec.operands]:
            constant = self.check_expression(arg) and constant
        self._check_constant_args(node.args[spec.operands :], f"argument of {name}()")
        # An engine function always returns a Variable (a graph node), even of constants.
        return False

    @staticmethod
    def _arity(spec: FunctionSpec) -> str:
        if spec.max_args == spec.least:
            return f"{spec.least} argument{'s' if spec.least != 1 else ''}"
        if spec.max_args < 0:
            return f"at least {spec.least} argument{'s' if spec.least != 1 else ''}"
        return f"{spec.least} to {spec.max_args} arguments"


def _is_int_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    )


def _names_in_order(node: ast.AST) -> list[ast.Name]:
    """Loaded names in source order (not function names being called)."""
    names = [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and n.id not in _KNOWN_CALLABLES and n.id not in _CONSTANT_NAMES
    ]
    names.sort(key=lambda n: (n.lineno, n.col_offset))
    return names


# =============================================================================
# Constants (folded with numpy; only literals, lists, constructors and arithmetic)
# =============================================================================
def _fold(node: ast.AST, lines: list[str]) -> Any:
    with np.errstate(all="ignore"):
        return _fold_node(node, lines)


def _fold_node(node: ast.AST, lines: list[str]) -> Any:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or node.value is None:
            return node.value
        return float(node.value) if isinstance(node.value, float) else node.value
    if isinstance(node, ast.Name):
        return _CONSTANT_NAMES[node.id]
    if isinstance(node, ast.UnaryOp):
        value = _fold_node(node.operand, lines)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left = _fold_node(node.left, lines)
        right = _fold_node(node.right, lines)
        _check_result_size(node, (np.shape(left), np.shape(right)), node.op, lines)
        try:
            return _apply_binop(node.op, np.asarray(left, dtype=np.float64), right)
        except (ValueError, TypeError) as e:
            raise _error(str(e), node, lines) from None
    if isinstance(node, ast.Tuple):
        return tuple(_fold_node(e, lines) for e in node.elts)
    if isinstance(node, ast.List):
        elements = [_fold_node(e, lines) for e in node.elts]
        try:
            array = np.array(elements, dtype=np.float64)
        except ValueError:
            raise _error(
                "the nested lists are ragged: every row needs the same length", node, lines
            ) from None
        if array.size > MAX_ELEMENTS:
            raise _error(f"the list has more than {MAX_ELEMENTS} elements", node, lines)
        return array
    if isinstance(node, ast.Subscript):
        value = np.asarray(_fold_node(node.value, lines))
        try:
            return value[_index_value(node.slice)]
        except IndexError as e:
            raise _error(str(e), node, lines) from None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _construct(node, lines)
    raise _error(f"{type(node).__name__} is not a constant", node, lines)


def _index_value(node: ast.AST) -> Any:
    def one(part: ast.AST) -> Any:
        if isinstance(part, ast.Slice):
            return slice(
                *(
                    None if p is None else _literal_int(p)
                    for p in (part.lower, part.upper, part.step)
                )
            )
        return _literal_int(part)

    if isinstance(node, ast.Tuple):
        return tuple(one(p) for p in node.elts)
    return one(node)


def _literal_int(node: ast.AST) -> int:
    if isinstance(node, ast.UnaryOp):
        value = _literal_int(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    return int(node.value)  # type: ignore[attr-defined]


def _apply_binop(op: ast.AST, left: Any, right: Any) -> Any:
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


def _check_result_size(
    node: ast.AST, shapes: tuple[tuple[int, ...], ...], op: ast.AST, lines: list[str]
) -> None:
    """Refuse an operation whose result would exceed MAX_ELEMENTS, before computing it."""
    if isinstance(op, ast.MatMult):
        a, b = shapes
        if len(a) >= 1 and len(b) >= 2:
            shape = (*a[:-1], b[-1])
        else:
            return
    else:
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            return  # the engine reports the mismatch with its own message
    size = math.prod(shape)
    if size > MAX_ELEMENTS:
        raise _error(
            f"the result would have {size} elements (shape {shape}); the limit is {MAX_ELEMENTS}",
            node,
            lines,
        )


def _int_shape(value: Any, node: ast.AST, lines: list[str]) -> tuple[int, ...]:
    items = value if isinstance(value, tuple | list) else (value,)
    shape = []
    for item in items:
        f = float(np.asarray(item).reshape(())) if np.size(item) == 1 else float("nan")
        if not math.isfinite(f) or f != int(f) or f < 0:
            raise _error(f"a shape needs non-negative integers, got {item!r}", node, lines)
        shape.append(int(f))
    return tuple(shape)


def _construct(node: ast.Call, lines: list[str]) -> NDArray:
    name = node.func.id  # type: ignore[attr-defined]
    args = [_fold_node(a, lines) for a in node.args]
    keywords = {k.arg: _fold_node(k.value, lines) for k in node.keywords}
    if name in ("randn", "zeros", "ones"):
        if "shape" in keywords:
            if args:
                raise _error(f"{name}: give the shape once (positional or shape=)", node, lines)
            args = [keywords["shape"]]
        if len(args) == 1 and isinstance(args[0], tuple):
            args = list(args[0])
        shape = _int_shape(tuple(args), node, lines)
        size = math.prod(shape)
        if size > MAX_ELEMENTS:
            raise _error(
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
        seed = (node.lineno, node.col_offset) if seed is None else _int_shape(seed, node, lines)
        return np.random.default_rng(seed).standard_normal(shape)
    if name == "arange":
        if not 1 <= len(args) <= 3:
            raise _error("arange takes 1 to 3 arguments: arange(start, stop, step)", node, lines)
        numbers = [_scalar(a, node, lines) for a in args]
        start, stop, step = (
            (0.0, numbers[0], 1.0)
            if len(numbers) == 1
            else (*numbers[:2], numbers[2] if len(numbers) == 3 else 1.0)
        )
        if step == 0:
            raise _error("arange: the step must not be zero", node, lines)
        count = max(math.ceil((stop - start) / step), 0)
        if count > MAX_ELEMENTS:
            raise _error(
                f"arange would have {count} elements; the limit is {MAX_ELEMENTS}", node, lines
            )
        return np.arange(start, stop, step, dtype=np.float64)
    if name == "linspace":
        if len(args) != 3:
            raise _error("linspace takes 3 arguments: linspace(start, stop, num)", node, lines)
        start, stop = (_scalar(a, node, lines) for a in args[:2])
        (num,) = _int_shape(args[2], node, lines)
        if num > MAX_ELEMENTS:
            raise _error(
                f"linspace would have {num} elements; the limit is {MAX_ELEMENTS}", node, lines
            )
        return np.linspace(start, stop, num)
    raise _error(f"{name} is not a constructor", node, lines)


def _scalar(value: Any, node: ast.AST, lines: list[str]) -> float:
    array = np.asarray(value)
    if array.size != 1:
        raise _error("expected a single number", node, lines)
    return float(array.reshape(()))


def _as_leaf_array(
    value: Any, name: str, node: ast.AST | None = None, lines: list[str] | None = None
) -> NDArray:
    try:
        array = np.array(value.data if isinstance(value, Variable) else value, dtype=np.float64)
    except (TypeError, ValueError):
        message = f"the value of {name} must be a number or an array of numbers"
        if node is not None:
            raise _error(message, node, lines or []) from None
        raise ExpressionError(message) from None
    if array.size > MAX_ELEMENTS:
        message = f"the value of {name} has {array.size} elements; the limit is {MAX_ELEMENTS}"
        if node is not None:
            raise _error(message, node, lines or [])
        raise ExpressionError(message)
    return array


# =============================================================================
# Evaluation
# =============================================================================
class _Interpreter:
    def __init__(self, program: Program, values: Mapping[str, Any]) -> None:
        self.program = program
        self.lines = program._lines
        self.values: dict[str, NDArray] = {}
        for name in program.leaves:
            if name in values:
                self.values[name] = _as_leaf_array(values[name], name)
            else:
                self.values[name] = program.defaults[name].copy()
        self.namespace: dict[str, Any] = {}
        self.leaves: dict[str, Variable] = {}
        self.nonfinite: NonFiniteWarning | None = None

    def fail(self, message: str, node: ast.AST) -> ExpressionError:
        return _error(message, node, self.lines)

    def run(
        self, *, retain_grad: bool, max_array_size: int, nonfinite: str, backward: bool
    ) -> Evaluation:
        from autodiff import trace as trace_module

        statements = self.program._statements
        with np.errstate(all="ignore"), trace_module.record(max_array_size=max_array_size) as t:
            # Free leaves exist from the start, in order of first use.
            for name in self.program.leaves:
                self._make_leaf(name)
            result: Any = None
            for statement in statements:
                if id(statement) in self.program._leaf_statements:
                    name = statement.targets[0].id  # type: ignore[attr-defined]
                    result = self.namespace[name]
                    continue
                result = self._statement(statement)
                self._note_nonfinite(result, statement)
            last = statements[-1]
            if not isinstance(result, Variable):
                raise self.fail(
                    "the result is a constant: it depends on no variable. Use a name, "
                    "e.g. y = x * 2, so that there is something to differentiate",
                    last,
                )
            if backward:
                _clear_grads(result)
                try:
                    result.backward(retain_grad=retain_grad)
                except Exception as e:
                    raise self.fail(f"backward failed: {_describe(e)}", last) from e
                self._note_nonfinite(result.grad, last, what="its gradient")
                if self.nonfinite is None:
                    for name, leaf in self.leaves.items():
                        if leaf.grad is not None and not np.all(np.isfinite(leaf.grad.data)):
                            self.nonfinite = NonFiniteWarning(
                                f"the gradient of {name} is not finite",
                                *_node_position(last, self.lines),
                            )
                            break
        if nonfinite == "raise" and self.nonfinite is not None:
            w = self.nonfinite
            raise ExpressionError(w.message, w.line, w.col)
        return Evaluation(
            trace=t,
            output=result,
            output_name=self.program.output_name,
            namespace=self.namespace,
            leaves=self.leaves,
            values=self.values,
            nonfinite=self.nonfinite,
        )

    def _make_leaf(self, name: str) -> None:
        leaf = Variable(self.values[name].copy(), name=name)
        self.leaves[name] = leaf
        self.namespace[name] = leaf

    def _note_nonfinite(self, value: Any, statement: ast.stmt, what: str = "") -> None:
        if self.nonfinite is not None or value is None:
            return
        data = value.data if isinstance(value, Variable) else value
        if data is None:
            return
        array = np.asarray(data)
        if array.dtype.kind in "fc" and not np.all(np.isfinite(array)):
            n_nan = int(np.isnan(array).sum())
            kind = "NaN" if n_nan else "Inf"
            label = ""
            if isinstance(statement, ast.Assign | ast.AugAssign):
                target = (
                    statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
                )
                label = f"{target.id}: "  # type: ignore[attr-defined]
            subject = f" ({what})" if what else ""
            self.nonfinite = NonFiniteWarning(
                f"{label}the result{subject} contains {kind}",
                *_node_position(statement, self.lines),
            )

    def _statement(self, statement: ast.stmt) -> Any:
        if isinstance(statement, ast.Assign | ast.AugAssign):
            target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
            name = target.id  # type: ignore[attr-defined]
            value = self.eval(statement.value)
            if isinstance(value, Variable) and value.name is None:
                value.name = name
            self.namespace[name] = value
            return value
        return self.eval(statement.value)  # type: ignore[attr-defined]

    def eval(self, node: ast.AST) -> Any:
        if id(node) in self.program._constant_nodes:
            return _fold_node(node, self.lines)
        if isinstance(node, ast.Name):
            return self.namespace[node.id]
        try:
            if isinstance(node, ast.UnaryOp):
                operand = self.eval(node.operand)
                return -operand if isinstance(node.op, ast.USub) else operand
            if isinstance(node, ast.BinOp):
                return self._binop(node)
            if isinstance(node, ast.Call):
                return self._call(node)
            if isinstance(node, ast.Subscript):
                value = self.eval(node.value)
                index = _index_value(node.slice)
                return F.get_item(value, index) if isinstance(value, Variable) else value[index]
        except ExpressionError:
            raise
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:
            raise self.fail(_describe(e), node) from e
        raise self.fail(f"{type(node).__name__} cannot be evaluated", node)

    def _binop(self, node: ast.BinOp) -> Any:
        left = self.eval(node.left)
        if isinstance(node.op, ast.Pow):
            exponent = _fold_node(node.right, self.lines)
            c = float(np.asarray(exponent).reshape(()))
            if c == int(c):
                c = int(c)
            return left**c
        right = self.eval(node.right)
        _check_result_size(node, (_shape(left), _shape(right)), node.op, self.lines)
        if not isinstance(left, Variable) and not isinstance(right, Variable):
            left = np.asarray(left, dtype=np.float64)
        return _apply_binop(node.op, left, right)

    def _call(self, node: ast.Call) -> Any:
        name = node.func.id  # type: ignore[attr-defined]
        if name == _GRAD:
            return self._grad(node)
        spec = FUNCTIONS[name]
        args = [self.eval(a) for a in node.args[: spec.operands]]
        args += [_fold_node(a, self.lines) for a in node.args[spec.operands :]]
        keywords = {k.arg: _fold_node(k.value, self.lines) for k in node.keywords}
        for key in ("axis", "shape"):
            if key in keywords and keywords[key] is not None:
                keywords[key] = _int_axes(keywords[key])
        if name in ("sum", "mean", "average", "max", "min") and len(args) > 1:
            args[1] = _int_axes(args[1])
        if name in (
            "softmax",
            "log_softmax",
            "expand_dims",
            "transpose",
            "reshape",
            "broadcast_to",
            "sum_to",
        ):
            args = args[:1] + [_int_axes(a) for a in args[1:]]
        return spec.call(*args, **keywords)

    def _grad(self, node: ast.Call) -> Variable:
        y = self.eval(node.args[0])
        x_node = node.args[1]
        x = self.eval(x_node)
        if not isinstance(y, Variable):
            raise self.fail("grad(y, x): y is a constant; it must depend on x", node.args[0])
        if not isinstance(x, Variable):
            raise self.fail("grad(y, x): x must be a variable", x_node)
        if y.data.size != 1:
            raise self.fail(
                f"grad(y, x): y must be a scalar, but its shape is {y.shape}; use grad(sum(y), x)",
                node.args[0],
            )
        _clear_grads(y)
        # create_graph: the gradient is itself a graph, so it can be differentiated again.
        y.backward(create_graph=True)
        gx = x.grad
        _clear_grads(y)
        if gx is None:
            gx = Variable(np.zeros_like(x.data))  # y does not depend on x
        return gx


def _clear_grads(root: Variable) -> None:
    """Set ``grad = None`` on every Variable of the graph behind ``root``.

    Each ``grad()`` and the final backward start from clean gradients, so contributions from
    an earlier pass never accumulate into a later one.
    """
    stack = [root]
    seen_vars: set[int] = set()
    seen_funcs: set[int] = set()
    while stack:
        v = stack.pop()
        if id(v) in seen_vars:
            continue
        seen_vars.add(id(v))
        v.grad = None
        creator = v.creator
        if creator is not None and id(creator) not in seen_funcs:
            seen_funcs.add(id(creator))
            stack.extend(x for x in creator.inputs if x.data is not None or x.creator is not None)


def _shape(value: Any) -> tuple[int, ...]:
    if isinstance(value, Variable):
        return value.shape
    return np.shape(value)


def _int_axes(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, tuple | list):
        return tuple(int(v) for v in value)
    if isinstance(value, float) and value == int(value):
        return int(value)
    return value


def _describe(error: BaseException) -> str:
    text = str(error)
    if isinstance(error, ValueError | TypeError | IndexError) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
