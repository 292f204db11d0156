"""Run a user's Python script with recording on, and collect the graphs it built.

A script is the user's own program (unlike the expression language, which is checked against a
whitelist): the UI says it will run it, then :class:`ScriptRun` runs it with
:func:`runpy.run_path` as ``__main__``, in a fresh namespace, with its folder as the working
directory and ``sys.argv = [path, *argv]``, while :func:`autodiff.trace.record` listens. Output
is captured; an exception becomes traceback text in the result, never a crash of the app.

It runs on the calling thread (:meth:`ScriptRun.run`) or on a thread of its own
(:meth:`ScriptRun.start`). :meth:`ScriptRun.cancel` makes the next engine operation of the
script raise :class:`ScriptCancelled`, and interrupts pure-Python code between bytecodes.

Process-wide state is borrowed for the duration of the run and restored afterwards: the working
directory, ``sys.argv`` and ``sys.path[0]``. Output is captured per thread: prints from other
threads still reach the console. The engine's observer hook is global, so engine work done by
other threads while a script runs would be recorded too;
:class:`viewer.model.document.document.Document`
refuses to evaluate expressions meanwhile.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import io
import math
import os
import runpy
import sys
import threading
import time
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autodiff import core
from autodiff.trace import Trace, TraceReader, TraceView, view_for_root
from viewer.model.checks.function_check import FunctionSampler
from viewer.model.checks.problems import ProblemReport, Thresholds
from viewer.model.scripts.cancelling import Bookkeeping, ScriptCancelled
from viewer.model.scripts.carried_lines import carry_lines
from viewer.model.scripts.global_holders import held_loss_holder
from viewer.model.scripts.pass_recording import PassRecording
from viewer.model.scripts.pass_sampling import DEFAULT_MAX_PASSES, PassLog, pass_label
from viewer.model.scripts.run_problems import script_problems
from viewer.model.scripts.torch_passes import TorchPasses
from viewer.model.signals import Signal

if TYPE_CHECKING:
    from viewer.model.scripts.result_folder import ResultFolder

__all__ = [
    "GraphUnavailable",
    "ScriptCancelled",
    "ScriptGraph",
    "ScriptResult",
    "ScriptRun",
    "run_script",
]

_MAX_CAPTURE = 2_000_000  # characters of stdout/stderr kept (the rest is dropped)
_LAST_ROOTS = 5
_NAMED_ROOTS = 20


@dataclass(frozen=True)
class ScriptGraph:
    """One graph a script built: the graph behind ``root`` (a backward root, or a last
    output when the script never called backward) and, for a backward root, its pass.

    A pass of a long run may live in a trace of its own (``trace``: a segment, see
    :mod:`viewer.model.scripts.pass_recording`); ``backward_pass`` and ``root`` are then that
    trace's. ``number`` is the pass among all the run's (from 0), ``iteration``, ``loss``
    and ``flags`` its entry of the run's :class:`~viewer.model.scripts.pass_sampling.PassLog`."""

    title: str
    root: int
    backward_pass: int  # -1 when backward was never called on it
    number: int = -1
    iteration: int = -1
    loss: float = math.nan
    flags: int = 0
    trace: TraceReader | None = field(default=None, compare=False, repr=False)
    # a segment not read yet: its number in the run's folder (ScriptResult.folder); -1: none
    segment: int = -1

    @property
    def own_trace(self) -> bool:
        """Whether the graph is a pass recorded in a trace of its own (a segment)."""
        return self.trace is not None or self.segment >= 0

    def view(self, trace: TraceReader) -> TraceView:
        """A trace restricted to this graph and its steps (what the viewer shows); ``trace``
        is the run's head trace, or this graph's segment when it was not read yet."""
        own = self.trace if self.trace is not None else trace
        view = view_for_root(own, self.root, self.backward_pass)
        if self.own_trace and self.number >= 0 and self.backward_pass >= 0:
            view.pass_offset = self.number - self.backward_pass  # a segment: its own numbers
        return view


class GraphUnavailable(ValueError):
    """A graph of a run cannot be shown: its recording is missing or damaged (the message
    names the graph and the file)."""


class _HeadTrace:
    """``ScriptResult.trace``: given, or read from the run's folder the first time it is
    asked for (a worker's run sends the head trace to the app only when a graph needs it)."""

    def __get__(self, result: ScriptResult | None, owner: type | None = None) -> Any:
        if result is None:
            return None
        trace = result.__dict__.get("_trace")
        folder = result.folder
        if trace is None and folder is not None and folder.has_head:
            try:
                trace = folder.head()
            except Exception as e:
                raise GraphUnavailable(f"the run's recording cannot be read: {e}") from e
            result.__dict__["_trace"] = trace
        return trace

    def __set__(self, result: ScriptResult, value: Any) -> None:
        # (the dataclass passes this descriptor itself as the field's default)
        result.__dict__["_trace"] = None if isinstance(value, _HeadTrace) else value


