"""A script's recording, in memory bounded by the number of passes kept, not run.

:class:`PassRecording` stands in for ``autodiff.trace.record()`` around a script's run. The
first passes (the :class:`~viewer.model.scripts.pass_sampling.PassReservoir`'s head) go to one
:class:`~autodiff.trace.Trace`, as a plain recording would: the ``head`` trace, which also
holds whatever the script does after its last pass when the run is that short. From then on
every pass (the operations since the previous pass ended, then its ``backward()``) is recorded
into a trace of its own, a *segment*, kept while the reservoir keeps the pass and dropped
(freed by reference counting, as the engine's graphs are) as soon as it does not. Short
passes off the reservoir's stride share one segment, a few at a time (see SHARED_PASSES):
the last of them is the one kept, if any, and a pass sees the one before it in its trace.

Besides the recorders, one observer of its own logs each pass's scalars in a
:class:`~viewer.model.scripts.pass_sampling.PassLog`: the loss, the iteration, the NaN/Inf flag and
the parameters' gradient norms. It always comes after the recorder in the engine's observers,
so a pass is complete, recorded, when its ``on_backward_end`` reaches it: there it switches to
the next segment's trace.
"""

from __future__ import annotations

import math
import sys
import threading
import time
import weakref
from array import array
from typing import Any

import numpy as np

from autodiff import core
from autodiff.trace import ForwardOnly, Trace
from viewer.model.scripts.cancelling import Bookkeeping
from viewer.model.scripts.pass_sampling import (
    DEFAULT_MAX_FLAGGED,
    DEFAULT_MAX_PASSES,
    FLAG_GRADCHECK,
    FLAG_HELD,
    FLAG_NONFINITE,
    FLAG_UNCHECKED,
    PassLog,
    PassReservoir,
)

__all__ = ["PassRecording", "call_line", "place_norm"]

_NDARRAY = np.ndarray
_F64 = np.dtype(np.float64)
_VARIABLE = core.Variable
_CONSTANT = core.Constant
_PARAMETER = core.Parameter

# A trace of its own costs each pass about as much as a tiny pass's whole recording (its
# tables made, the engine's handlers rebound twice, the leaves registered anew, the whole
# freed), so passes that are kept only as the last one for now go on in one trace: at most
# SHARED_PASSES of them, and only while it has recorded for under SHARED_SECONDS (the time
# spent recording bounds what the trace holds: a long pass, or much forward work between
# passes, gets a trace of its own as before).
SHARED_PASSES = 32
SHARED_SECONDS = 0.005
# The head notes the script's line of at most this many operations between two passes (a
# training step's forward, with room to spare); past it, until the next pass ends, none: a
# loop of throwaway operations costs what it did without lines.
LINE_BUDGET = 10_000


