"""Binds a :class:`~viewer.model.document.playback.PlaybackState` to the playback bar: the bar's
buttons, slider, phase menu, speed box and timer drive the state; the state's signals are
mirrored on the bar."""

from __future__ import annotations

from PySide6 import QtCore

from viewer.model.document.playback import PlaybackState
from viewer.qt.panels.playback import PlaybackBar

__all__ = ["PlaybackBinding"]


class PlaybackBinding(QtCore.QObject):
    def __init__(self, state: PlaybackState, bar: PlaybackBar) -> None:
        super().__init__(bar)
        self.state = state
        self.bar = bar
        bar.start_button.clicked.connect(state.to_start)
        bar.back_button.clicked.connect(state.step_back)
        bar.play_button.clicked.connect(state.toggle_playing)
        bar.forward_button.clicked.connect(state.step_forward)
        bar.end_button.clicked.connect(state.to_end)
        bar.timer.timeout.connect(state.tick)
        bar.next_phase_requested.connect(state.to_next_phase)
        bar.seek_requested.connect(self._on_seek)
        bar.speed_requested.connect(state.set_speed)

        state.steps_changed.connect(self._on_steps_changed)
        state.step_changed.connect(self._on_step_changed)
        state.playing_changed.connect(self._on_playing_changed)
        state.speed_changed.connect(self._on_speed_changed)
        self._on_steps_changed(state.n_steps)
        self._on_speed_changed(state.speed)
        self._on_playing_changed(state.playing)

    # ---------------------------------------------------------------- bar -> state
    def _on_seek(self, index: int) -> None:
        if index != self.state.index:
            self.state.seek(index)

    # ---------------------------------------------------------------- state -> bar
    def _on_steps_changed(self, n: int) -> None:
        state = self.state
        self.bar.show_timeline(n, state.index, state.spans, state.nonfinite_steps)
        self._on_step_changed(state.index)

    def _on_step_changed(self, index: int) -> None:
        state = self.state
        target = state.next_phase()
        span = None if target is None else state.span_at(target)
        self.bar.show_step(index, state.n_steps, state.current_step, span)

    def _on_playing_changed(self, playing: bool) -> None:
        self.bar.show_playing(playing, self.state.interval_ms)

    def _on_speed_changed(self, speed: float) -> None:
        self.bar.show_speed(speed, self.state.interval_ms)
