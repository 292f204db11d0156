"""What the recorder reads of an aten op: the name a user knows it by, and which of its
arguments are tensors and feed which edge of its autograd node."""

from __future__ import annotations

import re
from typing import Any

from torch import Tensor

__all__ = ["SHAPE_ONLY", "node_op_name", "op_info", "op_name", "plain_inputs", "tensors"]

# aten names a user does not recognise -> the name of the function they called
_FRIENDLY = {
    "addmm": "linear",
    "native_batch_norm": "batch_norm",
    "_native_batch_norm_legit": "batch_norm",
    "_native_batch_norm_legit_no_training": "batch_norm",
    "_native_batch_norm_legit_functional": "batch_norm",
    "native_layer_norm": "layer_norm",
    "native_group_norm": "group_norm",
    "_log_softmax": "log_softmax",
    "_softmax": "softmax",
    "nll_loss_forward": "nll_loss",
    "nll_loss2d_forward": "nll_loss2d",
    "max_pool2d_with_indices": "max_pool2d",
    "max_pool3d_with_indices": "max_pool3d",
    "native_dropout": "dropout",
    "_to_copy": "to",
    "_unsafe_view": "view",
    "unsafe_view": "view",
    "reshape_alias": "view",
    "cudnn_batch_norm": "batch_norm",
    "miopen_batch_norm": "batch_norm",
}


# ops that read only their input's shape (dropout's mask begins as empty_like(x)): no cut
SHAPE_ONLY = frozenset(
    {
        "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
        "randint_like", "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided",
        "sym_size", "sym_stride", "sym_numel",
    }
)  # fmt: skip


_INFO: dict[Any, tuple[bool, bool, str]] = {}  # aten op -> op_info(op)


def op_info(func: Any) -> tuple[bool, bool, str]:
    """What the recorder reads of an aten op on every call, read once per op: whether it
    changes a tensor in place, whether its outputs may be cuts (an op that reads more than
    its input's shape: not SHAPE_ONLY) and its full aten name (``aten.addmm.default``)."""
    info = _INFO.get(func)
    if info is None:
        info = _INFO[func] = (
            func._schema.is_mutable,
            func.overloadpacket.__name__ not in SHAPE_ONLY,
            str(func),
        )
    return info


_NAMES: dict[Any, str] = {}  # aten op -> op_name (every op but a convolution's)


def op_name(func: Any, args: tuple) -> str:
    """The name a user knows an aten op by: ``linear`` for ``addmm``, ``conv2d`` for a 2-d
    ``convolution``, the aten name where nothing better exists."""
    known = _NAMES.get(func)
    if known is not None:
        return known
    name = func.overloadpacket.__name__
    if name in ("convolution", "_convolution"):
        weight = args[1] if len(args) > 1 else None
        dims = weight.ndim - 2 if isinstance(weight, Tensor) else 2
        transposed = len(args) > 6 and args[6] is True
        return f"conv_transpose{dims}d" if transposed else f"conv{dims}d"
    known = _NAMES[func] = _FRIENDLY.get(name, name)
    return known


_NODE_NAMES: dict[str, str] = {}  # autograd node name -> the op name node_op_name gives


def node_op_name(node_name: str, output_dims: int = 0, transposed: bool = False) -> str:
    """The name a user knows the op behind an autograd node by, from the node's name
    (``AddmmBackward0`` -> ``linear``, ``MaxPool2DWithIndicesBackward0`` -> ``max_pool2d``):
    what :func:`op_name` gives the aten op that made it, where the name says which.
    ``output_dims``: the number of dimensions of the node's first output (a convolution's
    ``conv2d`` from a 4-d output), ``transposed``: a transposed convolution."""
    if node_name.startswith("Convolution"):
        dims = max(output_dims - 2, 1)
        return f"conv_transpose{dims}d" if transposed else f"conv{dims}d"
    found = _NODE_NAMES.get(node_name)
    if found is None:
        base = re.sub(r"Backward\d*$", "", node_name.rsplit("::", 1)[-1])
        base = re.sub(r"(\d)D", r"\1d", base)  # MaxPool2D -> MaxPool2d
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower()
        found = _NODE_NAMES[node_name] = _FRIENDLY.get(snake, snake)
    return found


def plain_inputs(edges: tuple, args: tuple, inputs: list) -> dict[int, Any]:
    """The tensors without history that feed the edges without a producer, by edge index:
    the op's arguments by position when they line up with the edges (each edge with a
    producer on a tensor that requires grad: ``convolution(x, w, None)``), else its tensors
    without history in order when they are as many as those edges; else none (which one
    feeds which edge is not known)."""
    if len(args) >= len(edges) and all(
        (p is None) != (isinstance(a, Tensor) and a.requires_grad)
        for (p, _), a in zip(edges, args, strict=False)
    ):
        return {
            i: a for i, ((p, _), a) in enumerate(zip(edges, args, strict=False))
            if p is None and isinstance(a, Tensor)
        }  # fmt: skip
    plain = [t for t in inputs if not t.requires_grad]
    free = [i for i, (p, _) in enumerate(edges) if p is None]
    return dict(zip(free, plain, strict=True)) if len(free) == len(plain) else {}


def tensors(items: Any) -> list:
    """The tensors among an op's arguments or outputs (one level of lists: cat's inputs)."""
    if isinstance(items, Tensor):
        return [items]
    found = []
    if isinstance(items, (tuple, list)):
        for a in items:
            if isinstance(a, Tensor):
                found.append(a)
            elif isinstance(a, (tuple, list)):
                found.extend(b for b in a if isinstance(b, Tensor))
    return found
