"""The name a program's own code gives a tensor, for a parameter no module names.

``w = torch.nn.Parameter(...)`` at a script's top level is a parameter of no module:
``named_parameters()`` never names it. The name its code binds it to is what its author calls
it, but only where one name says which tensor it is. A module-level name does: it binds one
object at a time. A function's local does not (``for p in params:`` binds ``p`` to each in
turn), nor an object bound to several names (``a = b = Parameter(...)``).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["module_level_name"]

# modules whose globals are never the program's names: the recorder's, the viewer's, torch's
_NOT_THE_PROGRAM = ("torch", "autodiff", "viewer")


def module_level_name(obj: Any) -> str | None:
    """The one public module-level name the program's code on the call stack binds ``obj``
    to (in the globals of the modules whose code is running now: a script's ``__main__``,
    its own modules), or None where there is none or there are several."""
    found: str | None = None
    seen: set[int] = set()
    frame = sys._getframe(1)
    while frame is not None:
        scope = frame.f_globals
        frame = frame.f_back
        if id(scope) in seen:
            continue
        seen.add(id(scope))
        module = scope.get("__name__")
        if not isinstance(module, str) or module.split(".", 1)[0] in _NOT_THE_PROGRAM:
            continue
        for name, value in tuple(scope.items()):  # (one copy: another thread may add names)
            if value is obj and not name.startswith("_"):
                if found is not None and found != name:
                    return None
                found = name
    return found
