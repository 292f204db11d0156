"""viewer.model: everything the desktop app needs that is not Qt.

The expression language, the playback cursor, the arrays the graph view draws, the inspector's
data, the example library and the script runner; :class:`Document` ties them together for
the main window. Nothing here imports PySide6 or pyqtgraph.
"""

from viewer.model.document import Document, LeafRow, ScriptError
from viewer.model.examples import Example, find_example, list_examples
from viewer.model.expression import Evaluation, ExpressionError, Program, evaluate, parse
from viewer.model.graph_layout import GraphLayout, compute_layout
from viewer.model.inspector import NodeInfo, inspect
from viewer.model.node_overlays import Overlay
from viewer.model.playback import PlaybackState
from viewer.model.scene import Frame, Scene
from viewer.model.script_process import ScriptProcess
from viewer.model.script_run import ScriptResult, ScriptRun
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