class PassRecording:
    """The recording of one run: ``with PassRecording(...) as rec:`` run the script; then
    ``rec.head`` (a Trace), ``rec.segments`` (pass index -> Trace of that pass alone),
    ``rec.passes`` (the PassLog of every pass) and ``rec.reservoir`` (what was kept)."""

    def __init__(
        self,
        max_array_size: int,
        max_passes: int = DEFAULT_MAX_PASSES,
        max_flagged: int = DEFAULT_MAX_FLAGGED,
        script: str | None = None,
        checker: Any = None,
        bookkeeping: Bookkeeping | None = None,
    ) -> None:
        self.max_array_size = max_array_size
        # the sections a Cancel must not split (a pass's end): the run's, shared with its
        # torch passes (viewer.model.scripts.cancelling)
        self.bookkeeping = Bookkeeping() if bookkeeping is None else bookkeeping
        # a FunctionSampler checking the script's own Functions once a pass (end_pass)
        self.checker = checker
        self._end_pass = getattr(checker, "end_pass", None)
        self.wrong: dict[int, tuple[str, ...]] = {}  # kept pass -> its ops that failed
        self.reservoir = PassReservoir(max_passes, max_flagged)
        self.passes = PassLog()
        self.script = script  # the script's file: iterations count its backward() lines
        # The head (the first passes, the forward-only samples) records each op's line of
        # the script, for the problems' messages and the inspector; the segments, recorded
        # past the head all run long, do not: they pay no stack walk per op.
        self.head = Trace(max_array_size, lines=script)
        if script is not None:  # a flood of forward-only work pays for LINE_BUDGET ops at most
            self.head.tables.line_budget = LINE_BUDGET
        self.segments: dict[int, Trace] = {}
        # per top-level pass: its backward pass number in its own trace, and its root's name
        self.trace_pass: dict[int, int] = {}
        self.names: dict[int, str] = {}
        self._current = self.head
        self._passes_in_current = 0  # backward passes begun in the current trace (any depth)
        self._top_in_current = 0  # top-level passes ended in the current trace (not the head)
        # the current trace holds a pass kept for more than being the last one (on the
        # stride, flagged): the next pass must not add to it
        self._pinned = False
        self._current_began = 0.0  # perf_counter() when the current trace began
        self._depth = 0
        # Each pass's loss line (its key's index, 4 bytes a pass) and each key's script line:
        # the run's problem detectors follow one loss line's trend (diverging-loss)
        self.pass_keys = array("i")
        self.key_lines: list[int] = []
        # per key, (script line, root shape): one list, so a pass looks its key up once:
        # [passes so far, the key's index, the last pass's (index, root weakly), the one
        # before it's (or None)]. A root still alive when the next pass of its line ends
        # means the program holds that iteration's whole graph (FLAG_HELD): one iteration's
        # loss is normally gone once the next is made. A root alive still a whole pass later
        # is kept on purpose or by mistake (``history.append(loss)``); one alive only while
        # the next pass runs is the caller's variable not rebound yet (``loss =
        # train_step()``): ``held_long`` lists the passes of the first kind (their index),
        # for the graph-held problem
        self._keys: dict[tuple, list] = {}
        self._pending_key = -1  # the key of the pass begun, logged when it ends
        self._loss = math.nan
        self._iteration = -1
        self._grads: dict[int, Any] = {}  # leaf creation order -> its gradient this pass
        self.held_long = array("q")
        # the earliest of those passes and its root, weakly: the run asks the script's globals
        # which one holds it before they are dropped (graph-held names the holder)
        self.first_held: tuple[int, weakref.ref] | None = None
        self._held = -1  # the pass found held at this pass (-1: none)
        self._column: dict[int, int | None] = {}  # leaf creation order -> its PassLog column
        self._active = False
        # Forward work no backward reached, counted instead of kept (autodiff.trace.ForwardOnly)
        self.forward_only = ForwardOnly()
        self._head_recorder.forward_only = self.forward_only
        self._back_steps = 0  # backward steps of the current trace since its last compaction
        self._watch: _CompactionWatch | None = None

    # ------------------------------------------------------------------ start and stop
    def __enter__(self) -> PassRecording:
        self._current._start()
        core.add_observer(self)
        self._active = True
        self._watch = _CompactionWatch(self)
        return self

    @property
    def _head_recorder(self) -> Any:
        return self.head.tables

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if not self._active:
            return
        self._active = False
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        core.remove_observer(self)
        self._current.tables.compact()  # what no backward reached: counted, not kept
        self._current._stop()
        if self._current is not self.head:
            self._current = self.head  # the operations after the last pass: not kept

    @property
    def sampled(self) -> bool:
        return self.reservoir.seen > self.reservoir.head

    # ------------------------------------------------------------------ the engine's events
    def on_backward_begin(self, output: Any, retain_grad: bool, create_graph: bool) -> None:
        self._passes_in_current += 1
        self._depth += 1
        if self._depth != 1:
            return
        index = self.reservoir.seen
        self.trace_pass[index] = self._passes_in_current - 1
        data = output.data
        if type(data) is _NDARRAY and data.dtype is _F64 and data.size == 1:
            self._loss = data.item()  # a scalar loss, the usual case: _total without a call
            shape = data.shape
        else:
            try:
                self._loss = _total(data)
            except (TypeError, ValueError):
                self._loss = math.nan
            shape = getattr(data, "shape", None)
        # The script's line that called backward: the walk up the stack starts at the frame
        # that called this handler (the engine's), one frame object fewer to make than from
        # here (this frame is the recording's own code, never the script's)
        script = self.script
        line = -1 if script is None else call_line(script, sys._getframe(1))
        self._iteration, self._held = self.count_pass((line, shape), weakref.ref(output))
        if output.name:
            self.names[index] = str(output.name)
            self.passes.loss_label = str(output.name)
        self._grads = {}

    def on_backward_event(
        self, function: Any, output_grads: Any, input_grads: Any, accumulated: Any, cleared: Any
    ) -> None:
        if self._depth != 1:
            return
        self._back_steps += 1
        inputs = function.inputs
        grads = self._grads
        constant = _CONSTANT
        for x, g in zip(inputs, input_grads, strict=False):  # a slot past them: no gradient
            if g is not None and x.creator is None and type(x) is not constant:
                grads[x._order] = (x, g)
        for slot, _, new in accumulated:
            x = inputs[slot]
            if x.creator is None and type(x) is not constant:
                grads[x._order] = (x, new)

    def on_backward_end(self, output: Any) -> None:
        self._depth -= 1
        if self._depth != 0:
            return
        with self.bookkeeping:  # a Cancel now waits for the pass's log entry and its graph
            self._pass_ended()

    def _pass_ended(self) -> None:
        index = self.reservoir.seen
        flags = 0 if math.isfinite(self._loss) else FLAG_NONFINITE
        norms: list[float] = []
        if self._grads:
            columns = self._column
            for order, (x, g) in self._grads.items():
                column = columns.get(order, -1)
                if column == -1:
                    column = columns[order] = self.passes.parameter(
                        _parameter_label(x), not isinstance(x, _PARAMETER)
                    )
                data = g.data if type(g) is _VARIABLE else g
                if type(data) is _NDARRAY and data.dtype is _F64 and data.size == 1:
                    norm = abs(data.item())  # a scalar's: _norm's first case without a call
                else:
                    norm = _norm(g)
                if not math.isfinite(norm):
                    flags |= FLAG_NONFINITE
                if column == len(norms):
                    norms.append(norm)  # the columns in order, the usual case
                else:
                    place_norm(norms, column, norm)
            self._grads = {}
        # Compacted when the trace grew by much more than the backward steps since its last
        # compaction explain (about 5 tape entries a step: its forward, its backward, the
        # deaths), i.e. forward-only work is likely there. A training step's own graph, alive
        # now, is never removed.
        tables = self._current.tables
        if tables.uncompacted > 8 * self._back_steps + _COMPACT_SLACK:
            tables.compact()
            self._back_steps = 0
        end_pass = self._end_pass
        if end_pass is not None:
            wrong = end_pass()
            if wrong:
                flags |= FLAG_GRADCHECK
                self.wrong[index] = wrong
            elif self.checker.last_pass_missed:
                flags |= FLAG_UNCHECKED  # its label says so: no flag must not read as checked
        held = self._held
        dropped = self.log_pass(self._loss, self._iteration, flags, norms, held)
        late = held >= 0 and held == index - 1
        if end_pass is not None:  # the passes the sample will show are always checked
            self.checker.priority = self.reservoir.likely_kept(index + 1)
        if index + 1 < self.reservoir.head:
            return
        ended = self._current
        if ended is not self.head:
            if index not in dropped:
                self.segments[index] = ended
                if not self.reservoir.only_last(index):
                    self._pinned = True
            if late and self.segments.get(held) is ended:
                self._pinned = True  # the pass before is kept as held: its trace with it
            self._top_in_current += 1
            if not (
                self._pinned
                or self._top_in_current >= SHARED_PASSES
                or self._passes_in_current != self._top_in_current  # a pass ran inside one
                or self.reservoir.likely_kept(index + 1)  # on the stride: a trace of its own
                or time.perf_counter() - self._current_began >= SHARED_SECONDS
            ):
                return  # the next pass goes on in this trace (it may become its segment)
        # A new trace for the next pass.
        ended._stop(detach=False)
        self._current = Trace(self.max_array_size)
        tables = self._current.tables
        tables.forward_only = self.forward_only
        tables.sample_forward_only = False  # a segment may be dropped: its sample with it
        self._back_steps = 0
        self._passes_in_current = 0
        self._top_in_current = 0
        self._pinned = False
        self._current._start(attach=False)
        # The new recorder in the ended one's place, this observer after it (it must see each
        # pass first): one change of the engine's observers, not four
        core.replace_observers((ended.tables, self), (tables, self))
        self._current_began = time.perf_counter()

    # ------------------------------------------------------------------ a pass's log entry
    # (the engine's passes and a torch program's, viewer.model.scripts.torch_passes, alike)
    def count_pass(self, key: tuple, root: weakref.ref | None) -> tuple[int, int]:
        """For the pass beginning now (``reservoir.seen``) whose ``key`` is (the script's
        line that called backward, the root's shape): its iteration among the passes of that
        key, and the pass of that key before it if the program still holds its root (-1:
        none). ``root``, weakly, is remembered for the next."""
        state = self._keys.get(key)
        if state is None:
            state = self._keys[key] = [0, len(self.key_lines), None, None]
            self.key_lines.append(int(key[0]))
        iteration, self._pending_key, before, older = state
        state[0] = iteration + 1
        held = before[0] if before is not None and before[1]() is not None else -1
        if older is not None and older[1]() is not None:
            self.held_long.append(older[0])
            if self.first_held is None or older[0] < self.first_held[0]:
                self.first_held = older
        state[3] = before if held >= 0 else None
        if root is not None:
            state[2] = (self.reservoir.seen, root)
        return iteration, held

    def log_pass(
        self, loss: float, iteration: int, flags: int, norms: list[float], held: int
    ) -> list[int]:
        """Log the pass that ended (``reservoir.seen``), flag the one found ``held``, and
        offer it to the sample; returns the passes the sample dropped, whose recordings are
        freed here (reference counting: the worker's collector is off)."""
        index = self.reservoir.seen
        self.passes.add(loss, iteration, flags, norms)
        self.pass_keys.append(self._pending_key)
        if held >= 0:
            self.passes.flag(held, FLAG_HELD)
        # the pass before, when it was the one held, is still in the sample (as its last pass)
        late = held >= 0 and held == index - 1
        dropped = self.reservoir.offer(index, bool(flags & (FLAG_NONFINITE | FLAG_GRADCHECK)), late)
        for gone in dropped:
            self.segments.pop(gone, None)
            self.trace_pass.pop(gone, None)
            self.names.pop(gone, None)
            self.wrong.pop(gone, None)
        return dropped