@dataclass
class ScriptResult:
    path: Path
    ok: bool  # ran to the end (or sys.exit(0))
    cancelled: bool
    error: str | None  # the traceback text of an exception, else None
    stdout: str
    stderr: str
    # a Trace (None if recording could not start); a worker's run reads it on first use
    trace: TraceReader | None = field(default=_HeadTrace(), compare=False, repr=False)
    graphs: list[ScriptGraph] = field(default_factory=list)
    leak_report: Any = None  # autodiff.leaks.LeakReport, after the namespace was dropped
    leak_error: str | None = None  # why the audit could not run
    duration: float = 0.0
    exit_code: int | None = None
    error_line: int | None = None  # the script's own line the error came from, if known
    error_message: str | None = None  # "ZeroDivisionError: division by zero", on one line
    samples: FunctionSampler | None = None  # what the gradient check needs (sample_functions)
    passes: PassLog | None = None  # every backward pass's scalars (the Training plot's)
    sampling: str = ""  # which passes ``graphs`` holds, when not all ("showing 1,001 of ...")
    # the forward work no backward reached, counted instead of recorded
    # (autodiff.trace.ForwardOnly.as_dict; None: none)
    forward_only: dict[str, Any] | None = None
    # the problem detectors' findings over the run's kept graphs and its pass log
    # (viewer.model.checks.problems.ProblemReport; None: the detectors did not run)
    problems: ProblemReport | None = None
    # a worker's run whose detectors run after it sent the result: where their report comes
    # (viewer.model.scripts.process.PendingProblems; None: ``problems`` is the whole answer)
    problems_pending: Any = field(default=None, compare=False, repr=False)
    # a worker's run: its folder, holding the recordings not read yet (ResultFolder); the
    # folder goes when this result goes. None: every recording is in memory.
    folder: ResultFolder | None = field(default=None, compare=False, repr=False)
    _views: dict[int, TraceView] = field(default_factory=dict, repr=False)

    def view(self, index: int) -> TraceView:
        """The trace restricted to ``graphs[index]`` (computed once, then cached); its
        recording is read from the run's folder if it was not yet (GraphUnavailable, naming
        the graph and the file, when it cannot be).

        The run prepares the last graph's view on its own thread: for a long training script
        the first look at the whole trace (its steps and graph) is the slow part.
        """
        view = self._views.get(index)
        if view is None:
            view = self.graphs[index].view(self.trace_of(index))
            self._views[index] = view
        return view

    def trace_of(self, index: int) -> TraceReader:
        """The trace holding ``graphs[index]``: its segment or the run's head trace, read from
        the run's folder if it was not yet (GraphUnavailable when it cannot be)."""
        graph = self.graphs[index]
        if graph.trace is not None:
            return graph.trace
        try:
            if graph.segment >= 0:
                return self.folder.segment(graph.segment)
            return self.trace
        except Exception as e:  # missing or damaged: the file's reader says which
            raise GraphUnavailable(f"cannot show {graph.title}: {e}") from e

    def holds(self, index: int, trace: TraceReader | None) -> bool:
        """Whether ``graphs[index]`` is a graph of ``trace`` (a trace, or a view of one),
        without reading anything: a recording not read yet is no trace anyone holds."""
        if trace is None:
            return False
        base = trace.base or trace
        graph = self.graphs[index]
        if graph.trace is not None:
            own = graph.trace
        elif graph.segment >= 0:
            own = self.folder.loaded_segment(graph.segment) if self.folder is not None else None
        else:
            own = self.loaded_trace
        return own is not None and own is base

    def is_head(self, trace: TraceReader | None) -> bool:
        """Whether ``trace`` (or the trace a view of it is of) is the run's head trace, the
        one its leak audit covers; never reads it (a head not read yet is no one's trace)."""
        head = self.loaded_trace
        return trace is not None and head is not None and (trace.base or trace) is head

    @property
    def loaded_trace(self) -> TraceReader | None:
        """``trace`` if it is in memory (never reads it)."""
        return self.__dict__.get("_trace")

    def unread(self) -> bool:
        """Whether some graph's recording is still in the run's folder only."""
        folder = self.folder
        if folder is None:
            return False
        for graph in self.graphs:
            if graph.trace is not None:
                continue
            if graph.segment >= 0:
                if folder.loaded_segment(graph.segment) is None:
                    return True
            elif self.loaded_trace is None and folder.has_head:
                return True
        return False

    def graph_index(self, view: TraceReader | None) -> int:
        """The index of the graph that ``view`` (one :meth:`view` made) shows; -1 if none."""
        return next((i for i, v in self._views.items() if v is view), -1)

    @property
    def never_called_backward(self) -> bool:
        """Whether the graphs are all forward graphs because the script never called
        backward (a run that did may list forward-only samples first)."""
        if self.passes is not None and len(self.passes):
            return False
        return bool(self.graphs) and all(g.backward_pass < 0 for g in self.graphs)

    @property
    def summary(self) -> str:
        name = self.path.name
        if self.cancelled:
            why = f" ({self.error_message})" if self.error_message else ""
            return f"{name}: cancelled after {self.duration:.1f} s{why}"
        if not self.ok:
            where = f", line {self.error_line}" if self.error_line is not None else ""
            return f"{name} failed: {self._one_line}{where}"
        n = len(self.graphs)
        if self.sampling and self.passes is not None:
            return f"{name} ran in {self.duration:.1f} s: {len(self.passes):,} backward passes"
        return f"{name} ran in {self.duration:.1f} s and built {n} graph{'s' if n != 1 else ''}"

    @property
    def error_summary(self) -> str:
        """The failure in one line, where it happened in the script: ``train.py line 12:
        ZeroDivisionError: division by zero`` ('' when the run did not fail)."""
        if self.ok or self.cancelled:
            return ""
        where = self.path.name
        if self.error_line is not None:
            where += f" line {self.error_line}"
        return f"{where}: {self._one_line}"

    @property
    def _one_line(self) -> str:
        """The failure's message: the one the run made, else the traceback's last line."""
        last = (self.error or "").strip().splitlines()
        return self.error_message or (last[-1] if last else "error")


