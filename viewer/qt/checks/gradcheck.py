"""The gradient-check panel: backprop against central differences, one row per leaf and per
Function, worst first.

It renders a :class:`viewer.model.checks.gradcheck.GradCheckReport` (``report.rows()``, its summary
and notes); the graph is coloured by the same check through the scene's ``'gradcheck'``
overlay. Clicking a row asks for its node.
"""

from __future__ import annotations

import math
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.qt.drawing.plain_text import SummaryArea, tooltip

__all__ = ["GradCheckPanel"]

_NODE_ROLE = QtCore.Qt.ItemDataRole.UserRole
# the summary's lines asked for above a table of rows (the table needs the dock's height)
SUMMARY_LINES = 4
# short headers (the dock is narrow; "Max abs error" made the table scroll sideways), each
# with its meaning in a tooltip; no Kind column: a leaf's row reads dy/dx, a Function's its op
COLUMNS = ("Node", "Status", "Rel. err", "Abs. err", "Detail")
COLUMN_TIPS = (
    "The node checked: a leaf's gradient (dy/dx), or a Function's backward (its op and id)",
    "ok, kink (a derivative jumps there), wrong, nonfinite or skipped",
    "Relative error of backprop against central differences (worst element)",
    "Largest absolute difference between backprop and central differences",
    "What was compared, and how",
)
# status -> (text colour, what it means), the overlay's colours (green < 1e-6 < amber < red)
STATUS_COLOURS = {
    "ok": "#2f9e44",
    "kink": "#e8a200",
    "wrong": "#c92a2a",
    "nonfinite": "#868e96",
    "skipped": "#868e96",
}


class GradCheckPanel(QtWidgets.QWidget):
    node_requested = QtCore.Signal(int)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("gradCheckPanelContents")
        self.summary = QtWidgets.QLabel(self)
        self.summary.setObjectName("gradCheckSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.check_button = QtWidgets.QToolButton(self)
        self.check_button.setObjectName("checkGradientsButton")
        self.check_button.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextOnly)

        self.table = QtWidgets.QTableWidget(0, len(COLUMNS), self)
        self.table.setObjectName("gradCheckTable")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        for column, tip in enumerate(COLUMN_TIPS):
            self.table.horizontalHeaderItem(column).setToolTip(tip)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        for column in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(column, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)

        self.notes = QtWidgets.QLabel(self)
        self.notes.setObjectName("gradCheckNotes")
        self.notes.setWordWrap(True)
        self.notes.setTextFormat(QtCore.Qt.TextFormat.PlainText)

        self.summary.setAlignment(
            QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft
        )
        # a long summary scrolls instead of losing its last lines; it asks four lines at
        # most of a short dock, whose table needs its height not to scroll sideways too
        self.summary_area = SummaryArea(self.summary, self, preferred_lines=SUMMARY_LINES)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.summary_area, 1, QtCore.Qt.AlignmentFlag.AlignTop)
        top.addWidget(self.check_button, 0, QtCore.Qt.AlignmentFlag.AlignTop)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.notes)
        # the stretch takes the height the rows leave: with none, the message keeps to the
        # top instead of sitting in the middle of the panel
        layout.addStretch(0)
        self.table.cellClicked.connect(self._on_clicked)
        self._rows: list[Any] = []
        self.report: Any = None
        self.show_message("")

    def set_check_action(self, action: QtGui.QAction) -> None:
        self.check_button.setDefaultAction(action)

    def show_message(self, text: str) -> None:
        """No report to show (not checked yet, the graph changed, the check failed)."""
        self.report = None
        self._rows = []
        self.table.setRowCount(0)
        self.table.setVisible(False)
        self.notes.clear()
        self.notes.setVisible(False)
        self.summary_area.set_preferred_lines(None)  # no table below: the whole message
        self.summary_area.set_text(
            text
            or "Check gradients compares backprop with central differences (f(x + h) - "
            "f(x - h)) / 2h for every leaf of a typed expression and for every Function at "
            "the inputs it saw, then colours the graph by the error."
        )

    def show_report(self, report: Any) -> None:
        self.report = report
        rows = report.rows()
        self._rows = rows
        seconds = f" ({report.duration:.2f} s)" if report.duration >= 0.05 else ""
        # four lines above a table of rows; with none (a torch recording, nothing to check)
        # the message is all there is: at 1024 x 700 it showed a line or two of it
        self.summary_area.set_preferred_lines(SUMMARY_LINES if rows else None)
        self.summary_area.set_text(report.summary + seconds)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            values = (
                row.label,
                row.status,
                _number(row.error),
                _number(row.max_abs_error),
                row.detail,
            )
            for column, text in enumerate(values):
                item = QtWidgets.QTableWidgetItem(text)
                item.setData(_NODE_ROLE, -1 if row.node_id is None else int(row.node_id))
                item.setToolTip(tooltip(row.detail))
                if column == 1:
                    item.setForeground(QtGui.QColor(STATUS_COLOURS.get(row.status, "#868e96")))
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.table.setItem(r, column, item)
        self.table.setVisible(bool(rows))
        notes = list(getattr(report, "notes", ()))
        self.notes.setText("\n".join(f"• {n}" for n in notes))
        self.notes.setVisible(bool(notes))

    # ---------------------------------------------------------------- reading (tests)
    @property
    def rows(self) -> list[Any]:
        return list(self._rows)

    def row_count(self) -> int:
        return self.table.rowCount()

    def cell_text(self, row: int, column: int) -> str:
        item = self.table.item(row, column)
        return "" if item is None else item.text()

    def click_row(self, row: int) -> None:
        self.table.selectRow(row)
        self._on_clicked(row, 0)

    def _on_clicked(self, row: int, _column: int) -> None:
        item = self.table.item(row, 0)
        if item is None:
            return
        node_id = int(item.data(_NODE_ROLE))
        if node_id >= 0:
            self.node_requested.emit(node_id)


def _number(value: float) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.2e}"
