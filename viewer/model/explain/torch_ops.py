"""What an explanation may say of a step torch ran (a trace of ``autodiff.trace.pytorch``).

Torch's backward is torch's own kernel, not one of autodiff's primitives: its gradients are
shown as torch computed them, never re-derived from :mod:`autodiff.formulas` (whose text for
an op of the same name would be a claim about code that did not run). For a few common ops
the textbook derivative is named, as a reading aid the numbers were not computed from; for
any other op the explanation says that no formula is shown.

A node is torch's when its recording kept ``torch_node`` (also in a saved trace, whose
``function_params`` keep it; None for a cut, which torch made no node for).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ELEMENTWISE",
    "TORCH_DERIVATIVES",
    "is_custom_function",
    "is_torch_function",
    "torch_note",
]

# The textbook derivative of each op, in the terms of its aten op's arguments (the order of a
# node's inputs in the graph is not always torch's argument order, so no slot is named).
TORCH_DERIVATIVES: dict[str, str] = {
    "linear": "addmm(b, m1, m2) = b + m1 @ m2: g_b = gy summed to b's shape, "
    "g_m1 = gy @ m2ᵀ, g_m2 = m1ᵀ @ gy",
    "mm": "m1 @ m2: g_m1 = gy @ m2ᵀ, g_m2 = m1ᵀ @ gy",
    "matmul": "m1 @ m2: g_m1 = gy @ m2ᵀ, g_m2 = m1ᵀ @ gy",
    "relu": "y = max(x, 0): gx = gy · (y > 0)",
    "relu_": "y = max(x, 0), in place: gx = gy · (y > 0)",
    "mul": "y = a · b: g_a = gy · b, g_b = gy · a (summed back over broadcast axes)",
    "mul_": "y = a · b, in place: g_a = gy · b, g_b = gy · a (summed back over broadcast axes)",
    "add": "y = a + alpha · b: g_a = gy, g_b = alpha · gy (summed back over broadcast axes)",
    "add_": "y = a + alpha · b, in place: g_a = gy, g_b = alpha · gy "
    "(summed back over broadcast axes)",
    "sub": "y = a − alpha · b: g_a = gy, g_b = −alpha · gy (summed back over broadcast axes)",
    "div": "y = a / b: g_a = gy / b, g_b = −gy · a / b² (summed back over broadcast axes)",
    "sum": "y = Σ x: gx = gy broadcast back to x's shape",
    "mean": "y = Σ x / n: gx = gy / n broadcast back to x's shape",
    "tanh": "y = tanh(x): gx = gy · (1 − y²)",
    "sigmoid": "y = sigmoid(x): gx = gy · y · (1 − y)",
    "exp": "y = exp(x): gx = gy · y",
    "log": "y = log(x): gx = gy / x",
    "conv2d": "a 2-D convolution: gx is gy convolved back with the weight (a transposed "
    "convolution), g_weight gy correlated with the input, g_bias gy summed over the batch and "
    "the positions; no per-element formula is shown",
}

# the ops whose gradient is summed back over the axes an input was broadcast along, so the
# explanation's "broadcast" line (input shape against gy's) is true of them
ELEMENTWISE = frozenset(
    {"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "where", "maximum", "minimum"}
)


def is_torch_function(trace: Any, function: int) -> bool:
    """Whether ``function`` is a node ``autodiff.trace.pytorch`` recorded."""
    try:
        return "torch_node" in trace.function_params(function)
    except (IndexError, KeyError):
        return False


def is_custom_function(trace: Any, function: int) -> bool:
    """Whether ``function`` is a custom ``torch.autograd.Function`` of the program's: a node
    torch made (``torch_node``) that no aten op made (the recorder names no ``aten``)."""
    try:
        params = trace.function_params(function)
    except (IndexError, KeyError):
        return False
    return bool(params.get("torch_node")) and not params.get("aten")


def torch_note(trace: Any, function: int, op: str) -> str:
    """What the explanation says of torch's node ``function`` (op ``op``): whose backward ran,
    and the textbook derivative where one is named here."""
    params = trace.function_params(function)
    node = params.get("torch_node")
    if is_custom_function(trace, function):
        return (
            f"{op} is a custom torch.autograd.Function: its backward is your own code, which "
            f"torch ran as its node {node}; these gradients are what it returned, as recorded.\n"
            "No formula is shown for it. torch.autograd.gradcheck compares it with numerical "
            "differences in float64."
        )
    aten = params.get("aten")
    made = f"torch's autograd node {node}" if node else "no autograd node of torch's (a cut)"
    of = f" (aten op {aten})" if aten else ""
    lines = [
        f"{op} is torch's op, not an autodiff Function: {made}{of} computed these gradients, "
        "and they are shown as torch recorded them."
    ]
    known = TORCH_DERIVATIVES.get(op)
    if known:
        lines.append(
            f"Its derivative, for reading (the numbers were not computed from it): {known}."
        )
    else:
        lines.append(f"No formula is shown for {op}: its backward is torch's own code.")
    return "\n".join(lines)
