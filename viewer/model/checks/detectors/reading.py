"""What the gradient-flow detectors (:mod:`.flow`, :mod:`.gradient_size`) read of a graph, in
the same words: its backward passes and what they reached, a node's name as the user knows
it, each parameter's layer, a Snapshot's root mean square. Reads the
:class:`~autodiff.trace.TraceReader` protocol only; plain Python, no Qt.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from viewer.model.node_display import unnamed_variable

__all__ = [
    "NO_BACKWARD",
    "NO_PARAMETERS",
    "backward_passes",
    "drawn_nodes",
    "first_users",
    "node_name",
    "node_names",
    "parameter_layers",
    "reached_by",
    "rms",
]

NO_BACKWARD = "the graph has no backward pass"
NO_PARAMETERS = "the graph has no parameters (Parameter, nn.Parameter)"


# ------------------------------------------------------------------------------------------
# What the detectors share: the passes of a reader, names, layers
# ------------------------------------------------------------------------------------------
def backward_passes(reader: Any) -> dict[int, list[int]]:
    """The reader's backward passes: pass number -> its backward steps' indexes, ascending."""
    found: dict[int, list[int]] = {}
    for step in reader.steps:
        if step.phase == "backward":
            found.setdefault(step.backward_pass, []).append(step.index)
    return found


def reached_by(reader: Any, indexes: Iterable[int]) -> set[int]:
    """The nodes a backward step of ``indexes`` gave a gradient to."""
    steps = reader.steps
    got: set[int] = set()
    for k in indexes:
        step = steps[k]
        for node, grad in zip(step.inputs, step.input_grads, strict=False):
            if grad is not None:
                got.add(node)
    return got


def node_name(reader: Any, node_id: int) -> str:
    """A node as the user knows it, as the inspector titles it: a variable's name, else
    :func:`~viewer.model.node_display.unnamed_variable`; a Function ``Op #id``."""
    node = reader.node(node_id)
    if node.get("name"):
        return str(node["name"])
    if node.get("kind") == "function":
        return f"{node.get('op')} #{node_id}"
    base = reader.base if reader.base is not None else reader  # a view's leaf may have one
    creator = base.creator_of(node_id)
    return unnamed_variable(node_id, base.node(creator).get("op") if creator >= 0 else None)


def node_names(reader: Any, nodes: Iterable[int], at_most: int = 4) -> str:
    """``a, b and c`` (``a, b, c, d and 3 more`` past ``at_most``)."""
    names = [node_name(reader, n) for n in nodes]
    if len(names) > at_most:
        names = [*names[:at_most], f"{len(names) - at_most} more"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def drawn_nodes(reader: Any) -> set[int]:
    return set(reader.variables) | set(reader.functions)


def first_users(reader: Any, params: Iterable[int]) -> dict[int, int]:
    """Each parameter's first function in the reader (node ids grow in the order the program
    made them, so the smallest is the earliest in the forward)."""
    params = set(params)
    pairs, _ = reader.edges()
    user: dict[int, int] = {}
    for source, target in pairs.tolist():
        if source in params and (source not in user or target < user[source]):
            user[source] = target
    return user


def parameter_layers(reader: Any, params: Iterable[int]) -> dict[int, str]:
    """Each parameter's layer: the scope path of the first function of the reader that uses
    it (a parameter itself, a leaf, is in no scope); outside any scope, the prefix of its name
    (``l1`` of ``l1.W``, ``hidden.0`` of ``hidden.0.weight``), else its name."""
    params = set(params)
    user = first_users(reader, params)
    scope_of = reader.node_scopes()
    scopes = reader.scopes()
    layers: dict[int, str] = {}
    for p in params:
        path = ""
        fid = user.get(p)
        if fid is not None and 0 <= fid < len(scope_of):
            sid = int(scope_of[fid])
            if 0 < sid < len(scopes):
                path = scopes[sid].path
        if not path:
            name = node_name(reader, p)
            path = name.rsplit(".", 1)[0] if "." in name else name
        layers[p] = path
    return layers


def rms(snapshot: Any) -> float:
    """The root mean square of a Snapshot's finite elements (NaN when it has none)."""
    size = max(1, snapshot.size)
    return float(snapshot.norm) / math.sqrt(size)
