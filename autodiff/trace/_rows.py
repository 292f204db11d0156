"""The rows of the recorder's tables, by name: the one place their layouts are written down.

Each is a NamedTuple, so a row reads by name (``row.inputs``) or unpacks as before; the
recorder makes them from its tape (``_new(Row, (...))``: a NamedTuple's own constructor
costs twice as much, and a long run decodes millions) and a loader through the recorder's
constructors (``Recorder.add_variable``...). Leaf module: nothing from the package.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = [
    "ROOT_SCOPE",
    "BackwardRow",
    "EventRow",
    "ForwardRow",
    "FunctionRow",
    "ScopeRow",
    "VariableRow",
]

# Row kinds: the first field of a step row and of a node row.
FWD, BWD = 0, 1
VARIABLE, FUNCTION = 0, 1


class ForwardRow(NamedTuple):
    """A Function's forward step."""

    kind: int  # FWD
    function: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    values: tuple[Any, ...]  # the raw value of each output (see _snapshot.capture)
    during: int  # the backward pass running it (create_graph), -1 for none


class BackwardRow(NamedTuple):
    """A Function's step of a backward pass."""

    kind: int  # BWD
    function: int
    output_grads: tuple[Any, ...]  # raw gradient each output delivered (None: none)
    input_grads: tuple[Any, ...]  # raw gradient given to each input slot
    accumulations: tuple[tuple[Any, ...], ...]  # (input node, slot, old, contribution, new)
    cleared: tuple[int, ...]  # outputs whose gradient backward dropped
    backward_pass: int


class VariableRow(NamedTuple):
    kind: int  # VARIABLE
    generation: int
    shape: tuple[int, ...] | None
    dtype: Any


class FunctionRow(NamedTuple):
    kind: int  # FUNCTION
    generation: int
    op: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


class EventRow(NamedTuple):
    """A node event that is not a step, shown after step ``visible``."""

    stamp: int  # steps recorded before it
    visible: int  # an event between two steps: visible == stamp, with the next step
    node: int
    kind: int  # _VALUE, _GRAD, _CLEARED, _FREED, _EMPTIED (see _recorder)
    raw: Any
    origin: int | None  # a gradient's backward pass (-1: before recording; None: not one's)


class ScopeRow(NamedTuple):
    """One scope instance: a Layer's call or an ``autodiff.scope`` block (two calls of one
    layer are two instances with the same path). Row 0 of every table is the root."""

    path: str  # "Net/b2/fc": the names from the outermost scope in, joined by "/"
    name: str  # the last part of the path
    cls: str  # the Layer's class name; "" for an autodiff.scope block and the root
    parent: int  # the enclosing instance (0: none but the root; -1 for the root itself)
    depth: int  # 1 for a top scope, 0 for the root


ROOT_SCOPE = ScopeRow("", "", "", -1, 0)
