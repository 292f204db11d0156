"""Gradient bugs by name: the problem vocabulary, the detectors' registry, and one run over them.

A **problem** is one finding of one kind (:data:`KINDS`, a contract: ``--check`` prints them and
the Problems panel lists them), with a severity, a one-line message that names the culprit and
what to do, the graph and step where it shows and the nodes involved.

A **detector** is a small function that looks for one kind:

* a *graph* detector reads one graph through its :class:`~autodiff.trace.TraceReader`
  (``detect(graph: GraphInput, limits: Thresholds) -> list[Problem]``), on every source: a typed
  expression, a script's kept passes, a saved trace, micrograd Values, a PyTorch recording;
* a *run* detector reads what a script run logged for every pass, kept or not (``RunInput``).

A detector that cannot run on what it was given raises :class:`CannotRun` with the reason ("the
ReLU outputs were summarised, not kept"), so a clean report can say which detectors ran and which
could not: silence is never a claim that was not checked.

Detectors register themselves with :func:`graph_detector` / :func:`run_detector`;
:func:`detect` runs them all over the graphs of a source and returns a :class:`ProblemReport`.
The detector modules (:mod:`viewer.model.checks.detectors`) are imported by the ``checks``
package itself, so they are registered before this module can be used, and they import this
module without an import circle.
This module is plain Python: no Qt.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = [
    "KINDS",
    "SEVERITIES",
    "CannotRun",
    "GraphInput",
    "Problem",
    "ProblemReport",
    "RunInput",
    "Thresholds",
    "detect",
    "graph_detector",
    "problem_from_json",
    "run_detector",
]

#: The kinds of problem, a contract (``--check`` output, JSON ``kind``, the panel's filter).
KINDS: tuple[str, ...] = (
    "unreached-parameter",
    "carried-gradient",
    "dead-relu",
    "saturated-activation",
    "vanishing-gradient",
    "exploding-gradient",
    "nonfinite",
    "wrong-backward",
    "graph-held",
    "broadcast-shape",
    "stale-value",
    "redundant-computation",
    "diverging-loss",
)

#: Most severe first; a problem's ``severity`` is one of these.
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Problem:
    """One finding. ``graph``: the index of the graph in the source's graph list (0 for a
    single graph; None for a problem of the whole run that no kept graph shows); ``step``: the
    step of that graph's reader where it shows (None: the whole graph); ``nodes``: node ids of
    that graph's reader."""

    kind: str
    severity: str
    message: str
    graph: int | None = None
    step: int | None = None
    nodes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown problem kind {self.kind!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")

    @property
    def rank(self) -> int:
        """0 for an error, 1 a warning, 2 info: sorts most severe first."""
        return SEVERITIES.index(self.severity)

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``--check --json`` prints (its keys are a contract)."""
        return {
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "graph": self.graph,
            "step": self.step,
            "nodes": list(self.nodes),
        }

    def line(self) -> str:
        """The line ``--check`` prints: the kind first; the step counted from 1, as the
        playback and the Problems panel count it (``to_json``'s ``step`` is the index)."""
        where = (
            ""
            if self.graph is None
            else f" [graph {self.graph}"
            + ("]" if self.step is None else f", step {self.step + 1}]")
        )
        return f"{self.kind} {self.severity}: {self.message}{where}"


def problem_from_json(data: Any) -> Problem:
    """A Problem from :meth:`Problem.to_json`'s object, checked field by field (a result file
    is data from another process): ValueError names what is wrong."""
    if not isinstance(data, dict):
        raise ValueError("a problem is not an object")
    kind, severity, message = data.get("kind"), data.get("severity"), data.get("message")
    if not isinstance(kind, str) or not isinstance(severity, str) or not isinstance(message, str):
        raise ValueError("a problem's kind, severity or message is not text")
    graph, step, nodes = data.get("graph"), data.get("step"), data.get("nodes", [])
    for name, value in (("graph", graph), ("step", step)):
        if value is not None and type(value) is not int:
            raise ValueError(f"a problem's {name} is not an integer")
    if not isinstance(nodes, list) or any(type(n) is not int for n in nodes):
        raise ValueError("a problem's nodes are not a list of integers")
    return Problem(kind, severity, message, graph, step, tuple(nodes))


class CannotRun(Exception):
    """Raised by a detector that cannot look at what it was given; the text says why."""


@dataclass(frozen=True)
class Thresholds:
    """When a detector speaks up. Documented in the README and configurable (the app's
    ``[problems]`` settings, ``--check``'s defaults are these)."""

    dead_fraction: float = 0.5  # dead-relu: this share of a layer's units zero for every sample
    saturated_fraction: float = 0.5  # saturated-activation: this share of outputs in the flat
    saturated_level: float = 0.97  # region: |tanh| above this, sigmoid within 1 - this of 0/1
    min_batch: int = 8  # dead-relu: fewer samples than this say nothing about "every sample"
    saturated_min_elements: int = 16  # saturated-activation: smaller outputs are not a layer
    redundant_min_elements: int = 2  # redundant-computation: a warning from this many elements
    vanishing_orders: float = 4.0  # vanishing-gradient: this many orders below the largest layer
    exploding_ratio: float = 10.0  # exploding-gradient: |grad| over |param| above this
    exploding_floor: float = 10.0  # exploding-gradient: and the gradient's RMS above this
    diverging_passes: int = 5  # diverging-loss: the loss grew over this many passes in a row
    diverging_factor: float = 2.0  # diverging-loss: ... and by this factor over them
    budget_seconds: float = 10.0  # the time the graph detectors may take over one source

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> Thresholds:
        """Thresholds from settings: unknown names and values that are not positive numbers are
        ignored (the default stays)."""
        known = {f.name: f for f in fields(cls)}
        chosen: dict[str, Any] = {}
        for name, value in values.items():
            if name not in known:
                continue
            default = getattr(cls(), name)
            try:
                number = type(default)(value)
            except (TypeError, ValueError):
                continue
            if number > 0:
                chosen[name] = number
        return replace(cls(), **chosen)


@dataclass(frozen=True)
class GraphInput:
    """One graph for the graph detectors. ``graph``: its index in the source's graph list;
    ``title``: its title there (``#12 · iter 11 · loss 0.42``); ``source``: ``"engine"``,
    ``"micrograd"``, ``"torch"`` or ``"trace"`` (a saved trace); ``script``: the script's path
    when the graph came from one (the messages name its lines); ``number``: the pass's number
    in the run when it is one of a script's passes (a problem seen in several graphs says in
    which pass it showed first)."""

    reader: Any  # a TraceReader
    graph: int = 0
    title: str = ""
    source: str = "engine"
    script: str | None = None
    number: int | None = None  # the pass's number in the run (from 1); None: graph + 1


@dataclass(frozen=True)
class RunInput:
    """What a script run logged for every pass (kept or not), for the run detectors.
    ``numbers[i]`` is pass i's number (from 1), ``losses``/``flags`` its loss and flags
    (:mod:`viewer.model.scripts.pass_sampling`'s FLAG_*), ``graph_of_pass`` the graph list index
    of each kept pass by number."""

    losses: Sequence[float] = ()
    flags: Sequence[int] = ()
    numbers: Sequence[int] = ()
    graph_of_pass: dict[int, int] = field(default_factory=dict)
    script: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the forward-only summary


GraphDetector = Callable[[GraphInput, Thresholds], list[Problem]]
RunDetector = Callable[[RunInput, Thresholds], list[Problem]]

_GRAPH: dict[str, GraphDetector] = {}
_RUN: dict[str, RunDetector] = {}


def graph_detector(kind: str) -> Callable[[GraphDetector], GraphDetector]:
    """Register ``fn`` as the graph detector of ``kind`` (one per kind)."""
    if kind not in KINDS:
        raise ValueError(f"unknown problem kind {kind!r}")

    def register(fn: GraphDetector) -> GraphDetector:
        _GRAPH[kind] = fn
        return fn

    return register


def run_detector(kind: str) -> Callable[[RunDetector], RunDetector]:
    """Register ``fn`` as the run detector of ``kind`` (one per kind)."""
    if kind not in KINDS:
        raise ValueError(f"unknown problem kind {kind!r}")

    def register(fn: RunDetector) -> RunDetector:
        _RUN[kind] = fn
        return fn

    return register


@dataclass
class ProblemReport:
    """The problems of a source, most severe first, and what was looked at: ``ran`` the kinds
    whose detector ran (on at least one graph, or on the run), ``skipped`` each kind that could
    not run, with why (a kind that ran on some graphs but not others is in both), ``graphs``
    how many graphs were looked at out of ``graphs_total`` (the time budget may stop early).

    ``problems`` says one bug once: the graph detectors' findings of one kind about one culprit
    (the same parameter, layer or op by name, not by node id) in several graphs are one problem
    there, the first graph's, whose message says in how many passes it showed. ``per_graph``
    keeps each graph's own problems as its detectors found them (with its node ids), and the
    run's problems that point at that graph: :meth:`for_graph` is what a graph on screen
    shows. ``named_by`` says, for each graph's own problems (in ``per_graph``'s order), the
    index in ``problems`` of the one that names it (-1: none), so that a graph on screen can
    show the run's line of its bug as its own (:meth:`naming`)."""

    problems: list[Problem] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    graphs: int = 0
    graphs_total: int = 0
    per_graph: dict[int, list[Problem]] = field(default_factory=dict)
    named_by: dict[int, list[int]] = field(default_factory=dict)

    def naming(self, graph: int, position: int) -> Problem | None:
        """The problem of ``problems`` that names graph ``graph``'s own problem at
        ``position`` in :meth:`for_graph` (the one bug's one line), or None."""
        named = self.named_by.get(graph, ())
        k = named[position] if 0 <= position < len(named) else -1
        return self.problems[k] if 0 <= k < len(self.problems) else None

    def as_shown(self, graph: int, position: int) -> Problem | None:
        """Graph ``graph``'s own problem at ``position`` in :meth:`for_graph` as the one line
        of its bug, when the line that names it is another graph's (the first it showed in):
        this graph's step, nodes and message, that line's severity and where else it showed
        (`` (in 5 of 5 kept passes, first in pass #1)``). None when nothing names it or its
        line is this graph's own."""
        own = self.per_graph[graph][position]
        named = self.naming(graph, position)
        if named is None or named.graph == graph or named.graph is None:
            return None
        first = next(
            (
                p
                for k, p in enumerate(self.for_graph(named.graph))
                if self.naming(named.graph, k) is named
            ),
            None,
        )
        where = ""
        if first is not None and named.message.startswith(first.message):
            where = named.message[len(first.message) :]
        return replace(own, severity=named.severity, message=own.message + where)

    def not_run(self) -> tuple[dict[str, str], dict[str, str]]:
        """``skipped`` split in two: the kinds that ran on no graph, and those that ran on
        some graphs but not on others (a forward-only graph beside the training passes), each
        with why."""
        ran = set(self.ran)
        never = {k: why for k, why in self.skipped.items() if k not in ran}
        partly = {k: why for k, why in self.skipped.items() if k in ran}
        return never, partly

    def for_graph(self, graph: int) -> list[Problem]:
        """Graph ``graph``'s own problems, most severe first (none: an empty list)."""
        return list(self.per_graph.get(graph, ()))

    @property
    def worst(self) -> str | None:
        """The most severe severity found, None when nothing was."""
        return min((p.severity for p in self.problems), key=SEVERITIES.index, default=None)

    def above_info(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "info"]

    def summary(self) -> str:
        """One line: what was found, or which detectors ran on how many graphs."""
        count = {s: sum(p.severity == s for p in self.problems) for s in SEVERITIES}
        looked = f"{len(self.ran)} detectors ran on {self.graphs} of {self.graphs_total} graphs"
        if not self.problems and not self.ran:
            # nothing looked: "no problems" would claim a check that did not run
            graphs = f"{self.graphs} of {self.graphs_total} graphs"
            return f"Nothing was checked: no detector ran ({graphs})."
        if not self.problems:
            return f"No problems found: {looked}."
        found = ", ".join(
            f"{n} {s}{'s' if n != 1 and s != 'info' else ''}" for s, n in count.items() if n
        )
        return f"{found}: {looked}."

    def to_json(self) -> dict[str, Any]:
        return {
            "problems": [p.to_json() for p in self.problems],
            "ran": list(self.ran),
            "skipped": dict(self.skipped),
            "graphs": self.graphs,
            "graphs_total": self.graphs_total,
            "per_graph": {
                str(k): [p.to_json() for p in found] for k, found in self.per_graph.items()
            },
            "named_by": {str(k): list(v) for k, v in self.named_by.items()},
        }

    @classmethod
    def from_json(cls, data: Any) -> ProblemReport:
        """Read :meth:`to_json`'s object back, checked: ValueError names what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("the problem report is not an object")
        problems = data.get("problems", [])
        if not isinstance(problems, list):
            raise ValueError("the problem list is not a list")
        ran, skipped = data.get("ran", []), data.get("skipped", {})
        if not isinstance(ran, list) or any(k not in KINDS for k in ran):
            raise ValueError("the detectors that ran are not known kinds")
        if not isinstance(skipped, dict) or any(
            k not in KINDS or not isinstance(v, str) for k, v in skipped.items()
        ):
            raise ValueError("the detectors that could not run are not known kinds")
        graphs, total = data.get("graphs", 0), data.get("graphs_total", 0)
        if type(graphs) is not int or type(total) is not int:
            raise ValueError("the graph counts are not integers")
        listed = [problem_from_json(p) for p in problems]
        per_graph = _per_graph_from_json(data.get("per_graph"), listed)
        named_by = _named_by_from_json(data.get("named_by"), per_graph, len(listed))
        return cls(listed, list(ran), dict(skipped), graphs, total, per_graph, named_by)


def detect(
    graphs: Iterable[GraphInput],
    run: RunInput | None = None,
    limits: Thresholds | None = None,
    *,
    total: int | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> ProblemReport:
    """Run every graph detector over ``graphs`` (until ``limits.budget_seconds`` is spent) and
    every run detector over ``run``; the problems sorted most severe first, then by graph and
    step. A detector that fails with an unexpected error is reported as skipped with the error,
    never raised: a bug in one detector must not hide the others' findings. ``total``: how
    many graphs the source has; given, ``graphs`` may be an iterator that makes each graph when
    asked (a script's views), read only while the budget lasts."""
    limits = limits or Thresholds()
    report = ProblemReport()
    ran: set[str] = set()
    start = clock()
    if total is None:
        graphs = list(graphs)
        total = len(graphs)
    # (given a total, ``graphs`` is read lazily: a graph past the budget is never made)
    report.graphs_total = total
    # each graph problem's culprit, read from its graph while the graph is at hand (a
    # script's views are made one at a time): what the grouping across graphs compares
    culprits: dict[int, tuple[Any, ...]] = {}
    numbers: dict[int, int] = {}
    for graph in graphs:
        if report.graphs and clock() - start > limits.budget_seconds:
            break
        report.graphs += 1
        before = len(report.problems)
        for kind, fn in _GRAPH.items():
            _call(kind, lambda fn=fn, graph=graph: fn(graph, limits), report, ran)
        labels = _Labels(graph.reader)
        for p in report.problems[before:]:
            culprits[id(p)] = labels.culprit(p)
        numbers[graph.graph] = graph.number if graph.number is not None else graph.graph + 1
    if run is not None:
        for kind, fn in _RUN.items():
            _call(kind, lambda fn=fn: fn(run, limits), report, ran)
    report.ran = [k for k in KINDS if k in ran]
    found = _dedupe(report.problems)
    found.sort(key=_order)
    per_graph: dict[int, list[Problem]] = {}
    for p in found:
        if p.graph is not None:
            per_graph.setdefault(p.graph, []).append(p)
    report.per_graph = per_graph
    names: dict[int, Problem] = {}  # id(a graph's own problem) -> the problem naming it
    report.problems = _grouped(found, culprits, numbers, report, names)
    report.problems.sort(key=_order)
    index = {id(p): k for k, p in enumerate(report.problems)}
    report.named_by = {
        graph: [index.get(id(names.get(id(p), p)), -1) for p in own]
        for graph, own in per_graph.items()
    }
    return report


def _order(p: Problem) -> tuple[int, int, int]:
    return (p.rank, _none_last(p.graph), _none_last(p.step))


def _call(kind: str, fn: Callable[[], list[Problem]], report: ProblemReport, ran: set[str]) -> None:
    try:
        found = fn()
    except CannotRun as why:
        report.skipped.setdefault(kind, str(why))
        return
    except Exception as error:  # a detector's bug is reported, not raised
        report.skipped.setdefault(kind, f"the detector failed: {type(error).__name__}: {error}")
        return
    ran.add(kind)
    report.problems.extend(found)


def _none_last(value: int | None) -> int:
    return (1 << 62) if value is None else value


def _dedupe(problems: list[Problem]) -> list[Problem]:
    """One problem shown once: the same kind, graph, step, nodes and message."""
    seen: set[tuple[Any, ...]] = set()
    kept = []
    for p in problems:
        key = (p.kind, p.graph, p.step, p.nodes, p.message)
        if key not in seen:
            seen.add(key)
            kept.append(p)
    return kept


# =============================================================================
# One bug, one problem: the same culprit's findings across graphs, grouped
# =============================================================================
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])", re.IGNORECASE)


class _Labels:
    """Names the nodes of one graph's problems by what stays the same from graph to graph:
    a node's name, op and layer (scope path), and for a node that has no name its rank among
    the graph's nodes of that op and layer (the second unnamed ReLU of ``Net/fc2``). Node ids
    differ between graphs; these do not."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._ranks: dict[int, int] | None = None
        self._paths: list[str] | None = None  # the scope paths and each node's scope, read
        self._node_scopes: Any = None  # once per graph (node_scopes() builds an array)

    def culprit(self, p: Problem) -> tuple[Any, ...]:
        """What makes ``p`` the same problem in another graph: its kind and its nodes' labels;
        for a problem with no nodes (or an unreadable graph) its message, numbers left out."""
        if p.nodes:
            try:
                return (p.kind, tuple(self._label(n) for n in p.nodes))
            except Exception:  # a reader that cannot name its nodes: fall back on the message
                pass
        return (p.kind, _NUMBER.sub("#", p.message))

    def _label(self, node: int) -> tuple[Any, ...]:
        reader = self._reader
        info = reader.node(node)
        name = info.get("name") or ""
        op = info.get("op") or ""
        if info.get("kind") != "function" and not op:
            creator = reader.creator_of(node)
            op = (reader.node(creator).get("op") or "") if creator >= 0 else ""
        scope = self._scope(node)
        if name:
            return (info.get("kind"), name, op, scope)
        return (info.get("kind"), "", op, scope, self._rank(node))

    def _scope(self, node: int) -> str:
        if self._paths is None:
            try:
                self._paths = [str(row.path) for row in self._reader.scopes()]
                self._node_scopes = self._reader.node_scopes()
            except Exception:  # a reader without scopes: no layers
                self._paths, self._node_scopes = [], ()
        try:
            return self._paths[int(self._node_scopes[node])]
        except (IndexError, TypeError, ValueError):
            return ""

    def _rank(self, node: int) -> int:
        """The node's place among this graph's nodes of its kind, op and layer, in id order."""
        if self._ranks is None:
            reader = self._reader
            seen: dict[tuple[Any, ...], int] = {}
            ranks: dict[int, int] = {}
            functions = sorted(int(f) for f in reader.functions)
            for f, op in zip(functions, reader.ops(functions), strict=True):
                key = ("function", op, self._scope(f))
                ranks[f] = seen.get(key, 0)
                seen[key] = ranks[f] + 1
            variables = sorted(int(v) for v in reader.variables)
            creators = [reader.creator_of(v) for v in variables]
            made = [c for c in creators if c >= 0]
            op_of = dict(zip(made, reader.ops(made), strict=True))
            for v, creator in zip(variables, creators, strict=True):
                key = ("variable", op_of.get(creator, ""), self._scope(v))
                ranks[v] = seen.get(key, 0)
                seen[key] = ranks[v] + 1
            self._ranks = ranks
        return self._ranks.get(node, -1)


def _grouped(
    found: list[Problem],
    culprits: dict[int, tuple[Any, ...]],
    numbers: dict[int, int],
    report: ProblemReport,
    names: dict[int, Problem],
) -> list[Problem]:
    """``found`` (sorted) with each culprit's graph problems in several graphs made one: the
    first graph's graph, step and nodes, the worst severity, and the message saying in how
    many of the passes looked at it showed and in which first. The run's problems stay as
    they are. ``names`` gets, for each problem made one, id(member) -> that one."""
    groups: dict[tuple[Any, ...], list[Problem]] = {}
    order: list[Problem | tuple[Any, ...]] = []
    for p in found:
        key = culprits.get(id(p))
        if key is None or p.graph is None:
            order.append(p)
            continue
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(p)
    merged: list[Problem] = []
    for item in order:
        if isinstance(item, Problem):
            merged.append(item)
            continue
        members = groups[item]
        graphs = sorted({p.graph for p in members if p.graph is not None})
        first = min(members, key=lambda p: (_none_last(p.graph), _none_last(p.step)))
        if len(graphs) < 2:
            merged.append(first)
            continue
        worst = min((p.severity for p in members), key=SEVERITIES.index)
        spread = _spread(graphs, numbers, report)
        one = replace(first, severity=worst, message=first.message + spread)
        merged.append(one)
        for p in members:
            names[id(p)] = one
    return merged


def _spread(graphs: list[int], numbers: dict[int, int], report: ProblemReport) -> str:
    """`` (in 813 of 1,001 kept passes, first in pass #2)``: where a grouped problem showed."""
    looked = f"{report.graphs:,} kept passes"
    if report.graphs < report.graphs_total:
        looked = f"{report.graphs:,} kept passes looked at, of {report.graphs_total:,};"
    else:
        looked += ","
    first = numbers.get(graphs[0], graphs[0] + 1)
    return f" (in {len(graphs):,} of {looked} first in pass #{first})"


def _named_by_from_json(
    value: Any, per_graph: dict[int, list[Problem]], n_problems: int
) -> dict[int, list[int]]:
    """:attr:`ProblemReport.named_by` read back, checked (one index per problem of the graph,
    each -1 or an index of the list); a report written without it: none."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("the problems' names per graph are not an object")
    named_by: dict[int, list[int]] = {}
    for key, items in value.items():
        if not isinstance(key, str) or not key.isdigit() or not isinstance(items, list):
            raise ValueError("the problems' names per graph are not lists by graph index")
        graph = int(key)
        if len(items) != len(per_graph.get(graph, ())) or any(
            type(k) is not int or not -1 <= k < n_problems for k in items
        ):
            raise ValueError(f"the names of graph {graph}'s problems do not match its problems")
        named_by[graph] = items
    return named_by


def _per_graph_from_json(value: Any, listed: list[Problem]) -> dict[int, list[Problem]]:
    """:attr:`ProblemReport.per_graph` read back, checked (each problem's graph is its key);
    a report written without it (an older result): its listed problems by graph."""
    per_graph: dict[int, list[Problem]] = {}
    if value is None:
        for p in listed:
            if p.graph is not None:
                per_graph.setdefault(p.graph, []).append(p)
        return per_graph
    if not isinstance(value, dict):
        raise ValueError("the problems per graph are not an object")
    for key, items in value.items():
        if not isinstance(key, str) or not key.isdigit() or not isinstance(items, list):
            raise ValueError("the problems per graph are not lists by graph index")
        graph = int(key)
        found = [problem_from_json(p) for p in items]
        if any(p.graph != graph for p in found):
            raise ValueError(f"a problem listed under graph {graph} names another graph")
        per_graph[graph] = found
    return per_graph
