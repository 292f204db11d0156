"""Typed programs into the Document: the editor's text, a program file or an example, parsed,
run (here, or on the Document's ``expression_runner`` when the program is not quick) and handed
to :meth:`Document.load_graph <viewer.model.document.document.Document.load_graph>`, and the
re-runs with
edited leaf values.

The path from the editor is one straight line: :meth:`ExpressionLoader.run` parses, builds an
:class:`ExpressionJob` (the program, the leaf values, the budgets, and the title and file the
graph will carry), runs it and shows it. An error leaves the previous graph and the typed text
alone; a leaf edit or a program file's forgotten leaf values are put back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from viewer.model.expression.program import (
    Budget,
    Evaluation,
    ExpressionError,
    Program,
    parse,
    parse_value,
)

if TYPE_CHECKING:
    from viewer.model.document.document import Document

__all__ = ["ExpressionJob", "ExpressionLoader"]


class ExpressionJob:
    """A typed program to run off the GUI thread (:attr:`Document.expression_runner`):
    :meth:`run` on any thread, :meth:`cancel` from any thread (the run stops at its next
    operation), then :meth:`Document.apply_expression` on the GUI thread.

    It holds plain data only (the program, its values, its budget, what the run made), never
    the Document: the worker that runs it must reach nothing of the views.
    """

    def __init__(
        self,
        program: Program,
        values: dict,
        options: dict,
        keep_step: bool,
        title: str,
        path: Path | None = None,
    ) -> None:
        self.program = program
        self.values = values
        self.options = options
        self.keep_step = keep_step
        self.title = title
        self.path = path  # the program file the graph comes from (None: typed)
        self.budget = Budget(options.pop("element_budget"), options.pop("step_budget"))
        self.evaluation: Evaluation | None = None
        self.error: ExpressionError | None = None
        self.done = False

    def run(self) -> None:
        try:
            self.evaluation = self.program.run(self.values, budget=self.budget, **self.options)
        except ExpressionError as e:
            self.error = e
        except Exception as e:  # a hole in the checks: still an error, never a crash
            self.error = ExpressionError(f"the program could not run: {type(e).__name__}: {e}")
        finally:
            self.done = True

    def cancel(self) -> None:
        self.budget.cancel()

    @property
    def cancelled(self) -> bool:
        return self.budget.cancelled


class ExpressionLoader:
    """The typed programs of one Document (it reads the document's text, leaf values, budgets
    and runners, and writes the text, the leaf values and the job in progress)."""

    def __init__(self, document: Document) -> None:
        self.document = document
        # What to put back when the running job fails or is cancelled (a leaf edit's old
        # value); kept here, not on the job, which the worker holds.
        self._undo: Callable[[], None] | None = None

    def run(self, text: str | None = None) -> bool:
        """Parse and evaluate ``text`` (default: the document's :attr:`source`) and show its
        graph.

        On an error the previous graph stays, ``error_raised`` carries the ExpressionError
        (line and column for the editor) and False is returned.
        """
        doc = self.document
        path = doc.path if doc.kind == "expression" else None
        return self._start(text, path, path.name if path is not None else "expression")

    def load(self, text: str, path: Path | None = None, title: str = "") -> bool:
        """Replace the editor's text with ``text`` (from a file or an example) and run it;
        edited leaf values are forgotten. On an error the text stays (the user sees the error
        in it) and the rest of the document is as it was."""
        doc = self.document
        kept = doc.leaf_values
        doc.leaf_values = {}

        def undo() -> None:
            doc.leaf_values = kept

        default = path.name if path is not None else "expression"
        return self._start(text, path, title or default, undo)

    def set_leaf_value(self, name: str, value: Any) -> bool:
        """Set a leaf's value (a number, an array, or text like ``"[1, 2]"``) and re-run the
        current program, keeping the playback position. False (and ``error_raised``) when the
        value does not parse or the run fails; nothing changes then."""
        doc = self.document
        if doc.program is None or name not in doc.program.leaves:
            return doc.fail(ExpressionError(f"{name} is not a variable of the expression"))
        try:
            array = parse_value(value)
        except ExpressionError as e:
            return doc.fail(ExpressionError(f"value of {name}: {e.message}", e.line, e.col))
        return self._rerun_with(lambda values: values.__setitem__(name, array))

    def reset_leaf_values(self) -> bool:
        """Back to the program's defaults and re-run."""
        return self._rerun_with(dict.clear)

    def apply(self, job: ExpressionJob) -> bool:
        """On the GUI thread, after a job of :attr:`Document.expression_runner` ran: show its
        graph, or its error (the previous graph stays). A job that is no longer the current
        one is ignored."""
        doc = self.document
        if job is not doc.expression_job:
            return False
        doc.expression_job = None
        undo, self._undo = self._undo, None
        if (job.cancelled or job.error is not None) and undo is not None:
            undo()
            doc.leaves_changed.emit(doc.leaf_rows())
        if job.cancelled:
            doc.status_changed.emit("Program cancelled; the previous graph stays")
            if job.evaluation is not None:
                job.evaluation.release()
            return False
        return self._show(job)

    def cancel(self) -> None:
        """Stop the program running on the worker (it stops at its next operation)."""
        doc = self.document
        if doc.expression_job is not None:
            doc.expression_job.cancel()
            doc.status_changed.emit("Cancelling the program…")

    # ------------------------------------------------------------------ the one path
    def _start(
        self,
        text: str | None,
        path: Path | None,
        title: str,
        undo: Callable[[], None] | None = None,
    ) -> bool:
        """Parse ``text`` (kept as the document's source whatever happens) and run it."""
        doc = self.document
        if text is not None:
            doc.source = text
        try:
            job = self._job_of_source(title, path)
        except ExpressionError as e:
            if undo is not None:
                undo()
            return doc.fail(e)
        return self._run(job, undo)

    def _job_of_source(self, title: str, path: Path | None) -> ExpressionJob:
        """A job of the document's source; ExpressionError when it cannot run now."""
        doc = self.document
        busy = doc.busy_error()
        if busy is not None:
            raise busy
        try:
            program = parse(doc.source)
            values = {k: v for k, v in doc.leaf_values.items() if k in program.leaves}
            return ExpressionJob(program, values, self._options(), False, title, path)
        except ExpressionError:
            raise
        except Exception as e:  # a hole in the language's checks: still no crash
            message = f"the program could not run: {type(e).__name__}: {e}"
            raise ExpressionError(message[:500], 1, 1) from None

    def _rerun_with(self, change: Callable[[dict], None]) -> bool:
        """Re-run the program with ``change`` made to the leaf values; the change is undone
        when the run fails or is cancelled. A program that is not quick runs on
        :attr:`Document.expression_runner` (True means it started; its graph comes later)."""
        doc = self.document
        program = doc.program
        if program is None:
            return False
        busy = doc.busy_error()
        if busy is not None:
            return doc.fail(busy)
        saved = dict(doc.leaf_values)

        def undo() -> None:
            doc.leaf_values.clear()
            doc.leaf_values.update(saved)

        change(doc.leaf_values)
        values = {k: v for k, v in doc.leaf_values.items() if k in program.leaves}
        job = ExpressionJob(program, values, self._options(), True, doc.title, doc.path)
        return self._run(job, undo)

    def _run(self, job: ExpressionJob, undo: Callable[[], None] | None) -> bool:
        """Run ``job`` here and show it, or hand a program that is not quick to
        :attr:`Document.expression_runner` (True: it started; its graph comes later).
        ``undo`` puts the leaf values back if the run fails or is cancelled."""
        doc = self.document
        if doc.expression_runner is not None and not job.program.quick():
            doc.expression_job = job
            self._undo = undo
            doc.status_changed.emit("Running the program… (Cancel stops it)")
            doc.expression_runner(job)
            return True
        job.run()
        if job.error is not None and undo is not None:
            undo()
        return self._show(job)

    def _show(self, job: ExpressionJob) -> bool:
        doc = self.document
        if job.error is not None:
            return doc.fail(job.error)
        evaluation = job.evaluation
        doc.load_graph(
            evaluation.trace,
            job.title,
            "expression",
            job.path,
            evaluation=evaluation,
            program=job.program,
            keep_step=job.keep_step,
        )
        if evaluation.nonfinite is not None:
            w = evaluation.nonfinite
            doc.status_changed.emit(f"Line {w.line}: {w.message}")
        return True

    def _options(self) -> dict:
        doc = self.document
        return {
            "retain_grad": doc.retain_grad,
            "max_array_size": doc.max_array_size,
            "element_budget": doc.element_budget,
            "step_budget": doc.step_budget,
        }
