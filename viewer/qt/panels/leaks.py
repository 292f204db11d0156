"""The leak panel: what survived the release of a graph, why, and who holds it.

It renders a :class:`autodiff.leaks.LeakReport` (the Document's ``leak_report``): one row per
survivor with its reason (a reference ``cycle``, or ``referenced`` from a root) and the chain
of holders; the selected row's chain is spelled out below, one hop a line. Clicking a row asks
for the node (its LeakBinding selects it and centres the view on it).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.qt.drawing.plain_text import SummaryArea, tooltip

__all__ = ["LeakPanel"]

_NODE_ROLE = QtCore.Qt.ItemDataRole.UserRole


class LeakPanel(QtWidgets.QWidget):
    node_requested = QtCore.Signal(int)  # a survivor was clicked (its trace node id)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("leakPanelContents")
        self.summary = QtWidgets.QLabel(self)
        self.summary.setObjectName("leakSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.release_button = QtWidgets.QToolButton(self)
        self.release_button.setObjectName("releaseGraphButton")
        self.release_button.setToolButtonStyle(QtCore.Qt.ToolButtonStyle.ToolButtonTextOnly)

        self.list = QtWidgets.QTreeWidget(self)
        self.list.setObjectName("leakList")
        self.list.setColumnCount(3)
        self.list.setHeaderLabels(["Object", "Reason", "Held by"])
        self.list.setRootIsDecorated(False)
        self.list.setUniformRowHeights(True)
        self.list.setAlternatingRowColors(True)
        self.list.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.list.setToolTip("Click a row to show its node and the whole chain of its holders")
        # three rows: in a short dock the summary above keeps its lines
        self.list.setMinimumHeight(72)
        header = self.list.header()
        header.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)

        self.detail = QtWidgets.QPlainTextEdit(self)
        self.detail.setObjectName("leakDetail")
        self.detail.setReadOnly(True)
        self.detail.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.detail.setFont(
            QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        )
        self.detail.setMaximumHeight(110)
        self.detail.setMinimumHeight(40)
        self.detail.setPlaceholderText("Click a row to see the whole chain of holders.")

        self.summary.setAlignment(
            QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignLeft
        )
        # The summary scrolls in a short dock instead of cutting its last lines, and never
        # asks more than three lines of the window's height (a minimum from its whole text
        # kept a narrow window from getting shorter than the text).
        self.summary_area = SummaryArea(self.summary, self)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.summary_area, 1, QtCore.Qt.AlignmentFlag.AlignTop)
        top.addWidget(self.release_button, 0, QtCore.Qt.AlignmentFlag.AlignTop)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.detail)
        # the stretch takes the height the rows leave: with none, the message keeps to the
        # top instead of sitting in the middle of the panel
        layout.addStretch(0)
        self.list.currentItemChanged.connect(self._on_current)
        self.list.itemClicked.connect(self._on_clicked)
        self._survivors: list[Any] = []
        self.show_message("")

    # ---------------------------------------------------------------- content
    def set_release_action(self, action: QtGui.QAction) -> None:
        self.release_button.setDefaultAction(action)

    def show_message(self, text: str) -> None:
        """No report to list (not audited yet, or nothing to audit): say why."""
        self._survivors = []
        self.list.clear()
        self.detail.clear()
        self.summary_area.set_text(
            text
            or "Not audited yet. Release graph drops the viewer's references to a typed "
            "expression and lists what is still alive; a script is audited when it ends."
        )
        self.list.setVisible(False)
        self.detail.setVisible(False)

    def show_report(
        self,
        report: Any,
        title: str = "",
        in_graph: Collection[int] | None = None,
        when: str = "the release",
    ) -> None:
        """List ``report.survivors``; ``in_graph``: node ids drawn in the graph on screen
        (survivors elsewhere, in another graph of a script, are marked so); ``when``: what
        the audit followed ("the release", "the end of the script")."""
        survivors = list(getattr(report, "survivors", ()) or ())
        held = [s.label for s in getattr(report, "held_leaves", ()) or ()]
        current = self.list.currentItem()
        keep = int(current.data(0, _NODE_ROLE)) if current is not None else None
        self._survivors = survivors
        self.list.clear()
        self.detail.clear()
        where = f" of {title}" if title else ""
        if not survivors:
            text = f"No leaks{' in ' + title if title else ''}: nothing recorded survived {when}."
            if held:
                text += f" Leaves your code still holds (not leaks): {', '.join(held)}."
            self.summary_area.set_text(text)
            self.list.setVisible(False)
            self.detail.setVisible(False)
            return
        cycles = sum(s.reason == "cycle" for s in survivors)
        kinds = []
        if cycles:
            kinds.append(f"{cycles} kept by a reference cycle")
        if len(survivors) - cycles:
            kinds.append(f"{len(survivors) - cycles} referenced from outside the graph")
        text = (
            f"{len(survivors)} recorded object{'s' if len(survivors) != 1 else ''}{where} "
            f"survived {when}: {', '.join(kinds)}. Red leak badges on the graph; click a row "
            "to show its node."
        )
        if held:
            text += f" Leaves still held (not leaks): {', '.join(held)}."
        self.summary_area.set_text(text)
        shown = set(in_graph) if in_graph is not None else None
        items = []
        for survivor in survivors:
            name = _object_text(survivor)
            if shown is not None and survivor.node_id not in shown:
                name += "  (in another graph)"
            item = QtWidgets.QTreeWidgetItem([name, survivor.reason, survivor.held_by])
            item.setData(0, _NODE_ROLE, int(survivor.node_id))
            tip = _chain_text(survivor)
            for column in range(3):
                item.setToolTip(column, tooltip(tip))
            items.append(item)
        self.list.addTopLevelItems(items)
        self.list.setVisible(True)
        # the chain of holders shows once a row is chosen: until then the list has the room
        self.detail.setVisible(False)
        for item in items:
            if keep is not None and int(item.data(0, _NODE_ROLE)) == keep:
                blocked = self.list.blockSignals(True)
                self.list.setCurrentItem(item)
                self.list.blockSignals(blocked)
                self._on_current(item, None)

    # ---------------------------------------------------------------- reading (tests)
    @property
    def survivors(self) -> list[Any]:
        return list(self._survivors)

    def row_count(self) -> int:
        return self.list.topLevelItemCount()

    def row_node(self, row: int) -> int:
        return int(self.list.topLevelItem(row).data(0, _NODE_ROLE))

    def row_texts(self, row: int) -> tuple[str, str, str]:
        item = self.list.topLevelItem(row)
        return item.text(0), item.text(1), item.text(2)

    def click_row(self, row: int) -> None:
        item = self.list.topLevelItem(row)
        self.list.setCurrentItem(item)
        self._on_clicked(item, 0)

    # ---------------------------------------------------------------- events
    def _on_current(self, item: QtWidgets.QTreeWidgetItem | None, _previous: object) -> None:
        if item is None:
            self.detail.clear()
            self.detail.setVisible(False)
            return
        node_id = int(item.data(0, _NODE_ROLE))
        survivor = next((s for s in self._survivors if s.node_id == node_id), None)
        self.detail.setPlainText(_chain_text(survivor) if survivor is not None else "")
        self.detail.setVisible(True)

    def _on_clicked(self, item: QtWidgets.QTreeWidgetItem, _column: int) -> None:
        self.node_requested.emit(int(item.data(0, _NODE_ROLE)))


def _object_text(survivor: Any) -> str:
    label = survivor.label
    if survivor.kind == "function":
        return f"{label} #{survivor.node_id}"
    if label.startswith("#"):
        return f"variable {label}"
    return f"{label} #{survivor.node_id}"


def _chain_text(survivor: Any) -> str:
    """``reason: a -> b -> c`` as one hop a line."""
    hops = str(survivor.held_by).split(" -> ")
    head = f"{_object_text(survivor)}: {survivor.reason}"
    if survivor.reason == "cycle":
        head += " (only a reference cycle keeps it; gc.collect() would free it)"
    else:
        head += " (held from a root: a global, a local, a closure cell...)"
    return head + "\n  " + "\n  -> ".join(hops)
