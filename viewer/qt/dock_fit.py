"""The side docks make room for the graph: the graph keeps at least half the window's width.

QMainWindow alone does the opposite: a shrinking window takes its width from the central
widget until that is at its minimum, and a growing one gives it all back to the central
widget, so after a shrink and a grow the docks stay squeezed. :class:`DockFit` runs on every
resize of the window instead:

- the left and right dock columns keep the widths the user gave them by dragging a separator,
  and until then their defaults for the window's width now (:func:`default_widths`: a larger
  window gives them more), as long as both fit in half the window;
- below that they shrink together, in proportion, down to their panels' minimum widths;
- when even those do not fit, the right column *folds*: its docks join the left column's tab
  group, so every panel stays one click away and the graph keeps its half; once the window is
  wide enough again they go back where they were, tabs, order and visibility as before.

Saving the window's state while folded saves the unfolded arrangement (:meth:`unfolded`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from PySide6 import QtCore, QtGui, QtWidgets

__all__ = ["GRAPH_SHARE", "DockFit", "default_widths"]

# The graph's share of the window's width that the docks never take: the graph is what the
# app is for, and with half of an 800 px window (400 px) a ten-node graph is still readable.
GRAPH_SHARE = 0.5
# Unfolding waits until there is this much more room than folding needed, so that a window
# dragged around the boundary does not fold and unfold on every pixel.
UNFOLD_MARGIN = 40

_LEFT = QtCore.Qt.DockWidgetArea.LeftDockWidgetArea
_RIGHT = QtCore.Qt.DockWidgetArea.RightDockWidgetArea
_HORIZONTAL = QtCore.Qt.Orientation.Horizontal
_VERTICAL = QtCore.Qt.Orientation.Vertical


def default_widths(window_width: int) -> tuple[int, int]:
    """The left and right columns' widths for a window this wide before the user drags a
    separator: a fifth and a quarter of it, at least 220 and 300 px (the panels' texts)."""
    return max(220, window_width // 5), max(300, window_width // 4)


@dataclass
class _FoldedGroup:
    """One tab group (or single dock) of the right column, as it was before folding."""

    docks: list[QtWidgets.QDockWidget]
    current: QtWidgets.QDockWidget | None  # the tab in front
    height: int


class DockFit(QtCore.QObject):
    """Sizes ``window``'s left and right dock columns on each of its resizes (the window calls
    :meth:`fit` from its ``resizeEvent``) and learns the user's widths from separator drags."""

    def __init__(
        self, window: QtWidgets.QMainWindow, docks: Sequence[QtWidgets.QDockWidget]
    ) -> None:
        super().__init__(window)
        self.window = window
        self.docks = tuple(docks)
        # The user's widths for the left and right columns, 0 for a side they have not set
        # (its default for the window's width); None until the window is first shown.
        self.preferred: tuple[int, int] | None = None
        self._folded: list[_FoldedGroup] = []
        self._right_min = 0  # the right column's minimum width when it folded
        self._drag_from: tuple[int, int] | None = None  # the widths when a drag began
        self._fitting = False
        window.installEventFilter(self)

    # ------------------------------------------------------------------ state
    @property
    def folded(self) -> bool:
        return bool(self._folded)

    def start(self, keep_current: bool, preferred: tuple[int, int] | None = None) -> None:
        """The window is shown: take ``preferred`` (the widths saved with a restored state, 0
        for a side the user did not set), else the columns' widths as they are (a restored
        state), else none (the defaults for the window's width, as it changes), and fit them.
        """
        if preferred is not None:
            self.preferred = preferred
        elif keep_current:
            left, right = self._column(_LEFT), self._column(_RIGHT)
            self.preferred = (left[0].width() if left else 0, right[0].width() if right else 0)
        else:
            # Not the defaults for the width now: those of a window first shown small would
            # stay, and the editor would be narrower in a large window than folded in a small
            # one (220 px at 1600 x 1000, 300 at 800 x 560).
            self.preferred = (0, 0)
        self._whole_tab_names()
        self.fit()

    @contextlib.contextmanager
    def unfolded(self) -> Iterator[None]:
        """The right column back in place for the duration (to save the window's state)."""
        was_folded = self.folded
        if was_folded:
            # Moving the docks back may resize the window (a taller minimum) from inside
            # addDockWidget: a fit run from that resize would fold them again halfway
            # through, under QMainWindow's layout (a crash on closing at 800 x 560).
            self._fitting = True
            try:
                self._unfold()
            finally:
                self._fitting = False
        try:
            yield
        finally:
            if was_folded:
                self.fit()

    # ------------------------------------------------------------------ fitting
    def fit(self) -> None:
        if self.preferred is None or self._fitting:
            return
        self._fitting = True
        try:
            self._fit()
        finally:
            self._fitting = False

    def _fit(self) -> None:
        width = self.window.width()
        budget = int(width * (1 - GRAPH_SHARE)) - 2 * self._separator()
        left, right = self._column(_LEFT), self._column(_RIGHT)
        if self.folded:
            needed = self._min_width(left, excluding=self._folded_docks()) + self._right_min
            if needed + UNFOLD_MARGIN <= budget:
                self._unfold()
                left, right = self._column(_LEFT), self._column(_RIGHT)
        elif left and right and self._min_width(left) + self._min_width(right) > budget:
            self._fold(right)
            left, right = self._column(_LEFT), []
        want_left, want_right = self.wanted(width)
        if left and right:
            total = want_left + want_right
            if total > budget:
                low_left, low_right = self._min_width(left), self._min_width(right)
                want_left = max(low_left, budget * want_left // total)
                want_right = max(low_right, budget - want_left)
            self._resize(left[0], want_left, right[0], want_right)
        elif left:
            if self.folded:  # the column holds the right panels' tabs too: as wide as theirs
                want_left = max(want_left, want_right)
            self._resize(left[0], max(min(want_left, budget), self._min_width(left)), None, 0)
        elif right:
            self._resize(None, 0, right[0], max(min(want_right, budget), self._min_width(right)))

    def wanted(self, width: int) -> tuple[int, int]:
        """The columns' widths in a window ``width`` wide with room for both: the user's, or
        the defaults for that width where they set none."""
        chosen = self.preferred or (0, 0)
        defaults = default_widths(width)
        return (chosen[0] or defaults[0], chosen[1] or defaults[1])

    def _resize(
        self,
        left: QtWidgets.QDockWidget | None,
        left_width: int,
        right: QtWidgets.QDockWidget | None,
        right_width: int,
    ) -> None:
        pairs = [(d, w) for d, w in ((left, left_width), (right, right_width)) if d is not None]
        self.window.resizeDocks([d for d, _ in pairs], [w for _, w in pairs], _HORIZONTAL)

    # ------------------------------------------------------------------ folding
    def _fold(self, right: list[QtWidgets.QDockWidget]) -> None:
        self._right_min = self._min_width(right)
        groups: list[_FoldedGroup] = []
        seen: set[QtWidgets.QDockWidget] = set()
        placed = [d for d in self.docks if self._in(d, _RIGHT)]
        for dock in placed:
            if dock in seen:
                continue
            members = [dock, *self.window.tabifiedDockWidgets(dock)]
            members.sort(key=self.docks.index)
            seen.update(members)
            front = next((m for m in members if self._in_front(m)), None)
            height = front.height() if front is not None else max(m.height() for m in members)
            groups.append(_FoldedGroup(members, front, height))
        # top to bottom as on screen (a tab behind another sits off screen: its front's place)
        groups.sort(key=lambda g: (g.current is None, g.current.y() if g.current else 0))
        anchor = self._tab_anchor()
        left_front = [d for d in self._column(_LEFT) if self._in_front(d)]
        hidden = {d: d.isHidden() for d in placed}
        for group in groups:
            for dock in group.docks:
                if anchor is None:
                    self.window.addDockWidget(_LEFT, dock)
                    anchor = dock
                else:
                    self.window.tabifyDockWidget(anchor, dock)
        for dock, was_hidden in hidden.items():
            dock.setHidden(was_hidden)
        for dock in left_front:
            dock.raise_()
        self._folded = groups
        self._whole_tab_names()
        # the tab group now holds the right panels too (the inspector, the plots): it gets
        # three fifths of the column's height, the docks above it (the editor) the rest
        if anchor is not None:
            group = {anchor, *self.window.tabifiedDockWidgets(anchor)}
            above = [d for d in left_front if d not in group]
            if above:
                front = next((d for d in group if self._in_front(d)), anchor)
                weights = [2] * len(above) + [3 * len(above)]
                self.window.resizeDocks([*above, front], weights, _VERTICAL)

    def _unfold(self) -> None:
        groups, self._folded = self._folded, []
        placed: list[tuple[QtWidgets.QDockWidget, int]] = []
        for group in groups:
            # a dock the user moved elsewhere while folded stays where they put it
            mine = [d for d in group.docks if self._in(d, _LEFT) and not d.isFloating()]
            if not mine:
                continue
            hidden = {d: d.isHidden() for d in mine}
            self.window.addDockWidget(_RIGHT, mine[0], _VERTICAL)
            for dock in mine[1:]:
                self.window.tabifyDockWidget(mine[0], dock)
            for dock, was_hidden in hidden.items():
                dock.setHidden(was_hidden)
            if group.current in mine:
                group.current.raise_()
            placed.append((mine[0], group.height))
        self._whole_tab_names()
        shown = [(d, h) for d, h in placed if not d.isHidden()]
        if len(shown) > 1:
            self.window.resizeDocks([d for d, _ in shown], [h for _, h in shown], _VERTICAL)

    def _whole_tab_names(self) -> None:
        """Tabs of docks keep their whole names and scroll: eight in a folded column would
        each be cut to "Va…", "Ex…", "I…" (QMainWindow makes its tab bars as groups form)."""
        direct = QtCore.Qt.FindChildOption.FindDirectChildrenOnly
        for bar in self.window.findChildren(QtWidgets.QTabBar, options=direct):
            bar.setElideMode(QtCore.Qt.TextElideMode.ElideNone)
            bar.setUsesScrollButtons(True)

    def _folded_docks(self) -> set[QtWidgets.QDockWidget]:
        return {d for group in self._folded for d in group.docks}

    def _tab_anchor(self) -> QtWidgets.QDockWidget | None:
        """The left column's dock whose tab group the folded docks join: the largest group
        (the Variables, Examples and Legend tabs, by default), else the lowest dock."""
        left = [d for d in self.docks if self._in(d, _LEFT)]
        if not left:
            return None
        return max(left, key=lambda d: (len(self.window.tabifiedDockWidgets(d)), d.y()))

    # ------------------------------------------------------------------ reading the layout
    def _in(self, dock: QtWidgets.QDockWidget, area: QtCore.Qt.DockWidgetArea) -> bool:
        return not dock.isFloating() and self.window.dockWidgetArea(dock) == area

    def _column(self, area: QtCore.Qt.DockWidgetArea) -> list[QtWidgets.QDockWidget]:
        """The docks shown in ``area``'s column (those behind a tab included)."""
        return [d for d in self.docks if self._in(d, area) and not d.isHidden()]

    @staticmethod
    def _min_width(
        docks: Sequence[QtWidgets.QDockWidget],
        excluding: set[QtWidgets.QDockWidget] | frozenset = frozenset(),
    ) -> int:
        widths = [
            max(d.minimumSizeHint().width(), d.minimumWidth())
            for d in docks
            if d not in excluding and not d.isHidden()
        ]
        return max(widths, default=0)

    @staticmethod
    def _in_front(dock: QtWidgets.QDockWidget) -> bool:
        return dock.isVisible() and not dock.visibleRegion().isEmpty()

    def _separator(self) -> int:
        return self.window.style().pixelMetric(
            QtWidgets.QStyle.PixelMetric.PM_DockWidgetSeparatorExtent, None, self.window
        )

    # ------------------------------------------------------------------ the user's widths
    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        # QMainWindow moves its separators itself, in its own mouse events: a press there
        # lands on no child widget (a click a child ignored reaches the window over it). The
        # widths the drag left are read once the layout has settled.
        if watched is self.window and self.preferred is not None:
            kind = event.type()
            if kind == QtCore.QEvent.Type.MouseButtonPress and isinstance(event, QtGui.QMouseEvent):
                on_separator = self.window.childAt(event.position().toPoint()) is None
                self._drag_from = self._widths() if on_separator else None
            elif kind == QtCore.QEvent.Type.MouseButtonRelease and self._drag_from is not None:
                QtCore.QTimer.singleShot(0, self, self._learn_widths)
        return False

    def _widths(self) -> tuple[int, int]:
        left, right = self._column(_LEFT), self._column(_RIGHT)
        return (left[0].width() if left else 0, right[0].width() if right else 0)

    def _learn_widths(self) -> None:
        before, self._drag_from = self._drag_from, None
        if before is None or self.preferred is None:
            return
        now = self._widths()
        preferred = list(self.preferred)
        for side in (0, 1):
            folded_right = side == 1 and self.folded
            if now[side] and abs(now[side] - before[side]) > 2 and not folded_right:
                preferred[side] = now[side]
        self.preferred = (preferred[0], preferred[1])
