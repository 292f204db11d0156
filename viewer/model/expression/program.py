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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff.core import Variable
from autodiff.trace import TraceReader
from viewer.model.expression.check import Checker, check_bracket_depth
from viewer.model.expression.constants import as_leaf_array, fold
from viewer.model.expression.interpreter import Budget, Interpreter
from viewer.model.expression.rules import (
    CONSTRUCTORS,
    FUNCTIONS,
    MAX_DEPTH,
    MAX_ELEMENTS,
    MAX_EXPONENT,
    MAX_SOURCE_CHARS,
    MAX_STATEMENTS,
    MAX_STEPS,
    MAX_TOTAL_ELEMENTS,
    MAX_TREE_DEPTH,
    ExpressionError,
    FunctionSpec,
    NonFiniteWarning,
    node_position,
    position_of_offset,
)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
QUICK_ELEMENTS = 100_000  # leaves holding more than this make a program not quick()

__all__ = [
    "CONSTRUCTORS",
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_EXPONENT",
    "MAX_SOURCE_CHARS",
    "MAX_STATEMENTS",
    "MAX_STEPS",
    "MAX_TOTAL_ELEMENTS",
    "MAX_TREE_DEPTH",
    "QUICK_ELEMENTS",
    "Budget",
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
    statements: list[ast.stmt] = field(repr=False)
    constant_nodes: set[int] = field(repr=False)
    leaf_statements: set[int] = field(repr=False)  # id() of ``x = <constant>`` leaf statements
    lines: list[str] = field(repr=False)

    def quick(self) -> bool:
        """Whether a run is sure to take a moment only: few statements, at most four grad()
        calls (nested grads grow exponentially: depth 9 takes seconds), small leaves. The
        window runs any other program on a worker thread, with Cancel."""
        grads = sum(
            1
            for statement in self.statements
            for node in ast.walk(statement)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "grad"
        )
        held = sum(int(v.size) for v in self.defaults.values())
        return grads <= 4 and len(self.statements) <= 60 and held <= QUICK_ELEMENTS

    def run(
        self,
        values: Mapping[str, Any] | None = None,
        *,
        retain_grad: bool = False,
        max_array_size: int = 4096,
        nonfinite: str = "warn",
        backward: bool = True,
        element_budget: int = MAX_TOTAL_ELEMENTS,
        step_budget: int = MAX_STEPS,
        budget: Budget | None = None,
    ) -> Evaluation:
        """Evaluate with recording on, then run backward from the output.

        ``values`` overrides leaf defaults (names that are not leaves are ignored). Backward
        runs with ``retain_grad`` (False, the engine's default, shows intermediate gradients
        being dropped); a non-scalar output is seeded with ones. A NaN or Inf is reported in
        :attr:`Evaluation.nonfinite` (``nonfinite='warn'``) or raised (``'raise'``). The run
        may create ``element_budget`` array elements in all and record ``step_budget``
        operations; past either it stops with an ExpressionError that names the limit.
        ``budget``: a :class:`Budget` to use instead (its ``cancel()``, from another thread,
        stops the run at its next operation).
        """
        if nonfinite not in ("warn", "raise"):
            raise ValueError("nonfinite must be 'warn' or 'raise'")
        budget = budget if budget is not None else Budget(element_budget, step_budget)
        given = values or {}
        leaf_values = {
            name: as_leaf_array(given[name], name) if name in given else self.defaults[name].copy()
            for name in self.leaves
        }
        interpreter = Interpreter(
            self.statements,
            self.lines,
            values=leaf_values,
            constant_nodes=self.constant_nodes,
            leaf_statements=self.leaf_statements,
            budget=budget,
        )
        fields = interpreter.run(
            retain_grad=retain_grad,
            max_array_size=max_array_size,
            nonfinite=nonfinite,
            backward=backward,
        )
        return Evaluation(output_name=self.output_name, **fields)


@dataclass
class Evaluation:
    """What one run of a program produced.

    It holds the graph alive (``output`` and ``namespace``) so that the viewer can show live
    objects; :meth:`release` drops those references, after which a leak audit of ``trace``
    tells what is still alive and why.
    """

    trace: TraceReader  # autodiff.trace.Trace
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
        line, col = position_of_offset(text, MAX_SOURCE_CHARS)
        raise ExpressionError(
            f"the program is too long ({len(text)} characters, at most {MAX_SOURCE_CHARS}); "
            "load a Python script for larger computations",
            line,
            col,
        )
    if "\x00" in text:
        line, col = position_of_offset(text, text.index("\x00"))
        raise ExpressionError("the text contains a NUL character", line, col)
    surrogate = _LONE_SURROGATE.search(text)
    if surrogate is not None:  # not encodable: the parser would raise UnicodeEncodeError
        line, col = position_of_offset(text, surrogate.start())
        raise ExpressionError(
            f"the text contains a lone surrogate (U+{ord(surrogate.group()):04X}), which is "
            "not a character; delete it",
            line,
            col,
        )
    check_bracket_depth(text)
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
    checked = Checker(lines).check_module(tree)
    return Program(source=text, lines=lines, **checked)


def evaluate(text: str, values: Mapping[str, Any] | None = None, **options: Any) -> Evaluation:
    """``parse(text).run(values, **options)``."""
    return parse(text).run(values, **options)


def parse_value(text: str) -> NDArray:
    """Parse a leaf value typed in the variables table: a constant of the language.

    ``"0.5"``, ``"-2"``, ``"[1, 2, 3]"``, ``"randn(3, 2)"``, ``"pi / 4"``. Returns a float64
    array; raises :class:`ExpressionError` for anything that is not a constant.
    """
    if not isinstance(text, str):
        return as_leaf_array(text, "value")
    program = parse(text)
    if len(program.statements) != 1 or not isinstance(program.statements[0], ast.Expr):
        raise ExpressionError("a value is one constant, e.g. 0.5 or [1, 2, 3]", 1, 1)
    node = program.statements[0].value
    if id(node) not in program.constant_nodes:
        raise ExpressionError(
            "a value must be a constant (numbers, lists, randn/zeros/ones/arange)",
            *program_position(program, node),
        )
    return as_leaf_array(fold(node, program.lines), "value")


def program_position(program: Program, node: ast.AST) -> tuple[int, int]:
    return node_position(node, program.lines)


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
