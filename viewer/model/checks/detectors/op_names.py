"""One name per operation, whatever recorded it.

The engine names a function node after its Function class (``ReLU``, ``MeanSquaredError``),
micrograd's Values are recorded as the same classes (or a class named after a hand-made op's
label), a PyTorch recording after the function a user called (``relu``, ``mse_loss``,
``linear``). Detectors compare :func:`canonical_op` of a node's op with the names below (torch's
spelling), never the raw op. :func:`on_line` words where a step ran, for every detector.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "ELEMENTWISE_BINARY",
    "LOSSES",
    "REDUCTIONS",
    "VALUE_FREE_BACKWARD",
    "VIEWS",
    "canonical_op",
    "on_line",
]

# the op's letters and digits, lower case -> its name here (torch's where torch has it)
_ALIASES = {
    "relu": "relu",
    "leakyrelu": "leaky_relu",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "add": "add",
    "sub": "sub",
    "rsub": "sub",
    "subtract": "sub",
    "mul": "mul",
    "multiply": "mul",
    "div": "div",
    "truediv": "div",
    "divide": "div",
    "pow": "pow",
    "square": "square",
    "neg": "neg",
    "exp": "exp",
    "log": "log",
    "sum": "sum",
    "sumto": "sum_to",
    "mean": "mean",
    "broadcastto": "expand",
    "expand": "expand",
    "reshape": "reshape",
    "view": "view",
    "transpose": "transpose",
    "t": "t",
    "getitem": "getitem",
    "matmul": "matmul",
    "mm": "matmul",
    "linear": "linear",
    "meansquarederror": "mse_loss",
    "mseloss": "mse_loss",
    "softmaxcrossentropy": "cross_entropy",
    "crossentropy": "cross_entropy",
    "maximum": "maximum",
    "minimum": "minimum",
}

# elementwise ops of two operands that broadcast them against each other
ELEMENTWISE_BINARY = frozenset({"add", "sub", "mul", "div", "pow", "maximum", "minimum"})
# ops that sum or average their input into fewer elements
REDUCTIONS = frozenset({"sum", "mean", "sum_to"})
# losses that compare a prediction with a target elementwise and reduce
LOSSES = frozenset(
    {
        "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
        "binary_cross_entropy_with_logits", "soft_margin_loss",
    }
)  # fmt: skip
# views and copies of shape only: computing one twice costs nothing worth a warning
VIEWS = frozenset(
    {
        "expand", "reshape", "view", "transpose", "t", "permute", "squeeze", "unsqueeze",
        "getitem", "select", "slice", "alias", "detach", "clone", "contiguous", "to",
        "flatten", "unflatten", "as_strided",
    }
)  # fmt: skip
# ops whose backward reads no input value (only the gradient, or shapes): an input changed
# after the forward does not change the gradients they compute
VALUE_FREE_BACKWARD = frozenset({"add", "sub", "neg", "sum", "sum_to", "mean"}) | VIEWS


def canonical_op(op: str | None) -> str:
    """The name detectors use for ``op`` (a node's ``op`` from any source): ``ReLU`` and
    ``relu`` are ``relu``, ``MeanSquaredError`` and ``mse_loss`` are ``mse_loss``,
    ``BroadcastTo`` is ``expand``; an op not listed is its own name in lower case ('' for
    None)."""
    if not op:
        return ""
    key = re.sub(r"[^a-z0-9]", "", op.lower())
    return _ALIASES.get(key, op.lower())


def on_line(reader: Any, node_id: int) -> str:
    """`` on line N`` for a message about ``node_id`` when the reader knows the line of the
    script it ran on (a function's, a variable's creator's:
    :meth:`~autodiff.trace.TraceReader.line_of`); '' when not."""
    line = reader.line_of(node_id)
    return "" if line is None else f" on line {line}"
