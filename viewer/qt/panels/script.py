"""The script panel: a running script's output, its traceback when it fails, a Cancel button,
and the graphs it built to choose from, with a filter box over them (which entries match is
the model's answer: :func:`viewer.model.scripts.pass_sampling.filter_entries`). What it shows comes
from its :class:`~viewer.qt.panels.script_binding.ScriptBinding`.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.qt.drawing.plain_text import SummaryArea, tooltip

__all__ = ["NO_SCRIPT", "ScriptPanel"]

NO_SCRIPT = "No script is shown. File > Open a .py file to run one and see its graphs."


class ScriptPanel(QtWidgets.QWidget):
    cancel_requested = QtCore.Signal()
    graph_chosen = QtCore.Signal(int)  # the graph's index in the run's list, not the row's
    filter_changed = QtCore.Signal(str)

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("scriptPanel")
        self.status = QtWidgets.QLabel(NO_SCRIPT, self)
        self.status.setObjectName("scriptStatus")
        self.status.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)
        self.cancel_button = QtWidgets.QPushButton("Cancel", self)
        self.cancel_button.setObjectName("scriptCancelButton")
        self.cancel_button.setEnabled(False)
        self.graphs = QtWidgets.QComboBox(self)
        self.graphs.setObjectName("scriptGraphs")
        self.graphs.setToolTip("The graphs the script built: choose one to show it")
        self.graphs.setEnabled(False)
        self.graphs.setPlaceholderText("choose a graph to show it")
        # a popup of 20 rows, not a screen-high list hiding its last row under a scroll arrow
        # (Fusion's menu-like popup ignores maxVisibleItems; the list kind keeps the palette)
        self.graphs.setMaxVisibleItems(20)
        # as narrow as a few characters: its placeholder's width would make the Script tab
        # the widest panel and keep the graph from its half of a small window
        self.graphs.setMinimumWidth(self.graphs.fontMetrics().horizontalAdvance("0" * 12))
        # A QProxyStyle owns the style it is given and becomes that style's proxy: given the
        # application's own style, it would speak for every widget, and deleting it with this
        # panel would delete the application's style (the next window crashed). It gets a
        # copy of that style instead, for this box alone.
        base = QtWidgets.QStyleFactory.create(self.graphs.style().name())
        self._list_popup = _ListPopupStyle(base)
        self.graphs.setStyle(self._list_popup)
        # a long label is shortened by whole parts in the closed box (_ListPopupStyle): its
        # tooltip holds it whole
        self.graphs.currentIndexChanged.connect(self._on_current_changed)
        self.filter = QtWidgets.QLineEdit(self)
        self.filter.setObjectName("graphFilter")
        self.filter.setPlaceholderText("filter: text, loss>0.5, iter<100, nan, dead-relu")
        self.filter.setToolTip(
            "Show only the graphs whose label holds this text (any case), or compare a field: "
            "loss>0.5, iter<=10, #>=100; nan lists the passes with NaN or Inf, held those whose "
            "graph the program kept, wrong those where a Function of the script's own failed "
            "its gradient check; a problem's kind (dead-relu, graph-held, nonfinite...) those "
            "where the Problems panel found one"
        )
        self.filter.setClearButtonEnabled(True)
        self.filter.setEnabled(False)
        self.count = QtWidgets.QLabel(self)
        self.count.setObjectName("graphCount")
        self.sampling = QtWidgets.QLabel(self)
        self.sampling.setObjectName("graphSampling")
        self.sampling.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        self.sampling.setWordWrap(True)
        self.sampling.setVisible(False)
        # which passes the list holds and the forward-only work: it scrolls past three lines
        # rather than squeezing the rows above it in a short dock
        self.sampling_area = SummaryArea(self.sampling, self, preferred_lines=3)
        self.sampling_area.setVisible(False)
        self._titles: list[str] = []
        self._on_screen = -1  # the run's index of the graph shown, kept across filters
        self.output = QtWidgets.QPlainTextEdit(self)
        self.output.setObjectName("scriptOutput")
        self.output.setReadOnly(True)
        self.output.setFont(
            QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        )
        self.output.setMaximumBlockCount(20_000)
        self.output.setMinimumHeight(40)  # two lines: the window still fits 560 px tall
        row = QtWidgets.QHBoxLayout()
        row.addWidget(QtWidgets.QLabel("Graph:", self))
        row.addWidget(self.graphs, 1)
        row.addWidget(self.cancel_button)
        filter_row = QtWidgets.QHBoxLayout()
        filter_row.addWidget(self.filter, 1)
        filter_row.addWidget(self.count)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.status)
        layout.addLayout(row)
        layout.addLayout(filter_row)
        layout.addWidget(self.sampling_area)
        layout.addWidget(self.output, 1)
        self.cancel_button.clicked.connect(self.cancel_requested)
        self.graphs.activated.connect(self._on_activated)
        self.filter.textChanged.connect(self.filter_changed)
        self._error_colour = QtGui.QColor("#c92a2a")
        self._running = ""

    def set_error_colour(self, colour: str) -> None:
        self._error_colour = QtGui.QColor(colour)

    def started(self, name: str) -> None:
        self.output.clear()
        self._running = name
        self.status.setText(f"Running {name} in a process of its own… (Cancel stops it)")
        self.cancel_button.setEnabled(True)
        self._set_titles([], "")

    def show_stage(self, text: str) -> None:
        """What the run is doing now that the script ended ("sending the recording")."""
        if self.cancel_button.isEnabled():
            self.status.setText(f"{self._running}: {text}…")

    def append_output(self, text: str) -> None:
        cursor = self.output.textCursor()
        cursor.movePosition(QtGui.QTextCursor.MoveOperation.End)
        cursor.insertText(text, QtGui.QTextCharFormat())
        self.output.setTextCursor(cursor)
        self.output.ensureCursorVisible()

    def append_error(self, text: str) -> None:
        fmt = QtGui.QTextCharFormat()
        fmt.setForeground(self._error_colour)
        cursor = self.output.textCursor()
        cursor.movePosition(QtGui.QTextCursor.MoveOperation.End)
        if not self.output.document().isEmpty():
            cursor.insertText("\n")
        cursor.insertText(text, fmt)
        self.output.setTextCursor(cursor)
        self.output.ensureCursorVisible()

    def finished(
        self, summary: str, graph_titles: Sequence[str], shown: int, sampling: str = ""
    ) -> None:
        """The run ended: ``shown`` is the index of its graph on screen, -1 when none is (a
        failed run keeps the previous graph: the list offers what it built before the
        error); ``sampling`` says which passes the list holds when not all."""
        self.status.setText(summary)
        self.cancel_button.setEnabled(False)
        self._set_titles(graph_titles, sampling)
        self._on_screen = shown if 0 <= shown < len(graph_titles) else -1
        self.show_entries(range(len(graph_titles)))

    def _set_titles(self, titles: Sequence[str], sampling: str) -> None:
        self._titles = list(titles)
        self._on_screen = -1
        self.graphs.clear()
        self.graphs.setEnabled(False)
        with QtCore.QSignalBlocker(self.filter):
            self.filter.clear()
        self.filter.setEnabled(len(self._titles) > 1)
        self.count.clear()
        self.sampling.setVisible(bool(sampling))
        self.sampling_area.setVisible(bool(sampling))
        self.sampling_area.set_text(sampling)

    def show_entries(self, indexes: Sequence[int]) -> None:
        """List the graphs ``indexes`` (those the filter lets through), the one on screen
        selected if it is among them; the count says ``N of M``. The graph on screen, when
        the filter leaves it out, is named in the box's placeholder."""
        self.graphs.clear()
        for i in indexes:
            self.graphs.addItem(self._titles[i], i)
        self.select_graph(self._on_screen)
        # enabled whenever one of the graphs listed is not on screen
        listed = self.graphs.findData(self._on_screen) >= 0 if self._on_screen >= 0 else False
        self.graphs.setEnabled(self.graphs.count() > (1 if listed else 0))
        shown = self._on_screen
        if 0 <= shown < len(self._titles) and not listed:
            self.graphs.setPlaceholderText(f"showing {self._titles[shown]} (not in the filter)")
        else:
            self.graphs.setPlaceholderText("choose a graph to show it")
        self._on_current_changed(self.graphs.currentIndex())
        # the popup as wide as its longest label (the box itself is narrow in its dock)
        view = self.graphs.view()
        view.setMinimumWidth(view.sizeHintForColumn(0) + 24 if self.graphs.count() else 0)
        total = len(self._titles)
        self.count.setText(f"{self.graphs.count():,} of {total:,}" if total else "")

    def _on_current_changed(self, row: int) -> None:
        text = self.graphs.itemText(row) if row >= 0 else self.graphs.placeholderText()
        self.graphs.setToolTip(
            tooltip(text) if text else "The graphs the script built: choose one to show it"
        )

    def selected_graph(self) -> int:
        """The run's index of the graph selected in the list, -1 when none is."""
        data = self.graphs.currentData()
        return int(data) if data is not None else -1

    def select_graph(self, index: int) -> None:
        """The run's graph ``index`` is on screen (-1: none is): selected while the list
        shows it."""
        self._on_screen = index
        self.graphs.setCurrentIndex(self.graphs.findData(index) if index >= 0 else -1)

    def _on_activated(self, row: int) -> None:
        data = self.graphs.itemData(row)
        if data is not None:
            self._on_screen = int(data)
            self.graph_chosen.emit(int(data))

    def clear(self) -> None:
        """What is on screen is not a script's: forget the last run's status and output."""
        self.status.setText(NO_SCRIPT)
        self.cancel_button.setEnabled(False)
        self._set_titles([], "")
        self.output.clear()

    def error_text(self) -> str:
        return self.output.toPlainText()


