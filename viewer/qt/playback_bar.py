"""Playback controls bound to :class:`viewer.model.playback.PlaybackState`.

The bar owns the play timer (timers belong to the Qt side); everything else it does is call
the state's methods and mirror its signals.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.playback import PlaybackState
from viewer.qt.icons import media_icon

__all__ = ["SPEEDS", "PhaseStrip", "PlaybackBar"]

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 60.0)


class PhaseStrip(QtWidgets.QWidget):
    """A thin strip over the timeline: forward and backward spans, NaN/Inf steps, the cursor."""

    FORWARD = "#f0a640"
    BACKWARD = "#5aa5c8"
    NONFINITE = "#d6336c"

    def __init__(self, state: PlaybackState, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._state = state
        self.setObjectName("phaseStrip")
        self.setMinimumHeight(16)
        self.setSizePolicy(
            QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Fixed
        )

    def sizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(200, 16)

    def _x(self, index: float) -> float:
        n = self._state.n_steps
        margin = 8.0
        width = max(1.0, self.width() - 2 * margin)
        return margin + width * (index + 1) / max(1, n)

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:
        painter = QtGui.QPainter(self)
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        h = self.height()
        font = painter.font()
        font.setPixelSize(10)
        painter.setFont(font)
        for span in self._state.spans:
            colour = QtGui.QColor(self.FORWARD if span.phase == "forward" else self.BACKWARD)
            x0, x1 = self._x(span.start - 1), self._x(span.stop - 1)
            rect = QtCore.QRectF(x0, 3, max(1.0, x1 - x0 - 1), h - 6)
            colour.setAlpha(110)
            painter.fillRect(rect, colour)
            if rect.width() > 60:
                painter.setPen(self.palette().color(QtGui.QPalette.ColorRole.WindowText))
                painter.drawText(rect, QtCore.Qt.AlignmentFlag.AlignCenter, span.label)
        painter.setPen(QtGui.QPen(QtGui.QColor(self.NONFINITE), 2))
        for i in self._state.nonfinite_steps:
            x = self._x(i)
            painter.drawLine(QtCore.QPointF(x, 1), QtCore.QPointF(x, h - 1))
        painter.end()


class PlaybackBar(QtWidgets.QWidget):
    """Jump to start, step back, play/pause, step forward, jump to end, phase, speed, timeline."""

    def __init__(self, state: PlaybackState, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("playbackBar")
        self._state = state

        def button(name: str, tip: str) -> QtWidgets.QToolButton:
            b = QtWidgets.QToolButton(self)
            b.setObjectName(name)
            b.setToolTip(tip)
            b.setAutoRaise(True)
            b.setIconSize(QtCore.QSize(18, 18))
            return b

        self.start_button = button("jumpStartButton", "Start (Home)")
        self.back_button = button("stepBackButton", "Step back (Left)")
        self.play_button = button("playButton", "Play / pause (Space)")
        self.forward_button = button("stepForwardButton", "Step forward (Right)")
        self.end_button = button("jumpEndButton", "End (End)")
        self.set_icon_colour(self.palette().color(QtGui.QPalette.ColorRole.ButtonText))
        self.phase_button = QtWidgets.QToolButton(self)
        self.phase_button.setObjectName("phaseButton")
        self.phase_button.setText("Phases")
        self.phase_button.setPopupMode(QtWidgets.QToolButton.ToolButtonPopupMode.MenuButtonPopup)
        self.phase_menu = QtWidgets.QMenu(self.phase_button)
        self.phase_button.setMenu(self.phase_menu)

        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal, self)
        self.slider.setObjectName("timelineSlider")
        self.slider.setToolTip("Timeline: drag to any step")
        self.slider.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.strip = PhaseStrip(state, self)

        self.speed_box = QtWidgets.QComboBox(self)
        self.speed_box.setObjectName("speedBox")
        self.speed_box.setToolTip("Playback speed (steps per second)")
        for s in SPEEDS:
            self.speed_box.addItem(f"{s:g} steps/s", s)

        self.position_label = QtWidgets.QLabel(self)
        self.position_label.setObjectName("stepLabel")
        self.position_label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.position_label.setMinimumWidth(220)

        controls = QtWidgets.QHBoxLayout()
        controls.setSpacing(2)
        for w in (
            self.start_button,
            self.back_button,
            self.play_button,
            self.forward_button,
            self.end_button,
        ):
            controls.addWidget(w)
        controls.addSpacing(6)
        controls.addWidget(self.phase_button)
        controls.addSpacing(6)
        controls.addWidget(self.position_label, 1)
        controls.addWidget(self.speed_box)
        timeline = QtWidgets.QVBoxLayout()
        timeline.setSpacing(0)
        timeline.addWidget(self.strip)
        timeline.addWidget(self.slider)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 4)
        layout.setSpacing(2)
        layout.addLayout(timeline)
        layout.addLayout(controls)

        self.timer = QtCore.QTimer(self)
        self.timer.setObjectName("playTimer")
        self.timer.timeout.connect(self._tick)

        self.start_button.clicked.connect(state.to_start)
        self.back_button.clicked.connect(state.step_back)
        self.play_button.clicked.connect(state.toggle_playing)
        self.forward_button.clicked.connect(state.step_forward)
        self.end_button.clicked.connect(state.to_end)
        self.phase_button.clicked.connect(self.jump_next_phase)
        self.slider.valueChanged.connect(self._on_slider)
        self.speed_box.currentIndexChanged.connect(self._on_speed_box)

        state.steps_changed.connect(self._on_steps_changed)
        state.step_changed.connect(self._on_step_changed)
        state.playing_changed.connect(self._on_playing_changed)
        state.speed_changed.connect(self._on_speed_changed)
        self._on_steps_changed(state.n_steps)
        self._on_speed_changed(state.speed)
        self._on_playing_changed(state.playing)

    def set_icon_colour(self, colour: QtGui.QColor | str) -> None:
        """Redraw the buttons' icons in ``colour`` (the theme's text colour)."""
        self._play_icon = media_icon("play", colour)
        self._pause_icon = media_icon("pause", colour)
        for b, kind in (
            (self.start_button, "start"),
            (self.back_button, "back"),
            (self.forward_button, "forward"),
            (self.end_button, "end"),
        ):
            b.setIcon(media_icon(kind, colour))
        self._show_playing(self._state.playing)

    # ---------------------------------------------------------------- actions
    def jump_next_phase(self) -> None:
        """Show the first step of the next phase (``B``): from the forward phase the first
        backward step, from a backward pass the next phase; at the last one, stay."""
        self._state.to_next_phase()

    def _tick(self) -> None:
        self._state.tick()

    def _on_slider(self, value: int) -> None:
        if value != self._state.index:
            self._state.seek(value)

    def _on_speed_box(self, i: int) -> None:
        value = self.speed_box.itemData(i)
        if value is not None:
            self._state.set_speed(float(value))

    # ---------------------------------------------------------------- mirror the state
    def _on_steps_changed(self, n: int) -> None:
        with QtCore.QSignalBlocker(self.slider):
            self.slider.setRange(-1, max(-1, n - 1))
            self.slider.setValue(self._state.index)
        self.slider.setPageStep(max(1, n // 10))
        self.phase_menu.clear()
        for span in self._state.spans:
            action = self.phase_menu.addAction(f"{span.label}: steps {span.start + 1}-{span.stop}")
            action.triggered.connect(lambda _=False, s=span.start: self._state.seek(s))
        self.phase_button.setEnabled(bool(self._state.spans))
        for b in (self.start_button, self.back_button, self.play_button):
            b.setEnabled(n > 0)
        self.forward_button.setEnabled(n > 0)
        self.end_button.setEnabled(n > 0)
        self.strip.update()
        self._on_step_changed(self._state.index)

    def _on_step_changed(self, index: int) -> None:
        if self.slider.value() != index:
            with QtCore.QSignalBlocker(self.slider):
                self.slider.setValue(index)
        n = self._state.n_steps
        step = self._state.current_step
        if n == 0:
            text = "no steps"
        elif step is None:
            text = f"step 0 / {n} · leaves only"
        else:
            text = f"step {index + 1} / {n} · {step.phase} · {step.op}"
        self.position_label.setText(text)
        step = self._state.next_phase()
        target = None if step is None else self._state.span_at(step)
        if target is not None:
            self.phase_button.setText(f"→ {target.label}")
            self.phase_button.setToolTip(
                f"Jump to the first {target.label} step (B); the arrow lists every phase"
            )
        else:
            self.phase_button.setText("Phases")
            self.phase_button.setToolTip("No later phase; the arrow lists every phase")

    def _show_playing(self, playing: bool) -> None:
        self.play_button.setIcon(self._pause_icon if playing else self._play_icon)
        self.play_button.setToolTip("Pause (Space)" if playing else "Play (Space)")

    def _on_playing_changed(self, playing: bool) -> None:
        self._show_playing(playing)
        if playing:
            self.timer.start(self._state.interval_ms)
        else:
            self.timer.stop()

    def _on_speed_changed(self, speed: float) -> None:
        self.timer.setInterval(self._state.interval_ms)
        best = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - speed))
        if SPEEDS[best] != speed:
            # A speed set from elsewhere (settings) that is not in the list: add it.
            self.speed_box.addItem(f"{speed:g} steps/s", speed)
            best = self.speed_box.count() - 1
        with QtCore.QSignalBlocker(self.speed_box):
            self.speed_box.setCurrentIndex(best)
