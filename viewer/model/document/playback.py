"""The playback cursor: the one observable settings object the player widgets bind to.

The cursor is an index into ``trace.steps``: ``-1`` means nothing computed yet (only the leaves
have values), ``i`` means steps ``0..i`` have happened. Timers belong to the Qt side: it calls
:meth:`PlaybackState.tick` every :attr:`PlaybackState.interval_ms` while :attr:`playing`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from viewer.model.signals import Signal

__all__ = ["MAX_SPEED", "MIN_SPEED", "PHASES", "PhaseSpan", "PlaybackState"]

PHASES = ("forward", "backward")
MIN_SPEED = 0.25  # steps per second
MAX_SPEED = 120.0


@dataclass(frozen=True)
class PhaseSpan:
    """A run of consecutive steps of one phase (and one backward pass), for the timeline."""

    phase: str  # 'forward' | 'backward'
    backward_pass: int  # -1 for forward spans
    start: int  # first step index
    stop: int  # one past the last step index

    @property
    def label(self) -> str:
        if self.phase == "forward":
            return "forward"
        return "backward" if self.backward_pass <= 0 else f"backward {self.backward_pass + 1}"


class PlaybackState:
    """Current step, speed, playing flag and selection, with one signal per change.

    Signals (all synchronous, past tense):
    ``step_changed(index)``, ``playing_changed(playing)``, ``speed_changed(speed)``,
    ``selection_changed(node_id_or_None)``, ``steps_changed(n_steps)`` (a new trace).
    """

    def __init__(self, steps: Sequence[Any] = (), speed: float = 4.0) -> None:
        self.step_changed = Signal("step_changed")
        self.playing_changed = Signal("playing_changed")
        self.speed_changed = Signal("speed_changed")
        self.selection_changed = Signal("selection_changed")
        self.steps_changed = Signal("steps_changed")
        self._steps: Sequence[Any] = ()
        self._index = -1
        self._playing = False
        self._speed = _clamp_speed(speed)
        self._selection: int | None = None
        self._spans: tuple[PhaseSpan, ...] = ()
        self._nonfinite: tuple[int, ...] = ()
        self._span_starts: list[int] = []
        self._next_phase: tuple[int, ...] = ()
        if steps:
            self.set_steps(steps)

    # --- the trace -----------------------------------------------------------
    def set_steps(self, steps: Sequence[Any], index: int = -1, pass_offset: int = 0) -> None:
        """Play a new list of steps (``trace.steps``); stops playing and clears the selection.
        ``pass_offset``: the run's number of the steps' backward pass 0 (a pass of a long run
        recorded on its own), so the timeline names passes as the graph list does."""
        self.pause()
        self._steps = steps
        self._spans = _phase_spans(steps, pass_offset)
        self._span_starts = [s.start for s in self._spans]
        self._next_phase = _next_phase_steps(steps)
        self._nonfinite = tuple(i for i, s in enumerate(steps) if getattr(s, "nonfinite", False))
        self._index = self._clamp(index)
        self.steps_changed.emit(len(steps))
        self.step_changed.emit(self._index)
        self.select(None)

    @property
    def steps(self) -> Sequence[Any]:
        return self._steps

    @property
    def n_steps(self) -> int:
        return len(self._steps)

    @property
    def spans(self) -> tuple[PhaseSpan, ...]:
        """Consecutive runs of forward / backward steps, in order (timeline markings)."""
        return self._spans

    @property
    def nonfinite_steps(self) -> tuple[int, ...]:
        """Indexes of the steps that produced a NaN or Inf."""
        return self._nonfinite

    # --- the cursor -------------------------------------------------------------
    @property
    def index(self) -> int:
        """-1 (nothing computed) .. n_steps - 1 (everything)."""
        return self._index

    @property
    def current_step(self) -> Any | None:
        return self._steps[self._index] if self._index >= 0 else None

    @property
    def phase(self) -> str | None:
        """The phase of the current step; None before the first step."""
        step = self.current_step
        return None if step is None else step.phase

    @property
    def at_start(self) -> bool:
        return self._index == -1

    @property
    def at_end(self) -> bool:
        return self._index == len(self._steps) - 1

    def seek(self, index: int) -> int:
        """Move to ``index`` (clamped to -1 .. n_steps - 1); returns the new index."""
        index = self._clamp(index)
        if index != self._index:
            self._index = index
            self.step_changed.emit(index)
        return index

    def step_forward(self) -> bool:
        """Advance one step; False (and nothing emitted) at the end."""
        if self.at_end:
            return False
        self.seek(self._index + 1)
        return True

    def step_back(self) -> bool:
        if self.at_start:
            return False
        self.seek(self._index - 1)
        return True

    def to_start(self) -> int:
        return self.seek(-1)

    def to_end(self) -> int:
        return self.seek(len(self._steps) - 1)

    def to_phase(self, phase: str, occurrence: int = 0) -> int:
        """Jump to just before the ``occurrence``-th span of ``phase`` starts.

        ``to_phase('backward')`` shows every forward value computed and no gradient yet; the
        next step is the first backward step. Without such a span the cursor does not move.
        """
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, not {phase!r}")
        spans = [s for s in self._spans if s.phase == phase]
        if not 0 <= occurrence < len(spans):
            return self._index
        return self.seek(spans[occurrence].start - 1)

    def next_phase(self) -> int | None:
        """The step the *next phase* jump (``B``) shows from the current one; None if none.

        Before any step or in a forward phase: the first backward step after the cursor, so the
        first gradient is seen arriving. In a backward pass: the first step of the next phase
        (the next iteration's forward, or the next backward pass). Forward steps recorded while
        a ``create_graph`` backward runs belong to that backward pass.
        """
        if not self._next_phase:
            return None
        target = self._next_phase[self._index + 1]
        return None if target >= len(self._steps) else target

    def to_next_phase(self) -> int:
        """Jump to :meth:`next_phase`; without a later phase the cursor does not move."""
        target = self.next_phase()
        return self._index if target is None else self.seek(target)

    def span_at(self, index: int) -> PhaseSpan | None:
        """The span holding step ``index`` (None for -1 or out of range)."""
        if not 0 <= index < len(self._steps):
            return None
        k = bisect_right(self._span_starts, index) - 1
        return self._spans[k]

    def next_nonfinite(self) -> int | None:
        """Jump to the next step (after the current one) that produced NaN/Inf, wrapping to the
        first; None when there is none (the cursor does not move)."""
        if not self._nonfinite:
            return None
        later = [i for i in self._nonfinite if i > self._index]
        return self.seek(later[0] if later else self._nonfinite[0])

    def first_nonfinite(self) -> int | None:
        """Jump to the first step that produced NaN/Inf; None when there is none."""
        if not self._nonfinite:
            return None
        return self.seek(self._nonfinite[0])

    # --- playing ----------------------------------------------------------------
    @property
    def playing(self) -> bool:
        return self._playing

    def play(self) -> None:
        """Start playing; at the end, playing restarts from the beginning."""
        if self._playing or not self._steps:
            return
        if self.at_end:
            self.seek(-1)
        self._playing = True
        self.playing_changed.emit(True)

    def pause(self) -> None:
        if self._playing:
            self._playing = False
            self.playing_changed.emit(False)

    def toggle_playing(self) -> bool:
        if self._playing:
            self.pause()
        else:
            self.play()
        return self._playing

    def tick(self) -> bool:
        """Called by the view's timer: one step forward while playing; stops at the end.

        Returns whether the cursor moved.
        """
        if not self._playing:
            return False
        moved = self.step_forward()
        if self.at_end:
            self.pause()
        return moved

    @property
    def speed(self) -> float:
        """Steps per second while playing."""
        return self._speed

    @speed.setter
    def speed(self, value: float) -> None:
        self.set_speed(value)

    def set_speed(self, value: float) -> None:
        value = _clamp_speed(value)
        if value != self._speed:
            self._speed = value
            self.speed_changed.emit(value)

    @property
    def interval_ms(self) -> int:
        """The timer interval for the current speed."""
        return max(1, round(1000.0 / self._speed))

    # --- selection -------------------------------------------------------------
    @property
    def selection(self) -> int | None:
        """The selected node id of the trace's graph, or None."""
        return self._selection

    def select(self, node_id: int | None) -> None:
        if node_id != self._selection:
            self._selection = node_id
            self.selection_changed.emit(node_id)

    def _clamp(self, index: int) -> int:
        return max(-1, min(int(index), len(self._steps) - 1))


def _clamp_speed(value: float) -> float:
    value = float(value)
    if value != value:  # NaN
        raise ValueError("speed must be a number")
    return min(max(value, MIN_SPEED), MAX_SPEED)


def _phase_spans(steps: Sequence[Any], pass_offset: int = 0) -> tuple[PhaseSpan, ...]:
    spans: list[PhaseSpan] = []
    start = 0
    for i in range(1, len(steps) + 1):
        if i == len(steps) or _span_key(steps[i]) != _span_key(steps[start]):
            step = steps[start]
            bpass = getattr(step, "backward_pass", -1)
            if step.phase == "backward" and bpass >= 0:
                bpass += pass_offset
            spans.append(PhaseSpan(step.phase, bpass, start, i))
            start = i
    return tuple(spans)


def _span_key(step: Any) -> tuple[str, int]:
    return step.phase, getattr(step, "backward_pass", -1)


def _phase_unit(step: Any) -> int:
    """-1 for the forward phase, else the backward pass the step belongs to."""
    if step.phase == "backward":
        return max(0, int(getattr(step, "backward_pass", 0)))
    return int(getattr(step, "during_backward", -1))  # create_graph: recorded by a pass


def _next_phase_steps(steps: Sequence[Any]) -> tuple[int, ...]:
    """``[i + 1]``: where the next-phase jump goes from step ``i`` (``[0]``: from -1);
    ``len(steps)`` where there is no later phase. One backward scan."""
    n = len(steps)
    units = [_phase_unit(s) for s in steps]
    out = [n] * (n + 1)
    next_backward = n  # first backward step after i
    next_change = n  # first step after i in another phase unit than i's
    for i in range(n - 1, -2, -1):
        out[i + 1] = next_backward if i < 0 or units[i] < 0 else next_change
        if i >= 0:
            if steps[i].phase == "backward":
                next_backward = i
            if i == 0 or units[i - 1] != units[i]:
                next_change = i
    return tuple(out)
