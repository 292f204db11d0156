"""The Document: what the main window shows, as one observable object.

It holds the editor's text, the leaf values, the current trace with its layout and scene, the
playback cursor (with the selection) and the last script run. Every way of getting a graph
ends in :meth:`Document.load_trace`; nothing is replaced until the new graph is complete, so an
error (a bad expression, a broken trace file, a failing script) leaves the previous graph on
screen and is reported through ``error_raised``.

Signals (synchronous, on the caller's thread):

* ``graph_loaded(document)``: a new trace, layout and scene are in place (re-read them).
* ``error_raised(error)``: an ExpressionError (with line/col), TraceFormatError, OSError or
  ScriptError. The previous graph stays.
* ``status_changed(text)``: one line for the status bar.
* ``selection_changed(node_id | None)``: the playback state's signal, re-exported.
* ``leaves_changed(rows)``: the variables table changed (list of :class:`LeafRow`).
* ``layout_started(n_nodes)``: a big graph went to :attr:`Document.layout_runner`.
* ``script_started(run)`` / ``script_finished(result)``: a script run began / ended.
* ``overlays_changed()``: leak flags or gradient-check colours changed on the scene.
* ``leaks_found(report)``: the leak audit after a release ran (report may list nothing).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff import trace as trace_module
from autodiff.leaks import LeakReport
from autodiff.trace import TraceReader
from viewer.model import examples as examples_module
from viewer.model.expression import (
    MAX_SOURCE_CHARS,
    MAX_STEPS,
    MAX_TOTAL_ELEMENTS,
    Budget,
    Evaluation,
    ExpressionError,
    Program,
    format_value,
    parse,
    parse_value,
)
from viewer.model.graph_layout import GraphLayout, compute_layout
from viewer.model.inspector import NodeInfo, inspect
from viewer.model.playback import PlaybackState
from viewer.model.scene import Frame, Scene
from viewer.model.script_process import ScriptProcess
from viewer.model.script_runner import ScriptResult
from viewer.model.signals import Signal

__all__ = [
    "EXPRESSION_SUFFIXES",
    "SCRIPT_SUFFIXES",
    "TRACE_SUFFIXES",
    "Document",
    "LeafRow",
    "ScriptError",
    "compute_layout",
]

EXPRESSION_SUFFIXES = (".expr", ".txt")
TRACE_SUFFIXES = (".json",)
SCRIPT_SUFFIXES = (".py",)
SYNC_LAYOUT_LIMIT = 1000  # nodes; bigger graphs go to layout_runner when one is set
MAX_TRACE_BYTES = 200_000_000


class ScriptError(Exception):
    """A script failed; ``traceback`` is its traceback text, ``result`` the ScriptResult."""

    def __init__(self, message: str, result: ScriptResult) -> None:
        super().__init__(message)
        self.message = message
        self.result = result
        self.traceback = result.error or ""


@dataclass(frozen=True)
class LeafRow:
    """A row of the variables table."""

    name: str
    value: NDArray[np.float64]
    text: str  # the value as the user may type it back ("0.5", "[1, 2]")
    shape: tuple[int, ...]
    default: bool  # the program's default (not edited by the user)


@dataclass
class _Pending:
    trace: TraceReader
    title: str
    kind: str
    path: Path | None
    evaluation: Evaluation | None
    program: Program | None
    keep_step: bool


class ExpressionJob:
    """A typed program to run off the GUI thread (:attr:`Document.expression_runner`):
    :meth:`run` on any thread, :meth:`cancel` from any thread (the run stops at its next
    operation), then :meth:`Document.apply_expression` on the GUI thread."""

    def __init__(
        self, program: Program, values: dict, options: dict, keep_step: bool, title: str
    ) -> None:
        self.program = program
        self.values = values
        self.options = options
        self.keep_step = keep_step
        self.title = title
        self.budget = Budget(options.pop("element_budget"), options.pop("step_budget"))
        self.evaluation: Evaluation | None = None
        self.error: ExpressionError | None = None
        self.done = False
        # What to put back when the job fails or is cancelled (a leaf edit's old value).
        self.undo: Callable[[], None] | None = None

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


class Document:
    """Source text, leaf values, trace, layout, scene, playback and selection of one window."""

    def __init__(self, palette: str = "light", max_array_size: int = 4096) -> None:
        self.graph_loaded = Signal("graph_loaded")
        self.error_raised = Signal("error_raised")
        self.status_changed = Signal("status_changed")
        self.leaves_changed = Signal("leaves_changed")
        self.layout_started = Signal("layout_started")
        self.script_started = Signal("script_started")
        self.script_finished = Signal("script_finished")
        self.overlays_changed = Signal("overlays_changed")
        self.leaks_found = Signal("leaks_found")
        self.playback = PlaybackState()
        self.selection_changed = self.playback.selection_changed

        self.palette = palette
        self.max_array_size = max_array_size
        self.retain_grad = False
        self.source = ""  # the editor's text, kept even when it does not parse
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
        # a script's memory limit in MiB (None: half the machine's; 0: none)
        self.script_memory_mb: int | None = None
        # a typed program's budgets (the window reads them from the settings)
        self.element_budget = MAX_TOTAL_ELEMENTS
        self.step_budget = MAX_STEPS
        self.script_result: ScriptResult | None = None
        # Set by the Qt side to lay out big graphs off the GUI thread: called with the trace,
        # it must later call apply_layout(trace, layout) or layout_failed(trace, error) on the
        # GUI thread. None: lay out synchronously.
        self.layout_runner: Callable[[Any], None] | None = None
        # Typed programs that are not Program.quick() go to this runner when one is set: it
        # calls job.run() on a worker thread, then apply_expression(job) on the GUI thread.
        self.expression_runner: Callable[[ExpressionJob], None] | None = None
        self.expression_job: ExpressionJob | None = None
        self.sync_layout_limit = SYNC_LAYOUT_LIMIT
        self.layout_by_generation = False  # see compute_layout; a layout_runner should follow it
        self._pending: _Pending | None = None

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
        return inspect(self.trace, node_id, self.playback.index)

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
            self.overlays_changed.emit()  # badges take the palette's colours

    # ------------------------------------------------------------------ expressions
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

    def run_expression(self, text: str | None = None) -> bool:
        """Parse and evaluate ``text`` (default: :attr:`source`) and show its graph.

        On an error the previous graph stays, ``error_raised`` carries the ExpressionError
        (line and column for the editor) and False is returned.
        """
        if text is not None:
            self.source = text
        busy = self._busy_error()
        if busy is not None:
            return self.fail(busy)
        try:
            program = parse(self.source)
            values = {k: v for k, v in self.leaf_values.items() if k in program.leaves}
            title = self.path.name if self.path is not None and self.kind == "expression" else ""
            job = ExpressionJob(program, values, self._run_options(), False, title or "expression")
        except ExpressionError as e:
            return self.fail(e)
        except Exception as e:  # a hole in the language's checks: still no crash
            message = f"the program could not run: {type(e).__name__}: {e}"
            return self.fail(ExpressionError(message[:500], 1, 1))
        return self._run_job(job)

    def _run_job(self, job: ExpressionJob) -> bool:
        """Run ``job`` here and show it, or hand a program that is not quick to
        :attr:`expression_runner` (True: it started; its graph comes later)."""
        if self.expression_runner is not None and not job.program.quick():
            self.expression_job = job
            self.status_changed.emit("Running the program… (Cancel stops it)")
            self.expression_runner(job)
            return True
        job.run()
        if job.error is not None and job.undo is not None:
            job.undo()
        return self._install(job)

    def _run_options(self) -> dict:
        return {
            "retain_grad": self.retain_grad,
            "max_array_size": self.max_array_size,
            "element_budget": self.element_budget,
            "step_budget": self.step_budget,
        }

    def apply_expression(self, job: ExpressionJob) -> bool:
        """On the GUI thread, after a job of :attr:`expression_runner` ran: show its graph, or
        its error (the previous graph stays). A job that is no longer the current one is
        ignored."""
        if job is not self.expression_job:
            return False
        self.expression_job = None
        if (job.cancelled or job.error is not None) and job.undo is not None:
            job.undo()
            self.leaves_changed.emit(self.leaf_rows())
        if job.cancelled:
            self.status_changed.emit("Program cancelled; the previous graph stays")
            if job.evaluation is not None:
                job.evaluation.release()
            return False
        return self._install(job)

    def cancel_expression(self) -> None:
        """Stop the program running on the worker (it stops at its next operation)."""
        if self.expression_job is not None:
            self.expression_job.cancel()
            self.status_changed.emit("Cancelling the program…")

    def _busy_error(self) -> ExpressionError | None:
        # One run at a time: its result is what the window shows next.
        if self.script_run is not None and self.script_run.running:
            return ExpressionError("a script is running; wait for it or cancel it first")
        if self.expression_job is not None:
            return ExpressionError("a program is running; wait for it or cancel it first")
        return None

    def _install(self, job: ExpressionJob) -> bool:
        if job.error is not None:
            return self.fail(job.error)
        evaluation = job.evaluation
        self._load(
            _Pending(
                evaluation.trace,
                job.title,
                "expression",
                self.path if self.kind == "expression" else None,
                evaluation,
                job.program,
                keep_step=job.keep_step,
            )
        )
        if evaluation.nonfinite is not None:
            w = evaluation.nonfinite
            self.status_changed.emit(f"Line {w.line}: {w.message}")
        return True

    def set_leaf_value(self, name: str, value: Any) -> bool:
        """Set a leaf's value (a number, an array, or text like ``"[1, 2]"``) and re-run the
        current program, keeping the playback position. False (and ``error_raised``) when the
        value does not parse or the run fails; nothing changes then."""
        if self.program is None or name not in self.program.leaves:
            return self.fail(ExpressionError(f"{name} is not a variable of the expression"))
        try:
            array = parse_value(value)
        except ExpressionError as e:
            return self.fail(ExpressionError(f"value of {name}: {e.message}", e.line, e.col))
        return self._rerun_with(lambda values: values.__setitem__(name, array))

    def reset_leaf_values(self) -> bool:
        """Back to the program's defaults and re-run."""
        return self._rerun_with(dict.clear)

    def _rerun_with(self, change: Callable[[dict], None]) -> bool:
        """Re-run the program with ``change`` made to the leaf values; the change is undone
        when the run fails or is cancelled. A program that is not quick runs on
        :attr:`expression_runner` (True means it started; its graph comes later)."""
        program = self.program
        if program is None:
            return False
        busy = self._busy_error()
        if busy is not None:
            return self.fail(busy)
        saved = dict(self.leaf_values)

        def undo() -> None:
            self.leaf_values.clear()
            self.leaf_values.update(saved)

        change(self.leaf_values)
        values = {k: v for k, v in self.leaf_values.items() if k in program.leaves}
        job = ExpressionJob(program, values, self._run_options(), True, self.title)
        job.undo = undo
        return self._run_job(job)

    def load_path(self, path: str | os.PathLike[str]) -> bool | ScriptProcess:
        """Open a file by its suffix: an expression (``.expr``, ``.txt``) runs at once, a saved
        trace (``.json``) loads; a script (``.py``) is *not* run: a prepared
        :class:`ScriptProcess` is returned for the UI to confirm and start (see
        :meth:`prepare_script`). Returns False on error (``error_raised`` was emitted)."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix in SCRIPT_SUFFIXES:
            if not path.exists():
                return self.fail(FileNotFoundError(f"no such script: {path}"))
            if not path.is_file():  # a FIFO would block the worker's read, a device never end
                return self.fail(ValueError(f"cannot run {path.name}: not a regular file"))
            if self._script_busy():
                return self.fail(self._script_busy_error(path.name))
            return self.prepare_script(path)
        if suffix in TRACE_SUFFIXES:
            return self._load_trace_file(path)
        if suffix in EXPRESSION_SUFFIXES:
            try:
                text = read_text_bounded(path, MAX_SOURCE_CHARS)
            except (OSError, UnicodeDecodeError, ValueError) as e:
                return self.fail(e)
            return self.load_expression(text, path=path)
        known = ", ".join(EXPRESSION_SUFFIXES + TRACE_SUFFIXES + SCRIPT_SUFFIXES)
        return self.fail(ValueError(f"cannot open {path.name}: unknown file type (use {known})"))

    def load_expression(self, text: str, path: Path | None = None, title: str = "") -> bool:
        """Replace the editor's text with ``text`` (from a file or an example) and run it;
        edited leaf values are forgotten."""
        old = (self.source, self.path, self.kind, dict(self.leaf_values))
        self.source = text
        self.leaf_values = {}
        self.path = path
        self.kind = "expression"
        if self.run_expression():
            if title or path is not None:
                self.title = title or path.name  # type: ignore[union-attr]
            return True
        # keep the text (the user sees the error in it) but not a half-switched document
        self.path, self.kind, self.leaf_values = old[1], old[2], old[3]
        return False

    def load_example(self, key: str) -> bool | ScriptProcess:
        """Open a bundled example by name or stem (see :mod:`viewer.model.examples`)."""
        try:
            example = examples_module.find_example(key)
        except ValueError as e:
            return self.fail(e)
        if example.kind == "script":
            if self._script_busy():
                return self.fail(self._script_busy_error(example.path.name))
            return self.prepare_script(example.path)
        return self.load_expression(example.read(), path=example.path, title=example.title)

    def _load_trace_file(self, path: Path) -> bool:
        try:
            t = trace_module.load(path, max_bytes=MAX_TRACE_BYTES)
        except Exception as e:  # TraceFormatError, OSError, or a bug: the old graph stays
            return self.fail(e)
        self.load_trace(t, path.name, path=path)
        if not any(s.phase == "backward" for s in t.steps):
            self.status_changed.emit(
                f"{path.name} has no backward steps: only the forward pass can be played. To "
                "see gradients, record it with y.backward() inside autodiff.trace.record()"
            )
        return True

    def load_trace(
        self,
        trace: TraceReader,
        title: str = "trace",
        layout: GraphLayout | None = None,
        path: Path | None = None,
    ) -> None:
        """Show ``trace`` (an autodiff Trace or a TraceView) with ``layout`` (computed when
        None: synchronously, or through :attr:`layout_runner` for a big graph)."""
        pending = _Pending(trace, title, "trace", path, None, None, keep_step=False)
        self._load(pending, layout)

    def save_trace(self, path: str | os.PathLike[str]) -> bool:
        """Save the current trace as JSON (loadable by :meth:`load_path`)."""
        if self.trace is None or not hasattr(self.trace, "to_json"):
            return self.fail(ValueError("there is no trace to save"))
        try:
            self.trace.to_json(path)
        except (OSError, ValueError, TypeError) as e:
            return self.fail(e)
        self.status_changed.emit(f"Saved the trace to {Path(path).name}")
        return True

    # ------------------------------------------------------------------ layout
    def _load(self, pending: _Pending, layout: GraphLayout | None = None) -> None:
        self._pending = pending
        if layout is not None:
            self.apply_layout(pending.trace, layout)
            return
        n = len(pending.trace.variables) + len(pending.trace.functions)
        if self.layout_runner is not None and n > self.sync_layout_limit:
            self.status_changed.emit(f"Laying out {n} nodes…")
            self.layout_started.emit(n)
            self.layout_runner(pending.trace)
            return
        try:
            layout = compute_layout(pending.trace, by_generation=self.layout_by_generation)
        except Exception as e:  # a layout bug must not take the document down
            self.layout_failed(pending.trace, e)
            return
        self.apply_layout(pending.trace, layout)

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
                scene = Scene(trace, layout, self.palette)
        except Exception as e:
            self.layout_failed(trace, e)
            return False
        self._pending = None
        old_step = self.playback.index
        old_selection = self.playback.selection
        old_evaluation = self.evaluation
        self.trace = trace
        self.layout = layout
        self.scene = scene
        self.title = pending.title
        self.kind = pending.kind
        self.path = pending.path
        self.evaluation = pending.evaluation
        self.program = pending.program if pending.kind == "expression" else None
        self.leak_report = None
        if pending.kind != "expression":
            self.leaf_values = {}
        if pending.kind != "script" and self.script_result is not None:
            # Another document: the run (its whole recording) goes with the script's graphs.
            self.script_result = None
            _return_memory()
        if old_evaluation is not None and old_evaluation is not pending.evaluation:
            old_evaluation.release()
        n_steps = len(trace.steps)
        start = min(old_step, n_steps - 1) if pending.keep_step else -1
        self.playback.set_steps(trace.steps, start)
        if pending.keep_step and old_selection is not None and scene.index_of(old_selection) >= 0:
            # same program, new values: node ids are the same, keep the inspected node
            self.playback.select(old_selection)
        self.leaves_changed.emit(self.leaf_rows())
        self.graph_loaded.emit(self)
        self.status_changed.emit(self._loaded_message())
        result = self.script_result
        if pending.kind == "script" and result is not None and result.leak_report is not None:
            # Every graph of a script shares the run's audit: flag the one installed now (also
            # another graph chosen later, or one laid out in a worker after the run ended).
            self._flag_leaks(result.leak_report)
        return True

    def layout_failed(self, trace: TraceReader, error: BaseException) -> None:
        """The layout of the pending ``trace`` failed or was cancelled: keep the old graph."""
        if self._pending is not None and self._pending.trace is trace:
            self._pending = None
        self.fail(error)

    def cancel_layout(self) -> None:
        """Forget the pending graph (its layout result will be ignored)."""
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

    # ------------------------------------------------------------------ scripts
    def prepare_script(
        self, path: str | os.PathLike[str], argv: list[str] | None = None
    ) -> ScriptProcess:
        """A run of ``path`` in a worker process (:class:`ScriptProcess`), registered as the
        document's run. The UI confirms, then starts it (``run.start()``) and, on the GUI
        thread, passes ``run.result`` to :meth:`apply_script_result`."""
        run = ScriptProcess(
            path, argv, max_array_size=self.max_array_size, memory_mb=self.script_memory_mb
        )
        self.script_run = run
        run.finished.connect(self._script_ran)
        self.script_started.emit(run)
        self.status_changed.emit(f"Ready to run {run.path.name}")
        return run

    def run_script(self, path: str | os.PathLike[str], argv: list[str] | None = None) -> bool:
        """Run a script (in its worker process, as the app does) and show its graphs; this
        thread waits for it."""
        run = self.prepare_script(path, argv)
        return self.apply_script_result(run.run())

    def _script_ran(self, result: ScriptResult) -> None:
        # Emitted on the script's thread: only bookkeeping here, no view work.
        if self.script_run is not None and self.script_run.result is result:
            self.script_run = None

    def _script_busy(self) -> bool:
        # One run at a time: a second one's result would land on the first's, and a typed
        # program meanwhile would compete with the run for the machine.
        return self._busy_error() is not None

    def _script_busy_error(self, name: str) -> RuntimeError:
        if self.script_run is not None:
            running = self.script_run.path.name
        else:
            running = "a script" if self.expression_job is None else "the typed program"
        return RuntimeError(
            f"cannot run {name} while {running} is running: wait for it or cancel it first"
        )

    def cancel_script(self) -> None:
        if self.script_run is not None:
            self.script_run.cancel()
            self.status_changed.emit(f"Cancelling {self.script_run.path.name}…")

    def apply_script_result(self, result: ScriptResult) -> bool:
        """Show what a finished script built (call on the GUI thread). Loads its last graph;
        the others are in ``script_result.graphs`` (see :meth:`show_script_graph`).

        A cancelled run shows what it built up to the cancel (True when there was a graph);
        a failed run keeps the previous graph and reports the error (False), and the graphs
        it built before the error can still be shown with :meth:`show_script_graph`."""
        if self.script_run is not None and self.script_run.result is result:
            self.script_run = None
        self.script_result = result
        self.script_finished.emit(result)
        if result.cancelled:
            shown = bool(result.graphs) and self.show_script_graph(len(result.graphs) - 1)
            if shown:
                self.status_changed.emit(f"{result.summary}: showing what it built until then")
            else:
                self.status_changed.emit(f"{result.summary}, before it built a graph")
            return shown
        if not result.ok:
            self.fail(ScriptError(result.summary, result))
            return False
        if not result.graphs:
            if result.leak_report is not None:
                self._flag_leaks(result.leak_report)
            return self.fail(
                ValueError(
                    f"{result.path.name} ran but recorded no graph: it must call autodiff "
                    "functions on Variables outside no_grad (and ideally backward)"
                )
            )
        self.show_script_graph(len(result.graphs) - 1)
        # (its leaks are flagged by apply_layout, on the new scene, once it is installed)
        if result.graphs[0].backward_pass < 0:
            self.status_changed.emit(
                f"{result.path.name} never called backward: showing the forward graph of its "
                "last outputs. Call loss.backward() to see gradients"
            )
        return True

    def show_script_graph(self, index: int) -> bool:
        """Show graph ``index`` of the last script result."""
        result = self.script_result
        if result is None or not 0 <= index < len(result.graphs):
            return self.fail(ValueError(f"no script graph number {index}"))
        graph = result.graphs[index]
        try:
            view = result.view(index)
        except Exception as e:  # a broken trace must not take the document down
            return self.fail(e)
        self._load(
            _Pending(
                view,
                f"{result.path.name}: {graph.title}",
                "script",
                result.path,
                None,
                None,
                keep_step=False,
            )
        )
        return True

    # ------------------------------------------------------------------ leaks
    def release_graph(self) -> Any:
        """Drop the document's references to the engine objects of a typed expression and
        run the leak audit: survivors get a 'leak' overlay. Returns the report (or None)."""
        if self.evaluation is not None:
            self.evaluation.release()
        if self.trace is None or not hasattr(self.trace, "audit"):
            return None
        try:
            report = self.trace.audit()
        except Exception as e:  # the audit is a debugging aid; never fatal
            self.fail(e)
            return None
        self._flag_leaks(report)
        return report

    def _flag_leaks(self, report: LeakReport) -> None:
        """Badge each survivor of ``report`` 'cycle' or 'held' (by its reason); its tooltip
        keeps the reason and the holder chain."""
        from viewer.model.legend import leak_badge
        from viewer.model.node_overlays import Overlay

        self.leak_report = report
        if self.scene is not None:
            self.scene.clear_overlays("leak")
            for survivor in report.survivors:
                reason, held_by = survivor.reason, survivor.held_by
                tip = f"{reason}: {held_by}" if held_by else reason
                overlay = Overlay("leak", leak_badge(reason), self.scene.palette.error, tip)
                self.scene.set_overlay(survivor.node_id, overlay)
            self.overlays_changed.emit()
        self.leaks_found.emit(report)

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


def read_text_bounded(path: Path, max_chars: int) -> str:
    """A program file's text, read with a cap: a FIFO, a device (``/dev/zero``) or a file of
    gigabytes is refused before reading, with a message that names the file."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"cannot open {path.name}: not a regular file")
    limit = 4 * max_chars  # UTF-8: at most 4 bytes a character
    if info.st_size > limit:
        raise ValueError(
            f"cannot open {path.name}: {info.st_size} bytes; a program has at most "
            f"{max_chars} characters"
        )
    with open(path, "rb") as f:
        raw = f.read(limit + 1)
    if len(raw) > limit:
        raise ValueError(f"cannot open {path.name}: it grew past {limit} bytes while read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"cannot open {path.name}: not UTF-8 text (byte {e.start} is 0x{raw[e.start]:02x}); "
            "a program is a text file"
        ) from None
    if len(text) > max_chars:
        raise ValueError(
            f"cannot open {path.name}: {len(text)} characters; a program has at most {max_chars}"
        )
    return text


def _value_text(value: NDArray[np.float64]) -> str:
    if value.ndim == 0:
        return repr(float(value))
    if value.size <= 64:
        return repr(value.tolist())
    return f"array of shape {value.shape}"
