"""The checker: walks the syntax tree once, refuses what is outside the language, finds the
leaves and folds their default values. Nothing of the user's text is run."""

from __future__ import annotations

import ast
import difflib
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from viewer.model.expression.constants import as_leaf_array, fold
from viewer.model.expression.reference import unknown_function_hint
from viewer.model.expression.rules import (
    BINOPS,
    CONSTANT_NAMES,
    CONSTRUCTORS,
    DEFAULT_LEAF_VALUE,
    FUNCTIONS,
    GRAD,
    KNOWN_CALLABLES,
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_STATEMENTS,
    MAX_TOTAL_ELEMENTS,
    MAX_TREE_DEPTH,
    REJECTED_NODES,
    REJECTED_OPS,
    STATEMENT_NAMES,
    ExpressionError,
    FunctionSpec,
    error_at,
    position_of_offset,
)


def check_bracket_depth(text: str) -> None:
    # Python's own parser gives up at 200 nested brackets with a terse message (or exhausts
    # the C stack on some inputs); refuse earlier, pointing at the bracket that went too deep.
    depth = 0
    for offset, ch in enumerate(text):
        if ch in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                line, col = position_of_offset(text, offset)
                raise ExpressionError(
                    f"brackets are nested too deeply (more than {MAX_DEPTH}); "
                    "split the expression into several assignments",
                    line,
                    col,
                )
        elif ch in ")]}":
            depth = max(depth - 1, 0)


def tree_depth(tree: ast.AST) -> tuple[int, ast.AST]:
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


_OPERATOR_SYMBOLS = {**BINOPS, **REJECTED_OPS}


def _longest_chain(tree: ast.AST) -> tuple[ast.BinOp, int] | None:
    """The longest run of one binary operator nested in itself (``a + b + c + …`` nests
    left, ``a ** b ** …`` right) in ``tree``: its outermost node and its number of terms.
    Iterative: the tree is too deep for recursion."""
    best: tuple[ast.BinOp, int] | None = None
    stack: list[ast.AST] = [tree]
    inner: set[int] = set()  # BinOps counted inside a longer run already
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinOp) and id(node) not in inner:
            terms, link = 1, node
            while True:
                same = [
                    side
                    for side in (link.left, link.right)
                    if isinstance(side, ast.BinOp) and type(side.op) is type(node.op)
                ]
                terms += 1
                if not same:
                    break
                link = same[0]
                inner.add(id(link))
            if best is None or terms > best[1]:
                best = (node, terms)
        stack.extend(ast.iter_child_nodes(node))
    return best


class Checker:
    """Walks the syntax tree once: rejects what is outside the language, finds the leaves."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.constant_nodes: set[int] = set()

    def fail(self, message: str, node: ast.AST) -> ExpressionError:
        return error_at(message, node, self.lines)

    def check_module(self, tree: ast.Module) -> dict[str, Any]:
        """Check every statement; returns the fields of a Program (see
        viewer.model.expression.program)."""
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
            depth, deepest = tree_depth(statement)
            if depth > MAX_TREE_DEPTH:
                chain = _longest_chain(statement)
                if chain is not None and chain[1] > MAX_TREE_DEPTH // 2:
                    node, terms = chain
                    symbol = _OPERATOR_SYMBOLS.get(type(node.op), "?")
                    raise self.fail(
                        f"a chain of {terms} terms joined by {symbol} is too long for one "
                        f"expression (Python nests it {depth} deep, at most "
                        f"{MAX_TREE_DEPTH}); split it into several assignments, e.g. "
                        f"s = a {symbol} b {symbol} …, then y = s {symbol} …",
                        node,
                    )
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
            if type(statement) in STATEMENT_NAMES:
                raise self.fail(STATEMENT_NAMES[type(statement)], statement)
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
                    defaults[name] = as_leaf_array(fold(value, self.lines), name, value, self.lines)
                    held = sum(int(d.size) for d in defaults.values())
                    if held > MAX_TOTAL_ELEMENTS:
                        raise self.fail(
                            f"the leaves hold {held} elements in all; the budget of one run "
                            f"is {MAX_TOTAL_ELEMENTS}",
                            value,
                        )
                    leaves.append(name)
                    leaf_statements.add(id(statement))
                bound.setdefault(name, statement.lineno)
                output_name = name
            elif isinstance(statement, ast.AugAssign):
                target = statement.target
                if not isinstance(target, ast.Name):
                    raise self.fail("only a plain name can be assigned", target)
                if type(statement.op) not in BINOPS:
                    raise self.fail(self._operator_message(statement.op), statement)
                if target.id not in bound and target.id not in free_uses:
                    raise self.fail(
                        f"{target.id} has no value yet; assign it before using {target.id} "
                        f"{BINOPS[type(statement.op)]}= ...",
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
        return {
            "leaves": tuple(leaves),
            "defaults": defaults,
            "output_name": output_name,
            "statements": statements,
            "constant_nodes": self.constant_nodes,
            "leaf_statements": leaf_statements,
        }

    def _check_target(
        self, target: ast.Name, bound: dict[str, int], free_uses: dict[str, ast.AST]
    ) -> str:
        name = target.id
        self._check_name(name, target)
        if name in KNOWN_CALLABLES or name in CONSTANT_NAMES:
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
            if name in bound or name in free_uses or name in CONSTANT_NAMES:
                continue
            free_uses[name] = name_node
            leaves.append(name)

    def _check_name(self, name: str, node: ast.AST) -> None:
        if name.startswith("__") and name.endswith("__"):
            raise self.fail(f"dunder names like {name} are not allowed", node)
        if name.startswith("_"):
            raise self.fail(f"names may not start with an underscore ({name})", node)

    def _operator_message(self, op: ast.AST) -> str:
        symbol = REJECTED_OPS.get(type(op), type(op).__name__)
        return f"the operator {symbol} is not supported; use + - * / ** @"

    def check_expression(self, node: ast.AST) -> bool:
        """Check ``node``; returns whether it is a constant (no Variable can flow into it)."""
        constant = self._check(node)
        if constant:
            self.constant_nodes.add(id(node))
        return constant

    def _check(self, node: ast.AST) -> bool:
        kind = type(node)
        if kind in REJECTED_NODES:
            raise self.fail(REJECTED_NODES[kind], node)
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
            if node.id in KNOWN_CALLABLES:
                raise self.fail(f"{node.id} is a function: call it, e.g. {node.id}(x)", node)
            return node.id in CONSTANT_NAMES
        if isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub | ast.UAdd):
                raise self.fail("only unary - and + are supported", node)
            return self.check_expression(node.operand)
        if isinstance(node, ast.BinOp):
            if type(node.op) not in BINOPS:
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
        value = np.asarray(fold(exponent, self.lines))
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
            if type(func) in REJECTED_NODES:
                raise self.fail(REJECTED_NODES[type(func)], func)
            raise self.fail("only functions called by name are allowed, e.g. exp(x)", func)
        name = func.id
        self._check_name(name, func)
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.fail(REJECTED_NODES[ast.Starred], arg)
        if name == GRAD:
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
            fold(node, self.lines)  # validates the shape and the element count
            return True
        spec = FUNCTIONS.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, KNOWN_CALLABLES, n=3, cutoff=0.6)
            hint = unknown_function_hint(name, close)
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
        if isinstance(n, ast.Name) and n.id not in KNOWN_CALLABLES and n.id not in CONSTANT_NAMES
    ]
    names.sort(key=lambda n: (n.lineno, n.col_offset))
    return names
