"""Typed programs as jobs: the editor's text, a program file or an example, parsed into an
:class:`ExpressionJob` (the program, the leaf values, the budgets, and the title and file the
graph will carry). A job runs on any thread and gives back its graph as a
:class:`~viewer.model.document.pending.PendingGraph`, or its error; the Document runs it (here,
or on its ``runner`` when the program is not quick) and installs what it gives.
A leaf's new value is written into the program's text (:func:`leaf_edit`), so that the text
stays the one truth of what runs. Nothing here reads or writes the Document.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
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

__all__ = ["ExpressionJob", "SourceEdit", "job_of_source", "leaf_edit", "leaf_value"]


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
        self.source_edit: SourceEdit | None = None  # the leaf edit this run is the program of

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
    keep_step: bool = False,
) -> ExpressionJob:
    """A job of the program ``source`` with the ``leaf_values`` it has a leaf for;
    ExpressionError when it does not parse. ``keep_step``: the same program with other
    values (its graph keeps the playback position and the selection)."""
    try:
        program = parse(source)
        values = {k: v for k, v in leaf_values.items() if k in program.leaves}
        return ExpressionJob(program, values, dict(options), keep_step, title, path)
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


@dataclass(frozen=True)
class SourceEdit:
    """Leaf ``name`` set to ``value`` in the program text ``before``: the characters
    ``before[start:end]`` replaced by ``replacement`` (Python string offsets)."""

    before: str
    start: int
    end: int
    replacement: str
    name: str
    value: str  # the value as written into the text

    @property
    def after(self) -> str:
        return self.before[: self.start] + self.replacement + self.before[self.end :]


_NEWLINE = re.compile(r"\r\n|\r|\n")  # what ends a line for ast's line numbers


def leaf_edit(source: str, name: str, value: str) -> SourceEdit:
    """Leaf ``name`` of the program ``source`` set to ``value`` (text like ``"2"`` or
    ``"[1, 2]"``), in the text: only the right side of its assignment ``name = ...`` changes
    (comments, spacing and the other lines stay), or, for a leaf the program never assigns,
    ``name = value`` goes on a line of its own above the statement that first uses it.
    ExpressionError when ``source`` does not parse, has no leaf ``name`` or ``value`` is not
    a constant."""
    written = _constant_text(name, value)
    try:
        program = parse(source)
    except ExpressionError as e:
        raise ExpressionError(
            f"the program in the editor does not parse (line {e.line}: {e.message}); fix it, "
            f"then set {name} again",
            e.line,
            e.col,
        ) from None
    if name not in program.leaves:
        raise ExpressionError(f"{name} is not a variable of the program in the editor")
    starts = [0] + [m.end() for m in _NEWLINE.finditer(source)]

    def offset(line: int, byte_col: int) -> int:
        begin = starts[line - 1]
        end = starts[line] if line < len(starts) else len(source)
        return begin + len(source[begin:end].encode("utf-8")[:byte_col].decode("utf-8", "ignore"))

    statements = program.statements
    for statement in statements:
        if id(statement) in program.leaf_statements and statement.targets[0].id == name:
            rhs = statement.value
            start = offset(rhs.lineno, rhs.col_offset)
            end = offset(rhs.end_lineno or rhs.lineno, rhs.end_col_offset or rhs.col_offset)
            return SourceEdit(source, start, end, written, name, written)
    first = next(
        i
        for i, statement in enumerate(statements)
        if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(statement))
    )
    # a statement that shares its first line with the one before (``a = 1; y = x``, or a
    # continued line) is preceded by the new line too
    while first > 0 and (statements[first - 1].end_lineno or 0) >= statements[first].lineno:
        first -= 1
    at = starts[statements[first].lineno - 1]
    return SourceEdit(source, at, at, f"{name} = {written}\n", name, written)


def _constant_text(name: str, value: str) -> str:
    """``value`` as it will read in the program: the constant as typed, without the spaces
    and comments around it; ExpressionError when it is not a constant."""
    try:
        parse_value(value)
    except ExpressionError as e:
        raise ExpressionError(f"value of {name}: {e.message}", e.line, e.col) from None
    node = ast.parse(value).body[0].value  # parse_value saw one expression statement
    return ast.get_source_segment(value, node) or value.strip()
