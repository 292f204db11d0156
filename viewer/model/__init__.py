"""viewer.model: everything the desktop app needs that is not Qt.

The expression language, the playback cursor, the arrays the graph view draws, the inspector's
data, the example library and the script runner; :class:`Document` ties them together for
the main window. Nothing here imports PySide6 or pyqtgraph.
"""

from viewer.model.document.document import Document, LeafRow, ScriptError
from viewer.model.document.examples import Example, find_example, list_examples
from viewer.model.document.playback import PlaybackState
from viewer.model.expression.program import Evaluation, ExpressionError, Program, evaluate, parse
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
