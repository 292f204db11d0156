"""What one backward step computed, term by term: for each input slot that receives a
gradient, the primitive's local derivative as text (:mod:`autodiff.formulas`), the same text
with the step's recorded numbers, and the gradient the step sent.

What the numbers are for:

* scalars: the step's own numbers (``gx = gy · exp(x)``, ``5.437 · exp(1)`` → 14.78);
* arrays, elementwise formulas (Add, Mul, Exp, Tanh...): the numbers of one element, the one
  in focus (an index of the input's shape, or of the output's, mapped to the input's through
  broadcasting) and by default the one of largest magnitude in the gradient sent; a gradient
  summed back over broadcast axes is written as the sum of its few elements (at most
  :data:`MAX_SUM_TERMS`, else no numbers) and ``broadcast`` says which axes;
* arrays, a matrix product at the top of the formula (MatMul): the element's sum of products
  (at most :data:`MAX_SUM_TERMS` products, else no numbers);
* any other formula over arrays (Sum, Reshape, Softmax, convolutions...): the chain rule's sum
  ``gy_j · ∂y_j/∂x`` over the elements j of gy the element depends on, each coefficient the
  formula at gy = the j-th unit array (a gradient is linear in gy), when gy has at most
  :data:`MAX_LINEAR_GY` elements and at most :data:`MAX_SUM_TERMS` of them reach the
  element; else ``shapes`` only and numbers ''.

``numbers`` is written with 4 significant digits, more where 4 do not give back ``result``
within 3e-4; it is '' when the recording kept only a summary of an array, when a saved trace
does not know an attribute the formula reads (``c`` of Pow: the note names it), or when the
formula does not give the recorded gradient (a Function of the user's that took a primitive's
name), or when the gradient is NaN or Inf (the note says what went in). A user's Function
has no formula: its term says the derivative is the user's own code,
and the note gives the numbers in and out (and the gradient check's verdict when
``checks`` has one). A forward step, also one run inside ``backward(create_graph=True)``, has
no terms: its note says what it is (its own derivative is explained at its backward step).

For the UI: ``Term.links`` pairs each name of the formula (``x``, ``x0``, ``y``, ``gy``, the
``gx`` it computes) with the node it stands for, for hover and click; :meth:`StepExplanation.lines`
is the plain text the inspector shows. Step numbers in the text are the playback's (index + 1).
"""

from __future__ import annotations

import ast
import contextlib
import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from autodiff import formulas
from viewer.model.explain import recorded, torch_ops
from viewer.model.explain.recorded import Environment, format_number

__all__ = [
    "MAX_LINEAR_GY",
    "MAX_SUM_TERMS",
    "StepExplanation",
    "Term",
    "explain_step",
    "node_label",
]

NO_STEP = "Before the first step: nothing has been computed yet."
MAX_SUM_TERMS = 8  # the most terms a broadcast sum or a matrix product is written out with
MAX_LINEAR_GY = 256  # the largest gy whose elements a non-elementwise formula is read through


@dataclass(frozen=True)
class Term:
    """One input slot's share of a backward step."""

    input: int  # node id of the input slot's variable
    slot: int
    formula: str  # 'gx = gy · 2 · x'; for a user's Function a sentence about its own code
    numbers: str  # the right side with the step's numbers ('' when there is no formula)
    result: Any  # ndarray or float: the gradient this step sends to that input
    element: tuple[int, ...] | None  # the element the numbers are for (None: scalars)
    shapes: str  # 'gy (4, 3), x (4, 3) → gx (4, 3)' for arrays, '' for scalars
    broadcast: str  # 'summed over axis 0: b (3,) was broadcast to (4, 3)' or ''
    accumulation: str  # 'x.grad = 2.568 (from Square, step 5) + 0.5 (from Mul, step 7) = ...'
    links: tuple[tuple[str, int], ...]  # (name in the formula, node id)


@dataclass(frozen=True)
class StepExplanation:
    """The terms of one backward step, and a note (a user's Function, a higher-order step)."""

    step: int
    function: int
    op: str
    terms: tuple[Term, ...]
    note: str

    def lines(self) -> list[str]:
        """The plain-text rendering the inspector shows."""
        out = []
        if self.terms:
            out.append(f"{self.op} (step {self.step + 1}): gradient from above × local derivative")
        for t in self.terms:
            out.append(t.formula)
            if t.element is not None and t.numbers:
                out.append(f"  at element {list(t.element)}:")
            if t.numbers:
                out.append(f"  = {t.numbers}")
            out.append(f"  = {_value_text(t.result, t.element)}")
            out.extend(f"  {line}" for line in (t.shapes, t.broadcast, t.accumulation) if line)
        if self.note:
            out.append(self.note)
        return out


