"""The Explain section at the top of the inspector: how the current backward step computed each
gradient it sent, and the chain rule down to the selected node.

It renders :class:`viewer.model.panels.explain_view.ExplainLine` lines; it formats no numbers.
Every piece of text is escaped before it goes into the label's markup, so a name such as
``<b>`` reads as typed; only the links to nodes are markup. A link reports a hover
(:attr:`ExplainSection.node_hovered`, -1 when the pointer leaves it) and a click
(:attr:`ExplainSection.node_requested`). For arrays, a row of spin boxes picks the element the
numbers are for (:attr:`ExplainSection.focus_requested`: a tuple, or None for the largest).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.panels.explain_view import ExplainLine

__all__ = ["ExplainSection"]

# the share of the inspector's height the section may take before it scrolls on its own
MAX_HEIGHT_SHARE = 0.75
MAX_AXES_CHOSEN = 4  # spin boxes shown for an array's element; more axes: the largest only
NO_ELEMENT = "\N{EN DASH}"  # a spin box's text while the numbers are at no one element
SPINS_BESIDE = 2  # axes whose spin boxes fit beside the label; more go in a row under it
MIN_LINES = 3  # the text's lines the section keeps when its panel is short (it scrolls)


class ExplainSection(QtWidgets.QFrame):
    node_requested = QtCore.Signal(int)  # a linked name was clicked: its trace node id
    node_hovered = QtCore.Signal(int)  # the pointer is over a linked name (-1: over none)
    focus_requested = QtCore.Signal(object)  # tuple[int, ...] | None: the element to explain

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("explainSection")
        self.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        # as tall as its lines, never stretched: the node's details below take the rest
        self.setSizePolicy(
            QtWidgets.QSizePolicy.Policy.Preferred, QtWidgets.QSizePolicy.Policy.Maximum
        )
        self.heading = QtWidgets.QLabel("Explain", self)
        self.heading.setObjectName("explainHeading")
        font = self.heading.font()
        font.setBold(True)
        self.heading.setFont(font)

        self.chooser = QtWidgets.QWidget(self)
        self.chooser.setObjectName("explainElement")
        rows = QtWidgets.QVBoxLayout(self.chooser)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(2)
        row = QtWidgets.QHBoxLayout()
        row.setSpacing(2)
        rows.addLayout(row)
        self._spin_rows = (row, QtWidgets.QHBoxLayout())  # beside the label, or under it
        self._spin_rows[1].setSpacing(2)
        self._spin_rows[1].addStretch(1)
        rows.addLayout(self._spin_rows[1])
        self.chooser_label = QtWidgets.QLabel("element", self.chooser)
        # "element (each term's largest)" wraps in a narrow dock instead of widening it
        self.chooser_label.setWordWrap(True)
        row.addWidget(self.chooser_label)
        self.spin_box = QtWidgets.QWidget(self.chooser)
        spin_row = QtWidgets.QHBoxLayout(self.spin_box)
        spin_row.setContentsMargins(0, 0, 0, 0)
        spin_row.setSpacing(2)
        self.spins: list[QtWidgets.QSpinBox] = []
        for axis in range(MAX_AXES_CHOSEN):
            spin = QtWidgets.QSpinBox(self.spin_box)
            spin.setObjectName(f"explainElementAxis{axis}")
            spin.setToolTip(f"index along axis {axis}")
            spin.valueChanged.connect(self._on_spin)
            spin_row.addWidget(spin)
            self.spins.append(spin)
        row.addWidget(self.spin_box)
        self.largest = QtWidgets.QToolButton(self.chooser)
        self.largest.setObjectName("explainLargest")
        self.largest.setText("largest")
        self.largest.setToolTip("Explain the element of largest magnitude")
        self.largest.clicked.connect(lambda: self.focus_requested.emit(None))
        row.addWidget(self.largest)
        top = QtWidgets.QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.heading)
        top.addStretch(1)
        top.addWidget(self.chooser)

        self.body = QtWidgets.QLabel(self)
        self.body.setObjectName("explainText")
        self.body.setTextFormat(QtCore.Qt.TextFormat.RichText)  # escaped text and links only
        self.body.setWordWrap(True)
        self.body.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft)
        self.body.setTextInteractionFlags(
            QtCore.Qt.TextInteractionFlag.LinksAccessibleByMouse
            | QtCore.Qt.TextInteractionFlag.TextSelectableByMouse
        )
        self.body.linkActivated.connect(self._on_link)
        self.body.linkHovered.connect(self._on_hover)
        self.scroll = _TextScroll(self)
        self.scroll.setObjectName("explainScroll")
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.body)

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 2)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(self.scroll)
        rule = QtWidgets.QFrame(self)
        rule.setFrameShape(QtWidgets.QFrame.Shape.HLine)
        rule.setFrameShadow(QtWidgets.QFrame.Shadow.Sunken)
        layout.addWidget(rule)
        self._lines: list[ExplainLine] = []
        self._shape: tuple[int, ...] = ()
        self._filling = False
        self._max_height = 10_000
        self.set_lines([])

    # ---------------------------------------------------------------- what is shown
    @property
    def lines(self) -> list[ExplainLine]:
        return list(self._lines)

    def text(self) -> str:
        """The lines as plain text, one per line (for tests and for copying)."""
        return "\n".join(line.text for line in self._lines)

    def set_lines(self, lines: Sequence[ExplainLine]) -> None:
        """Show ``lines`` (none: the section hides)."""
        self._lines = list(lines)
        self.body.setText(_markup(self._lines))
        self.setVisible(bool(self._lines))
        self._fit_height()

    def set_focus(
        self, shape: Sequence[int], element: Sequence[int] | None, chosen: bool = True
    ) -> None:
        """The element chooser for an array of ``shape`` at ``element``; ``chosen``: the user
        picked it (else it is the largest, which the model chose); no chooser for a scalar.
        ``element`` None (no term's element indexes ``shape``: each term's numbers are at its
        own largest): the spin boxes show NO_ELEMENT, not an element the text is not about."""
        self._shape = tuple(int(d) for d in shape)
        spun = len(self._shape) > 0 and len(self._shape) <= MAX_AXES_CHOSEN
        shown_spins = self.spins[: len(self._shape)] if spun else []
        # Those not wanted hidden, the rest in their row, and only then shown: a spin box
        # shown lays out the window at once, and four beside the label widened the dock.
        for spin in self.spins[len(shown_spins) :]:
            spin.setVisible(False)
        self._place_spins(below=len(shown_spins) > SPINS_BESIDE)
        self.chooser.setVisible(len(self._shape) > 0)
        unset = element is None
        self._filling = True
        try:
            for axis, spin in enumerate(self.spins):
                shown = spin in shown_spins
                spin.setVisible(shown)
                if shown:
                    # a QSpinBox shows its special text at its minimum: -1 only while unset
                    spin.setSpecialValueText(NO_ELEMENT if unset else "")
                    spin.setRange(-1 if unset else 0, max(0, self._shape[axis] - 1))
                    at = -1 if unset else (element[axis] if axis < len(element) else 0)
                    spin.setValue(int(at))
        finally:
            self._filling = False
        self.largest.setEnabled(chosen)
        if chosen:
            label = "element"
        else:
            label = "element (each term's largest)" if unset else "element (largest)"
        self.chooser_label.setText(label)
        self._fit_height()

    def _place_spins(self, below: bool) -> None:
        """The spin boxes beside the label (up to two), else in a row under it: three or
        four beside the heading, the label and the button made the section, and so the
        inspector's dock, wider than the right column (345 px at a convolution's weight)."""
        beside, under = self._spin_rows
        target = under if below else beside
        if target.indexOf(self.spin_box) >= 0:
            return
        (beside if below else under).removeWidget(self.spin_box)
        if below:
            under.addWidget(self.spin_box)
        else:
            beside.insertWidget(beside.indexOf(self.largest), self.spin_box)

    def set_max_height(self, pixels: int) -> None:
        """The most the section may take of its panel; beyond it, it scrolls on its own."""
        self._max_height = max(80, int(pixels))
        self._fit_height()

    def _fit_height(self) -> None:
        width = max(50, self.scroll.viewport().width())
        wanted = self.body.heightForWidth(width)
        if wanted < 0:
            wanted = self.body.sizeHint().height()
        # the heading row, the margins, the spacing and the rule under the text
        top = self.heading.sizeHint().height()
        if not self.chooser.isHidden():
            top = max(top, self.chooser.sizeHint().height())
        margins = self.layout().contentsMargins()
        chrome = top + margins.top() + margins.bottom() + 2 * self.layout().spacing() + 3
        room = max(40, self._max_height - chrome)
        # At most its text's height or its room; at least a few lines, not all of it: its
        # room is a share of the panel's height, and as a minimum it would make the panel, its
        # dock and the window taller than they are (the text scrolls instead).
        height = min(room, wanted + 4)
        self.scroll.setMaximumHeight(height)
        self.scroll.setMinimumHeight(min(height, MIN_LINES * self.body.fontMetrics().lineSpacing()))

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_height()

    # ---------------------------------------------------------------- what the user asks
    def _on_link(self, href: str) -> None:
        if href.startswith("node:"):
            self.node_requested.emit(int(href.split(":", 1)[1]))

    def _on_hover(self, href: str) -> None:
        self.node_hovered.emit(int(href.split(":", 1)[1]) if href.startswith("node:") else -1)

    def leaveEvent(self, event: QtCore.QEvent) -> None:
        self.node_hovered.emit(-1)
        super().leaveEvent(event)

    def _on_spin(self, _value: int) -> None:
        if self._filling or not self._shape:
            return
        element = tuple(max(0, spin.value()) for spin in self.spins[: len(self._shape)])
        self.focus_requested.emit(element)


class _TextScroll(QtWidgets.QScrollArea):
    """The text's scroll area: it would be as tall as its maximum height (the text's, or its
    room's), which the section sets; a short panel shrinks it down to its minimum."""

    def sizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(super().sizeHint().width(), self.maximumHeight())


_STYLE = {
    "title": "font-weight:600",
    "formula": "",
    "numbers": "font-family:monospace",
    "result": "font-family:monospace; font-weight:600",
    "detail": "",
    "chain": "font-family:monospace",
}


def _markup(lines: Sequence[ExplainLine]) -> str:
    """The lines as the label's markup: every text escaped; only node links are markup."""
    rows = []
    for line in lines:
        parts = []
        for text, node in line.segments:
            escaped = html.escape(text, quote=False)
            parts.append(escaped if node is None else f'<a href="node:{int(node)}">{escaped}</a>')
        style = _STYLE.get(line.kind, "")
        indent = "" if line.kind in ("title", "chain") else "margin-left:12px;"
        rows.append(f"<div style='white-space:pre-wrap; {indent}{style}'>{''.join(parts)}</div>")
    return "".join(rows)
