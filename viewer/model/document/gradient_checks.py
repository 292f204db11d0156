"""The gradient check of what a Document shows, and the samples its scripts keep for it.

:func:`check_document` reads what the document shows, checks it
(:func:`viewer.model.checks.gradcheck.check_graph`) and hands the report to the document's
``show_gradient_check``. :class:`ScriptSampling` (:func:`watch_scripts`) has every script the
document prepares keep samples of its Functions, so that a script's graph can be checked after
the script ended (its objects are gone by then).

The checks themselves (:mod:`viewer.model.checks`) know no Document; this module reads one
through :class:`CheckedDocument`, the few attributes it needs.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from autodiff.trace import TraceReader
from viewer.model.checks.function_check import FunctionSampler, describe_error
from viewer.model.checks.gradcheck import check_graph
from viewer.model.checks.report import GradCheckReport
from viewer.model.scripts.run import ScriptResult, ScriptRun
from viewer.model.signals import Signal

if TYPE_CHECKING:
    from viewer.model.scripts.process import ScriptProcess

__all__ = ["CheckedDocument", "ScriptSampling", "check_document", "samples_for", "watch_scripts"]


class CheckedDocument(Protocol):
    """What the check reads of a :class:`~viewer.model.document.document.Document`."""

    scene: Any
    trace: TraceReader
    kind: str
    path: Path | None
    program: Any
    evaluation: Any
    leaf_values: dict[str, Any]
    script_run: Any
    script_result: ScriptResult | None
    script_started: Signal

    def show_gradient_check(self, report: GradCheckReport) -> None: ...

    def fail(self, error: BaseException) -> bool: ...


def check_document(document: CheckedDocument, **options: Any) -> GradCheckReport | None:
    """Check what ``document`` shows (:func:`check_graph`: a typed expression at its current
    leaf values, a script's graph with the samples its run sent back, any other trace on its
    live objects), colour its scene and put the summary on its status line
    (:meth:`Document.show_gradient_check`), and return the report. On a problem,
    ``error_raised`` carries a ValueError that says what is missing, and None is returned.
    """
    if document.scene is None or document.trace is None:
        return _refuse(document, "there is no graph to check: type an expression or open one")
    run = document.script_run
    if run is not None and run.running:
        return _refuse(document, "a script is running; wait for it or cancel it first")
    program = document.program if document.kind == "expression" else None
    values = None
    if program is not None:
        evaluation = document.evaluation
        values = dict(evaluation.values) if evaluation is not None else dict(document.leaf_values)
    result = document.script_result
    samples = result.samples if document.kind == "script" and result is not None else None
    path = document.path
    saved = document.kind == "trace" and path is not None and path.suffix.lower() == ".json"
    # a trace recorded in this process, not read from a file nor sent by a script's worker
    here = document.kind == "trace" and path is None
    try:
        report = check_graph(
            document.trace,
            program,
            values,
            samples=samples,
            saved=saved,
            classes_here=here,
            **options,
        )
    except Exception as e:  # ExpressionError, or a bug in a check: the app stays up
        return _refuse(document, f"the gradient check failed: {describe_error(e)}")
    document.show_gradient_check(report)
    return report


def _refuse(document: CheckedDocument, message: str) -> None:
    document.fail(ValueError(message))


# =============================================================================
# Scripts: samples kept while they ran
# =============================================================================
class ScriptSampling:
    """Has every script run a Document prepares keep samples of its Functions (a
    :class:`FunctionSampler` of ``per_class`` calls per class in its worker, sent back as
    ``result.samples``), so that :func:`check_document` can check a script's graph after the
    script ended.

    It is the slot of ``document.script_started``; a Signal holds a callable object strongly,
    so the document keeps it for as long as it lives. :meth:`close` stops it.
    """

    def __init__(self, document: CheckedDocument, per_class: int = 2) -> None:
        self.document = document
        self.per_class = per_class
        document.script_started.connect(self)

    def __call__(self, run: ScriptRun | ScriptProcess) -> None:
        run.sample_functions = self.per_class
        run.finished.connect(_note_samples)

    def close(self) -> None:
        """Runs prepared from now on keep no samples."""
        self.document.script_started.disconnect(self)


def watch_scripts(document: CheckedDocument, per_class: int = 2) -> ScriptSampling:
    """Have every script ``document`` prepares keep samples for a later check: the
    :class:`ScriptSampling` of the document (call once per Document; the window does)."""
    return ScriptSampling(document, per_class)


# The watched runs that sent samples back, weakly (their samples go with them), for
# samples_for(trace) alone: a bare trace has no link to the result it came with. Not by trace:
# a worker's run reads its trace only when a graph of it is shown. The checks never read this
# list; they are given the samples (check_document takes them from the document's
# script_result).
_SENT: list[weakref.ref[ScriptResult]] = []


def _note_samples(result: ScriptResult) -> None:
    if result.samples is not None:
        _SENT[:] = [*(r for r in _SENT if r() is not None), weakref.ref(result)]


def samples_for(trace: TraceReader) -> FunctionSampler | None:
    """The samples sent back by the watched script run that recorded ``trace`` (a Trace, or a
    TraceView of one of its graphs); None if none."""
    for ref in reversed(_SENT):
        result = ref()
        if result is not None and result.is_head(trace):  # a TraceView: its whole trace
            return result.samples
    return None
