"""The first-run tour: a few callouts, each explaining one part of the window, which is
outlined. Back, Next and Skip move through them; Esc dismisses it.

The callout stays in one place, at the top right of the graph's area, as tall as its longest
stop needs: a user clicking Next again and again finds it under the pointer each time (beside each
part in turn, it moved by hundreds of pixels between stops). The outline shows where to look.

It is a child of the window, never a modal dialog: nothing waits for it, the window stays
usable around it, and a test that never looks at it is not blocked by it. The window starts
it once (while ``help/tourSeen`` is unset) and Help > Take the Tour replays it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6 import QtCore, QtGui, QtWidgets

__all__ = ["STOPS", "Tour", "TourStop", "tour_stops"]

# How far the callout stays from the part it points at, and from the window's edges.
GAP = 12
CALLOUT_WIDTH = 300


# The first-run tour: each stop's title, text, and what it points at (a dock's name, or
# "graph" for the central view), in the order a new user meets them.
STOPS: tuple[tuple[str, str, str], ...] = (
    (
        "Your program",
        "Type a program here, or open one from Help > Examples by Topic, and press Run "
        "(Ctrl+Enter). Every operation is recorded as the engine computes it.",
        "editorDock",
    ),
    (
        "The graph",
        "What the program built: variables are rounded, Functions square, and arrows run "
        "from inputs to outputs. Drag to pan, wheel to zoom, F fits it.",
        "graph",
    ),
    (
        "Playback",
        "Step through the forward pass, then backward: Space plays, the arrow keys step, "
        "B jumps to the next phase. The bar shows where you are.",
        "playbackDock",
    ),
    (
        "The inspector",
        "Click a node to see its value and its gradient at the current step, the Function "
        "that made it and those that use it.",
        "inspectorDock",
    ),
    (
        "The legend",
        "What each colour and mark in the graph means. Help > Take the Tour shows it again.",
        "legendDock",
    ),
)


@dataclass(frozen=True)
class TourStop:
    """One callout: what it says, and the widget it points at (the window raises a dock
    behind a tab before handing it over)."""

    title: str
    text: str
    target: Callable[[], QtWidgets.QWidget]


def tour_stops(
    graph: QtWidgets.QWidget, raise_dock: Callable[[str], QtWidgets.QWidget]
) -> list[TourStop]:
    """:data:`STOPS`, each pointing at ``graph`` or at its dock, which ``raise_dock`` shows in
    front of its tabs (should it be behind one) and returns."""

    def target(where: str) -> Callable[[], QtWidgets.QWidget]:
        if where == "graph":
            return lambda: graph
        return lambda: raise_dock(where)

    return [TourStop(title, text, target(where)) for title, text, where in STOPS]


class Tour(QtWidgets.QFrame):
    """The callouts over ``window``; :attr:`finished` fires when it is done or dismissed."""

    finished = QtCore.Signal()

    def __init__(self, window: QtWidgets.QWidget, stops: Sequence[TourStop]) -> None:
        super().__init__(window)
        if not stops:
            raise ValueError("a tour needs at least one stop")
        self.setObjectName("tourCallout")
        self.stops = tuple(stops)
        self.index = 0
        self._window = window
        self._target: QtWidgets.QWidget | None = None
        self._follow_queued = False
        self._raise_again = False
        self.outline = _Outline(window)

        self.counter = QtWidgets.QLabel(self)
        self.counter.setObjectName("tourCounter")
        self.title = QtWidgets.QLabel(self)
        self.title.setObjectName("tourTitle")
        self.title.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title.setFont(font)
        self.text = QtWidgets.QLabel(self)
        self.text.setObjectName("tourText")
        self.text.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.text.setWordWrap(True)
        self.back_button = QtWidgets.QPushButton("Back", self)
        self.back_button.setObjectName("tourBack")
        self.next_button = QtWidgets.QPushButton("Next", self)
        self.next_button.setObjectName("tourNext")
        self.next_button.setDefault(True)
        self.skip_button = QtWidgets.QPushButton("Skip the Tour", self)
        self.skip_button.setObjectName("tourSkip")
        self.skip_button.setToolTip("Close the tour (Esc); Help > Take the Tour shows it again")
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.skip_button)
        buttons.addStretch(1)
        buttons.addWidget(self.back_button)
        buttons.addWidget(self.next_button)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.addWidget(self.counter)
        layout.addWidget(self.title)
        layout.addWidget(self.text)
        layout.addStretch(1)  # a shorter stop's text: the buttons stay at the bottom
        layout.addLayout(buttons)
        self.setFixedWidth(CALLOUT_WIDTH)

        self.back_button.clicked.connect(self.back)
        self.next_button.clicked.connect(self.next)
        self.skip_button.clicked.connect(self.dismiss)
        window.installEventFilter(self)
        self._area = self._area_widget()
        if self._area is not None:
            self._area.installEventFilter(self)
        self.hide()

    # ------------------------------------------------------------------ moving through it
    @property
    def running(self) -> bool:
        return self.isVisible()

    def start(self) -> None:
        self.index = 0
        self._fit_height()
        self._show_stop()

    def _fit_height(self) -> None:
        """As tall as the stop with the most text needs, for every stop: the buttons stay put."""
        layout = self.layout()
        heights = []
        for stop in self.stops:
            self.counter.setText(f"{len(self.stops)} of {len(self.stops)}")
            self.title.setText(stop.title)
            self.text.setText(stop.text)
            layout.invalidate()
            heights.append(layout.totalHeightForWidth(CALLOUT_WIDTH))
        self.setFixedHeight(max(heights))

    def next(self) -> None:
        if self.index + 1 >= len(self.stops):
            self.dismiss()
            return
        self.index += 1
        self._show_stop()

    def back(self) -> None:
        if self.index > 0:
            self.index -= 1
            self._show_stop()

    def dismiss(self) -> None:
        was_running = self.isVisible()
        self._watch(None)
        self.outline.hide()
        self.hide()
        if was_running:
            self.finished.emit()

    def _show_stop(self) -> None:
        stop = self.stops[self.index]
        last = self.index + 1 == len(self.stops)
        self.counter.setText(f"{self.index + 1} of {len(self.stops)}")
        self.title.setText(stop.title)
        self.text.setText(stop.text)
        self.back_button.setEnabled(self.index > 0)
        self.next_button.setText("Done" if last else "Next")
        self._watch(stop.target())
        self.show()
        self.place()
        self.raise_()
        self.next_button.setFocus()

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:
        # painted from the palette, not a style sheet: a theme switch repaints it in the new one
        _paint_frame(self, self.palette().color(QtGui.QPalette.ColorRole.Base), 2, 6)

    def event(self, event: QtCore.QEvent) -> bool:
        # Esc is the window's Cancel shortcut while something runs: the tour, when it has the
        # focus, claims it first, as a text field claims its keys
        if (
            event.type() == QtCore.QEvent.Type.ShortcutOverride
            and isinstance(event, QtGui.QKeyEvent)
            and event.key() == QtCore.Qt.Key.Key_Escape
        ):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QtGui.QKeyEvent) -> None:
        if event.key() == QtCore.Qt.Key.Key_Escape:
            self.dismiss()
            return
        super().keyPressEvent(event)

    # ------------------------------------------------------------------ where it stands
    def place(self) -> None:
        """At the top right of the graph's area, inside the window (the same place for every
        stop); the outline around the target."""
        target = self._target
        if target is None or not self.isVisible():
            return
        area = self._window.rect()
        origin = target.mapTo(self._window, QtCore.QPoint(0, 0))
        box = QtCore.QRect(origin, target.size()).intersected(area)
        self.outline.setGeometry(box.adjusted(-2, -2, 2, 2).intersected(area))
        self.outline.show()
        self.outline.raise_()
        size = self.size()
        spot_area = self._area
        if spot_area is not None and spot_area.isVisible():
            corner = spot_area.mapTo(self._window, QtCore.QPoint(0, 0))
            room = QtCore.QRect(corner, spot_area.size())
        else:
            room = area
        # the top right corner: a fitted graph is centred and its leaves are at the top, so
        # the middle of the top covered the first leaf (x, in the seeds' example)
        spot = QtCore.QPoint(room.right() - GAP - size.width(), room.top() + GAP)
        inner = area.adjusted(GAP, GAP, -GAP, -GAP)
        x = min(max(spot.x(), inner.left()), max(inner.left(), inner.right() - size.width()))
        y = min(max(spot.y(), inner.top()), max(inner.top(), inner.bottom() - size.height()))
        self.move(x, y)
        self.raise_()

    def _area_widget(self) -> QtWidgets.QWidget | None:
        """The window's central widget (the graph), where the callout stands."""
        if isinstance(self._window, QtWidgets.QMainWindow):
            return self._window.centralWidget()
        return None

    def _watch(self, target: QtWidgets.QWidget | None) -> None:
        if self._target is not None:
            self._target.removeEventFilter(self)
        self._target = target
        if target is not None:
            target.installEventFilter(self)

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        # the window resized, a dock folded into a tab group or moved, the graph's area
        # resized: follow, once the window's layout has settled
        if event.type() in (QtCore.QEvent.Type.Resize, QtCore.QEvent.Type.Move) and (
            watched is self._window or watched is self._target or watched is self._area
        ):
            # only the window's resize raises the target again (it may have folded behind a
            # tab); a tab the user picks stays in front
            self._raise_again = self._raise_again or watched is self._window
            if not self._follow_queued:
                self._follow_queued = True
                QtCore.QTimer.singleShot(0, self, self._follow)
        return False

    def _follow(self) -> None:
        self._follow_queued = False
        raise_again, self._raise_again = self._raise_again, False
        if self.isVisible():
            if raise_again:
                self._watch(self.stops[self.index].target())
            self.place()


class _Outline(QtWidgets.QWidget):
    """The frame around the part a callout explains; clicks go through it."""

    def __init__(self, parent: QtWidgets.QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("tourOutline")
        self.setAttribute(QtCore.Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.hide()

    def paintEvent(self, event: QtGui.QPaintEvent) -> None:
        _paint_frame(self, None, 3, 4)


def _paint_frame(
    widget: QtWidgets.QWidget, fill: QtGui.QColor | None, width: int, radius: int
) -> None:
    """A rounded border of the palette's highlight colour around ``widget``, filled or not."""
    painter = QtGui.QPainter(widget)
    painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
    pen = QtGui.QPen(widget.palette().color(QtGui.QPalette.ColorRole.Highlight), width)
    painter.setPen(pen)
    painter.setBrush(fill if fill is not None else QtCore.Qt.BrushStyle.NoBrush)
    half = width / 2
    painter.drawRoundedRect(
        QtCore.QRectF(widget.rect()).adjusted(half, half, -half, -half), radius, radius
    )
    painter.end()