def explain_step(
    trace: Any, step_index: int, focus: tuple[int, ...] | None = None, checks: Any = None
) -> StepExplanation:
    """The explanation of ``trace.steps[step_index]`` (a TraceReader's step); ``focus`` is the
    array element the numbers are given for (None: the largest in magnitude); ``checks`` a
    gradient check's report (:class:`~viewer.model.checks.report.GradCheckReport`), read for a
    user's Function."""
    with np.errstate(all="ignore"):  # a NaN or Inf in the recording is shown, not warned of
        return _explain(trace, step_index, focus, checks)


def _explain(trace: Any, step_index: int, focus: Any, checks: Any) -> StepExplanation:
    if trace is None or not 0 <= step_index < len(trace.steps):
        return StepExplanation(step_index, -1, "", (), NO_STEP)
    step = trace.steps[step_index]
    if step.phase != "backward":
        return StepExplanation(step_index, step.function, step.op, (), _forward_note(step))
    env = recorded.environment(trace, step)
    texts = _formulas(trace, step)
    by_torch = torch_ops.is_torch_function(trace, step.function)
    terms = []
    notes: list[str] = []
    for slot, grad in enumerate(step.input_grads):
        if grad is None:
            continue
        text = texts[slot] if texts is not None and slot < len(texts) else None
        own = texts is None and not by_torch and _users_own(trace, step)
        terms.append(_term(trace, step, env, slot, grad, text, own, focus, notes, by_torch))
    if by_torch:
        first = torch_ops.torch_note(trace, step.function, step.op)
        notes.append(_in_and_out_note(step, env, terms, first))
    elif texts is None and _users_own(trace, step):
        notes.append(_own_code_note(step, env, terms, checks))
    elif texts is None:
        notes.append(_in_and_out_note(step, env, terms, f"No formula text is known for {step.op}."))
    if step.during_backward >= 0 or _in_higher_order(trace, step):
        notes.append(
            "This backward pass differentiates a gradient (create_graph=True): its steps are "
            "explained as any others, with the gradient graph's own numbers."
        )
    unique = list(dict.fromkeys(notes))
    return StepExplanation(step_index, step.function, step.op, tuple(terms), "\n".join(unique))


def node_label(trace: Any, node_id: int) -> str:
    """A variable's name as the explanations write it: its own, else ``v<id>``."""
    name = trace.node(node_id).get("name")
    return str(name) if name else f"v{node_id}"


# -----------------------------------------------------------------------------------------
def _formulas(trace: Any, step: Any) -> tuple[str, ...] | None:
    return recorded.formulas_of(trace, step)


def _term(
    trace: Any,
    step: Any,
    env: Environment,
    slot: int,
    grad: Any,
    text: str | None,
    own: bool,
    focus: tuple[int, ...] | None,
    notes: list[str],
    by_torch: bool = False,
) -> Term:
    node = step.inputs[slot]
    result_array = grad.array
    in_shape = tuple(grad.shape)
    scalar = in_shape == () and env.out_shape == ()
    element = _element(result_array, in_shape, env.out_shape, focus)
    result: Any = result_array
    if result_array is not None and result_array.ndim == 0:
        result = float(result_array)
    want = None
    if result_array is not None:
        want = float(result_array[element] if element else result_array)
    gx = f"gx{slot}" if len(step.inputs) > 1 else "gx"
    if text is None:
        if by_torch and torch_ops.is_custom_function(trace, step.function):
            formula = f"{gx} comes from {step.op}.backward: your own code, run by torch"
        elif by_torch:
            formula = f"{gx} comes from torch's backward of {step.op}"
        elif own:
            formula = f"{gx} comes from {step.op}.backward: its derivative is your own code"
        else:
            formula = f"{gx} comes from {step.op}'s derivative (no formula text for it)"
        names: list[str] = []
        numbers = ""
    else:
        formula = text
        names = sorted(recorded.names_in(text))
        numbers = _numbers(text, names, env, element, in_shape, want, notes, step.op)
        if want is not None and not math.isfinite(want):
            notes.append(_nonfinite_note(gx, want, names, env, element, in_shape))
    shapes = "" if scalar else _shapes(names, env, gx, in_shape)
    broadcast = (
        ""  # a convolution's or a matrix product's shapes differ without any broadcasting
        if by_torch and step.op not in torch_ops.ELEMENTWISE
        else _broadcast(trace, node, slot, in_shape, env.out_shape)
    )
    links = tuple((name, env.nodes[name]) for name in names if name in env.nodes)
    return Term(
        input=node,
        slot=slot,
        formula=formula,
        numbers=numbers,
        result=result,
        element=None if scalar else element,
        shapes=shapes,
        broadcast=broadcast,
        accumulation=_accumulation(trace, step, slot, element),
        links=((gx, node), *links),
    )


