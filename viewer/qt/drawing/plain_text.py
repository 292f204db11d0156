"""Strings from files and users shown as plain text wherever Qt would guess rich text.

QLabel and QMessageBox take ``Qt.PlainText``; a tooltip has no such switch and renders any
text that looks like HTML, so :func:`tooltip` escapes it and wraps it in a paragraph that keeps
its line breaks and spaces. :class:`SummaryArea` holds a panel's wrapped plain-text summary.
"""

from __future__ import annotations

import html

from PySide6 import QtCore, QtWidgets

__all__ = ["MAX_TOOLTIP", "SummaryArea", "holding", "tooltip"]

MAX_TOOLTIP = 2_000  # characters of a text a tooltip shows, at most (the rest: "…")


def tooltip(text: str, limit: int | None = None) -> str:
    """``text`` as a tooltip shows it literally: ``<h1>x</h1>`` reads as typed; with a
    ``limit``, at most that many characters of it (a 15 000-character name would cover the
    screen)."""
    if not text:
        return ""
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "\u2026"
    return "<p style='white-space:pre-wrap'>" + html.escape(text, quote=False) + "</p>"


def holding(area: QtWidgets.QScrollArea, widget: QtWidgets.QWidget) -> None:
    """``area`` holds ``widget`` as a panel's own part, not a box: as wide as the area, no
    frame, no sideways scroll bar, the panel's background through both."""
    area.setWidget(widget)
    area.setWidgetResizable(True)
    area.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    area.viewport().setAutoFillBackground(False)
    widget.setAutoFillBackground(False)


class SummaryArea(QtWidgets.QScrollArea):
    """A scroll area around a wrapped label that asks for the label's whole height at its
    width (its size hint) but needs only up to three lines (its minimum)."""

    def __init__(
        self,
        label: QtWidgets.QLabel,
        parent: QtWidgets.QWidget,
        preferred_lines: int | None = None,
    ) -> None:
        super().__init__(parent)
        self.label = label
        # the most lines it asks for before the rest of the panel (None: all of them)
        self.preferred_lines = preferred_lines
        holding(self, label)
        self._needed = 0

    def set_text(self, text: str) -> None:
        self.label.setText(text)
        self.fit()

    def set_preferred_lines(self, lines: int | None) -> None:
        """The most lines it asks for (None: all of them), asked again at once."""
        if lines != self.preferred_lines:
            self.preferred_lines = lines
            self.updateGeometry()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        # Not now: a height set inside the resize event is never passed on to the viewport,
        # which kept the old height (two lines at a narrower width) and showed one line cut
        # in half.
        QtCore.QTimer.singleShot(0, self, self.fit)

    def fit(self) -> None:
        """Ask for every line the text needs at this width (at least three of them)."""
        width = self.viewport().width() or self.width()
        needed = self.label.heightForWidth(width) if width > 0 else 0
        needed = max(needed, self.label.fontMetrics().height())
        if needed != self._needed:
            self._needed = needed
            self.setMinimumHeight(min(needed, 3 * self.label.fontMetrics().lineSpacing() + 4))
            self.setMaximumHeight(needed)
            self.updateGeometry()

    def minimumSizeHint(self) -> QtCore.QSize:
        # QAbstractScrollArea's own is room for its scroll bars' buttons (68 px high), which
        # the layout took as the least it may give, whatever the lines asked for
        return QtCore.QSize(super().minimumSizeHint().width(), self.minimumHeight())

    def sizeHint(self) -> QtCore.QSize:
        height = self._needed
        if self.preferred_lines is not None:
            spacing = self.label.fontMetrics().lineSpacing()
            height = min(height, self.preferred_lines * spacing + 4)
        return QtCore.QSize(super().sizeHint().width(), max(height, 1))