# What the script prints reaches ``output_written`` in batches, at most every _EMIT_S seconds
# (or _EMIT_CHARS characters), so a script that prints megabytes in small writes sends the UI
# a few dozen signals, not millions; after _MAX_SHOWN characters only a note is sent (the
# result keeps up to _MAX_CAPTURE).
_EMIT_S = 0.05
_EMIT_CHARS = 65_536
_MAX_SHOWN = 1_000_000


class _ThreadStream(io.TextIOBase):
    """Stands in for sys.stdout/stderr: the script's thread writes to a buffer (and, batched,
    to the ``output_written`` signal); every other thread writes to the original stream."""

    def __init__(self, original: Any, owner: int, buffer: list[str], signal: Signal) -> None:
        self._original = original
        self._owner = owner
        self._buffer = buffer
        self._signal = signal
        self._size = 0
        self._pending: list[str] = []
        self._pending_size = 0
        self._shown = 0
        self._last_emit = time.perf_counter()
        self._lock = threading.Lock()  # the script's thread and the flusher

    def write(self, text: str) -> int:
        if threading.get_ident() != self._owner:
            return self._original.write(text) if self._original is not None else len(text)
        if self._size < _MAX_CAPTURE:
            self._buffer.append(text[: _MAX_CAPTURE - self._size])
        self._size += len(text)
        if self._shown < _MAX_SHOWN:
            with self._lock:
                self._pending.append(text)
                self._pending_size += len(text)
            now = time.perf_counter()
            if self._pending_size >= _EMIT_CHARS or now - self._last_emit >= _EMIT_S:
                self.emit_pending()
        return len(text)

    def emit_pending(self) -> None:
        """Send what is waiting (a flusher thread calls it while the script is quiet, and
        the run's end)."""
        with self._lock:
            self._last_emit = time.perf_counter()
            if not self._pending:
                return
            text = "".join(self._pending)
            self._pending.clear()
            self._pending_size = 0
        room = _MAX_SHOWN - self._shown
        if len(text) > room:
            text = text[:room] + (
                f"\n[… the output goes on: the panel shows only the first {_MAX_SHOWN:,} "
                "characters of each stream]\n"
            )
        self._shown += len(text)
        self._signal.emit(text)

    def flush(self) -> None:
        if threading.get_ident() != self._owner and self._original is not None:
            self._original.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"


def _exit_guard(owner: int, real_exit: Any) -> Any:
    """``os._exit`` while a script runs in the app's process: in the script's thread it ends
    the script (as ``sys.exit`` would), not the app; elsewhere it is the real one."""

    def guarded(code: int) -> None:
        if threading.get_ident() == owner:
            raise SystemExit(code)
        real_exit(code)

    return guarded


class _Flusher:
    """Sends a quiet script's last lines within ~_EMIT_S: the batching never holds them."""

    def __init__(self, streams: tuple[_ThreadStream, ...]) -> None:
        self._streams = streams
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="script-output", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._done.wait(_EMIT_S * 2):
            for stream in self._streams:
                if time.perf_counter() - stream._last_emit >= _EMIT_S:
                    stream.emit_pending()

    def stop(self) -> None:
        self._done.set()
        self._thread.join(1.0)


# How long cancel() waits for the next engine operation before interrupting plain Python.
_ASYNC_CANCEL_GRACE_S = 0.5


