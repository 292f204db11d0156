"""The one reading interface of a recording: what :class:`~autodiff.trace.Trace` (a whole
run) and :class:`~autodiff.trace.TraceView` (one graph of it, steps renumbered from 0) both
answer, and all the viewer reads: a reader is asked, never probed for what it has. Step
indexes are the reader's own; the states, values and gradients are those right after the step
(``-1``: before the first one).

A reader is part of a whole recording, its ``base``: a Trace is its own base, a TraceView's is
the Trace it views; a reader with no recording behind it (nothing to save) answers None. Of
the whole recording it tells where it lies (``global_step``, ``local_step``), which backward
pass its pass 0 is (``pass_offset``), where the program cut history (``cuts``, ``cut_at``)
and which of its nodes are history cut before its graph (``detached``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import os

    import networkx as nx

    from autodiff.trace._index import GradFate, NodeState

__all__ = ["TraceReader"]


@runtime_checkable
class TraceReader(Protocol):
    @property
    def steps(self) -> list[Any]: ...  # Step objects, in order

    @property
    def graph(self) -> nx.MultiDiGraph: ...

    @property
    def variables(self) -> list[int]: ...

    @property
    def functions(self) -> list[int]: ...

    @property
    def backward_roots(self) -> list[int]: ...

    @property
    def base(self) -> Any: ...  # the whole recording (a Trace, which to_json saves), or None

    # the run's number of this reader's backward pass 0 (0 but for a pass recorded alone)
    pass_offset: int

    # False for a recording that keeps no forward value (pytorch.record(statistics_only=True))
    @property
    def values_kept(self) -> bool: ...

    def global_step(self, step_index: int) -> int: ...  # the base's index of a step of this

    def local_step(self, global_index: int) -> int: ...  # this reader's step at/before it, or -1

    def node(self, node_id: int) -> dict[str, Any]: ...

    def edges(self) -> tuple[Any, Any]: ...  # (E, 2) source/target ids and (E,) slots

    def creator_of(self, node_id: int) -> int: ...  # the producing function node, or -1

    def scopes(self) -> list[Any]: ...  # ScopeRow per scope id; 0 is the root

    def node_scopes(self) -> Any: ...  # (n,) scope id per node id of the whole trace

    def parameters(self) -> frozenset[int]: ...  # the Parameter nodes

    def shapes(self, node_ids: Any) -> list[Any]: ...  # node(id)['shape'] of each, fast

    def ops(self, node_ids: Any) -> list[Any]: ...  # node(id)["op"] of each, fast

    def names(self, node_ids: Any) -> list[Any]: ...  # node(id)["name"] of each, fast

    def state_at(self, node_id: int, step_index: int) -> NodeState: ...

    def value_at(self, node_id: int, step_index: int) -> Any: ...  # a Snapshot or None

    def grad_at(self, node_id: int, step_index: int) -> Any: ...  # a Snapshot or None

    def grad_origin(self, node_id: int, step_index: int) -> int | None: ...

    # what becomes of a gradient left over from an ended pass (GRAD_CARRIED / GRAD_PREVIOUS)
    def grad_fate(self, node_id: int, step_index: int) -> GradFate: ...

    def change_points(self, node_id: int) -> list[int]: ...

    def timeline(self, node_id: int) -> list[tuple[int, NodeState]]: ...

    def first_nonfinite(self) -> Any | None: ...  # the first Step with NaN/Inf

    # the inputs of a backward step whose value the program changed after the forward read
    # it (the engine's backward then reads the new one); None: the recording cannot tell
    def stale_inputs(self, step_index: int) -> tuple[int, ...] | None: ...

    def cut_at(self, node_id: int) -> int | None: ...  # the base step its history was cut before

    def cuts(self) -> dict[int, int]: ...  # cut_at of each of this reader's cut variables

    def detached(self) -> frozenset[int]: ...  # nodes of history cut before this reader's graph

    def live(self, node_id: int) -> Any: ...  # the engine object, None once freed

    # a function node's small attributes as recorded ({"c": 2} of Pow; {}: none kept)
    def function_params(self, node_id: int) -> dict[str, Any]: ...

    # the line of the program's source a function node ran on (a variable's: its creator's);
    # None when not recorded (autodiff.trace.record(lines=...) records it)
    def line_of(self, node_id: int) -> int | None: ...

    def alive(self) -> list[int]: ...  # the nodes whose engine object is still alive

    def freed(self, node_id: int) -> bool: ...

    def audit(self) -> Any: ...  # a LeakReport

    def to_dot(self, step: int | None = None) -> str: ...  # values after step (default: last)

    def to_graphml(self, path: str | os.PathLike[str]) -> None: ...
