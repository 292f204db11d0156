"""How a row of the Problems panel is drawn: in columns where the list is wide, stacked where it
is narrow.

A wide list shows the kind, where and the message in three columns, the message wrapped to
:data:`MESSAGE_LINES` lines. Below :data:`NARROW_PX` three columns leave each too little
(``broadc…``, ``this gra…``, a message ten letters wide), so the panel hides the header and the
where and message columns, and :class:`ProblemRowDelegate` draws each problem's row stacked in
the first column: the kind in bold and where it shows on the first line, the message wrapped
below. Either way the last line shown is cut short with an ellipsis, and every cell's tooltip
holds the whole message. The items keep all three texts: only the drawing changes.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

__all__ = ["MESSAGE_LINES", "NARROW_PX", "ROW_ROLE", "ProblemRowDelegate", "message_lines"]

#: The most lines a row's message takes in the list (the rest: its tooltip, the line below).
MESSAGE_LINES = 2
#: Below this width (pixels) the list draws its rows stacked instead of in columns.
NARROW_PX = 420
#: The item data role (on the where column) holding a problem row's index; group headings
#: have none.
ROW_ROLE = QtCore.Qt.ItemDataRole.UserRole
_WHERE, _MESSAGE = 1, 2


def message_lines(text: str, font: QtGui.QFont, width: int, most: int) -> list[str]:
    """``text`` wrapped at word boundaries to ``width`` pixels, at most ``most`` lines, the
    last one cut short with an ellipsis when some of the text is left over."""
    layout = QtGui.QTextLayout(text, font)
    option = QtGui.QTextOption()
    option.setWrapMode(QtGui.QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    starts: list[int] = []
    layout.beginLayout()
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(max(1, width))
        starts.append(line.textStart())
    layout.endLayout()
    ends = [*starts[1:], len(text)]
    lines = [text[a:b].rstrip() for a, b in zip(starts, ends, strict=True)][:most]
    if len(starts) > most:
        rest = text[starts[most - 1] :]
        elide = QtCore.Qt.TextElideMode.ElideRight
        lines[-1] = QtGui.QFontMetrics(font).elidedText(rest, elide, max(1, width))
    return lines


def _is_problem(index: QtCore.QModelIndex) -> bool:
    return index.siblingAtColumn(_WHERE).data(ROW_ROLE) is not None


class ProblemRowDelegate(QtWidgets.QStyledItemDelegate):
    """Sizes and draws the problem rows: the message column wrapped (``stacked`` False), or
    everything in the first column (``stacked`` True); the other cells stay on one line."""

    def __init__(self, tree: QtWidgets.QTreeWidget) -> None:
        super().__init__(tree)
        self._tree = tree
        self.stacked = False
        # a message's lines at most: MESSAGE_LINES, or all of them where every row's whole
        # message fits in the list's height (the panel decides: ProblemsPanel._fit_columns)
        self.most_lines = MESSAGE_LINES

    def initStyleOption(
        self, option: QtWidgets.QStyleOptionViewItem, index: QtCore.QModelIndex
    ) -> None:
        super().initStyleOption(option, index)
        if index.column() != _MESSAGE:
            # a kind ('dead-relu') or a place breaks badly: cut short instead
            option.features &= ~QtWidgets.QStyleOptionViewItem.ViewItemFeature.WrapText

    def _margin(self) -> int:
        """The style's text margins: a frame's width on each side, plus one pixel."""
        metric = QtWidgets.QStyle.PixelMetric.PM_FocusFrameHMargin
        return 2 * (self._tree.style().pixelMetric(metric) + 1)

    def _stacked_text_rect(
        self, option: QtWidgets.QStyleOptionViewItem, index: QtCore.QModelIndex
    ) -> tuple[QtWidgets.QStyleOptionViewItem, QtCore.QRect]:
        """The cell's style option (no text, its icon at the top) and where its lines go."""
        opt = QtWidgets.QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        opt.decorationAlignment = (
            QtCore.Qt.AlignmentFlag.AlignTop | QtCore.Qt.AlignmentFlag.AlignHCenter
        )
        style = opt.widget.style() if opt.widget is not None else self._tree.style()
        element = QtWidgets.QStyle.SubElement.SE_ItemViewItemText
        rect = style.subElementRect(element, opt, opt.widget)
        margin = self._margin() // 2
        return opt, rect.adjusted(margin, 2, -margin, 0)

    def sizeHint(
        self, option: QtWidgets.QStyleOptionViewItem, index: QtCore.QModelIndex
    ) -> QtCore.QSize:
        hint = super().sizeHint(option, index)
        if not _is_problem(index):
            return hint
        metrics = option.fontMetrics
        if self.stacked:
            if index.column() != 0:
                return hint
            opt = QtWidgets.QStyleOptionViewItem(option)
            opt.rect = QtCore.QRect(0, 0, self._tree.header().sectionSize(0), hint.height())
            _, rect = self._stacked_text_rect(opt, index)
            message = str(index.siblingAtColumn(_MESSAGE).data() or "")
            lines = message_lines(message, option.font, rect.width(), self.most_lines)
            tall = (1 + len(lines)) * metrics.lineSpacing() + 6
            return QtCore.QSize(hint.width(), max(hint.height(), tall))
        text = index.data()
        if index.column() != _MESSAGE or not text:
            return hint
        width = max(1, self._tree.header().sectionSize(_MESSAGE) - self._margin())
        wrap = int(QtCore.Qt.TextFlag.TextWordWrap)
        tall = metrics.boundingRect(QtCore.QRect(0, 0, width, 1 << 20), wrap, str(text)).height()
        tall = min(tall, self.most_lines * metrics.lineSpacing())
        return QtCore.QSize(hint.width(), max(hint.height(), tall + 4))

    def paint(
        self,
        painter: QtGui.QPainter,
        option: QtWidgets.QStyleOptionViewItem,
        index: QtCore.QModelIndex,
    ) -> None:
        if not (self.stacked and index.column() == 0 and _is_problem(index)):
            super().paint(painter, option, index)
            return
        opt, rect = self._stacked_text_rect(option, index)
        style = opt.widget.style() if opt.widget is not None else self._tree.style()
        # the row's background, selection and icon, as any cell's
        style.drawControl(QtWidgets.QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        selected = bool(opt.state & QtWidgets.QStyle.StateFlag.State_Selected)
        role = (
            QtGui.QPalette.ColorRole.HighlightedText if selected else QtGui.QPalette.ColorRole.Text
        )
        painter.save()
        painter.setPen(opt.palette.color(role))
        bold = QtGui.QFont(opt.font)
        bold.setBold(True)
        kind = str(index.data() or "")
        where = str(index.siblingAtColumn(_WHERE).data() or "")
        elide = QtCore.Qt.TextElideMode.ElideRight
        bold_metrics, metrics = QtGui.QFontMetrics(bold), QtGui.QFontMetrics(opt.font)
        kind = bold_metrics.elidedText(kind, elide, rect.width())
        x, y = rect.left(), rect.top() + metrics.ascent()
        painter.setFont(bold)
        painter.drawText(x, y, kind)
        gap = bold_metrics.horizontalAdvance(kind) + metrics.horizontalAdvance("  ")
        painter.setFont(opt.font)
        painter.drawText(x + gap, y, metrics.elidedText(where, elide, max(0, rect.width() - gap)))
        message = str(index.siblingAtColumn(_MESSAGE).data() or "")
        for line in message_lines(message, opt.font, rect.width(), self.most_lines):
            y += metrics.lineSpacing()
            painter.drawText(x, y, line)
        painter.restore()
