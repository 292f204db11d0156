"""The playback controls: buttons, the phase strip over the timeline, the speed and the step.

The bar draws what it is told (:meth:`PlaybackBar.show_timeline`, :meth:`PlaybackBar.show_step`,
...), reports what the user asks with its buttons and signals, and owns the play timer (timers
belong to the Qt side). It knows no state:
:class:`~viewer.qt.panels.playback_binding.PlaybackBinding` connects it to a
:class:`viewer.model.document.playback.PlaybackState`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.document.playback import PhaseSpan
from viewer.qt.drawing.icons import media_icon

__all__ = ["SPEEDS", "PhaseStrip", "PlaybackBar", "next_speed"]

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 60.0)


def next_speed(speed: float, direction: int) -> float:
    """The next of :data:`SPEEDS` above ``speed`` (``direction`` > 0) or below it (< 0);
    ``speed`` itself past either end."""
    if direction > 0:
        return next((s for s in SPEEDS if s > speed), speed)
    if direction < 0:
        return next((s for s in reversed(SPEEDS) if s < speed), speed)
    return speed


class PhaseStrip(QtWidgets.QWidget):
    """A thin strip over the timeline: forward and backward spans, NaN/Inf steps, the cursor."""

    FORWARD = "#f0a640"
    BACKWARD = "#5aa5c8"
    NONFINITE = "#d6336c"

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self._n_steps = 0
        self._spans: tuple[PhaseSpan, ...] = ()
        self._nonfinite: tuple[int, ...] = ()
        self.setObjectName("phaseStrip")
        self.setMinimumHeight(16)
        self.setSizePolicy(
            QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Fixed
        )

    def sizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(200, 16)

    def set_timeline(
        self, n_steps: int, spans: Sequence[PhaseSpan], nonfinite: Sequence[int]
    ) -> None:
        """The steps to draw: how many, their phase spans and the ones that made NaN/Inf."""
        self._n_steps = n_steps
        self._spans = tuple(spans)
        self._nonfinite = tuple(nonfinite)
        self.update()

    def _x(self, index: float) -> float:
        n = self._n_steps
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
        for span in self._spans:
            colour = QtGui.QColor(self.FORWARD if span.phase == "forward" else self.BACKWARD)
            x0, x1 = self._x(span.start - 1), self._x(span.stop - 1)
            rect = QtCore.QRectF(x0, 3, max(1.0, x1 - x0 - 1), h - 6)
            colour.setAlpha(110)
            painter.fillRect(rect, colour)
            if rect.width() > 60:
                painter.setPen(self.palette().color(QtGui.QPalette.ColorRole.WindowText))
                painter.drawText(rect, QtCore.Qt.AlignmentFlag.AlignCenter, span.label)
        painter.setPen(QtGui.QPen(QtGui.QColor(self.NONFINITE), 2))
        for i in self._nonfinite:
            x = self._x(i)
            painter.drawLine(QtCore.QPointF(x, 1), QtCore.QPointF(x, h - 1))
        painter.end()


class PlaybackBar(QtWidgets.QWidget):
    """Jump to start, step back, play/pause, step forward, jump to end, phase, speed, timeline.

    The buttons' ``clicked`` and the timer's ``timeout`` are what the user and the clock ask
    for; the other requests are the bar's signals.
    """

    seek_requested = QtCore.Signal(int)  # the slider was moved, or a phase chosen in the menu
    next_phase_requested = QtCore.Signal()  # the phase button, or B
    speed_requested = QtCore.Signal(float)  # steps per second, chosen in the box

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("playbackBar")
        self._playing = False

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
        self._fit_phase_button(())

        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal, self)
        self.slider.setObjectName("timelineSlider")
        self.slider.setToolTip("Timeline: drag to any step")
        self.slider.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.strip = PhaseStrip(self)

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

        self.phase_button.clicked.connect(self.jump_next_phase)
        self.slider.valueChanged.connect(self.seek_requested)
        self.speed_box.currentIndexChanged.connect(self._on_speed_box)

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
        self._show_playing_icon()

    # ---------------------------------------------------------------- requests
    def jump_next_phase(self) -> None:
        """Ask for the first step of the next phase (``B``): from the forward phase the first
        backward step, from a backward pass the next phase; at the last one, stay."""
        self.next_phase_requested.emit()

    def _on_speed_box(self, i: int) -> None:
        value = self.speed_box.itemData(i)
        if value is not None:
            self.speed_requested.emit(float(value))

    # ---------------------------------------------------------------- what it shows
    def show_timeline(
        self, n: int, index: int, spans: Sequence[PhaseSpan], nonfinite: Sequence[int]
    ) -> None:
        """A new list of ``n`` steps, the cursor at ``index``: the slider's range, the phase
        menu and the strip."""
        with QtCore.QSignalBlocker(self.slider):
            self.slider.setRange(-1, max(-1, n - 1))
            self.slider.setValue(index)
        self.slider.setPageStep(max(1, n // 10))
        self.phase_menu.clear()
        for span in spans:
            action = self.phase_menu.addAction(f"{span.label}: steps {span.start + 1}-{span.stop}")
            action.triggered.connect(lambda _=False, s=span.start: self.seek_requested.emit(s))
        self.phase_button.setEnabled(bool(spans))
        self._fit_phase_button(["→ " + span.label for span in spans])
        for b in (self.start_button, self.back_button, self.play_button):
            b.setEnabled(n > 0)
        self.forward_button.setEnabled(n > 0)
        self.end_button.setEnabled(n > 0)
        self.strip.set_timeline(n, spans, nonfinite)

    def _fit_phase_button(self, texts: Sequence[str]) -> None:
        """The phase button as wide as the widest text it can show for this timeline: stepping
        from the forward phase ("→ backward") to the last ("Phases") leaves the bar's minimum
        width and the buttons after it where they were."""
        button = self.phase_button
        shown, widest = button.text(), 0
        for text in ("Phases", "→ backward", *texts):
            button.setText(text)
            widest = max(widest, button.sizeHint().width())
        button.setText(shown)
        button.setMinimumWidth(widest)

    def show_step(self, index: int, n: int, step: Any, next_span: PhaseSpan | None) -> None:
        """The cursor at ``index`` of ``n`` steps (``step`` the current one, None before any),
        and the span the phase button jumps to (None: no later phase)."""
        if self.slider.value() != index:
            with QtCore.QSignalBlocker(self.slider):
                self.slider.setValue(index)
        if n == 0:
            text = "no steps"
        elif step is None:
            text = f"step 0 / {n} · leaves only"
        else:
            text = f"step {index + 1} / {n} · {step.phase} · {step.op}"
        self.position_label.setText(text)
        if next_span is not None:
            self.phase_button.setText(f"→ {next_span.label}")
            self.phase_button.setToolTip(
                f"Jump to the first {next_span.label} step (B); the arrow lists every phase"
            )
        else:
            self.phase_button.setText("Phases")
            self.phase_button.setToolTip("No later phase; the arrow lists every phase")

    def _show_playing_icon(self) -> None:
        self.play_button.setIcon(self._pause_icon if self._playing else self._play_icon)
        self.play_button.setToolTip("Pause (Space)" if self._playing else "Play (Space)")

    def show_playing(self, playing: bool, interval_ms: int) -> None:
        """Playing (the timer ticks every ``interval_ms``) or paused."""
        self._playing = playing
        self._show_playing_icon()
        if playing:
            self.timer.start(interval_ms)
        else:
            self.timer.stop()

    def show_speed(self, speed: float, interval_ms: int) -> None:
        self.timer.setInterval(interval_ms)
        best = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - speed))
        if SPEEDS[best] != speed:
            # A speed set from elsewhere (settings) that is not in the list: add it.
            self.speed_box.addItem(f"{speed:g} steps/s", speed)
            best = self.speed_box.count() - 1
        with QtCore.QSignalBlocker(self.speed_box):
            self.speed_box.setCurrentIndex(best)
