"""The Problems panel (its dock's objectName ``problemsDock`` is a contract): the gradient bugs
found in what is shown, by name.

It lists :class:`~viewer.model.checks.problem_list.ProblemRow` rows in two groups, the graph on
screen's and the rest of the run's, each most severe first: the kind with its severity's icon
(the word in its tooltip and accessible name), where it shows and the message, wrapped: whole
where every row's whole message fits in the list's height, else to up to
:data:`~viewer.qt.checks.problem_rows.MESSAGE_LINES` lines, the last one cut short with an
ellipsis (every cell's tooltip holds all of it, and so does the line below the list once the
row is chosen). In a wide list these are three columns, the kind and where taking what their
text needs up to a share of the width; in a narrow one (a side dock) each row is stacked, kind
and where above the message (:mod:`~viewer.qt.checks.problem_rows`). Nothing scrolls sideways.
Above them, the report's summary line and which detectors ran and which could not. A click on
a row, or Enter, asks for its problem (``problem_chosen``): the binder goes to its graph, step
and nodes. Every text is set as plain text: a message quotes the user's own names.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6 import QtCore, QtWidgets

from viewer.model.checks.problem_list import ProblemRow
from viewer.qt.checks.problem_rows import (
    MESSAGE_LINES,
    NARROW_PX,
    ROW_ROLE,
    ProblemRowDelegate,
)
from viewer.qt.drawing.plain_text import SummaryArea, tooltip

__all__ = ["COLUMNS", "ProblemsPanel"]

COLUMNS = ("Problem", "Where", "Message")
WHOLE_MESSAGE = 1_000  # lines: a message's whole text (a message is a few lines)
MESSAGE = COLUMNS.index("Message")
# The most of the list's width the kind and where columns take (each), so that the message
# keeps the rest; their text is cut short with an ellipsis past it.
_COLUMN_SHARE = (0.3, 0.2)
_ICONS = {
    "error": QtWidgets.QStyle.StandardPixmap.SP_MessageBoxCritical,
    "warning": QtWidgets.QStyle.StandardPixmap.SP_MessageBoxWarning,
    "info": QtWidgets.QStyle.StandardPixmap.SP_MessageBoxInformation,
}
HERE = "This graph"
ELSEWHERE = "Other graphs and the whole run"


class ProblemsPanel(QtWidgets.QWidget):
    problem_chosen = QtCore.Signal(object)  # the row's Problem

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("problemsPanelContents")
        self.summary = QtWidgets.QLabel(self)
        self.summary.setObjectName("problemsSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.summary_area = SummaryArea(self.summary, self, preferred_lines=2)
        self.details = QtWidgets.QLabel(self)
        self.details.setObjectName("problemsDetails")
        self.details.setWordWrap(True)
        self.details.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.details_area = SummaryArea(self.details, self, preferred_lines=2)

        self.tree = QtWidgets.QTreeWidget(self)
        self.tree.setObjectName("problemsList")
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setIndentation(8)  # rows under their group's heading: width is scarce
        self.tree.setUniformRowHeights(False)  # a message wraps to up to MESSAGE_LINES
        self.tree.setWordWrap(True)
        self.rows_drawn = ProblemRowDelegate(self.tree)
        self.tree.setItemDelegate(self.rows_drawn)
        self.tree.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.tree.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.tree.header()
        for column in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(column, QtWidgets.QHeaderView.ResizeMode.Interactive)
        # the message takes the width left (no sideways scrolling to read it)
        header.setSectionResizeMode(MESSAGE, QtWidgets.QHeaderView.ResizeMode.Stretch)
        header.setStretchLastSection(True)
        # the rows' heights follow the message column's width
        header.sectionResized.connect(self._on_section_resized)
        self.tree.viewport().installEventFilter(self)
        self.tree.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.tree.currentItemChanged.connect(self._on_current)
        self.chosen = QtWidgets.QLabel(self)
        self.chosen.setObjectName("problemsChosen")
        self.chosen.setWordWrap(True)
        self.chosen.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.chosen.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.chosen_area = SummaryArea(self.chosen, self, preferred_lines=3)
        self.tree.itemClicked.connect(self._on_item)
        self.tree.itemActivated.connect(self._on_item)  # Enter, or a double click

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary_area)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.chosen_area)
        layout.addWidget(self.details_area)
        # with no rows (a clean run) the lines keep to the top instead of the middle
        layout.addStretch(0)
        self._rows: list[ProblemRow] = []
        self.show_rows([], "", "")

    def show_rows(self, rows: Sequence[ProblemRow], summary: str, details: str) -> None:
        """``rows`` (the graph on screen's first), under ``summary``; ``details`` (which
        detectors ran) below them when there are none, else in the summary's tooltip."""
        self._rows = list(rows)
        self.tree.clear()
        groups: dict[bool, QtWidgets.QTreeWidgetItem] = {}
        style = self.style()
        for k, row in enumerate(rows):
            group = groups.get(row.here)
            if group is None:
                group = QtWidgets.QTreeWidgetItem(self.tree, [HERE if row.here else ELSEWHERE])
                group.setFirstColumnSpanned(True)
                group.setFlags(QtCore.Qt.ItemFlag.ItemIsEnabled)
                font = group.font(0)
                font.setBold(True)
                group.setFont(0, font)
                group.setExpanded(True)
                groups[row.here] = group
            item = QtWidgets.QTreeWidgetItem(group, [row.kind, row.where, row.message])
            item.setIcon(0, style.standardIcon(_ICONS[row.severity]))
            item.setData(
                0, QtCore.Qt.ItemDataRole.AccessibleTextRole, f"{row.severity}: {row.kind}"
            )
            item.setData(1, ROW_ROLE, k)
            for column in range(len(COLUMNS)):
                item.setToolTip(column, tooltip(row.tooltip))
        self.tree.setRootIsDecorated(False)
        self.tree.setVisible(bool(rows))
        self._fit_columns()
        self.chosen_area.set_text("")
        self.chosen_area.setVisible(False)
        self.summary_area.set_text(summary)
        # Which detectors ran is what a clean run says; with problems listed, the rows need
        # the height, and the lines stay one hover away (the summary's tooltip)
        shown = bool(details) and not rows
        self.details.setVisible(shown)
        self.details_area.setVisible(shown)
        self.details_area.set_text(details)
        self.summary.setToolTip(tooltip(details) if details and rows else "")

    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        if watched is self.tree.viewport() and event.type() == QtCore.QEvent.Type.Resize:
            self._fit_columns()
        return super().eventFilter(watched, event)

    def _fit_columns(self) -> None:
        """Narrower than NARROW_PX, the rows stacked in the first column (the header and the
        other columns hidden); else the kind and where columns as wide as their text, up to
        their share of the list's width, and the message the rest."""
        width = self.tree.viewport().width()
        header = self.tree.header()
        stacked = 0 < width < NARROW_PX
        if stacked != self.rows_drawn.stacked:
            self.rows_drawn.stacked = stacked
            header.setVisible(not stacked)
            for column in range(1, len(COLUMNS)):
                self.tree.setColumnHidden(column, stacked)
        if stacked:
            header.resizeSection(0, width)
        else:
            for column, share in enumerate(_COLUMN_SHARE):
                wanted = max(self.tree.sizeHintForColumn(column), header.sectionSizeHint(column))
                header.resizeSection(column, max(24, min(wanted, int(width * share))))
        self._fit_lines()

    def _fit_lines(self) -> None:
        """Every message whole where all of them fit in the list's height (one problem at
        1024 x 700 showed two lines cut short above an empty list), else MESSAGE_LINES each;
        then the rows' wrapped heights at the new widths. One layout of the rows as they are
        drawn now, a second only where that one says the other way is due (a resize that
        changes nothing lays them out once)."""
        drawn = self.rows_drawn
        self.tree.doItemsLayout()
        if not self._rows:
            return
        fits = self._rows_height() <= self.tree.viewport().height()
        if drawn.most_lines == MESSAGE_LINES:
            if not fits:
                return  # cut, and still too tall cut: whole would be taller
            drawn.most_lines = WHOLE_MESSAGE
            self.tree.doItemsLayout()
            fits = self._rows_height() <= self.tree.viewport().height()
        if not fits:
            drawn.most_lines = MESSAGE_LINES
            self.tree.doItemsLayout()

    def _rows_height(self) -> int:
        """The height of the groups and rows as laid out."""
        tall = 0
        for g in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(g)
            tall += self.tree.visualItemRect(group).height()
            tall += sum(self.tree.visualItemRect(i).height() for i in self._item_rows(group))
        return tall

    def _on_section_resized(self, column: int, _old: int, _new: int) -> None:
        if column == MESSAGE or self.rows_drawn.stacked:
            self._fit_lines()  # the rows' wrapped heights at the new width

    def _item_rows(self, group: QtWidgets.QTreeWidgetItem) -> list[QtWidgets.QTreeWidgetItem]:
        return [group.child(k) for k in range(group.childCount())]

    def _on_current(self, item: QtWidgets.QTreeWidgetItem | None, *_: object) -> None:
        index = None if item is None else item.data(1, ROW_ROLE)
        text = "" if index is None else self._rows[int(index)].tooltip
        self.chosen_area.set_text(text)
        self.chosen_area.setVisible(bool(text))

    def _on_item(self, item: QtWidgets.QTreeWidgetItem, _column: int = 0) -> None:
        index = item.data(1, ROW_ROLE)
        if index is None:
            return  # a group's heading
        self.problem_chosen.emit(self._rows[int(index)].problem)

    # ---------------------------------------------------------------- reading (tests)
    @property
    def rows(self) -> list[ProblemRow]:
        return list(self._rows)

    def items(self) -> list[QtWidgets.QTreeWidgetItem]:
        """The problem rows' items, in the order shown."""
        out = []
        for g in range(self.tree.topLevelItemCount()):
            out += self._item_rows(self.tree.topLevelItem(g))
        return out

    def groups(self) -> list[str]:
        return [self.tree.topLevelItem(g).text(0) for g in range(self.tree.topLevelItemCount())]

    def click_row(self, row: int) -> None:
        item = self.items()[row]
        self.tree.setCurrentItem(item)
        self._on_item(item)

    def text(self) -> str:
        """The summary and the details as shown."""
        return f"{self.summary.text()}\n{self.details.text()}"