# Compaction at a pass's end needs this many tape entries more than its backward steps
# explain (a few hundred forward-only operations): below it, scanning costs more than it saves.
_COMPACT_SLACK = 1_000
# During a long stretch without backward (a loop of throwaway operations), the trace is
# compacted every this many new tape entries (about 3 per operation): what it holds stays
# within a few tens of MB.
_FLOOD_ENTRIES = 100_000
_WATCH_S = 0.1


class _CompactionWatch:
    """A thread that asks the recording trace for a compaction once it grew by
    _FLOOD_ENTRIES tape entries: the script's thread does it at its next operation (a flag
    the recorder tests anyway), so a loop that never calls backward stays bounded."""

    def __init__(self, recording: PassRecording) -> None:
        self._recording = recording
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="compaction", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._done.wait(_WATCH_S):
            tables = self._recording._current.tables
            if tables.uncompacted > _FLOOD_ENTRIES:
                tables.compact_due = True
                tables._due = True

    def stop(self) -> None:
        self._done.set()
        self._thread.join(1.0)


def call_line(script: str | None, frame: Any = None) -> int:
    """The line of ``script`` (a file name) in the calls that led here (or to ``frame``), the
    innermost: e.g. the line that called backward (-1 when none of them is the script's)."""
    if script is None:
        return -1
    if frame is None:
        frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == script:
            return frame.f_lineno
        frame = frame.f_back
    return -1