class _CancelObserver:
    """Engine observer that raises ScriptCancelled in the script's thread once cancelled."""

    def __init__(self, run: ScriptRun) -> None:
        self._run = run

    def _check(self) -> None:
        if threading.get_ident() == self._run._thread_id and not self._run.bookkeeping.hold():
            raise ScriptCancelled("the script was cancelled")

    # Once per engine operation: one attribute test until a cancel is asked for. The backward
    # hook is on_backward_event.
    def on_forward(self, function: Any, inputs: Any, outputs: Any, recorded: bool) -> None:
        if self._run._cancel_requested:
            self._check()

    def on_forward_one(self, function: Any, inputs: Any, output: Any) -> None:
        if self._run._cancel_requested:
            self._check()

    def on_backward_event(
        self, function: Any, output_grads: Any, input_grads: Any, accumulated: Any, cleared: Any
    ) -> None:
        if self._run._cancel_requested:
            self._check()


class _RunState:
    """What every kind of run answers about itself (it sets ``_started`` and ``_done``)."""

    _started: bool
    _done: threading.Event

    @property
    def running(self) -> bool:
        return self._started and not self._done.is_set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run finished; False on timeout."""
        return self._done.wait(timeout)


class ScriptRun(_RunState):
    """One run of one script. Signals ``output_written(text)`` and ``finished(result)`` are
    emitted on the thread that runs the script: a Qt view must queue them to the GUI thread."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        argv: list[str] | None = None,
        max_array_size: int = 4096,
        pause_gc: bool = True,
        capture: bool = True,
    ) -> None:
        self.path = Path(path).resolve()
        # False: the script writes to this process's own stdout/stderr (the script worker,
        # whose streams are pipes to the app), and ``output_written`` stays silent.
        self.capture = capture
        # With the cycle collector paused from the start of the script to the end of the
        # audit, reference cycles are reported as leaks instead of being collected by chance
        # (as ``python -m autodiff.leaks`` does). The collector is process-wide: cyclic
        # garbage of the whole app waits until the run ends.
        self.pause_gc = pause_gc
        self.argv = list(argv or [])
        self.max_array_size = max_array_size
        self.output_written = Signal("output_written")
        self.stage_changed = Signal("stage_changed")
        self.finished = Signal("finished")
        # emitted on the script's thread once its own ``import torch`` has run (the run
        # records torch from then on)
        self.torch_imported = Signal("torch_imported")
        self.result: ScriptResult | None = None
        self._cancel_requested = False
        self._thread: threading.Thread | None = None
        self._thread_id: int | None = None
        self._done = threading.Event()
        self._interrupt_lock = threading.Lock()
        self._started = False
        self._in_script = False
        # The run's own bookkeeping on the script's thread, which a Cancel must not split
        # (viewer.model.scripts.cancelling): whoever delivers one asks it first.
        self.bookkeeping = Bookkeeping()
        # Cancel stops the script at its next engine operation (an observer called on each:
        # about 6% of a flood of tiny operations). The worker process stops it from its
        # SIGTERM handler instead, which interrupts any Python code, so it turns this off.
        self.cancel_on_operation = True
        # Extra engine observers attached only while the script runs.
        self.observers: list[Any] = []
        # Keep the first calls of every Function class for the gradient check (a
        # FunctionSampler in ``result.samples``); 0: none.
        self.sample_functions = 0
        # Prepare the last graph's view on the run's thread (the worker process does not:
        # its trace goes to the app, which prepares its own).
        self.prepare_view = True
        # A cancelled run that recorded more steps than this returns its output only: its
        # graphs are not collected, audited or kept (the worker process has a deadline to
        # meet). None: no limit.
        self.keep_on_cancel: int | None = None
        # (a cancelled run's recording, held: a PassRecording)
        self.dropped_trace: PassRecording | None = None
        # The graphs of at most about this many backward passes are kept (see
        # viewer.model.scripts.pass_sampling); every pass's scalars are.
        self.max_passes = DEFAULT_MAX_PASSES
        # Run the problem detectors over the kept graphs and the pass log at the end
        # (``result.problems``), within their time budget (run_problems), with these limits.
        # False: they run only when asked, after the result went (:meth:`problems_after`: the
        # script worker sends the result first, so the graph shows while they run).
        self.find_problems = True
        self.problem_limits = Thresholds()
        self._problems_later: tuple[Any, ...] | None = None

    def start(self) -> threading.Thread:
        """Run on a new daemon thread; returns it."""
        if self._started:
            raise RuntimeError("this ScriptRun was already started")
        thread = threading.Thread(target=self._run_started, name=f"script {self.path.name}")
        thread.daemon = True
        self._thread = thread
        self._started = True
        thread.start()
        return thread

    def cancel(self) -> None:
        """Ask the script to stop: its next engine operation raises ScriptCancelled, and a
        script busy in plain Python is interrupted too (when it runs on its own thread)."""
        self._cancel_requested = True
        thread_id = self._thread_id
        if self._in_script and thread_id is not None and thread_id != threading.get_ident():
            # An asynchronous exception can land anywhere, even inside a weakref callback
            # (where Python can only print it), so it is the fallback: a script that runs
            # engine operations stops at the next one, well before the grace period ends.
            timer = threading.Timer(_ASYNC_CANCEL_GRACE_S, self._interrupt, (thread_id,))
            timer.daemon = True
            timer.start()

    def _interrupt(self, thread_id: int) -> None:
        with self._interrupt_lock:  # never after the script's own code has ended
            if (
                self._in_script
                and not self._done.is_set()
                and self._thread_id == thread_id
                # (a section that begins right after this look is not covered: the
                # exception may still land in it, as before the sections existed)
                and not self.bookkeeping.hold()
            ):
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(thread_id), ctypes.py_object(ScriptCancelled)
                )

    def run(self) -> ScriptResult:
        """Run the script on this thread and return the result (also in :attr:`result`)."""
        if self._started:
            raise RuntimeError("this ScriptRun was already started")
        self._started = True
        return self._run_started()

    def _run_started(self) -> ScriptResult:
        self._thread_id = threading.get_ident()
        out: list[str] = []
        err: list[str] = []
        began = time.perf_counter()
        ok = False
        cancelled = False
        error: str | None = None
        exit_code: int | None = None
        error_line: int | None = None
        error_message: str | None = None
        trace = None
        recording: PassRecording | None = None
        torch_passes: TorchPasses | None = None
        saved = (os.getcwd(), sys.argv, list(sys.path), sys.stdout, sys.stderr)
        stdout = _ThreadStream(sys.stdout, self._thread_id, out, self.output_written)
        stderr = _ThreadStream(sys.stderr, self._thread_id, err, self.output_written)
        observer = _CancelObserver(self)
        flusher = None
        real_exit = os._exit
        namespace: dict[str, Any] | None = None
        sampler = FunctionSampler(self.sample_functions) if self.sample_functions > 0 else None
        observers = [*self.observers, *([sampler] if sampler is not None else [])]
        gc_was_enabled = gc.isenabled()
        if self.pause_gc:
            gc.disable()
        try:
            if not self.path.is_file():
                raise FileNotFoundError(f"no such script: {self.path}")
            if self.capture:
                sys.stdout, sys.stderr = stdout, stderr
                flusher = _Flusher((stdout, stderr))
            os._exit = _exit_guard(self._thread_id, real_exit)
            sys.argv = [str(self.path), *self.argv]
            sys.path.insert(0, str(self.path.parent))
            os.chdir(self.path.parent)
            if self.cancel_on_operation:
                core.add_observer(observer)
            for extra in observers:
                core.add_observer(extra)
            recording = PassRecording(
                self.max_array_size,
                self.max_passes,
                script=str(self.path),
                checker=sampler,
                bookkeeping=self.bookkeeping,
            )
            with recording:
                trace = recording.head
                # torch's passes, once the script imports torch (never imported otherwise)
                torch_passes = TorchPasses(
                    self.max_array_size, recording, str(self.path), self.torch_imported.emit
                )
                torch_passes.start()  # (where torch is imported already, this takes a while)
                try:
                    if self._cancel_requested:
                        raise ScriptCancelled("the script was cancelled")
                    self._in_script = True
                    namespace = runpy.run_path(str(self.path), run_name="__main__")
                finally:
                    torch_passes.stop()
            ok = True
            exit_code = 0
        except ScriptCancelled:
            cancelled = True
            error = "cancelled"
        except SystemExit as e:
            exit_code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            ok = exit_code == 0
            if not ok:
                error = f"SystemExit: {e.code}"
        except BaseException as e:  # the user's script: anything it raises is reported
            error = _format_traceback(e, self.path)
            error_line = _script_line(e, self.path)
            # a SyntaxError's str() ends in "(file, line N)": the line is said once, by the run
            raw = e.msg if isinstance(e, SyntaxError) and e.msg else str(e)
            text = " ".join(str(raw).split())
            error_message = f"{type(e).__name__}: {text}" if text else type(e).__name__
            if isinstance(e, ModuleNotFoundError) and e.name == "torch":
                error_message += ' (install it: pip install "autodiff-viewer[torch]")'
        finally:
            with self._interrupt_lock:
                self._in_script = False
                # A cancel that raced with the end of the script must not fire later, elsewhere.
                _drop_pending_cancel(self._thread_id)
            try:
                if self.cancel_on_operation:
                    core.remove_observer(observer)
                for extra in observers:
                    core.remove_observer(extra)
            finally:
                os._exit = real_exit
                if flusher is not None:
                    flusher.stop()
                self._restore(saved, stdout, stderr)
        # Before the script's names go (the audit cannot see them): the global holding the loss
        # of the first pass whose graph outlived it, for graph-held's message.
        held_in = held_loss_holder(
            namespace, None if recording is None else recording.first_held, self.path
        )
        # Drop the script's objects as the interpreter would at exit, then see what survives.
        _drop_namespace(namespace, self.path)
        namespace = None
        limit = self.keep_on_cancel
        too_long = (
            cancelled
            and recording is not None
            and limit is not None
            and _count_steps(recording, limit, torch_passes) > limit
        )
        try:
            if too_long:
                error_message = (
                    f"what it recorded is not kept: more than {limit:,} steps cannot be sent "
                    "in the time Cancel allows"
                )
                # Held, not freed: freeing millions of steps takes longer than Cancel allows,
                # and the worker's process ends right after (os._exit frees nothing).
                self.dropped_trace = recording
                trace, graphs, leak_report = None, [], None
                leak_error = "not audited: the run was cancelled"
            else:
                self.stage_changed.emit("collecting the graphs")
                graphs = _collect_graphs(trace, self.stage_changed, recording)
                graphs = _with_torch_graphs(graphs, torch_passes)
                self.stage_changed.emit("auditing leaks")
                leak_report, leak_error = _audit(trace, torch_passes)
        finally:
            if gc_was_enabled:
                gc.enable()
        self.result = ScriptResult(
            path=self.path,
            ok=ok,
            cancelled=cancelled,
            error=error,
            stdout="".join(out),
            stderr="".join(err),
            trace=trace,
            graphs=graphs,
            leak_report=leak_report,
            leak_error=leak_error,
            duration=time.perf_counter() - began,
            exit_code=exit_code,
            error_line=error_line,
            error_message=error_message,
            samples=sampler,
            passes=None if recording is None else recording.passes,
            sampling=_sampling_note(recording, trace, sampler, len(graphs)),
            forward_only=_forward_only(recording),
        )
        if self.find_problems:
            self.result.problems = self._find_problems(
                self.result, recording, torch_passes, held_in
            )
        else:
            self._problems_later = (recording, torch_passes, held_in)
        # A cancelled or failed run shows what it built up to then: its last graph too.
        if graphs and self.prepare_view:
            self.stage_changed.emit("preparing the last graph")
            try:
                self.result.view(len(graphs) - 1)
            except Exception as e:  # shown later, when the document asks for the view
                self.stage_changed.emit(f"could not prepare the graph: {e}")
        self._done.set()
        self.finished.emit(self.result)
        return self.result

    def problems_after(self) -> ProblemReport | None:
        """The detectors' report over the finished run, when ``find_problems`` was False (its
        result is not changed; None: nothing to look at, or they could not run). Once."""
        later, self._problems_later = self._problems_later, None
        if later is None or self.result is None:
            return None
        return self._find_problems(self.result, *later)

    def _find_problems(
        self,
        result: ScriptResult,
        recording: PassRecording | None,
        torch: TorchPasses | None,
        held_in: str | None = None,
    ) -> ProblemReport | None:
        """The detectors' report over the run (None: they could not run at all, said as a
        stage): a bug in them must not cost the user the run's result."""
        if recording is None:
            return None
        self.stage_changed.emit("looking for problems")
        traces = frozenset()
        if torch is not None and torch.imported:
            traces = frozenset(id(g.trace) for g in result.graphs if g.trace is not None) - {
                id(t) for t in (recording.head, *recording.segments.values())
            }
        try:
            return script_problems(result, recording, traces, self.problem_limits, held_in)
        except Exception as e:
            self.stage_changed.emit(f"could not look for problems: {type(e).__name__}: {e}")
            return None

    def _restore(self, saved: tuple, stdout: _ThreadStream, stderr: _ThreadStream) -> None:
        cwd, argv, path, out, err = saved
        if self.capture:
            stdout.emit_pending()
            stderr.emit_pending()
            # Whatever the script put there (``sys.stdout = io.StringIO()``) goes with its
            # run: one run at a time, so the saved streams are the app's.
            sys.stdout = out
            sys.stderr = err
        sys.argv = argv
        sys.path[:] = path
        with contextlib.suppress(OSError):
            os.chdir(cwd)


