"""Where the Document's problem report comes from: the graphs a source's detectors look at, and
the work that runs them off the GUI thread.

A typed expression, a saved trace and micrograd Values are one graph each: the detectors run
over each of its backward passes, as ``--check`` does, and their report is moved onto it
(:func:`graph_inputs`). A script's run brings its own report (``ScriptResult.problems``,
made by the worker over the run's kept passes and its pass log); a run without one (an older
result, a run whose detectors did not run) is looked at here, over the graphs whose recordings
are already in memory (:func:`loaded_graphs`): nothing is read from the run's folder for it.

Detection is bounded by ``Thresholds.budget_seconds``; over more than one graph, or a graph
over the Document's ``sync_layout_limit`` nodes, it goes to the Document's runner
(:func:`problem_work`, quiet: the Problems panel says it is looking, no dialog stops the user).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from autodiff.trace import Trace
from viewer.model.checks.pass_graphs import onto_one_graph, pass_inputs
from viewer.model.checks.problems import GraphInput, ProblemReport, Thresholds, detect
from viewer.model.document.work import Outcome, Progress, ShouldCancel, Work

__all__ = [
    "find_problems",
    "graph_inputs",
    "loaded_graphs",
    "problem_work",
    "report_of_result",
    "script_inputs",
]


def report_of_result(result: Any) -> ProblemReport | None:
    """The report a script's run carries (``ScriptResult.problems``: a ProblemReport, or its
    JSON object), or None when the run brought none (or one that does not read back)."""
    problems = getattr(result, "problems", None)
    if isinstance(problems, ProblemReport):
        return problems
    if isinstance(problems, dict):
        try:
            return ProblemReport.from_json(problems)
        except ValueError:
            return None
    return None


def graph_inputs(
    trace: Any, kind: str, title: str, path: Any = None
) -> tuple[Callable[[], Iterator[GraphInput]], int]:
    """The graphs of a typed expression (``kind`` 'expression') or a trace ('trace': a saved
    one when it came from a file, else the engine's or micrograd's Values), made when called,
    and how many: one per backward pass when it holds several, as ``--check`` looks at it
    (:func:`~viewer.model.checks.pass_graphs.pass_inputs`); the report is moved back onto
    the one graph shown (:func:`find_problems` with ``one_graph``)."""
    if trace is None:
        return (lambda: iter(())), 0
    source = "trace" if kind == "trace" and path is not None else "engine"
    roots = len(trace.backward_roots) if isinstance(trace, Trace) else 0
    return (lambda: pass_inputs(trace, title, source)[0]), max(1, roots)


def loaded_graphs(result: Any) -> list[int]:
    """The indexes of ``result``'s graphs whose recordings are in memory (nothing to read
    from the run's folder)."""
    folder = result.folder
    loaded = []
    for index, graph in enumerate(result.graphs):
        if graph.trace is not None:
            loaded.append(index)
        elif graph.segment >= 0:
            if folder is not None and folder.loaded_segment(graph.segment) is not None:
                loaded.append(index)
        elif result.loaded_trace is not None:
            loaded.append(index)
    return loaded


def script_inputs(result: Any) -> Callable[[], list[GraphInput]]:
    """The graphs of a run without a report, made when called (on the worker thread: a view
    of a long run's head trace takes a while), from the recordings already in memory; each
    view is made afresh, never the run's cached one, which the GUI thread reads. What it
    holds is the graphs and their traces, never the run: the run (and its folder) goes when
    the Document lets it go, even while this is still running."""
    held = [
        (index, result.graphs[index], result.trace_of(index)) for index in loaded_graphs(result)
    ]
    script = str(result.path)

    def make() -> list[GraphInput]:
        inputs = []
        for index, graph, trace in held:
            try:
                view = graph.view(trace)
            except Exception:  # a broken recording: the others are still looked at
                continue
            inputs.append(GraphInput(view, index, graph.title, "engine", script))
        return inputs

    return make


def find_problems(
    inputs: Callable[[], Iterable[GraphInput]],
    limits: Thresholds,
    total: int,
    _progress: Progress,
    _should_cancel: ShouldCancel,
    one_graph: bool = False,
) -> ProblemReport:
    """The Work's function: the detectors over what ``inputs`` gives, within the budget.
    ``one_graph``: the inputs are the passes of the one graph shown (:func:`graph_inputs`),
    and the report is moved onto it (:func:`~viewer.model.checks.pass_graphs.onto_one_graph`)."""
    if not one_graph:
        return detect(inputs(), None, limits, total=total)
    readers: dict[int, Any] = {}

    def seen() -> Iterator[GraphInput]:
        for g in inputs():
            readers[g.graph] = g.reader
            yield g

    return onto_one_graph(detect(seen(), None, limits, total=total), readers)


def await_report(pending: Any, _progress: Progress, should_cancel: ShouldCancel) -> Any:
    """The Work's function: waits for the report a script's worker sends after its result
    (a :class:`~viewer.model.scripts.process.PendingProblems`), stopping its detectors when
    cancelled. The report, or why none came (a string)."""
    while not pending.wait(0.1):
        if should_cancel():
            pending.stop()
            pending.wait(5.0)
            break
    if pending.report is not None:
        return pending.report
    return pending.error or "the run brought none"


def pending_report(result: Any) -> Any:
    """The report a script's worker sends after its result
    (:class:`~viewer.model.scripts.process.PendingProblems`; None: the result is the whole
    answer)."""
    return getattr(result, "problems_pending", None)


def report_work(
    pending: Any, finish: Callable[[Outcome], object], cancel: Callable[[], None]
) -> Work:
    """Waiting for a script worker's problem report, which comes after its result."""
    return _problems_work(await_report, (pending,), finish, cancel)


def problem_work(
    inputs: Callable[[], Iterable[GraphInput]],
    limits: Thresholds,
    total: int,
    finish: Callable[[Outcome], object],
    cancel: Callable[[], None],
    one_graph: bool = False,
) -> Work:
    """The detectors over a source too big to look at on the GUI thread."""
    function = functools.partial(find_problems, one_graph=one_graph)
    return _problems_work(function, (inputs, limits, total), finish, cancel)


def _problems_work(
    function: Callable[..., Any],
    args: tuple[Any, ...],
    finish: Callable[[Outcome], object],
    cancel: Callable[[], None],
) -> Work:
    """The runner's quiet ``problems`` work (the Problems panel says it runs; no dialog)."""
    return Work(
        "problems",
        function,
        args,
        "Problems",
        "Looking for problems…",
        0,
        finish,
        cancel,
        quiet=True,
    )
