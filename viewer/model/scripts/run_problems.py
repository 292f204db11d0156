"""A script run's problems: every detector over the run's kept graphs and its pass log.

:func:`script_problems` runs at the end of a run, on the run's thread (in the script worker, or
in this process for :class:`~viewer.model.scripts.run.ScriptRun`), once the graphs are
collected and the leak audit is done: the graph detectors read each kept graph's
:class:`~autodiff.trace.TraceView` (source ``"engine"`` or ``"torch"``, the script's path),
the run detectors a :class:`~viewer.model.checks.problems.RunInput` built from the
:class:`~viewer.model.scripts.pass_sampling.PassLog` (:func:`run_input`).

Time: like the gradient checks of the script's own Functions (a share of the run's time,
:class:`~viewer.model.checks.function_check.FunctionSampler`), the graph detectors may take
:data:`PROBLEMS_SHARE` of the run's own time plus :data:`PROBLEMS_GRACE` seconds, and never more
than ``Thresholds.budget_seconds``; the flagged graphs (NaN/Inf, wrong backward, held) and the
last one are looked at first, so a budget spent early leaves out only ordinary passes (the
report says how many graphs were looked at). A cancelled run looks at its log only: the worker
has a deadline to meet.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, Protocol

from viewer.model.checks.problems import GraphInput, ProblemReport, RunInput, Thresholds, detect
from viewer.model.scripts.pass_sampling import (
    FLAG_GRADCHECK,
    FLAG_HELD,
    FLAG_NONFINITE,
    PassLog,
)

__all__ = ["PROBLEMS_GRACE", "PROBLEMS_SHARE", "run_input", "script_problems"]

PROBLEMS_SHARE = 0.25
PROBLEMS_GRACE = 1.0  # seconds
_FLAGGED = FLAG_NONFINITE | FLAG_GRADCHECK | FLAG_HELD
_HOLDERS = 3  # what the leak audit found holding graphs: this many named at most


class RunResult(Protocol):
    """What the detectors read of a :class:`~viewer.model.scripts.run.ScriptResult`."""

    path: Any
    graphs: list[Any]
    passes: PassLog | None
    samples: Any
    leak_report: Any
    duration: float
    cancelled: bool

    def trace_of(self, index: int) -> Any: ...


def _view(result: RunResult, index: int) -> Any:
    """Graph ``index``'s view, made afresh: not cached in the result (a long run's thousand
    views would stay in memory with it)."""
    return result.graphs[index].view(result.trace_of(index))


def _views_first(result: RunResult) -> list[int]:
    """The graphs' indexes, the flagged ones and the last first (the budget may end early)."""
    graphs = result.graphs
    first = [i for i, g in enumerate(graphs) if g.flags & _FLAGGED]
    if graphs and len(graphs) - 1 not in first:
        first.append(len(graphs) - 1)
    chosen = set(first)
    return first + [i for i in range(len(graphs)) if i not in chosen]


def _graph_inputs(
    result: RunResult, order: Sequence[int], torch_traces: frozenset[int]
) -> Iterator[GraphInput]:
    """Each graph's view, made when the detectors get to it (one that cannot be read is left
    out: the graph list says so when it is selected)."""
    script = str(result.path)
    for i in order:
        try:
            view = _view(result, i)
        except Exception:
            continue
        graph = result.graphs[i]
        source = "torch" if id(graph.trace) in torch_traces else "engine"
        number = graph.number + 1 if graph.number >= 0 else None
        yield GraphInput(view, i, graph.title, source, script, number)


def run_input(
    result: RunResult,
    *,
    keys: Sequence[int] | None = None,
    key_lines: Sequence[int] | None = None,
    wrong: dict[int, Sequence[str]] | None = None,
    held_long: Sequence[int] | None = None,
    held_in: str | None = None,
) -> RunInput | None:
    """The run detectors' input from ``result``'s pass log (None: no backward pass ran and
    the leak audit found nothing; with no backward pass but an audit's survivors, a RunInput
    of no passes whose ``extra['audit']`` says what survived).
    ``keys``/``key_lines``: each pass's loss line and each line's script line (the
    recording's ``pass_keys``/``key_lines``); ``wrong``: kept pass -> the ops whose check
    failed in it (the recording's ``wrong``); ``held_long``: the passes whose root was alive
    still a pass after the next (the recording's ``held_long``; without it every pass flagged
    held is taken for a leak); ``held_in``: the script's global that held the first of those
    passes' loss, in words (:mod:`~viewer.model.scripts.global_holders`)."""
    log = result.passes
    audit = [] if result.cancelled else _audit(result)
    if log is None or not len(log):
        # no backward ran: only what the leak audit found is left to say (graph-held)
        return RunInput(script=str(result.path), extra={"audit": audit}) if audit else None
    n = len(log)
    graph_of_pass: dict[int, int] = {}
    roots: dict[int, int] = {}
    for i, g in enumerate(result.graphs):
        if g.number >= 0 and g.backward_pass >= 0:
            graph_of_pass[g.number + 1] = i
            roots[i] = int(g.root)
    holders: list[str] = []
    report = result.leak_report
    for survivor in getattr(report, "survivors", ()) or ():
        # the first link of the chain names the holder: "global 'history' (list) [3] -> ..."
        held_by = re.sub(r" \[\d+\]$", "", str(survivor.held_by).split(" -> ")[0])
        if held_by and held_by not in holders and len(holders) < _HOLDERS:
            holders.append(held_by)
    extra: dict[str, Any] = {
        "iterations": log.iteration,
        "sampled": result.samples is not None,
        "samples": result.samples,
        "wrong": dict(wrong or {}),
        "roots": roots,
        "held_by": tuple(holders),
        "audit": audit,
        # (a cancelled run has no time to read graphs: its problems name none of their nodes)
        "op_nodes": {} if result.cancelled else _op_nodes(result, wrong or {}, graph_of_pass),
    }
    if held_long is not None:
        extra["held_long"] = list(held_long)
    if held_in:
        extra["held_in"] = held_in
    if keys is not None and key_lines is not None and len(keys) == n:
        extra["keys"] = list(keys)
        extra["lines"] = list(key_lines)
    return RunInput(
        losses=log.loss,
        flags=log.flags,
        numbers=range(1, n + 1),
        graph_of_pass=graph_of_pass,
        script=str(result.path),
        extra=extra,
    )