class _Dropped(BaseException):
    """Sent to the script's thread by :func:`_drop_pending_cancel` and caught there at once."""


def _drop_pending_cancel(thread_id: int) -> None:
    """Drop a ScriptCancelled sent to this thread (``thread_id``, the caller's) that has not
    landed yet.

    Not by setting None (``PyThreadState_SetAsyncExc(id, NULL)``): that signals the thread as
    any asynchronous exception does, and since only delivering one resets the signal,
    CPython's eval breaker stays set for good. Every call and loop of the process then goes
    through the pending-work check (measured: about 12% slower on a call-heavy loop, in the
    worker's collection, audit, detectors and writing after the script), and cProfile's next
    call never returns. So a private exception replaces the pending one and is delivered
    here, at the loop's first backward jump, which resets the signal."""
    try:
        pending = ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(thread_id), ctypes.py_object(_Dropped)
        )
        if pending:
            for _ in range(10_000_000):  # about 0.1 s at most; the first jump delivers it
                pass
            # never reached in CPython; if it were, nothing may land later, elsewhere
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), None)
    except (_Dropped, ScriptCancelled):  # ours, or the cancel itself landing first
        pass


def run_script(path: str | os.PathLike[str], argv: list[str] | None = None) -> ScriptResult:
    """Run ``path`` on this thread; see :class:`ScriptRun`."""
    return ScriptRun(path, argv).run()


