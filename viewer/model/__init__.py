"""viewer.model: everything the desktop app needs that is not Qt.

The expression language, the playback cursor, the arrays the graph view draws, the inspector's
data, the example library and the script runner; :class:`Document` ties them together for
the main window. Nothing here imports PySide6 or pyqtgraph.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each name's module, imported when the name is first asked for (PEP 562): the script
# worker imports viewer.model.scripts and must not pay for the Document, the layout and
# the scene it never uses (about a third of its start).
_WHERE = {
    "Document": "viewer.model.document.document",
    "Evaluation": "viewer.model.expression.program",
    "Example": "viewer.model.document.examples",
    "ExpressionError": "viewer.model.expression.program",
    "Frame": "viewer.model.scene.scene",
    "GraphLayout": "viewer.model.layout.compute",
    "LeafRow": "viewer.model.document.document",
    "NodeInfo": "viewer.model.panels.inspector",
    "Overlay": "viewer.model.scene.overlays",
    "PlaybackState": "viewer.model.document.playback",
    "Program": "viewer.model.expression.program",
    "Scene": "viewer.model.scene.scene",
    "ScriptError": "viewer.model.document.document",
    "ScriptProcess": "viewer.model.scripts.process",
    "ScriptResult": "viewer.model.scripts.run",
    "ScriptRun": "viewer.model.scripts.run",
    "Signal": "viewer.model.signals",
    "compute_layout": "viewer.model.layout.compute",
    "evaluate": "viewer.model.expression.program",
    "find_example": "viewer.model.document.examples",
    "inspect": "viewer.model.panels.inspector",
    "list_examples": "viewer.model.document.examples",
    "parse": "viewer.model.expression.program",
}

if TYPE_CHECKING:
    from viewer.model.document.document import Document, LeafRow, ScriptError
    from viewer.model.document.examples import Example, find_example, list_examples
    from viewer.model.document.playback import PlaybackState
    from viewer.model.expression.program import (
        Evaluation,
        ExpressionError,
        Program,
        evaluate,
        parse,
    )
    from viewer.model.layout.compute import GraphLayout, compute_layout
    from viewer.model.panels.inspector import NodeInfo, inspect
    from viewer.model.scene.overlays import Overlay
    from viewer.model.scene.scene import Frame, Scene
    from viewer.model.scripts.process import ScriptProcess
    from viewer.model.scripts.run import ScriptResult, ScriptRun
    from viewer.model.signals import Signal

__all__ = [
    "Document",
    "Evaluation",
    "Example",
    "ExpressionError",
    "Frame",
    "GraphLayout",
    "LeafRow",
    "NodeInfo",
    "Overlay",
    "PlaybackState",
    "Program",
    "Scene",
    "ScriptError",
    "ScriptProcess",
    "ScriptResult",
    "ScriptRun",
    "Signal",
    "compute_layout",
    "evaluate",
    "find_example",
    "inspect",
    "list_examples",
    "parse",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
