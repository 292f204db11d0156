"""The recorder: the engine's graph as a networkx DAG plus an exact forward/backward timeline.

``with record() as t: ...`` attaches a :class:`Trace` to the engine's observer hook
(:func:`autodiff.core.add_observer`). While recording, each event stores a compact tuple of
node ids and raw snapshots (see :mod:`autodiff.trace._snapshot`); the :class:`Step` objects, the
:class:`Snapshot` statistics and the networkx graph are built on first access. The trace holds
only weak references to engine objects: recording never keeps a graph alive.
"""

from autodiff.trace._checks import TraceFormatError
from autodiff.trace._compact import ForwardOnly, forward_only_note
from autodiff.trace._index import GradFate, NodeState
from autodiff.trace._reader import TraceReader
from autodiff.trace._snapshot import Snapshot
from autodiff.trace._trace import (
    Accumulation,
    Step,
    Trace,
    from_output,
    load,
    record,
    trace_from_npz,
)
from autodiff.trace._view import TraceView, view_for_root
from autodiff.trace.formats.npz import trace_to_npz

__all__ = [
    "Accumulation",
    "ForwardOnly",
    "GradFate",
    "NodeState",
    "Snapshot",
    "Step",
    "Trace",
    "TraceFormatError",
    "TraceReader",
    "TraceView",
    "forward_only_note",
    "from_output",
    "load",
    "record",
    "trace_from_npz",
    "trace_to_npz",
    "view_for_root",
]
