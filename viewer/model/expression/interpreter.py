"""The interpreter: walks a checked program's statements, calling the engine, with recording
on. It takes the statements and what the checker found in them, not a ``Program``: the program
(:mod:`viewer.model.expression.program`) calls it."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

import autodiff.functions as F
from autodiff import core
from autodiff import trace as trace_module
from autodiff.core import Variable
from viewer.model.expression.constants import (
    apply_binop,
    call_result_size,
    check_result_size,
    fold,
    index_value,
)
from viewer.model.expression.rules import (
    FUNCTIONS,
    GRAD,
    MAX_ELEMENTS,
    MAX_STEPS,
    MAX_TOTAL_ELEMENTS,
    ExpressionError,
    NonFiniteWarning,
    error_at,
    node_position,
)


class Interpreter:
    """Runs checked ``statements`` (``lines``: the source, for error positions).

    ``values``: each leaf's value, in order of first appearance. ``constant_nodes``: id() of
    the nodes the checker found constant (folded, not run); ``leaf_statements``: id() of the
    ``x = <constant>`` statements that made leaves.
    """

    def __init__(
        self,
        statements: Sequence[ast.stmt],
        lines: list[str],
        *,
        values: Mapping[str, NDArray],
        constant_nodes: set[int],
        leaf_statements: set[int],
        budget: Budget | None = None,
    ) -> None:
        self.statements = statements
        self.lines = lines
        self.values = dict(values)
        self.constant_nodes = constant_nodes
        self.leaf_statements = leaf_statements
        self.namespace: dict[str, Any] = {}
        self.leaves: dict[str, Variable] = {}
        self.nonfinite: NonFiniteWarning | None = None
        self.budget = budget if budget is not None else Budget()

    def fail(self, message: str, node: ast.AST) -> ExpressionError:
        return error_at(message, node, self.lines)

    def run(
        self, *, retain_grad: bool, max_array_size: int, nonfinite: str, backward: bool
    ) -> dict[str, Any]:
        """Evaluate and backpropagate; returns the fields of an Evaluation but its
        ``output_name``."""

        statements = self.statements
        with (
            np.errstate(all="ignore"),
            trace_module.record(max_array_size=max_array_size) as t,
            self.budget,
        ):
            # Free leaves exist from the start, in order of first use.
            for name in self.values:
                self._make_leaf(name)
            result: Any = None
            for statement in statements:
                if id(statement) in self.leaf_statements:
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
                                *node_position(last, self.lines),
                            )
                            break
        if nonfinite == "raise" and self.nonfinite is not None:
            w = self.nonfinite
            raise ExpressionError(w.message, w.line, w.col)
        return {
            "trace": t,
            "output": result,
            "namespace": self.namespace,
            "leaves": self.leaves,
            "values": self.values,
            "nonfinite": self.nonfinite,
        }

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
                *node_position(statement, self.lines),
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
        value = self._eval(node)
        if not isinstance(node, ast.Name):
            try:
                data = value.data if isinstance(value, Variable) else value
                self.budget.spend(int(np.size(data)))
            except BudgetExceeded as e:
                raise self.fail(str(e), node) from None
        return value

    def _eval(self, node: ast.AST) -> Any:
        if id(node) in self.constant_nodes:
            return fold(node, self.lines)
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
                index = index_value(node.slice)
                return F.get_item(value, index) if isinstance(value, Variable) else value[index]
        except ExpressionError:
            raise
        except BudgetExceeded as e:
            raise self.fail(str(e), node) from None
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:
            raise self.fail(_describe(e), node) from e
        raise self.fail(f"{type(node).__name__} cannot be evaluated", node)

    def _binop(self, node: ast.BinOp) -> Any:
        left = self.eval(node.left)
        if isinstance(node.op, ast.Pow):
            exponent = fold(node.right, self.lines)
            c = float(np.asarray(exponent).reshape(()))
            if c == int(c):
                c = int(c)
            return left**c
        right = self.eval(node.right)
        check_result_size(node, (_shape(left), _shape(right)), node.op, self.lines)
        if not isinstance(left, Variable) and not isinstance(right, Variable):
            left = np.asarray(left, dtype=np.float64)
        return apply_binop(node.op, left, right)

    def _call(self, node: ast.Call) -> Any:
        name = node.func.id  # type: ignore[attr-defined]
        if name == GRAD:
            return self._grad(node)
        spec = FUNCTIONS[name]
        args = [self.eval(a) for a in node.args[: spec.operands]]
        args += [fold(a, self.lines) for a in node.args[spec.operands :]]
        keywords = {k.arg: fold(k.value, self.lines) for k in node.keywords}
        for key in ("axis", "shape"):
            if key in keywords and keywords[key] is not None:
                keywords[key] = _int_axes(keywords[key])
        if name in ("sum", "mean", "average", "max", "min") and len(args) > 1:
            args[1] = _int_axes(args[1])
        shape_arg = keywords.get("shape", tuple(args[1:]) if name == "broadcast_to" else None)
        if name == "broadcast_to" and shape_arg and len(shape_arg) == 1:
            shape_arg = shape_arg[0]
        size = call_result_size(name, [_shape(a) for a in args[: spec.operands]], shape_arg)
        if size is not None and size > MAX_ELEMENTS:
            raise self.fail(
                f"{name}(...) would make {size} elements; the limit is {MAX_ELEMENTS}", node
            )
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


class BudgetExceeded(Exception):
    """A program went over one of its budgets (the message says which, and how big)."""


class Budget:
    """What one run may use: elements created (MAX_TOTAL_ELEMENTS) and recorded steps
    (MAX_STEPS). The step count is an engine observer for the run, so a runaway
    ``grad(grad(...))`` stops at the limit, not after filling the memory."""

    def __init__(self, elements: int = MAX_TOTAL_ELEMENTS, steps: int = MAX_STEPS) -> None:
        self.elements = elements
        self.steps = steps
        self.spent = 0
        self.taken = 0
        self.cancelled = False

    def cancel(self) -> None:
        """Stop the run at its next operation (safe from any thread)."""
        self.cancelled = True

    def spend(self, n: int) -> None:
        if self.cancelled:
            raise BudgetExceeded("the run was cancelled")
        self.spent += n
        if self.spent > self.elements:
            raise BudgetExceeded(
                f"the program has made {self.spent} array elements in all; the budget of "
                f"one run is {self.elements} (the setting limits/elementBudget raises it)"
            )

    def on_forward(self, f: Any, inputs: Any, outputs: Any, recorded: bool) -> None:
        if self.cancelled:
            raise BudgetExceeded("the run was cancelled")
        self.taken += 1
        if self.taken > self.steps:
            raise BudgetExceeded(
                f"the program ran more than {self.steps} operations (grad() of grad() "
                "grows exponentially; the setting limits/stepBudget raises the limit)"
            )

    def on_backward_event(self, *args: Any) -> None:
        self.on_forward(None, None, None, True)

    def __enter__(self) -> Budget:
        core.add_observer(self)  # counts the operations while the run goes on
        return self

    def __exit__(self, *exc: object) -> None:
        core.remove_observer(self)
