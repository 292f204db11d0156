"""The one reading interface of a recording: what :class:`~autodiff.trace.Trace` (a whole
run) and :class:`~autodiff.trace.TraceView` (one graph of it, steps renumbered from 0) both
answer, and all the viewer reads. Step indexes are the reader's own; the states, values and
gradients are those right after the step (``-1``: before the first one)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import os

    import networkx as nx

    from autodiff.trace._index import NodeState

__all__ = ["TraceReader", "detached_nodes"]


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

    def change_points(self, node_id: int) -> list[int]: ...

    def timeline(self, node_id: int) -> list[tuple[int, NodeState]]: ...

    def first_nonfinite(self) -> Any | None: ...  # the first Step with NaN/Inf

    def live(self, node_id: int) -> Any: ...  # the engine object, None once freed

    def alive(self) -> list[int]: ...  # the nodes whose engine object is still alive

    def freed(self, node_id: int) -> bool: ...

    def audit(self) -> Any: ...  # a LeakReport

    def to_dot(self, step: int | None = None) -> str: ...  # values after step (default: last)

    def to_graphml(self, path: str | os.PathLike[str]) -> None: ...


def detached_nodes(trace: Any) -> frozenset[int]:
    """The nodes of ``trace`` that are history cut before its graph (a :class:`TraceView`'s
    ``detached()``); none for a whole trace or any other reader."""
    detached = getattr(trace, "detached", None)
    return frozenset(detached()) if callable(detached) else frozenset()