def _format_traceback(error: BaseException, path: Path) -> str:
    """The traceback from the script's own frames on (runpy's frames are noise)."""
    frames = traceback.extract_tb(error.__traceback__)
    keep = 0
    for i, frame in enumerate(frames):
        if Path(frame.filename).resolve() == path:
            keep = i
            break
    lines = ["Traceback (most recent call last):\n"]
    lines += traceback.format_list(frames[keep:])
    lines += traceback.format_exception_only(type(error), error)
    return "".join(lines)


def _drop_namespace(namespace: dict[str, Any] | None, path: Path) -> None:
    """Clear the script's globals, as interpreter shutdown would.

    ``runpy.run_path`` returns a copy of the module's globals; the real dict survives when the
    script defined functions or classes (their ``__globals__``). Clearing it releases what the
    script held at module level, so the leak audit sees only what something else keeps.
    """
    if not namespace:
        return
    real: dict[int, dict[str, Any]] = {}
    for value in namespace.values():
        functions: list[Any] = []
        if isinstance(value, types.FunctionType):
            functions.append(value)
        elif isinstance(value, type):  # (a torch autograd.Function's are staticmethods)
            for v in vars(value).values():
                v = v.__func__ if isinstance(v, staticmethod | classmethod) else v
                if isinstance(v, types.FunctionType):
                    functions.append(v)
        for function in functions:
            g = function.__globals__
            if g.get("__file__") is not None and Path(g["__file__"]).resolve() == path:
                real[id(g)] = g
    for g in real.values():
        g.clear()
    namespace.clear()