def _element(
    result: Any, in_shape: tuple[int, ...], out_shape: tuple[int, ...], focus: Any
) -> tuple[int, ...]:
    """The element the numbers are for: ``focus`` where it indexes the input (or the output,
    mapped through broadcasting), else the largest gradient's."""
    if focus is not None:
        focus = tuple(int(i) for i in focus)
        if _fits(focus, in_shape):
            return focus
        if _fits(focus, out_shape):
            lead = len(out_shape) - len(in_shape)
            return tuple(0 if n == 1 else focus[k + lead] for k, n in enumerate(in_shape))
    if not in_shape or result is None or result.size == 0:
        return ()
    magnitude = np.abs(np.nan_to_num(np.asarray(result, dtype=np.float64), nan=0.0))
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(magnitude)), in_shape))


def _fits(index: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    return len(index) == len(shape) and all(0 <= i < n for i, n in zip(index, shape, strict=True))


def _numbers(
    text: str,
    names: list[str],
    env: Environment,
    element: tuple[int, ...],
    in_shape: tuple[int, ...],
    want: float | None,
    notes: list[str],
    op: str,
) -> str:
    unknown = [n for n in names if n not in env.values]
    if unknown:
        notes.append(
            f"{op}'s {', '.join(unknown)} is not in this recording (it keeps only a "
            "Function's small attributes), so its numbers cannot be written"
        )
        return ""
    if want is None or any(env.values[n] is None for n in names if n in env.nodes):
        return ""  # a large array the recording kept only a summary of
    try:
        tree = recorded.parse(text)
        frame = recorded.elementwise_frame(text, env)
        if frame is not None:
            indexes = list(recorded.contributing(element, in_shape, frame))
            if len(indexes) > MAX_SUM_TERMS:
                return ""
            parts = [(text, recorded.values_at(env, names, i, frame)) for i in indexes]
            written = recorded.substitute_checked(parts, want, env.values)
        else:
            written = _matmul_numbers(tree, names, env, element, want) or _linear_numbers(
                text, env, element, in_shape, want
            )
    except (formulas.FormulaError, ArithmeticError, ValueError, TypeError, IndexError):
        written = ""
    if not written and want is not None and _formula_disagrees(text, env, in_shape, want, element):
        notes.append(
            f"{op}'s formula does not give the recorded gradient: its backward is not the "
            "primitive's (a Function of your own with this name?)"
        )
    return written


def _nonfinite_note(
    gx: str,
    want: float,
    names: list[str],
    env: Environment,
    element: tuple[int, ...],
    in_shape: tuple[int, ...],
) -> str:
    """What went into a NaN or Inf gradient (no arithmetic of numbers can be written)."""
    given = []
    for name in names:
        value = env.values.get(name)
        if isinstance(value, np.ndarray) or np.isscalar(value):
            a = np.asarray(value, dtype=np.float64)
            at = element if a.shape == in_shape and element else ()
            shown = format_number(float(a[at])) if a.ndim == len(at) else f"array {a.shape}"
            given.append(f"{name} = {shown}")
    return f"{gx} is {want}: not a finite number ({', '.join(given)})"


def _matmul_numbers(
    tree: Any, names: list[str], env: Environment, element: tuple[int, ...], want: float
) -> str:
    """The element's sum of products for a formula ``A @ B`` of 2-d arrays."""
    body = tree.body
    if not (isinstance(body, ast.BinOp) and isinstance(body.op, ast.MatMult)):
        return ""
    if len(element) != 2:
        return ""
    values = {n: env.values[n] for n in names}
    a = np.asarray(formulas.evaluate(ast.unparse(body.left), values))
    b = np.asarray(formulas.evaluate(ast.unparse(body.right), values))
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] > MAX_SUM_TERMS:
        return ""
    i, j = element
    if i >= a.shape[0] or j >= b.shape[1]:
        return ""
    products = [(f"p{k}", {"a": float(a[i, k]), "b": float(b[k, j])}) for k in range(a.shape[1])]
    for digits in (4, 6, 9, 17):
        written = " + ".join(
            recorded.substitute("a · b", scalars, digits) for _, scalars in products
        )
        if recorded.close(float(formulas.evaluate(written, {})), want, 3e-4):
            return written
    return ""


