"""Typed programs as jobs: the editor's text, a program file or an example, parsed into an
:class:`ExpressionJob` (the program, the leaf values, the budgets, and the title and file the
graph will carry). A job runs on any thread and gives back its graph as a
:class:`~viewer.model.document.pending.PendingGraph`, or its error; the Document runs it (here,
or on its ``runner`` when the program is not quick) and installs what it gives.
Nothing here reads or writes the Document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from viewer.model.document.pending import PendingGraph
from viewer.model.expression.program import (
    Budget,
    Evaluation,
    ExpressionError,
    Program,
    parse,
    parse_value,
)

__all__ = ["ExpressionJob", "job_of_source", "leaf_value"]


class ExpressionJob:
    """A typed program to run off the GUI thread (on :attr:`Document.runner`, as the argument
    of :func:`~viewer.model.document.work.run_program`): :meth:`run` on any thread,
    :meth:`cancel` from any thread (the run stops at its next operation), then
    :meth:`Document.apply_expression` on the GUI thread.

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

    def graph(self) -> PendingGraph:
        """The graph the run made (call once it ran without an error); its note is the
        run's warning about a NaN or an infinity, if any."""
        evaluation = self.evaluation
        w = evaluation.nonfinite
        return PendingGraph(
            evaluation.trace,
            self.title,
            "expression",
            self.path,
            evaluation=evaluation,
            program=self.program,
            keep_step=self.keep_step,
            note=f"Line {w.line}: {w.message}" if w is not None else None,
        )


def job_of_source(
    source: str,
    leaf_values: dict[str, NDArray[np.float64]],
    options: dict,
    title: str,
    path: Path | None = None,
) -> ExpressionJob:
    """A job of the program ``source`` with the ``leaf_values`` it has a leaf for;
    ExpressionError when it does not parse."""
    try:
        program = parse(source)
        values = {k: v for k, v in leaf_values.items() if k in program.leaves}
        return ExpressionJob(program, values, dict(options), False, title, path)
    except ExpressionError:
        raise
    except Exception as e:  # a hole in the language's checks: still no crash
        message = f"the program could not run: {type(e).__name__}: {e}"
        raise ExpressionError(message[:500], 1, 1) from None


def leaf_value(program: Program | None, name: str, value: Any) -> NDArray[np.float64]:
    """``value`` (a number, an array, or text like ``"[1, 2]"``) as the value of leaf
    ``name`` of ``program``; ExpressionError when it is no leaf or the value does not parse."""
    if program is None or name not in program.leaves:
        raise ExpressionError(f"{name} is not a variable of the expression")
    try:
        return parse_value(value)
    except ExpressionError as e:
        raise ExpressionError(f"value of {name}: {e.message}", e.line, e.col) from None
