"""Find a node by its name, its op or its scope path (Ctrl+F), and step through the matches.
A torch recording's nodes are also found by torch's name for them (``AddmmBackward0``).

:class:`FindIndex` holds the searchable text of every node of a trace: the variable's name, the
name the scene shows, the Function's op and the scope path it ran in (``node(nid)["scope"]``;
'' for a trace recorded before scopes). Every node of the trace is searched, also the ones the
scene does not show now (inside a collapsed module box): the caller reveals a match before it
selects it. The text is one lower-cased string, a line per node, so a query is one regular
expression scan and a ``searchsorted`` whatever the size of the graph.

:class:`FindCursor` is the find bar's state: the query, its matches in node-id order (creation
order: inputs before what is computed from them) and which one is current ("3 of 12").
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff.trace import TraceReader
from viewer.model.scene.scene import Scene
from viewer.model.signals import Signal

__all__ = [
    "MAX_ID_DIGITS",
    "MAX_QUERY_CHARS",
    "FindCursor",
    "FindIndex",
    "FindQueryError",
    "match_summary",
]

_ID_QUERY = re.compile(r"#(\d+)")
MAX_ID_DIGITS = 18  # node ids are int64
MAX_QUERY_CHARS = 1000


class FindQueryError(ValueError):
    """A query that cannot be searched; ``short`` is what the find bar's count shows."""

    def __init__(self, message: str, short: str) -> None:
        super().__init__(message)
        self.short = short


def _check_query(query: str) -> None:
    """Raise :class:`FindQueryError` for a query too long to be a name or an id."""
    by_id = _ID_QUERY.fullmatch(query.strip())
    if by_id is not None and len(by_id.group(1)) > MAX_ID_DIGITS:
        raise FindQueryError(
            f"#{by_id.group(1)[:8]}… has {len(by_id.group(1)):,} digits: a node id has at "
            f"most {MAX_ID_DIGITS}",
            "id too long",
        )
    if len(query) > MAX_QUERY_CHARS:
        raise FindQueryError(
            f"a query of {len(query):,} characters: at most {MAX_QUERY_CHARS:,} are searched",
            "query too long",
        )


# Joins a node's fields on its line: no query a person types contains it, so a match never
# spans two fields.
_FIELD_SEP = "\x1f"


def _node_fields(attrs: dict[str, Any], shown: str) -> tuple[str, ...]:
    name = attrs.get("name") or ""
    op = attrs.get("op") or ""
    scope = attrs.get("scope") or ""
    return (str(name), str(shown), str(op), str(scope))


def _scope_paths(trace: TraceReader | None, ids: NDArray[np.int64]) -> list[str] | None:
    """The scope path of each of ``ids`` from the trace's scope table, at once (None: the
    trace has no table, or it does not cover these ids)."""
    if trace is None:
        return None
    table = np.asarray(trace.node_scopes(), dtype=np.int64)
    paths = [row.path for row in trace.scopes()]
    if len(ids) and (ids.min() < 0 or ids.max() >= len(table)):
        return None
    scope_ids = table[ids]
    if len(scope_ids) and (scope_ids.min() < 0 or scope_ids.max() >= len(paths)):
        return None
    return [paths[k] for k in scope_ids.tolist()]


def _torch_names(trace: TraceReader | None) -> dict[int, str]:
    """torch's name of each autograd node a torch recording made (``AddmmBackward0``), so
    that it finds them too; {} for the engine's traces."""
    if trace is None:
        return {}
    names = {}
    for fid in trace.functions:
        name = trace.function_params(fid).get("torch_node")
        if name:
            names[int(fid)] = str(name)
    return names


