"""The Document: what the main window shows, as one observable object.

It holds the editor's text, the leaf values, the current trace with its layout and scene, the
playback cursor (with the selection) and the script run (the one in progress and the last
result). The ways of getting a graph are loaders that return what to show and never touch the
Document: :mod:`~viewer.model.document.expression_loader` (typed programs as jobs),
:mod:`~viewer.model.document.file_loader` (files and examples, by what they hold) and
:mod:`~viewer.model.document.script_loader` (what a finished script's result shows); each
gives a :class:`~viewer.model.document.pending.PendingGraph` (or an error), which the Document
lays out and installs. The scene of a graph is built by :mod:`viewer.model.scene.build`,
whichever way it came. Nothing is replaced until the new graph is complete, so an error (a bad
expression, a broken trace file, a failing script) leaves the previous graph on screen and is
reported through ``error_raised`` (:meth:`Document.fail`).

Signals (synchronous, on the caller's thread):

* ``graph_loaded(document)``: a new trace, layout and scene are in place (re-read them).
* ``scene_changed(document)``: the same trace, another scene and layout (a module expanded,
  collapsed, folded or a new depth); playback position, selection and overlays stay.
* ``error_raised(error)``: an ExpressionError (with line/col), TraceFormatError, OSError or
  ScriptError. The previous graph stays.
* ``status_changed(text)``: one line for the status bar.
* ``selection_changed(node_id | None)``: the playback state's signal, re-exported.
* ``leaves_changed(rows)``: the variables table changed (list of :class:`LeafRow`).
* ``source_edited(edit)``: a leaf's value typed in the variables table was written into the
  program's text and that text ran (a :class:`~viewer.model.document.expression_loader.SourceEdit`
  for the editor to make).
* ``layout_started(n_nodes)`` / ``layout_finished(outcome)``: a big graph went to
  :attr:`Document.runner` / its layout ended ('succeeded', 'failed' or 'cancelled').
* ``program_started()`` / ``program_finished(shown)``: a slow program went to
  :attr:`Document.runner` / it ended (``shown``: its graph is on screen).
* ``script_started(run)`` / ``script_finished(result)``: a script run began / ended.
* ``overlays_changed()``: leak flags or gradient-check colours changed on the scene.
* ``leaks_found(report)``: the leak audit after a release ran (report may list nothing).
* ``problems_changed(document)``: the problem report of the source shown, or the marks of the
  graph shown, changed (re-read :meth:`Document.problems`, :attr:`Document.problem_report`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff.leaks import LeakReport
from autodiff.trace import TraceReader
from viewer.model.checks import problem_marks
from viewer.model.checks.gradcheck import apply_overlays
from viewer.model.checks.problem_list import kinds_by_graph
from viewer.model.checks.problems import KINDS, Problem, ProblemReport, Thresholds
from viewer.model.checks.report import GradCheckReport
from viewer.model.document import (
    data_export,
    expression_loader,
    file_loader,
    problem_finder,
    scope_control,
    script_loader,
)
from viewer.model.document.expression_loader import ExpressionJob, SourceEdit
from viewer.model.document.file_loader import (
    EXPRESSION_SUFFIXES,
    SCRIPT_SUFFIXES,
    TRACE_SUFFIXES,
    ProgramText,
    ScriptFile,
)
from viewer.model.document.pending import PendingGraph
from viewer.model.document.playback import PlaybackState
from viewer.model.document.script_loader import ScriptError
from viewer.model.document.work import Outcome, Runner, layout_work, program_work
from viewer.model.explain import Chain, StepExplanation, chain, explain_step
from viewer.model.expression.program import (
    MAX_STEPS,
    MAX_TOTAL_ELEMENTS,
    Evaluation,
    ExpressionError,
    Program,
    format_value,
)
from viewer.model.layout.compute import GraphLayout
from viewer.model.panels.inspector import NodeInfo, inspect, inspect_module
from viewer.model.scene.build import first_scene, rescoped_scene, scene_of
from viewer.model.scene.scene import Frame, Scene
from viewer.model.scopes.tree import ScopeModel, ScopeNode
from viewer.model.scripts.pass_sampling import DEFAULT_MAX_PASSES
from viewer.model.scripts.process import ScriptProcess
from viewer.model.scripts.run import ScriptResult
from viewer.model.signals import Signal

__all__ = [
    "EXPRESSION_SUFFIXES",
    "SCRIPT_SUFFIXES",
    "TRACE_SUFFIXES",
    "Document",
    "ExpressionJob",
    "LeafRow",
    "ScriptError",
]

SYNC_LAYOUT_LIMIT = 1000  # nodes; bigger graphs go to the runner when one is set


@dataclass(frozen=True)
class LeafRow:
    """A row of the variables table."""

    name: str
    value: NDArray[np.float64]
    text: str  # the value as the user may type it back ("0.5", "[1, 2]")
    shape: tuple[int, ...]
    default: bool  # the program's default (not edited by the user)


class Document:
    """Source text, leaf values, trace, layout, scene, playback and selection of one window."""

    def __init__(self, palette: str = "light", max_array_size: int = 4096) -> None:
        self.graph_loaded = Signal("graph_loaded")
        self.scene_changed = Signal("scene_changed")
        self.error_raised = Signal("error_raised")
        self.status_changed = Signal("status_changed")
        self.leaves_changed = Signal("leaves_changed")
        self.source_edited = Signal("source_edited")
        self.layout_started = Signal("layout_started")
        self.layout_finished = Signal("layout_finished")
        self.program_started = Signal("program_started")
        self.program_finished = Signal("program_finished")
        self.script_started = Signal("script_started")
        self.script_finished = Signal("script_finished")
        self.overlays_changed = Signal("overlays_changed")
        self.leaks_found = Signal("leaks_found")
        self.problems_changed = Signal("problems_changed")
        self.playback = PlaybackState()
        self.selection_changed = self.playback.selection_changed

        self.palette = palette
        self.max_array_size = max_array_size
        self.retain_grad = False
        self.source = ""  # the editor's text (as typed, run or not), kept when it does not parse
        self.leaf_values: dict[str, NDArray[np.float64]] = {}  # values the user edited
        self.title = ""
        self.kind = ""  # 'expression' | 'trace' | 'script' | ''
        self.path: Path | None = None
        self.program: Program | None = None
        self.evaluation: Evaluation | None = None
        self.trace: TraceReader = None
        self.layout: GraphLayout | None = None
        self.scene: Scene | None = None
        self.last_error: BaseException | None = None
        self.leak_report: Any = None
        self.script_run: ScriptProcess | None = None  # the run in progress, if any
        # a script's resident memory limit in MiB (None: the default, 800; 0: none)
        self.script_memory_mb: int | None = None
        # the graphs of about this many backward passes of a run are kept (pass_sampling)
        self.script_max_passes = DEFAULT_MAX_PASSES
        # a typed program's budgets (the window reads them from the settings)
        self.element_budget = MAX_TOTAL_ELEMENTS
        self.step_budget = MAX_STEPS
        self.script_result: ScriptResult | None = None
        # Where the slow work goes (a graph over sync_layout_limit nodes, a program that is not
        # Program.quick()), set once by the window: the Document names the work and handles
        # its outcome; the runner only supplies the threads. None: all of it runs here.
        self.runner: Runner | None = None
        self.expression_job: ExpressionJob | None = None  # the program running there
        self.sync_layout_limit = SYNC_LAYOUT_LIMIT
        self.layout_by_generation = False  # see compute_layout
        # the array element explanations give numbers for (None: the largest in magnitude)
        self.focus_element: tuple[int, ...] | None = None
        self.gradient_check: GradCheckReport | None = None  # the last one of the graph shown
        # The problems of the source shown (a typed program, a trace, a script's whole run):
        # the detectors' report (None: not yet, or running) and the existing marks read as
        # problems, by graph (see problems()).
        self.problem_report: ProblemReport | None = None
        self.problem_limits = Thresholds()  # the window reads them from the settings
        self.problems_running = False  # the detectors run on the runner
        self.problem_note = ""  # what the report did not look at, when it is not the whole
        self._problems_of: Any = None  # the ScriptResult or the trace the report is of
        self._problems_token: object = None  # the runner's detectors' work now followed
        self._graph_marks: dict[int, list[Problem]] = {}
        self._flag_marks: list[Problem] = []
        self._pending: PendingGraph | None = None
        # what to put back when the running job fails or is cancelled (a leaf edit's old
        # value); kept here, not on the job, which the worker holds
        self._expression_undo: Callable[[], None] | None = None

    # ------------------------------------------------------------------ state
    @property
    def has_graph(self) -> bool:
        return self.scene is not None

    @property
    def selection(self) -> int | None:
        return self.playback.selection

    @property
    def layout_pending(self) -> bool:
        return self._pending is not None

    def frame(self) -> Frame | None:
        """The scene's arrays at the current step (None without a graph)."""
        if self.scene is None:
            return None
        return self.scene.frame(self.playback.index)

    def inspect(self, node_id: int | None = None) -> NodeInfo | None:
        """The inspector's data for ``node_id`` (default: the selection) at the current step."""
        node_id = self.selection if node_id is None else node_id
        if node_id is None or self.trace is None:
            return None
        scene = self.scene
        box = scene.index_of(node_id) if scene is not None else -1
        if box >= 0 and scene.module(box) is not None:  # shown as a module box: the box's
            return inspect_module(scene, box, self.playback.index)
        return inspect(self.trace, node_id, self.playback.index)

    def explain_step(self, step_index: int) -> StepExplanation:
        """How backward step ``step_index`` computed each gradient it sent (see
        :mod:`viewer.model.explain`), for the element in focus."""
        return explain_step(self.trace, step_index, self.focus_element, self.gradient_check)

    def chain(self, node_id: int) -> Chain:
        """The chain-rule paths from the graph's output down to ``node_id``, for the element
        in focus, in the backward pass of the current step (the last one before it starts)."""
        return chain(self.trace, node_id, self.focus_element, step=self.playback.index)

    def set_focus_element(self, element: tuple[int, ...] | None) -> None:
        """The array element explanations give numbers for (None: the largest in magnitude)."""
        self.focus_element = None if element is None else tuple(int(i) for i in element)

    def select(self, node_id: int | None) -> None:
        """Select a node by trace node id (None clears)."""
        if node_id is not None and self.scene is not None and self.scene.index_of(node_id) < 0:
            node_id = None
        self.playback.select(node_id)

    def select_index(self, index: int) -> None:
        """Select by the scene's node index, as the view's hit test returns it (-1 clears)."""
        self.select(self.scene.node_id(index) if self.scene is not None and index >= 0 else None)

    def set_palette(self, name: str) -> None:
        self.palette = name
        if self.scene is not None:
            self.scene.set_palette(name)
            self._mark_scene()  # a problem's colour is the palette's
            self.overlays_changed.emit()  # badges take the palette's colours

    def leaf_rows(self) -> list[LeafRow]:
        """The variables table: each leaf of the current program with its value."""
        program = self.program
        if program is None:
            return []
        rows = []
        for name in program.leaves:
            edited = name in self.leaf_values
            value = self.leaf_values[name] if edited else program.defaults[name]
            rows.append(LeafRow(name, value, _value_text(value), value.shape, not edited))
        return rows

    # ------------------------------------------------------------------ typed programs
    # A program runs as an ExpressionJob: here, or on the runner when it is not quick.
    # An error leaves the previous graph and the typed text alone; a leaf edit or a program
    # file's forgotten leaf values are put back.
    def run_expression(self, text: str | None = None) -> bool:
        """Parse and evaluate ``text`` (default: :attr:`source`) and show its graph.

        On an error the previous graph stays, ``error_raised`` carries the ExpressionError
        (line and column for the editor) and False is returned.
        """
        path = self.path if self.kind == "expression" else None
        return self._start_expression(text, path, path.name if path is not None else "expression")

    def load_expression(self, text: str, path: Path | None = None, title: str = "") -> bool:
        """Replace the editor's text with ``text`` (from a file or an example) and run it;
        edited leaf values are forgotten. On an error the text stays (the user sees the error
        in it) and the rest of the document is as it was."""
        kept = self.leaf_values
        self.leaf_values = {}

        def undo() -> None:
            self.leaf_values = kept

        default = path.name if path is not None else "expression"
        return self._start_expression(text, path, title or default, undo)

    def set_leaf_value(self, name: str, value: Any) -> bool:
        """Set a leaf's value and re-run, keeping the playback position. Text (``"2"``,
        ``"[1, 2]"``, as the variables table gives it) is written into the program: the right
        side of ``name = ...`` in :attr:`source`, or a new ``name = ...`` line, and that text
        runs (``source_edited`` then carries the edit for the editor); a number or an array
        is used for this run's value without touching the text. False (and
        ``error_raised``) when the value does not parse or the run fails; nothing changes
        then."""
        try:
            array = expression_loader.leaf_value(self.program, name, value)
            edit = (
                expression_loader.leaf_edit(self.source, name, value)
                if isinstance(value, str)
                else None
            )
        except ExpressionError as e:
            return self.fail(e)
        if edit is None:
            return self._rerun_with(lambda values: values.__setitem__(name, array))
        kept = dict(self.leaf_values)
        self.leaf_values.pop(name, None)  # the text holds the value now

        def undo() -> None:
            if self.source == edit.after:  # (the user may have typed since)
                self.source = edit.before
            self.leaf_values.clear()
            self.leaf_values.update(kept)

        return self._start_expression(edit.after, self.path, self.title, undo, edit)

    def reset_leaf_values(self) -> bool:
        """Back to the program's defaults and re-run."""
        return self._rerun_with(dict.clear)

    def apply_expression(self, job: ExpressionJob) -> bool:
        """On the GUI thread, after ``job`` ran on :attr:`runner`: show its graph, or its
        error (the previous graph stays). A job that is no longer the current one is
        ignored."""
        if job is not self.expression_job:
            return False
        self.expression_job = None
        undo, self._expression_undo = self._expression_undo, None
        if (job.cancelled or job.error is not None) and undo is not None:
            undo()
            self.leaves_changed.emit(self.leaf_rows())
        if job.cancelled:
            self.status_changed.emit("Program cancelled; the previous graph stays")
            if job.evaluation is not None:
                job.evaluation.release()
            return False
        return self._show_job(job)

    def cancel_expression(self) -> None:
        """Stop the program running on the worker (it stops at its next operation)."""
        if self.expression_job is not None:
            self.expression_job.cancel()
            self.status_changed.emit("Cancelling the program…")

    def _start_expression(
        self,
        text: str | None,
        path: Path | None,
        title: str,
        undo: Callable[[], None] | None = None,
        edit: SourceEdit | None = None,
    ) -> bool:
        """Parse ``text`` (kept as the source whatever happens) and run it; ``edit``: the
        leaf edit that made ``text`` (the same program with another value: the playback
        position and the selection stay)."""
        if text is not None:
            self.source = text
        try:
            busy = self.busy_error()
            if busy is not None:
                raise busy
            job = expression_loader.job_of_source(
                self.source,
                self.leaf_values,
                self._expression_options(),
                title,
                path,
                keep_step=edit is not None,
            )
        except ExpressionError as e:
            if undo is not None:
                undo()
            return self.fail(e)
        job.source_edit = edit
        return self._run_job(job, undo)

    def _rerun_with(self, change: Callable[[dict], None]) -> bool:
        """Re-run the program with ``change`` made to the leaf values; the change is undone
        when the run fails or is cancelled. A program that is not quick runs on
        :attr:`runner` (True means it started; its graph comes later)."""
        program = self.program
        if program is None:
            return False
        busy = self.busy_error()
        if busy is not None:
            return self.fail(busy)
        saved = dict(self.leaf_values)

        def undo() -> None:
            self.leaf_values.clear()
            self.leaf_values.update(saved)

        change(self.leaf_values)
        values = {k: v for k, v in self.leaf_values.items() if k in program.leaves}
        options = self._expression_options()
        job = ExpressionJob(program, values, options, True, self.title, self.path)
        return self._run_job(job, undo)

    def _run_job(self, job: ExpressionJob, undo: Callable[[], None] | None) -> bool:
        """Run ``job`` here and show it, or hand a program that is not quick to
        :attr:`runner` (True: it started; its graph comes later). ``undo`` puts the leaf
        values back if the run fails or is cancelled."""
        if self.runner is not None and not job.program.quick():
            self.expression_job = job
            self._expression_undo = undo
            self.status_changed.emit("Running the program… (Cancel stops it)")
            self.program_started.emit()
            finish = functools.partial(self._program_ran, job)
            self.runner.submit(program_work(job, finish, self.cancel_expression))
            return True
        job.run()
        if job.error is not None and undo is not None:
            undo()
        return self._show_job(job)

    def _program_ran(self, job: ExpressionJob, _outcome: Outcome) -> None:
        # The job keeps its own outcome (its error, its budget's cancel), whatever the thread's.
        self.program_finished.emit(self.apply_expression(job))

    def _show_job(self, job: ExpressionJob) -> bool:
        if job.error is not None:
            return self.fail(job.error)
        if job.source_edit is not None:
            self.source_edited.emit(job.source_edit)
        self._show_pending(job.graph())
        return True

    def _expression_options(self) -> dict:
        return {
            "retain_grad": self.retain_grad,
            "max_array_size": self.max_array_size,
            "element_budget": self.element_budget,
            "step_budget": self.step_budget,
        }

    # ------------------------------------------------------------------ files
    def load_path(
        self,
        path: str | os.PathLike[str],
        may_replace: Callable[[ProgramText], bool] | None = None,
    ) -> bool | ScriptProcess:
        """Open a file by its suffix: an expression (``.expr``, ``.txt``) runs at once, a saved
        trace (``.json``) loads; a script (``.py``) is *not* run: a prepared
        :class:`ScriptProcess` is returned for the UI to confirm and start (see
        :meth:`prepare_script`). Returns False on error (``error_raised`` was emitted).
        ``may_replace``: asked, once the file is read and is a program, whether it may replace
        :attr:`source` (False: nothing changes)."""
        try:
            opened = file_loader.open_path(Path(path))
        except Exception as e:  # TraceFormatError, OSError, or a bug: the old graph stays
            return self.fail(e)
        return self._open(opened, may_replace)

    def load_example(
        self, key: str, may_replace: Callable[[ProgramText], bool] | None = None
    ) -> bool | ScriptProcess:
        """Open a bundled example by name or stem (see :mod:`viewer.model.document.examples`);
        ``may_replace`` as for :meth:`load_path`."""
        try:
            opened = file_loader.open_example(key)
        except ValueError as e:
            return self.fail(e)
        return self._open(opened, may_replace)

    def _open(
        self,
        opened: ProgramText | PendingGraph | ScriptFile,
        may_replace: Callable[[ProgramText], bool] | None,
    ) -> bool | ScriptProcess:
        if isinstance(opened, ScriptFile):
            return self.prepare_script(opened.path)
        if isinstance(opened, ProgramText):
            if may_replace is not None and not may_replace(opened):
                self.last_error = None  # declined: there is no error to show
                self.status_changed.emit(
                    f"Kept the edited program; {opened.path.name} was not opened"
                )
                return False
            return self.load_expression(opened.text, opened.path, opened.title)
        self._show_pending(opened)
        return True

    # ------------------------------------------------------------------ scripts
    def prepare_script(
        self, path: str | os.PathLike[str], argv: list[str] | None = None
    ) -> ScriptProcess | bool:
        """A run of ``path`` in a worker process (:class:`ScriptProcess`), registered as the
        document's run. The UI confirms, then starts it (``run.start()``) and, on the GUI
        thread, passes ``run.result`` to :meth:`apply_script_result`.

        One run at a time: while a script or a typed program runs, False, and
        ``error_raised`` says which run to wait for."""
        busy = self._busy_with(Path(path))
        if busy is not None:
            return self.fail(busy)
        before = self.script_run
        if before is not None and not before.running and before.result is None:
            before.release()  # prepared and never started: its warm worker, if any, goes
        run = ScriptProcess(
            path,
            argv,
            max_array_size=self.max_array_size,
            memory_mb=self.script_memory_mb,
            max_passes=self.script_max_passes,
        )
        self.script_run = run
        run.may_start = weakref.WeakMethod(self._may_start)
        run.finished.connect(self._script_ran)
        self.script_started.emit(run)
        self.status_changed.emit(f"Ready to run {run.path.name}")
        return run

    def run_script(self, path: str | os.PathLike[str], argv: list[str] | None = None) -> bool:
        """Run a script (in its worker process, as the app does) and show its graphs; this
        thread waits for it."""
        run = self.prepare_script(path, argv)
        if not isinstance(run, ScriptProcess):
            return False  # refused: another run is in progress
        return self.apply_script_result(run.run())

    def cancel_script(self) -> None:
        run = self.script_run  # once: the run may end (and go) while it is cancelled
        if run is not None:
            run.cancel()
            self.status_changed.emit(f"Cancelling {run.path.name}…")

    def cancel_run(self) -> bool:
        """Stop whatever runs (Esc): a script, else a typed program on the worker. False if
        nothing was running."""
        if self.script_run is not None and self.script_run.running:
            self.cancel_script()
            return True
        if self.expression_job is not None:
            self.cancel_expression()
            return True
        return False

    def apply_script_result(self, result: ScriptResult) -> bool:
        """Show what a finished script built (call on the GUI thread). Loads its last graph;
        the others are in ``script_result.graphs`` (see :meth:`show_script_graph`).

        A cancelled run shows what it built up to the cancel (True when there was a graph);
        a failed run keeps the previous graph and reports the error (False), and the graphs
        it built before the error can still be shown with :meth:`show_script_graph`."""
        if self.script_run is not None and self.script_run.result is result:
            self.script_run = None
        self.script_finished.emit(result)
        outcome = script_loader.outcome(result)
        if outcome.error is not None:
            # The graph on screen stays, and so does the run it belongs to (script_result):
            # the Leaks, Gradients and Script panels keep describing it. The failed run's
            # graphs can still be opened with show_script_graph(i, result).
            return self.fail(outcome.error)
        # (the run becomes script_result, and a graph's leaks are flagged, when its graph is
        # installed on screen)
        shown = outcome.graph is not None and self.show_script_graph(outcome.graph, result)
        note = outcome.shown if shown else outcome.not_shown
        if note is not None:
            self.status_changed.emit(note)
        return shown or not result.cancelled

    def show_script_graph(self, index: int, run: ScriptResult | None = None) -> bool:
        """Show graph ``index`` of ``run`` (None: of the run whose graph is on screen); once
        it is installed, ``run`` is :attr:`script_result`."""
        try:
            pending = script_loader.script_graph(run or self.script_result, index)
        except Exception as e:  # a broken trace must not take the document down
            return self.fail(e)
        self._show_pending(pending)
        return True

    def _busy_with(self, path: Path) -> RuntimeError | None:
        """Why ``path`` may not run now, naming the run in progress (None: it may). A second
        run would take the document's ``script_run``: the first would be neither followed,
        nor cancelled, nor shown, and its result would land on the second's."""
        if self.busy_error() is None:
            return None
        if self.script_run is not None and self.script_run.running:
            running = self.script_run.path.name
        else:
            running = "the typed program"
        return RuntimeError(
            f"cannot run {path.name} while {running} is running: wait for it or cancel it first"
        )

    def _may_start(self, run: ScriptProcess) -> str | None:
        """Why ``run`` may not start now: only the run the document follows starts, and
        not while a typed program runs (None: it may)."""
        if run is not self.script_run:
            follows = self.script_run.path.name if self.script_run is not None else "no run"
            return (
                f"cannot start {run.path.name}: the document now follows {follows}; prepare "
                f"{run.path.name} again to run it"
            )
        if self.expression_job is not None:
            return f"cannot run {run.path.name} while the typed program is running"
        return None

    def _script_ran(self, result: ScriptResult) -> None:
        # Emitted on the script's thread: only bookkeeping here, no view work.
        if self.script_run is not None and self.script_run.result is result:
            self.script_run = None

    def busy_error(self) -> ExpressionError | None:
        """Why no other run may start now (None: one may). One run at a time: its result is
        what the window shows next."""
        if self.script_run is not None and self.script_run.running:
            return ExpressionError("a script is running; wait for it or cancel it first")
        if self.expression_job is not None:
            return ExpressionError("a program is running; wait for it or cancel it first")
        return None

    # ------------------------------------------------------------------ graphs
    def load_graph(
        self,
        trace: TraceReader,
        title: str,
        kind: str,
        path: Path | None = None,
        *,
        layout: GraphLayout | None = None,
        evaluation: Evaluation | None = None,
        program: Program | None = None,
        keep_step: bool = False,
    ) -> None:
        """Show ``trace`` as a graph of ``kind`` ('expression', 'trace' or 'script'), laid out
        with ``layout`` (computed when None: here, or on :attr:`runner` for a big
        graph). A typed program's graph brings its ``evaluation`` and ``program``;
        ``keep_step`` (a re-run of the same program) keeps the playback position and the
        selection. The graph shown until then stays until this one is installed."""
        pending = PendingGraph(trace, title, kind, path, evaluation, program, keep_step)
        self._show_pending(pending, layout)

    def _show_pending(self, pending: PendingGraph, layout: GraphLayout | None = None) -> None:
        """Lay out what a loader returned and install it (see :meth:`load_graph`); its note,
        if any, goes on the status line."""
        trace = pending.trace
        self._pending = pending
        if layout is not None:
            self.apply_layout(trace, layout)
        else:
            self._lay_out(pending)
        if pending.note is not None:
            self.status_changed.emit(pending.note)

    def _lay_out(self, pending: PendingGraph) -> None:
        trace = pending.trace
        try:
            # with a runner, a graph too big to lay out here goes there, whole
            scene = first_scene(
                trace,
                self.palette,
                at_most=self.sync_layout_limit if self.runner is not None else None,
                by_generation=self.layout_by_generation,
            )
        except Exception as e:  # a layout bug must not take the document down
            self.layout_failed(trace, e)
            return
        if scene is not None:
            self._install(pending, scene)
            return
        n = len(trace.variables) + len(trace.functions)
        self.status_changed.emit(f"Laying out {n} nodes…")
        self.layout_started.emit(n)
        finish = functools.partial(self._layout_ran, trace)
        work = layout_work(
            trace, self.palette, self.layout_by_generation, finish, self.cancel_layout
        )
        self.runner.submit(work)

    def _layout_ran(self, trace: TraceReader, outcome: Outcome) -> None:
        """On the GUI thread, once the runner laid ``trace`` out: install its scene, or keep
        the previous graph (a layout that failed is reported)."""
        if outcome.kind == "succeeded":
            scene = outcome.result
            self.apply_layout(trace, scene.layout, scene)
        elif outcome.kind == "failed":
            self.layout_failed(trace, outcome.error)
        elif self._pending is not None and self._pending.trace is trace:
            self.cancel_layout()
        self.layout_finished.emit(outcome.kind)

    def load_trace(
        self,
        trace: TraceReader,
        title: str = "trace",
        layout: GraphLayout | None = None,
        path: Path | None = None,
    ) -> None:
        """Show ``trace`` (an autodiff Trace or a TraceView) with ``layout`` (computed when
        None: synchronously, or on :attr:`runner` for a big graph)."""
        self.load_graph(trace, title, "trace", path, layout=layout)

    def save_trace(self, path: str | os.PathLike[str]) -> bool:
        """Save the current trace as JSON (loadable by :meth:`load_path`); a script's graph
        saves the run's whole recording, as File > Save the Trace does (it refused to)."""
        whole = None if self.trace is None else self.trace.base
        if whole is None:
            return self.fail(ValueError("there is no trace to save"))
        try:
            whole.to_json(path)
        except (OSError, ValueError, TypeError) as e:
            return self.fail(e)
        self.status_changed.emit(f"Saved the trace to {Path(path).name}")
        return True

    def export_data(self, path: str | os.PathLike[str]) -> bool:
        """Write the graph shown as DOT (its values at the playback's step) or GraphML, or its
        trace as JSON, by the suffix of ``path``
        (:func:`viewer.model.document.data_export.export_trace`);
        ``status_changed`` says where. An error goes to ``error_raised`` (False) and changes
        nothing."""
        try:
            if self.trace is None:
                raise ValueError("there is no graph to export: type an expression or open a file")
            result = data_export.export_trace(self.trace, path, self.playback.index)
        except (OSError, ValueError, TypeError) as e:
            return self.fail(e)
        self.status_changed.emit(result.message)
        return True

    def apply_layout(
        self, trace: TraceReader, layout: GraphLayout, scene: Scene | None = None
    ) -> bool:
        """Install ``layout`` for the pending ``trace`` and show it. A layout for a trace that
        is no longer pending (the user loaded something else meanwhile) is ignored.

        ``scene``: a Scene of ``trace`` and ``layout`` already built (by a worker thread, as
        building one for a big graph takes a while); it is recoloured to the palette."""
        pending = self._pending
        if pending is None or pending.trace is not trace:
            return False
        try:
            if scene is not None and scene.trace is trace and scene.layout is layout:
                scene.set_palette(self.palette)
            else:
                scene = scene_of(trace, layout, self.palette)
        except Exception as e:
            self.layout_failed(trace, e)
            return False
        return self._install(pending, scene)

    def _install(self, pending: PendingGraph, scene: Scene) -> bool:
        """Show ``pending`` (the pending graph) as ``scene``."""
        trace = pending.trace
        self._pending = None
        old_step = self.playback.index
        old_selection = self.playback.selection
        old_evaluation = self.evaluation
        self.trace = trace
        self.layout = scene.layout
        self.scene = scene
        self.title = pending.title
        self.kind = pending.kind
        self.path = pending.path
        self.evaluation = pending.evaluation
        self.program = pending.program if pending.kind == "expression" else None
        self.leak_report = None
        self.gradient_check = None
        if not pending.keep_step:
            self.focus_element = None
        if pending.kind != "expression":
            self.leaf_values = {}
        run = pending.run if pending.kind == "script" else None
        if run is not self.script_result:
            # Another run or another document: the old run (its whole recording) goes.
            dropped = self.script_result is not None
            self.script_result = run
            if dropped:
                _return_memory()
        if old_evaluation is not None and old_evaluation is not pending.evaluation:
            old_evaluation.release()
        n_steps = len(trace.steps)
        start = min(old_step, n_steps - 1) if pending.keep_step else -1
        self.playback.set_steps(trace.steps, start, trace.pass_offset)
        if pending.keep_step and old_selection is not None and scene.index_of(old_selection) >= 0:
            # same program, new values: node ids are the same, keep the inspected node
            self.playback.select(old_selection)
        self.leaves_changed.emit(self.leaf_rows())
        self.graph_loaded.emit(self)
        self.status_changed.emit(self._loaded_message())
        self._refresh_problems()  # (before the leaks' badges, which name their problem)
        result = self.script_result
        if (
            pending.kind == "script"
            and result is not None
            and result.leak_report is not None
            and result.is_head(trace)
        ):
            # Every graph of a script shares the run's audit: flag the one installed now (also
            # another graph chosen later, or one laid out in a worker after the run ended). A
            # pass a long run recorded on its own has its own node ids: the audit is not its.
            self.flag_leaks(result.leak_report)
        return True

    def layout_failed(self, trace: TraceReader, error: BaseException) -> None:
        """The layout of the pending ``trace`` failed or was cancelled: keep the old graph."""
        if self._pending is not None and self._pending.trace is trace:
            self._pending = None
        self.fail(error)

    def cancel_layout(self) -> None:
        """Stop the layout on the runner and forget the pending graph (a result that comes
        anyway is ignored)."""
        if self.runner is not None:
            self.runner.cancel("layout")
        if self._pending is not None:
            self._pending = None
            self.status_changed.emit("Layout cancelled; the previous graph stays")

    def _loaded_message(self) -> str:
        t = self.trace
        n_vars, n_funcs = len(t.variables), len(t.functions)
        n_steps = len(t.steps)
        what = f"{self.title}: {n_vars} variables, {n_funcs} functions, {n_steps} steps"
        if self.kind == "expression" and self.evaluation is not None:
            output = self.evaluation.output
            if output is not None:
                what += f"; result {format_value(output)}"
        if n_steps == 0:
            what += " (nothing to animate: no function was applied)"
        return what

    # ------------------------------------------------------------------ modules
    # A graph recorded with scopes (Layer calls, autodiff.scope blocks) opens with its scopes
    # collapsed below the deepest depth that keeps the first screen to about 150 nodes
    # (viewer.model.scopes.tree.MAX_FIRST_SCREEN); a graph without scopes shows every node. Paths
    # are the trace's ('MLP/l1'); every instance at a path (a layer called twice) follows.
    # Each change installs a new scene of the same trace and emits scene_changed.
    def scope_tree(self) -> list[ScopeNode]:
        """The scope instances of the graph shown, nested: a list of the top-level
        :class:`~viewer.model.scopes.tree.ScopeNode` (``path``, ``name``, ``cls``, ``depth``,
        ``children``, ``collapsed``; ``fold_count`` > 1 heads a run of repeats, ``folded``
        says it shows as one box, ``fold_head`` is the run's first instance). Empty without
        scopes."""
        model = self._scope_model()
        return model.tree() if model is not None else []

    def set_depth(self, depth: int) -> bool:
        """Collapse every scope deeper than ``depth``, expand the others (0: each top scope
        is one box). Folded runs stay folded. False without scopes."""
        return self._change_scopes(scope_control.set_depth, depth)

    def expand(self, path: str) -> bool:
        """Show the contents of the scope at ``path`` in one call: a folded run holding it
        unfolds, the boxes above it open, and it expands. False when it is open already."""
        return self._change_scopes(scope_control.expand, path)

    def collapse(self, path: str) -> bool:
        """Show the scope at ``path`` as one box of kind ``'module'`` (closes what
        :meth:`expand` opened). False when it is one already."""
        return self._change_scopes(scope_control.collapse, path)

    def collapse_siblings(self, path: str) -> bool:
        """Collapse the scopes beside ``path`` (the same parent), not ``path`` itself."""
        return self._change_scopes(scope_control.collapse_siblings, path)

    def fold(self, path: str) -> bool:
        """Show the run of repeats ``path`` belongs to as one box ("Block \u00d7 12")."""
        return self._change_scopes(scope_control.fold, path, True)

    def unfold(self, path: str) -> bool:
        """Show each instance of the run ``path`` belongs to on its own."""
        return self._change_scopes(scope_control.fold, path, False)

    def expand_all(self) -> bool:
        """Expand every scope and unfold every run: the whole graph."""
        return self._change_scopes(scope_control.expand_all)

    def reveal(self, node_id: int) -> bool:
        """Expand (and unfold) every box that hides trace node ``node_id`` so that it is a
        node of the scene; True if the scene changed (False: already shown, or unknown)."""
        return self._change_scopes(scope_control.reveal, node_id)

    def scope_path_of(self, node_id: int) -> str:
        """The path of the scope trace node ``node_id`` ran in ('' outside any)."""
        model = self._scope_model()
        return scope_control.scope_path_of(model, node_id) if model is not None else ""

    def _scope_model(self) -> ScopeModel | None:
        scene = self.scene
        return scene.scopes.model if scene is not None and scene.scopes is not None else None

    def _change_scopes(self, change: Callable[..., str | None], *args: Any) -> bool:
        """Make ``change`` to the scope model (an unknown path goes to ``error_raised``) and
        install the scene it gives; False when there are no scopes or nothing changed."""
        model = self._scope_model()
        if model is None or self.layout is None:
            return False
        try:
            message = change(model, *args)
        except KeyError as e:
            return self.fail(e)
        if message is None:
            return False
        old = self.scene
        try:
            scene = rescoped_scene(old, self.palette)
        except Exception as e:  # a layout bug must not take the document down
            return self.fail(e)
        self.layout, self.scene = scene.layout, scene
        self.scene_changed.emit(self)
        self.status_changed.emit(f"{message}: {scene.n_nodes} nodes")
        return True

    # ------------------------------------------------------------------ leaks
    def release_graph(self) -> Any:
        """Drop the document's references to the engine objects of a typed expression and
        run the leak audit: survivors get a 'leak' overlay. Returns the report (or None)."""
        if self.evaluation is not None:
            self.evaluation.release()
        if self.trace is None:
            return None
        try:
            report = self.trace.audit()
        except Exception as e:  # the audit is a debugging aid; never fatal
            self.fail(e)
            return None
        self.flag_leaks(report)
        return report

    def flag_leaks(self, report: LeakReport) -> None:
        """Badge each survivor of ``report`` 'cycle' or 'held' (by its reason); its tooltip
        keeps the reason and the holder chain."""
        from viewer.model.panels.legend import leak_badge
        from viewer.model.scene.overlays import Overlay

        self.leak_report = report
        if self.scene is not None:
            self.scene.clear_overlays("leak")
            for survivor in report.survivors:
                reason, held_by = survivor.reason, survivor.held_by
                tip = f"{reason}: {held_by}" if held_by else reason
                overlay = Overlay("leak", leak_badge(reason), self.scene.palette.error, tip)
                self.scene.set_overlay(survivor.node_id, overlay)
            self._mark_scene()
            self.overlays_changed.emit()
        self.leaks_found.emit(report)

    def show_gradient_check(self, report: GradCheckReport) -> None:
        """Colour the scene by a gradient check of the graph shown (overlay kind
        ``'gradcheck'``, see :func:`viewer.model.checks.gradcheck.apply_overlays`) and put its
        summary
        on the status line."""
        self.gradient_check = report
        if self.scene is not None:
            apply_overlays(self.scene, report)
            self._mark_graph(again=True)  # its wrong backwards are problems
        self.status_changed.emit(report.summary)

    # ------------------------------------------------------------------ problems
    # A source's problems: the detectors' report (a script's run brings its own; another
    # source is looked at here, or on the runner when big) and the existing marks of each
    # graph shown (first NaN/Inf, carried gradients, Ctrl+G's wrong backwards, the passes'
    # flags), each finding once (problem_marks.unify); the graph shown marks its nodes.
    def problems(self) -> list[Problem]:
        """Every problem of the source shown, most severe first, each finding once."""
        report = self.problem_report
        marks = [p for graph in sorted(self._graph_marks) for p in self._graph_marks[graph]]
        found = list(report.problems) if report is not None else []
        shown = self.shown_graph()
        if report is not None and shown is not None:
            # The run's list names a bug once, at the first graph it showed in. The graph on
            # screen lists its own findings (its node ids, its step); one that the run's list
            # names at another graph takes that line's place, saying where else it showed:
            # one bug is one line here too, as in --check.
            listed = {(p.kind, p.nodes) for p in found if p.graph == shown}
            for position, p in enumerate(report.for_graph(shown)):
                if (p.kind, p.nodes) in listed:
                    continue
                named = report.naming(shown, position)
                line = report.as_shown(shown, position)
                if line is not None and any(q is named for q in found):
                    found = [line if q is named else q for q in found]
                else:
                    found.append(p)
        # The passes' flags are what a run's detectors read: when they ran, their findings
        # stand for the flags (however they group the passes)
        ran = set(report.ran) if report is not None else set()
        flags = [p for p in self._flag_marks if p.kind not in ran]
        covers = [p for own in report.per_graph.values() for p in own] if report else []
        return problem_marks.unify(found, [*marks, *flags], covers)

    def problem_kinds(self) -> dict[int, set[str]]:
        """graph index -> the kinds of problem it shows (the graph list's filter by kind):
        :meth:`problems`' and, for a bug the run names once, every graph it showed in."""
        kinds = kinds_by_graph(self.problems())
        report = self.problem_report
        for graph, own in report.per_graph.items() if report is not None else ():
            kinds.setdefault(graph, set()).update(p.kind for p in own)
        return kinds

    def problem_summary(self) -> ProblemReport | None:
        """The report as the Problems panel's header counts it: :meth:`problems`, and the
        kinds the detectors and the marks looked for (None: no source)."""
        if self._problems_of is None:
            return None
        report = self.problem_report or ProblemReport()
        ran = set(report.ran)
        if self._graph_marks:
            ran |= {"nonfinite", "carried-gradient"}
        if self.gradient_check is not None or self.kind == "script":
            ran.add("wrong-backward")
        if self.kind == "script":
            ran |= {"nonfinite", "graph-held"}
        graphs = report.graphs if self.problem_report is not None else len(self._graph_marks)
        total = report.graphs_total or max(graphs, 1)
        return ProblemReport(
            self.problems(),
            [k for k in KINDS if k in ran],
            dict(report.skipped),
            graphs,
            total,
        )

    def shown_graph(self) -> int | None:
        """The index of the graph on screen in its source's list (a script's pass; 0 for a
        single graph), None without one."""
        if self.trace is None:
            return None
        if self.kind == "script" and self.script_result is not None:
            index = self.script_result.graph_index(self.trace)
            return index if index >= 0 else None
        return 0

    def problem_titles(self) -> list[str]:
        """The titles of the source's graphs, by index (the panel's "where")."""
        if self.kind == "script" and self.script_result is not None:
            return [g.title for g in self.script_result.graphs]
        return [self.title] if self.trace is not None else []

    def set_problem_limits(self, limits: Thresholds) -> None:
        self.problem_limits = limits

    def _refresh_problems(self) -> None:
        """After a graph was installed: a new source is looked at; the graph's marks."""
        result = self.script_result if self.kind == "script" else None
        key = result if result is not None else self.trace
        if key is not self._problems_of:
            self._problems_of = key
            self._graph_marks = {}
            self._flag_marks = problem_marks.flag_problems(result.graphs) if result else []
            self.problem_report = None
            self.problem_note = ""
            self._detect(result)
        self._mark_graph()

    def _detect(self, result: ScriptResult | None) -> None:
        if self.runner is not None:
            self.runner.cancel("problems")
        self.problems_running = False
        self._problems_token = None
        if result is not None:
            report = problem_finder.report_of_result(result)
            if report is not None:
                self.problem_report = report
                return
            pending = problem_finder.pending_report(result)  # (after the result)
            if pending is not None and self.runner is not None and not pending.done:
                self._await_report(pending)
                return
            if pending is not None:
                pending.wait()
                if pending.report is not None:
                    self.problem_report = pending.report
                    return
                if pending.error:
                    self.problem_note = f"No problem report: {pending.error}."
                    return
            inputs = problem_finder.script_inputs(result)
            total = len(problem_finder.loaded_graphs(result))
            if total < len(result.graphs):
                self.problem_note = (
                    f"The run brought no report: its {total} graphs in memory of "
                    f"{len(result.graphs)} were looked at."
                )
            big = True
        else:
            inputs, total = problem_finder.graph_inputs(
                self.trace, self.kind, self.title, self.path
            )
            big = len(self.trace.variables) + len(self.trace.functions) > self.sync_layout_limit
        one_graph = result is None  # the passes of the one graph shown
        if self.runner is None or not big:
            self.problem_report = problem_finder.find_problems(
                inputs, self.problem_limits, total, None, None, one_graph
            )
            return
        self.problems_running = True
        # (the runner's job may outlive the source: it holds a token, never the run)
        token = self._problems_token = object()
        finish = functools.partial(self._problems_found, token)
        work = problem_finder.problem_work(
            inputs,
            self.problem_limits,
            total,
            finish,
            lambda: self.runner.cancel("problems"),
            one_graph,
        )
        self.runner.submit(work)

    def _await_report(self, pending: Any) -> None:
        """The Problems panel says the detectors run until the worker's report comes (on the
        runner: its Cancel, or another source, stops them)."""
        self.problems_running = True
        token = self._problems_token = object()
        finish = functools.partial(self._problems_found, token)
        self.runner.submit(problem_finder.report_work(pending, finish, self._stop_problems))

    def _stop_problems(self) -> None:
        if self.runner is not None:
            self.runner.cancel("problems")

    def _problems_found(self, token: object, outcome: Outcome) -> None:
        """On the GUI thread: the runner's detectors ended (for the source of ``token``)."""
        if token is not self._problems_token:
            return  # another source came meanwhile
        self.problems_running = False
        if outcome.kind == "succeeded" and isinstance(outcome.result, str):
            self.problem_note = f"No problem report: {outcome.result}."  # why none came
        elif outcome.kind == "succeeded":
            self.problem_report = outcome.result
        elif outcome.kind == "failed":
            self.status_changed.emit(f"The problem detectors failed: {outcome.error}")
        self._mark_graph()

    def _mark_graph(self, again: bool = False) -> None:
        """The marks of the graph shown as problems (``again``: the gradient check changed),
        its nodes marked, and ``problems_changed``."""
        index = self.shown_graph()
        if index is not None and (again or index not in self._graph_marks):
            try:
                marks = problem_marks.mark_problems(self.trace, index, self.gradient_check)
            except Exception as e:  # a debugging aid: never fatal
                self.status_changed.emit(f"The graph's marks could not be read: {e}")
                marks = []
            self._graph_marks[index] = marks
        self._mark_scene()
        self.overlays_changed.emit()
        self.problems_changed.emit(self)

    def _mark_scene(self) -> None:
        index = self.shown_graph()
        if self.scene is not None and index is not None:
            problem_marks.mark_scene(self.scene, self.problems(), index)

    # ------------------------------------------------------------------ errors
    def fail(self, error: BaseException) -> bool:
        """Report ``error`` the document's one way: ``last_error``, ``error_raised`` and the
        status line; nothing else changes (the graph on screen stays). Returns False, so a
        loader can ``return self.fail(e)``."""
        self.last_error = error
        self.error_raised.emit(error)
        message = error.message if isinstance(error, ExpressionError | ScriptError) else str(error)
        if isinstance(error, ExpressionError):
            message = f"line {error.line}, column {error.col}: {message}"
        self.status_changed.emit(f"Error: {message}")
        return False


def _return_memory() -> None:
    """After dropping a long run: collect its cycles and give the freed heap back to the
    system (glibc keeps it otherwise, and the app's memory would stay at the run's peak)."""
    gc.collect()
    if sys.platform.startswith("linux"):
        # another C library has no malloc_trim: the memory is reused by the process instead
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)


def _value_text(value: NDArray[np.float64]) -> str:
    if value.ndim == 0:
        return repr(float(value))
    if value.size <= 64:
        return repr(value.tolist())
    return f"array of shape {value.shape}"