class _ListPopupStyle(QtWidgets.QProxyStyle):
    """The style it wraps, with a combo box's popup a list of ``maxVisibleItems`` rows, and
    the closed box's label fitted to its width by whole parts (:func:`fit_label`): a clipped
    ``loss 0.246`` read ``loss 0``."""

    def styleHint(self, hint, option=None, widget=None, data=None):
        if hint == QtWidgets.QStyle.StyleHint.SH_ComboBox_Popup:
            return 0
        return super().styleHint(hint, option, widget, data)

    def drawControl(self, element, option, painter, widget=None):
        if element == QtWidgets.QStyle.ControlElement.CE_ComboBoxLabel and isinstance(
            option, QtWidgets.QStyleOptionComboBox
        ):
            field = self.subControlRect(
                QtWidgets.QStyle.ComplexControl.CC_ComboBox,
                option,
                QtWidgets.QStyle.SubControl.SC_ComboBoxEditField,
                widget,
            )
            fitted = fit_label(option.currentText, field.width(), option.fontMetrics)
            if fitted != option.currentText:
                option = QtWidgets.QStyleOptionComboBox(option)
                option.currentText = fitted
        super().drawControl(element, option, painter, widget)


def fit_label(text: str, width: int, metrics: QtGui.QFontMetrics) -> str:
    """``text`` (parts joined by `` · ``) within ``width`` pixels: whole, or its first parts
    and ``…`` (never a number cut short: ``#1973 · iter 1972 · …``), or the first part
    elided."""
    if metrics.horizontalAdvance(text) <= width:
        return text
    parts = text.split(" · ")
    for keep in range(len(parts) - 1, 0, -1):
        shorter = " · ".join([*parts[:keep], "…"])
        if metrics.horizontalAdvance(shorter) <= width:
            return shorter
    return metrics.elidedText(parts[0], QtCore.Qt.TextElideMode.ElideRight, max(0, width))