def place_norm(norms: list[float], column: int | None, norm: float) -> None:
    """Put a parameter's gradient norm in its PassLog ``column`` of a pass's ``norms``
    (None: a parameter past the log's columns; the ones before it NaN)."""
    if column is not None:
        norms.extend([math.nan] * (column + 1 - len(norms)))
        norms[column] = norm


def _total(data: Any) -> float:
    """The sum of a value, as a float (a scalar loss, the usual case, without numpy's sum)."""
    if type(data) is np.ndarray and data.size == 1:
        return float(data.item())
    return float(np.sum(data, dtype=np.float64))


def _norm(g: Any) -> float:
    data = g.data if isinstance(g, core.Variable) else g
    try:
        if type(data) is np.float64 or (type(data) is np.ndarray and data.size == 1):
            return abs(float(data.item()))
        if type(data) is np.ndarray and data.dtype is _F64:
            return math.sqrt(np.vdot(data, data))  # one call, any layout
        flat = np.asarray(data, dtype=np.float64).reshape(-1)
        return math.sqrt(float(np.dot(flat, flat)))
    except (TypeError, ValueError):
        return math.nan


def _parameter_label(x: Any) -> str:
    shape = getattr(x.data, "shape", None)
    base = x.name or f"parameter #{x._order}"
    return f"{base} {tuple(shape)}" if shape else base
