"""The inspector: everything known about the selected node at the current step, under the
Explain section (how the current backward step computed its gradients, see
:mod:`viewer.qt.panels.explain`).

The panel renders a :class:`viewer.model.panels.inspector.NodeInfo` (its rows, the value and
gradient
texts, histogram counts, the creator and consumers as links); it formats no numbers itself.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.panels.inspector import NodeInfo
from viewer.qt.drawing.plain_text import tooltip
from viewer.qt.drawing.themes import Theme
from viewer.qt.panels.explain import MAX_HEIGHT_SHARE, ExplainSection
from viewer.qt.panels.plots import HISTOGRAM_COLOURS, plot_histogram

__all__ = ["InspectorPanel"]

# Rows of NodeInfo.as_rows() shown elsewhere in the panel (text boxes and links, and the
# prose of "note" and "history" in the word-wrapped notes: a table cell elided them)
_SHOWN_ELSEWHERE = {"value", "grad", "creator", "consumers", "inputs", "outputs"}
_PROSE = ("note", "history")


class InspectorPanel(QtWidgets.QWidget):
    node_requested = QtCore.Signal(int)  # a link to another node (its trace node id) was clicked

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("inspector")
        self.title = QtWidgets.QLabel(self)
        self.title.setObjectName("inspectorTitle")
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.25)
        font.setBold(True)
        self.title.setFont(font)
        self.title.setTextFormat(QtCore.Qt.TextFormat.PlainText)  # names come from files
        self.subtitle = QtWidgets.QLabel(self)
        self.subtitle.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.subtitle.setObjectName("inspectorSubtitle")
        self.subtitle.setWordWrap(True)

        self.fields = QtWidgets.QTableWidget(0, 2, self)
        self.fields.setObjectName("inspectorFields")
        self.fields.horizontalHeader().hide()
        self.fields.verticalHeader().hide()
        self.fields.horizontalHeader().setSectionResizeMode(
            0, QtWidgets.QHeaderView.ResizeMode.ResizeToContents
        )
        self.fields.horizontalHeader().setStretchLastSection(True)
        self.fields.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.fields.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        self.fields.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.fields.setShowGrid(False)
        self.fields.setWordWrap(True)

        self.links = QtWidgets.QLabel(self)
        self.links.setObjectName("inspectorLinks")
        self.links.setWordWrap(True)
        self.links.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.links.linkActivated.connect(self._on_link)

        mono = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        self.value_box = self._text_box("inspectorValue", mono)
        self.grad_box = self._text_box("inspectorGrad", mono)
        self.value_caption = QtWidgets.QLabel("value", self)
        self.grad_caption = QtWidgets.QLabel("grad", self)

        self.plot = pg.PlotWidget(self)
        self.plot.setObjectName("inspectorHistogram")
        self.plot.setMinimumHeight(110)
        self.plot.setMaximumHeight(160)
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(False, False)
        self.plot.hideButtons()
        self.plot.addLegend(offset=(-4, 4))
        self.plot.hide()

        self.notes = QtWidgets.QLabel(self)
        self.notes.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.notes.setObjectName("inspectorNotes")
        self.notes.setWordWrap(True)

        self.placeholder = QtWidgets.QLabel("Click a node in the graph to inspect it.", self)
        self.placeholder.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)

        body = QtWidgets.QWidget(self)
        col = QtWidgets.QVBoxLayout(body)
        col.setContentsMargins(6, 6, 6, 6)
        col.addWidget(self.title)
        col.addWidget(self.subtitle)
        col.addWidget(self.fields)
        col.addWidget(self.links)
        col.addWidget(self.value_caption)
        col.addWidget(self.value_box)
        col.addWidget(self.grad_caption)
        col.addWidget(self.grad_box)
        col.addWidget(self.plot)
        col.addWidget(self.notes)
        col.addStretch(1)
        self.body = body
        scroll = QtWidgets.QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        scroll.setWidget(body)
        # The step's explanation stays above the node's details, out of their scroll area:
        # it is what a backward step is about, selected node or not.
        self.explain = ExplainSection(self)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.explain)
        layout.addWidget(self.placeholder)
        layout.addWidget(scroll, 1)
        self._scroll = scroll
        self._info: NodeInfo | None = None
        self._notes: list[str] = []
        self.show_node(None)

    def set_theme(self, theme: Theme) -> None:
        """The histogram in the theme's colours (it stayed white in the dark theme)."""
        self.plot.setBackground(theme.base)
        item = self.plot.getPlotItem()
        for side in ("left", "bottom"):
            axis = item.getAxis(side)
            axis.setPen(pg.mkPen(theme.mid))
            axis.setTextPen(pg.mkPen(theme.text))

    def _text_box(self, name: str, font: QtGui.QFont) -> QtWidgets.QPlainTextEdit:
        box = QtWidgets.QPlainTextEdit(self)
        box.setObjectName(name)
        box.setReadOnly(True)
        box.setFont(font)
        box.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)
        box.setMaximumHeight(120)
        return box

    @property
    def info(self) -> NodeInfo | None:
        return self._info

    def text(self) -> str:
        """Everything shown, as plain text (for tests and for copying)."""
        if self._info is None:
            return self.placeholder.text()
        parts = [self.title.text(), self.subtitle.text()]
        parts += [f"{k}: {v}" for k, v in self._info.as_rows()]
        parts += self._notes
        return "\n".join(p for p in parts if p)

    def show_node(self, info: NodeInfo | None, notes: Sequence[str] = ()) -> None:
        """Show ``info`` (None: nothing selected); ``notes`` are extra lines, e.g. the
        accumulation ``g = a + b = c`` at a fan-in node."""
        self._info = info
        self._notes = list(notes)
        empty = info is None
        self.placeholder.setVisible(empty)
        self._scroll.setVisible(not empty)
        self._fit_explain()
        if info is None:
            return
        self.title.setText(info.title)
        state = info.state.value.replace("_", " ")
        where = "before any step" if info.step < 0 else f"after step {info.step + 1}"
        if info.kind == "module":
            ran = dict(info.module_rows).get("ran", "")
            state = f"ran {ran}" if ran in ("forward", "backward") else "not run yet"
        if info.detached:  # none of this graph's steps touch it: say so, not "after step 140"
            subtitle = "cut off before this graph: as the program left it"
            if info.kind != "module":
                subtitle = f"{state}, {subtitle}"
        else:
            subtitle = f"{state} {where}"
        self.subtitle.setText(subtitle + ("" if info.live else " · object released"))
        all_rows = info.as_rows()
        prose = [f"{k}: {v}" for k, v in all_rows if k in _PROSE]
        rows = [(k, v) for k, v in all_rows if k not in _SHOWN_ELSEWHERE and k not in _PROSE]
        self.fields.setRowCount(len(rows))
        for r, (key, value) in enumerate(rows):
            k = QtWidgets.QTableWidgetItem(key)
            f = k.font()
            f.setBold(True)
            k.setFont(f)
            self.fields.setItem(r, 0, k)
            cell = QtWidgets.QTableWidgetItem(value)
            cell.setToolTip(tooltip(value))
            self.fields.setItem(r, 1, cell)
        self._fit_rows()

        groups = [
            ("creator", (info.creator,) if info.creator is not None else ()),
            ("consumers", info.consumers),
            ("inputs", info.inputs),
            ("outputs", info.outputs),
        ]
        lines = []
        for role, refs in groups:
            if refs:
                links = ", ".join(
                    f'<a href="node:{r.node_id}">{html.escape(r.label)}</a>' for r in refs
                )
                lines.append(f"<b>{role}</b>: {links}")
        self.links.setText("<br>".join(lines))
        self.links.setVisible(bool(lines))

        for caption, box, array, label in (
            (self.value_caption, self.value_box, info.value, "value"),
            (self.grad_caption, self.grad_box, info.grad, "grad"),
        ):
            text = "" if array is None else array.text
            if array is not None and not array.full:
                caption.setText(f"{label} (summary)")
            else:
                caption.setText(label)
            box.setPlainText(text)
            caption.setVisible(array is not None)
            box.setVisible(array is not None)
            n_lines = max(1, text.count("\n") + 1)
            metrics = QtGui.QFontMetrics(box.font())
            box.setFixedHeight(min(160, metrics.lineSpacing() * n_lines + 14))

        self.plot.clear()
        shown = 0
        for k, (label, array) in enumerate((("value", info.value), ("grad", info.grad))):
            if array is None or array.histogram is None or array.bin_edges is None:
                continue
            colour = HISTOGRAM_COLOURS[k]
            plot_histogram(self.plot, array.bin_edges, array.histogram, colour, "88", name=label)
            shown += 1
        self.plot.setVisible(shown > 0)
        notes = [*prose, *self._notes]
        self.notes.setText("\n".join(notes))
        self.notes.setVisible(bool(notes))

    def _fit_rows(self) -> None:
        """Rows as tall as their wrapped text at the table's width now, the table as tall as
        its rows (again on every resize: a narrower dock wraps more)."""
        self.fields.resizeRowsToContents()
        rows_height = sum(self.fields.rowHeight(r) for r in range(self.fields.rowCount()))
        self.fields.setFixedHeight(rows_height + 4)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_explain()
        if self._info is not None:
            self._fit_rows()

    def _fit_explain(self) -> None:
        """The Explain section's room: a share of the panel beside a node's details, all but
        the placeholder's line without them."""
        if self._info is None:
            room = self.height() - 2 * self.placeholder.sizeHint().height()
        else:
            room = int(self.height() * MAX_HEIGHT_SHARE)
        self.explain.set_max_height(room)

    def _on_link(self, href: str) -> None:
        if href.startswith("node:"):
            self.node_requested.emit(int(href.split(":", 1)[1]))