def _audit(result: RunResult) -> list[tuple[str, str, int, int | None, tuple[int, ...]]]:
    """What the leak audit found alive once the program's names were dropped, by holder:
    (reason, ``'cycle'`` or ``'referenced'``; the holder, the first link of its chain without
    the item index; how many nodes; the graph (the last that holds any of them); their node
    ids there)."""
    survivors = getattr(result.leak_report, "survivors", ()) or ()
    if not survivors:
        return []
    nodes: set[int] = set()
    graph: int | None = None
    for index in reversed(range(len(result.graphs))):
        try:
            view = _view(result, index)
            nodes = {int(n) for n in view.variables} | {int(n) for n in view.functions}
        except Exception:
            continue
        if any(int(s.node_id) in nodes for s in survivors):
            graph = index
            break
    by_holder: dict[tuple[str, str], list[int]] = {}
    for survivor in survivors:
        first = str(survivor.held_by).split(" -> ")[0]
        holder = re.sub(r" \[\d+\]", "", first)
        by_holder.setdefault((str(survivor.reason), holder), []).append(int(survivor.node_id))
    found = []
    for (reason, holder), ids in by_holder.items():
        inside = tuple(n for n in ids if graph is not None and n in nodes)
        found.append((reason, holder, len(ids), graph, inside))
    return found


def _op_nodes(
    result: RunResult, wrong: dict[int, Sequence[str]], graph_of_pass: dict[int, int]
) -> dict[int, dict[str, tuple[tuple[int, ...], int | None]]]:
    """For the first kept pass where each op failed its check: the op's function nodes in
    that graph and the step of the first one's backward."""
    found: dict[int, dict[str, tuple[tuple[int, ...], int | None]]] = {}
    done: set[str] = set()
    for index in sorted(wrong):
        graph = graph_of_pass.get(index + 1)
        ops = [op for op in wrong[index] if op not in done]
        if graph is None or not ops:
            continue
        try:
            view = _view(result, graph)
            functions = list(view.functions)
            names = view.ops(functions)
        except Exception:
            continue
        for op in ops:
            nodes = tuple(int(f) for f, name in zip(functions, names, strict=True) if name == op)
            if not nodes:
                continue
            step = next(
                (s.index for s in view.steps if s.phase == "backward" and s.function in nodes),
                None,
            )
            found.setdefault(graph, {})[op] = (nodes, step)
            done.add(op)
    return found


def script_problems(
    result: RunResult,
    recording: Any = None,
    torch_traces: frozenset[int] = frozenset(),
    limits: Thresholds | None = None,
    held_in: str | None = None,
) -> ProblemReport:
    """Every detector over ``result``'s graphs and pass log (see the module's docstring).
    ``recording``: the run's :class:`~viewer.model.scripts.pass_recording.PassRecording`, for
    each pass's loss line and the ops that failed their check (without it the detectors fall
    back on the iterations); ``torch_traces``: the ``id()`` of the torch passes' traces;
    ``held_in``: the global that held the first held pass's loss (:func:`run_input`)."""
    limits = limits or Thresholds()
    budget = min(limits.budget_seconds, PROBLEMS_GRACE + PROBLEMS_SHARE * result.duration)
    limits = replace(limits, budget_seconds=budget)
    run = run_input(
        result,
        keys=None if recording is None else recording.pass_keys,
        key_lines=None if recording is None else recording.key_lines,
        wrong=None if recording is None else recording.wrong,
        held_long=None if recording is None else recording.held_long,
        held_in=held_in,
    )
    total = len(result.graphs)
    if result.cancelled:
        return detect((), run, limits, total=total)
    order = _views_first(result)
    return detect(_graph_inputs(result, order, torch_traces), run, limits, total=total)
