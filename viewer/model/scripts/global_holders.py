"""Which of a script's globals holds a pass's loss: the holder graph-held names.

The leak audit runs once the script's globals are dropped (as interpreter shutdown would drop
them), so it cannot name a module-level ``history = []`` that kept every iteration's loss:
by then the list, and the graphs, are gone. :func:`global_holder` asks the question earlier,
while the script's namespace is still there, for one object only (the loss of the first pass
found held): a breadth-first walk from each global's value, a few containers deep, finds the
global that reaches it, and :func:`adding_lines` reads the script (with :mod:`ast`, never run)
for the statements that add to that name, so the message can point at
``history.append(loss)``.

The walk is bounded (:data:`MAX_DEPTH`, :data:`MAX_VISITED`), does not enter modules, functions,
classes, arrays or the engine's Variables and Functions (a graph reaching the loss is not a
holder a user wrote), and keeps no reference to what it looked at. Plain Python: no Qt.
"""

from __future__ import annotations

import ast
import gc
import types
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from autodiff import core

__all__ = [
    "MAX_DEPTH",
    "MAX_VISITED",
    "adding_lines",
    "describe_holder",
    "global_holder",
    "held_loss_holder",
]

# ``history`` (0) -> its list item (1); a dict in a list (2); an object's __dict__ -> its list
# (3) -> the loss (4)
MAX_DEPTH = 4
MAX_VISITED = 20_000
# Methods that put an object into a container: the statements calling them on a global are
# where the holder was filled.
_ADDING = frozenset(
    {"append", "appendleft", "extend", "insert", "add", "update", "setdefault", "put", "push"}
)
_OPAQUE = (
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    type,
    np.ndarray,
    core.Variable,
    core.Function,
    str,
    bytes,
)


def held_loss_holder(
    namespace: Mapping[str, Any] | None, first_held: tuple[int, Any] | None, script: Any
) -> str | None:
    """The words for the global of ``namespace`` that holds the root of ``first_held`` (the
    recording's ``(pass index, weakref of its root)``), or None: no such pass, its root gone,
    or no global reaches it (a list inside a function, a module outliving the script: the
    leak audit names those)."""
    if not namespace or first_held is None:
        return None
    holder = global_holder(namespace, first_held[1]())
    return None if holder is None else describe_holder(holder, script)


def global_holder(namespace: Mapping[str, Any], target: Any) -> tuple[str, str] | None:
    """(the global's name, its value's type name) of the first of ``namespace``'s globals that
    reaches ``target`` through containers and attributes (not through a graph: see the
    module's docstring), or None. A global that *is* the target is not its holder."""
    if target is None:
        return None
    was_enabled = gc.isenabled()
    gc.disable()  # the walk compares identities: nothing may be freed and reused meanwhile
    try:
        return _search(namespace, id(target))
    finally:
        if was_enabled:
            gc.enable()


def _search(namespace: Mapping[str, Any], wanted: int) -> tuple[str, str] | None:
    visited = 0
    for name, value in list(namespace.items()):
        if name.startswith("__") or id(value) == wanted or isinstance(value, _OPAQUE):
            continue
        seen = {id(value)}
        queue: deque[tuple[Any, int]] = deque([(value, 0)])
        while queue:
            obj, depth = queue.popleft()
            visited += 1
            if visited > MAX_VISITED:
                return None
            if depth >= MAX_DEPTH:
                continue
            for r in gc.get_referents(obj):
                if id(r) == wanted:
                    return name, type(value).__name__
                if id(r) not in seen and not isinstance(r, _OPAQUE):
                    seen.add(id(r))
                    queue.append((r, depth + 1))
            obj = None
    return None


def adding_lines(source: str, name: str) -> list[tuple[int, str]]:
    """(line, statement text) of each statement of ``source`` that puts something into the
    global ``name``: ``name.append(...)`` (and the other :data:`_ADDING` methods),
    ``name[k] = ...``, ``name += ...``; in source order. Empty when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found: dict[int, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        if _adds_to(node, name):
            text = ast.get_source_segment(source, node) or ""
            found.setdefault(node.lineno, " ".join(text.split()))
    return sorted(found.items())


def _adds_to(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in _ADDING
            and isinstance(func.value, ast.Name)
            and func.value.id == name
        )
    if isinstance(stmt, ast.Assign):
        return any(_subscript_of(t, name) for t in stmt.targets)
    if isinstance(stmt, ast.AugAssign):
        target = stmt.target
        return (isinstance(target, ast.Name) and target.id == name) or _subscript_of(target, name)
    return False


def _subscript_of(target: ast.expr, name: str) -> bool:
    return (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id == name
    )


def describe_holder(holder: tuple[str, str], script: str | Path | None) -> str:
    """``holder`` in words, with the script's statement that fills it when there is exactly one
    (several: their lines): "`history` (a list, line 28: history.append(loss))"."""
    name, type_name = holder
    lines: list[tuple[int, str]] = []
    if script is not None:
        try:
            lines = adding_lines(Path(script).read_text(encoding="utf-8"), name)
        except (OSError, UnicodeDecodeError):
            lines = []
    article = "an" if type_name[:1].lower() in "aeiou" else "a"
    where = ""
    if len(lines) == 1:
        where = f", line {lines[0][0]}: {lines[0][1]}"
    elif lines:
        where = ", filled on lines " + ", ".join(str(line) for line, _ in lines)
    return f"`{name}` ({article} {type_name}{where})"