def _linear_numbers(
    text: str, env: Environment, element: tuple[int, ...], in_shape: tuple[int, ...], want: float
) -> str:
    """The element as the chain rule sums it, ``gy_j · ∂y_j/∂x`` over the few elements j of gy
    it depends on (written ``gy_j`` alone where the coefficient is 1): every gradient is linear
    in gy, so each coefficient is the formula at gy = the j-th unit array. For a sum, a
    reshape, a softmax... where at most MAX_SUM_TERMS elements of gy reach the element."""
    gy = env.values.get("gy")
    if (
        not isinstance(gy, np.ndarray)
        or gy.size > MAX_LINEAR_GY
        or ("gy0" in env.values and ("gy1" in env.values))
    ):
        return ""
    flat = gy.reshape(-1)
    terms = []
    for j in np.flatnonzero(flat):
        unit = np.zeros_like(gy)
        unit.flat[j] = 1.0
        value = formulas.evaluate(text, {**env.values, "gy": unit, "gy0": unit})
        coefficient = float(np.asarray(formulas.to_input(value, in_shape))[element])
        if coefficient != 0:
            terms.append((float(flat[j]), coefficient))
            if len(terms) > MAX_SUM_TERMS:
                return ""
    if not terms:
        return ""
    for digits in (4, 6, 9, 17):
        written = " + ".join(
            recorded.substitute("g", {"g": g}, digits)
            if c == 1
            else recorded.substitute("g · c", {"g": g, "c": c}, digits)
            for g, c in terms
        )
        if recorded.close(float(formulas.evaluate(written, {})), want, 3e-4):
            return written
    return ""


def _formula_disagrees(
    text: str, env: Environment, in_shape: tuple[int, ...], want: float, element: tuple
) -> bool:
    """Whether the formula over the whole arrays gives another gradient than the recorded."""
    try:
        full = np.asarray(formulas.evaluate(text, env.values), dtype=np.float64)
        full = formulas.to_input(full, in_shape)
        got = float(full[element] if element else full)
    except (formulas.FormulaError, ArithmeticError, ValueError, TypeError, IndexError):
        return False
    return not recorded.close(got, want, 1e-6)


def _shapes(names: list[str], env: Environment, gx: str, in_shape: tuple[int, ...]) -> str:
    parts = [
        f"{n} {tuple(np.shape(env.values[n]))}"
        for n in names
        if n in env.values and isinstance(env.values[n], np.ndarray)
    ]
    return f"{', '.join(parts)} → {gx} {in_shape}" if parts else f"{gx} {in_shape}"


def _broadcast(
    trace: Any, node: int, slot: int, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
) -> str:
    if in_shape == out_shape or not out_shape:
        return ""
    axes = recorded.broadcast_axes(in_shape, out_shape)
    if not axes:
        return ""
    which = "axis" if len(axes) == 1 else "axes"
    listed = ", ".join(str(a) for a in axes)
    name = node_label(trace, node)
    return f"summed over {which} {listed}: {name} {in_shape} was broadcast to {out_shape}"


def _accumulation(trace: Any, step: Any, slot: int, element: tuple[int, ...]) -> str:
    """'x.grad = a (from Op, step n) + ... = total' when the input already held a gradient."""
    node = step.inputs[slot]
    held = [a for a in step.accumulations if a.node == node and a.slot == slot]
    if not held:
        return ""
    acc = held[0]
    sent = []  # (value, op, step number) of this pass's earlier contributions, in order
    for earlier in _earlier_in_pass(trace, step):
        for k, (n, g) in enumerate(zip(earlier.inputs, earlier.input_grads, strict=False)):
            if n == node and g is not None and (earlier is not step or k < slot):
                sent.append((_at(g, element), earlier.op, earlier.index + 1))
    old, new, mine = _at(acc.old, element), _at(acc.new, element), _at(acc.contribution, element)
    parts = [f"{format_number(v)} (from {op}, step {n})" for v, op, n in sent]
    before = old - sum(v for v, _, _ in sent)
    if not sent or abs(before) > 1e-9 * max(abs(old), 1.0):  # a gradient from an earlier pass
        parts.insert(0, f"{format_number(before)} (held before this pass)")
    parts.append(f"{format_number(mine)} (from {step.op}, step {step.index + 1})")
    where = f"[{', '.join(str(i) for i in element)}]" if element else ""
    name = node_label(trace, node)
    return f"{name}.grad{where} = {' + '.join(parts)} = {format_number(new)}"


