"""Work the Document sends off the GUI thread, named by the model; a runner only supplies threads.

A big graph's layout and a slow typed program are each a :class:`Work`: a module-level function
over plain data and its arguments (what a worker thread runs), the progress dialog's words, and
what to do with the :class:`Outcome` on the GUI thread (a method of the Document). The Document
decides what is slow enough to go off the GUI thread and hands that to its one
:class:`Runner`; without a runner it does the work itself, on the caller's thread.

The function and its arguments are all a worker receives: they must reach nothing of Qt (a Qt
object must die on its own thread) and nothing of the Document (whose signals reach the views).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from autodiff.trace import TraceReader
from viewer.model.document.expression_loader import ExpressionJob
from viewer.model.layout.progress import ShouldCancel
from viewer.model.scene.build import first_scene
from viewer.model.scene.scene import Scene

__all__ = [
    "JobCancelled",
    "Outcome",
    "Progress",
    "Runner",
    "ShouldCancel",
    "Work",
    "lay_out",
    "layout_work",
    "program_work",
    "run_program",
]

Progress = Callable[[int, int, str], None]  # done, total, text

LAYOUT_STEPS = 1000  # the layout's progress bar, in thousandths


class JobCancelled(Exception):
    """Raised by a work function that noticed ``should_cancel()``: the outcome is 'cancelled'."""


@dataclass(frozen=True)
class Outcome:
    """How a work ended: ``kind`` 'succeeded' (with its ``result``), 'failed' (with its
    ``error``) or 'cancelled'."""

    kind: str
    result: Any = None
    error: BaseException | None = None


@dataclass(frozen=True, eq=False)
class Work:
    """One piece of work for a :class:`Runner`.

    ``function(*args, progress, should_cancel)`` runs on a worker thread; ``kind`` ('layout',
    'program') says which work it replaces (one of each kind runs at a time); ``title``,
    ``text`` and ``steps`` (0: a busy indicator) are the progress dialog's; ``cancel`` is what
    its Cancel button does and ``finish`` takes the :class:`Outcome`, both on the GUI thread.
    ``quiet``: no dialog (work the user need not wait for, whose view says it runs).
    """

    kind: str
    function: Callable[..., Any]
    args: tuple[Any, ...]
    title: str
    text: str
    steps: int
    finish: Callable[[Outcome], object]
    cancel: Callable[[], None]
    quiet: bool = False


class Runner(Protocol):
    """Runs :class:`Work` off the caller's thread and calls ``work.finish`` back on it."""

    def submit(self, work: Work) -> None:
        """Start ``work``, replacing the work of its kind still running."""

    def cancel(self, kind: str) -> None:
        """Ask the work of ``kind`` running, if any, to stop (its outcome is 'cancelled')."""


def lay_out(
    trace: TraceReader,
    palette: str,
    by_generation: bool,
    progress: Progress,
    should_cancel: ShouldCancel,
) -> Scene:
    """The Scene of ``trace`` laid out whole: building the scene of a big graph takes a while
    too, so it is built here, off the GUI thread."""

    def report(fraction: float) -> None:
        progress(int(fraction * 900), LAYOUT_STEPS, "")  # the scene's last tenth

    try:
        scene = first_scene(
            trace,
            palette,
            scoped=False,
            by_generation=by_generation,
            progress=report,
            should_cancel=should_cancel,
        )
    except Exception as exc:
        if should_cancel():
            raise JobCancelled() from exc
        raise
    if should_cancel():
        raise JobCancelled()
    progress(LAYOUT_STEPS, LAYOUT_STEPS, "")
    return scene


def run_program(job: ExpressionJob, _progress: Progress, _should_cancel: ShouldCancel) -> None:
    """The program's run: the job holds the program, its values and its budget (Cancel reaches
    the run through the budget, at its next engine operation) and keeps what the run made."""
    job.run()


def layout_work(
    trace: TraceReader,
    palette: str,
    by_generation: bool,
    finish: Callable[[Outcome], object],
    cancel: Callable[[], None],
) -> Work:
    """The layout of a graph too big to lay out on the GUI thread."""
    n = len(trace.variables) + len(trace.functions)
    args = (trace, palette, by_generation)
    text = f"Laying out {n:,} nodes…"
    return Work("layout", lay_out, args, "Layout", text, LAYOUT_STEPS, finish, cancel)


def program_work(
    job: ExpressionJob, finish: Callable[[Outcome], object], cancel: Callable[[], None]
) -> Work:
    """The run of a typed program that is not quick."""
    # run_program is looked up here, at each call: a test or a bench may wrap it
    return Work(
        "program", run_program, (job,), "Program", "Running the program…", 0, finish, cancel
    )