class FindIndex:
    """The searchable text of every node of ``trace``: its name, its op, its scope path.

    ``scene`` (optional) is a faster source for the nodes it shows as themselves: their name
    or op (``Scene.names``) with the trace's scope table, without ``trace.node()`` (a dict per
    node: over a second at 100 000 nodes). Nodes hidden in a module box, and the ids a box
    stands for, are read with ``trace.node()``. A scene's own nodes that the trace does not
    list (a test's module box) are searched by the name the scene shows."""

    def __init__(self, trace: TraceReader | None, scene: Scene | None = None) -> None:
        ids: list[int] = []
        if trace is not None:
            ids = [int(n) for n in (*trace.variables, *trace.functions)]
        known = set(ids)
        shown: dict[int, str] = {}
        if scene is not None:
            rows = zip(scene.node_ids.tolist(), scene.names, scene.kinds, strict=False)
            for nid, name, kind in rows:
                if kind != "module" or nid not in known:  # a box's id is a hidden node's
                    shown[nid] = name or ""
        ids += [nid for nid in shown if nid not in known]
        self.node_ids: NDArray[np.int64] = np.unique(np.asarray(ids, dtype=np.int64))
        listed = self.node_ids.tolist()
        in_trace = self.node_ids[np.fromiter((n in known for n in listed), bool, len(listed))]
        scopes = _scope_paths(trace, in_trace)
        scope_of = dict(zip(in_trace.tolist(), scopes, strict=True)) if scopes else {}
        # the nodes the scene does not show as themselves (hidden in boxes): their name and
        # op read in bulk where the trace can (node() built a dict a node: 0.35 s at 100k)
        hidden = [
            nid
            for nid in listed
            if nid in known and not (shown.get(nid) is not None and scopes is not None)
        ]
        bulk: dict[int, tuple[str, ...]] = {}
        if hidden and scopes is not None:
            for nid, name, op in zip(hidden, trace.names(hidden), trace.ops(hidden), strict=True):
                bulk[nid] = (str(name or ""), "", str(op or ""), scope_of.get(nid, ""))
        torch_names = _torch_names(trace)
        lines = []
        for nid in listed:
            name = shown.get(nid)
            if nid not in known or (name is not None and scopes is not None):
                # the scene's name is the variable's name or the Function's op (node_name)
                fields: tuple[str, ...] = (name or "", scope_of.get(nid, ""))
            elif nid in bulk:
                fields = bulk[nid]
            else:
                fields = _node_fields(trace.node(nid), name or "")
            if nid in torch_names:
                fields = (*fields, torch_names[nid])
            lines.append(_FIELD_SEP.join(fields))
        self._text = "\n".join(lines).lower()
        lengths = np.fromiter((len(line) + 1 for line in lines), dtype=np.int64, count=len(lines))
        self._starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if len(lines) else lengths

    def __len__(self) -> int:
        return len(self.node_ids)

    def search(self, query: str) -> NDArray[np.int64]:
        """The node ids whose name, shown name, op or scope path contains ``query`` (case
        ignored; surrounding spaces too), in id order. ``#12`` finds node 12. An empty query
        finds nothing; one too long to search raises :class:`FindQueryError`."""
        _check_query(query)
        query = query.strip().lower()
        if not query or len(self.node_ids) == 0:
            return np.zeros(0, dtype=np.int64)
        by_id = _ID_QUERY.fullmatch(query)
        if by_id is not None:
            nid = int(by_id.group(1))
            hit = self.node_ids[np.searchsorted(self.node_ids, nid) :][:1]
            return hit[hit == nid]
        offsets = [m.start() for m in re.finditer(re.escape(query), self._text)]
        if not offsets:
            return np.zeros(0, dtype=np.int64)
        rows = np.searchsorted(self._starts, np.asarray(offsets, dtype=np.int64), side="right") - 1
        return self.node_ids[np.unique(rows)]


def match_summary(position: int, count: int, query: str) -> str:
    """The find bar's count: '3 of 12', 'no match', or '' before anything is typed."""
    if not query.strip():
        return ""
    if count == 0:
        return "no match"
    return f"{position + 1} of {count}"


class FindCursor:
    """A query, its matches and the current one; ``next`` and ``previous`` wrap around.

    Signals: ``matches_changed(cursor)`` (a new query or a new graph), ``current_changed(node
    id | None)`` (the match to show moved)."""

    def __init__(self) -> None:
        self.matches_changed = Signal("matches_changed")
        self.current_changed = Signal("current_changed")
        self._index: FindIndex | None = None
        self._source: tuple[TraceReader | None, Scene | None] = (None, None)
        self.query = ""
        self.matches: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.position = -1
        self.error: FindQueryError | None = None  # the query could not be searched

    # ------------------------------------------------------------------ source
    def set_source(self, trace: TraceReader | None, scene: Scene | None = None) -> None:
        """Search another trace (indexed lazily, on the first query); the query is run again
        there, and the current match stays if the new trace has it. Another scene of the same
        trace (a module opened or closed) changes nothing: every node is searched anyway."""
        if self._source[0] is trace and (trace is not None or self._source[1] is scene):
            self._source = (trace, scene)
            return
        self._source = (trace, scene)
        self._index = None
        if self.query.strip():
            current = self.current
            self._run(self.query, keep=current)

    @property
    def index(self) -> FindIndex:
        if self._index is None:
            self._index = FindIndex(*self._source)
        return self._index

    # ------------------------------------------------------------------ queries
    def search(self, query: str) -> int | None:
        """Find ``query``; the first match becomes current (the first of the graph's own, not
        of a detached history drawn with it). Returns it (None: no match)."""
        self._run(query, keep=None)
        return self.current

    def _run(self, query: str, keep: int | None) -> None:
        self.query = query
        self.error = None
        try:
            self.matches = self.index.search(query) if query.strip() else np.zeros(0, np.int64)
        except FindQueryError as error:
            self.error = error
            self.matches = np.zeros(0, np.int64)
        position = 0 if len(self.matches) else -1
        detached = self._source[0].detached()
        if detached and len(self.matches):  # the graph's own first, not the cut-off history
            matches = self.matches.tolist()
            position = next((i for i, nid in enumerate(matches) if nid not in detached), 0)
        if keep is not None and len(self.matches):
            at = int(np.searchsorted(self.matches, keep))
            if at < len(self.matches) and self.matches[at] == keep:
                position = at
        self.position = position
        self.matches_changed.emit(self)
        self.current_changed.emit(self.current)

    @property
    def count(self) -> int:
        return len(self.matches)

    @property
    def current(self) -> int | None:
        return int(self.matches[self.position]) if 0 <= self.position < self.count else None

    def next(self) -> int | None:
        return self._move(+1)

    def previous(self) -> int | None:
        return self._move(-1)

    def _move(self, delta: int) -> int | None:
        if self.count == 0:
            return None
        self.position = (self.position + delta) % self.count
        self.current_changed.emit(self.current)
        return self.current

    def summary(self) -> str:
        """The find bar's count: '3 of 12', 'no match', why a query is not searched, or ''."""
        if self.error is not None:
            return self.error.short
        return match_summary(self.position, self.count, self.query)