def _script_line(error: BaseException, path: Path) -> int | None:
    """The line of ``path`` the error came from: its deepest frame in the script (the call
    into the library that raised), or a SyntaxError's own line."""
    if isinstance(error, SyntaxError) and error.filename:
        with contextlib.suppress(OSError, ValueError):
            if Path(error.filename).resolve() == path:
                return error.lineno
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        with contextlib.suppress(OSError, ValueError):
            if Path(frame.filename).resolve() == path:
                line = frame.lineno
    return line


def _sampling_note(
    recording: PassRecording | None,
    trace: TraceReader | None,
    sampler: FunctionSampler | None,
    shown: int,
) -> str:
    """Which passes the graphs are, and, when the time budget left some out, in how many
    passes the script's own Functions were checked."""
    if recording is None or trace is None:
        return ""
    shown -= len(trace.tables.forward_samples)
    note = "; ".join(
        part for part in (recording.reservoir.note(shown), recording.forward_only.note()) if part
    )
    if sampler is not None and sampler.passes_unchecked:
        checked = sampler.passes_checked
        total = checked + sampler.passes_unchecked
        part = (
            f"the script's own Functions were gradient-checked in {checked:,} of {total:,} "
            f"passes (the checks may add {sampler.budget:.0%} to the run's time)"
        )
        note = f"{note}; {part}" if note else part
    return note


def _count_steps(
    recording: PassRecording, limit: int, torch_passes: TorchPasses | None = None
) -> int:
    """The steps the recording holds, with those of the torch passes' recordings the result
    would send, counted up to just past ``limit``."""
    n = 0
    traces = {id(t): t for t in (recording.head, *recording.segments.values())}  # shared once
    if torch_passes is not None and torch_passes.imported:
        traces.update((id(t), t) for t in torch_passes.traces())
    for t in traces.values():
        n += t.count_steps(at_most=limit - n)
        if n > limit:
            break
    return n


def _collect_graphs(
    trace: TraceReader, stage_changed: Signal, recording: PassRecording | None = None
) -> list[ScriptGraph]:
    """The graphs of ``trace`` (and of ``recording``'s segments); none when there is no trace
    or it cannot be read (a run must always end with a result, or the UI would wait for it
    forever)."""
    if trace is None:
        return []
    try:
        samples = _forward_only_graphs(trace)
        if recording is not None and len(recording.passes):
            graphs = samples + _recorded_graphs(recording)
            try:  # the passes kept past the head: their ops' lines, from a head pass alike
                carry_lines(graphs, recording.head, recording.pass_keys, recording.reservoir.head)
            except Exception as e:  # only lines are lost: the graphs stay
                stage_changed.emit(f"could not carry the script's lines over: {e}")
            return graphs
        own = {g.root for g in samples}
        return samples + [g for g in _graphs_of(trace) if g.root not in own]
    except Exception as e:
        stage_changed.emit(f"could not collect the graphs: {type(e).__name__}: {e}")
        return []