def _earlier_in_pass(trace: Any, step: Any) -> list[Any]:
    """This pass's backward steps up to ``step`` (itself included), in order."""
    out = []
    steps = trace.steps
    for i in range(step.index, -1, -1):
        s = steps[i]
        if s.phase == "backward":
            if s.backward_pass != step.backward_pass:
                break
            out.append(s)
    out.reverse()
    return out


def _at(snapshot: Any, element: tuple[int, ...]) -> float:
    a = snapshot.array
    if a is None:
        return float("nan")
    a = np.asarray(a)
    return float(a[element]) if element and a.ndim == len(element) else float(a.reshape(-1)[0])


def _users_own(trace: Any, step: Any) -> bool:
    """Whether the step's Function is the program's own (not one of autodiff's primitives)."""
    live = recorded.live_function(trace, step.function)
    if live is None:
        return True  # a saved trace: an op name no primitive has
    module = type(live).__module__
    return not module.startswith("autodiff.") or module == "autodiff.micrograd._recorded"


def _own_code_note(step: Any, env: Environment, terms: list[Term], checks: Any) -> str:
    first = f"{step.op} is your own Function: its derivative is your own code (its backward)."
    verdict = _check_verdict(step.function, checks)
    last = verdict or "Run the gradient check to compare it with numerical differences."
    return f"{_in_and_out_note(step, env, terms, first)}\n{last}"


def _in_and_out_note(step: Any, env: Environment, terms: list[Term], first: str) -> str:
    """``first``, then the numbers that went in and came out of each term."""
    lines = [first]
    ins = [f"x{k}" if len(step.inputs) > 1 else "x" for k in range(len(step.inputs))]
    gys = ["gy" if len(step.outputs) == 1 else f"gy{k}" for k in range(len(step.outputs))]
    for t in terms:
        element = t.element or ()
        shape = np.shape(t.result)
        given = ", ".join(
            f"{n} = {_value_text(v, element if np.shape(v) == shape else None)}"
            for n in (*ins, *gys)
            if (v := env.values.get(n)) is not None
        )
        gx = "gx" if len(step.inputs) == 1 else f"gx{t.slot}"
        at = f"At element {list(element)}, " if element else ""
        lines.append(f"{at}in: {given}; out: {gx} = {_value_text(t.result, element)}")
    return "\n".join(lines)


def _check_verdict(function: int, checks: Any) -> str:
    if checks is None:
        return ""
    for check in checks.functions:
        if function in check.node_ids:
            error = check.error
            measured = "" if error != error else f" (relative error {error:.2g})"
            message = f": {check.message}" if check.message else ""
            return f"Gradient check: {check.status}{measured}{message}"
    return ""


def _value_text(value: Any, element: tuple[int, ...] | None) -> str:
    if value is None:
        return "(not kept: a large array)"
    a = np.asarray(value)
    if a.ndim == 0:
        return format_number(float(a))
    if (
        element
        and len(element) == a.ndim
        and all(i < n for i, n in zip(element, a.shape, strict=True))
    ):
        return format_number(float(a[element]))
    if a.size == 1:
        return format_number(float(a.reshape(-1)[0]))
    return f"array {a.shape}"


def _forward_note(step: Any) -> str:
    if step.during_backward >= 0:
        return (
            f"{step.op} runs inside backward pass {step.during_backward + 1} with "
            "create_graph=True: it computes part of a gradient as a graph that can be "
            "differentiated again. Its own derivative is explained at its backward step, if a "
            "later backward() runs through it."
        )
    return f"{step.op} (forward): the explanation of its gradients is at its backward step."


def _in_higher_order(trace: Any, step: Any) -> bool:
    """Whether a Function made while computing a gradient (create_graph) runs this step."""
    steps = trace.steps
    try:
        n, made = _MADE_IN_BACKWARD.get(trace, (-1, frozenset()))
    except TypeError:  # a reader that takes no weak reference: no cache
        n, made = -1, frozenset()
    if n != len(steps):
        made = frozenset(
            s.function for s in steps if s.phase == "forward" and s.during_backward >= 0
        )
        with contextlib.suppress(TypeError):
            _MADE_IN_BACKWARD[trace] = (len(steps), made)
    return step.function in made


# per reader (and its number of steps): the Functions its forward steps made inside a backward
# pass; asked at every step of playback
_MADE_IN_BACKWARD: weakref.WeakKeyDictionary[Any, tuple[int, frozenset[int]]] = (
    weakref.WeakKeyDictionary()
)