def _forward_only(recording: PassRecording | None) -> dict[str, Any] | None:
    if recording is None or not recording.forward_only:
        return None
    return recording.forward_only.as_dict()


def _forward_only_graphs(trace: Trace) -> list[ScriptGraph]:
    """The forward-only graphs kept whole as a sample (their roots), first."""
    return [
        ScriptGraph(f"forward only #{k + 1}: {_root_label(trace, nid)}, no backward", nid, -1)
        for k, nid in enumerate(trace.tables.forward_samples)
    ]


def _recorded_graphs(recording: PassRecording) -> list[ScriptGraph]:
    """One graph per pass the recording kept, labelled from its log."""
    log = recording.passes
    loss, iteration, flags = log.loss, log.iteration, log.flags
    graphs = []
    for p in recording.reservoir.kept:
        trace = recording.segments.get(p) if p >= recording.reservoir.head else recording.head
        bpass = recording.trace_pass.get(p)
        if trace is None or bpass is None:
            continue
        roots = trace.backward_roots
        if not 0 <= bpass < len(roots):
            continue
        title = pass_label(
            p + 1,
            int(iteration[p]),
            float(loss[p]),
            int(flags[p]),
            recording.names.get(p, ""),
            recording.wrong.get(p, ()),
        )
        graphs.append(
            ScriptGraph(
                title,
                int(roots[bpass]),
                bpass,
                p,
                int(iteration[p]),
                float(loss[p]),
                int(flags[p]),
                None if trace is recording.head else trace,
            )
        )
    return graphs


def _graphs_of(trace: TraceReader) -> list[ScriptGraph]:
    graphs = []
    roots = trace.backward_roots
    for bpass, root in enumerate(roots):
        # Naming a root costs a trace lookup: name the first and last few of a long run.
        named = bpass < _NAMED_ROOTS or bpass >= len(roots) - _NAMED_ROOTS
        name = trace.node(root).get("name") if named else None
        title = f"backward #{bpass + 1}" + (f" from {name}" if name else "")
        graphs.append(ScriptGraph(title, int(root), bpass))
    if graphs:
        return graphs
    # No backward: offer the last outputs (variables made by a Function and never consumed),
    # found from the trace's tables (a long loop without backward records a huge graph).
    for nid in trace.outputs(last=_LAST_ROOTS):
        graphs.append(ScriptGraph(f"output {_root_label(trace, nid)}", int(nid), -1))
    return graphs


def _root_label(trace: TraceReader, node_id: int) -> str:
    """``loss`` for a named variable, else ``MeanSquaredError #13`` after its creator."""
    name = trace.node(node_id).get("name")
    if name:
        return name
    creator = trace.creator_of(node_id)
    if creator >= 0:
        return f"{trace.node(creator).get('op')} #{node_id}"
    return f"variable #{node_id}"


def _with_torch_graphs(graphs: list[ScriptGraph], torch: TorchPasses | None) -> list[ScriptGraph]:
    """``graphs`` with the torch passes kept (each in its trace), in pass order; a torch
    program that never ran backward adds its last outputs, unless some backward ran."""
    if torch is None or not torch.imported:
        return graphs
    log = torch.log
    iterations, losses, all_flags = log.iteration, log.loss, log.flags  # (copies: once)
    added = []
    for index, title, trace, root, bpass in torch.graphs():
        if index < 0:
            if any(g.backward_pass >= 0 for g in graphs):
                continue
            # numbered past every pass (there were none): its recording's file is named so
            added.append(ScriptGraph(title, root, -1, len(log) + len(added), trace=trace))
            continue
        iteration, loss, flags = iterations[index], losses[index], all_flags[index]
        added.append(
            ScriptGraph(title, root, bpass, index, int(iteration), float(loss), int(flags), trace)
        )
    merged = graphs + added
    merged.sort(key=lambda g: g.number)  # stable: forward graphs (-1) first, as listed
    return merged


def _audit(trace: TraceReader, torch: TorchPasses | None = None) -> tuple[Any, str | None]:
    if trace is None:
        return None, "no trace"
    try:
        report = trace.audit()
        if torch is not None and torch.imported:
            found = torch.audit()
            if found:
                report = type(report)(list(report.survivors) + found, list(report.held_leaves))
        return report, None
    except ImportError as e:
        return None, f"leak audit unavailable: {e}"
    except Exception as e:  # the audit must never take the app down
        return None, f"leak audit failed: {type(e).__name__}: {e}"
