"""The find bar (Ctrl+F): a text field with previous / next and a match count, floating over
the top right corner of the graph view.

It knows no model: it reports what the user asks for (``query_edited``, ``next_requested``,
``previous_requested``, ``closed``) and shows what it is told (:meth:`FindBar.set_count`). In
the field, Enter asks for the next match, Shift+Enter for the previous one, Esc closes.
"""

from __future__ import annotations

from PySide6 import QtCore, QtGui, QtWidgets

__all__ = ["FindBar"]

_MARGIN = 8  # pixels between the bar and the view's edges
_FIELD_WIDTH = 200  # the field's width when there is room, and the least it shrinks to
_FIELD_MIN_WIDTH = 70


class FindBar(QtWidgets.QFrame):
    query_edited = QtCore.Signal(str)
    next_requested = QtCore.Signal()
    previous_requested = QtCore.Signal()
    closed = QtCore.Signal()

    def __init__(self, host: QtWidgets.QWidget) -> None:
        super().__init__(host)
        self.setObjectName("findBar")
        self.setFrameShape(QtWidgets.QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self._host = host
        self.field = QtWidgets.QLineEdit(self)
        self.field.setObjectName("findField")
        self.field.setPlaceholderText("Find a name, op or scope")
        self.field.setClearButtonEnabled(True)
        self.field.setFixedWidth(_FIELD_WIDTH)
        self.field.setToolTip(
            "Find nodes by name, op or scope path (Enter: next, Shift+Enter: previous, "
            "Esc: close; #12 finds node 12)"
        )
        self.count_label = QtWidgets.QLabel(self)
        self.count_label.setObjectName("findCount")
        self.count_label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        metrics = QtGui.QFontMetrics(self.font())
        self._count_width = metrics.horizontalAdvance("999 of 999") + 6
        self.count_label.setMinimumWidth(self._count_width)
        self.previous_button = self._button("findPrevious", "▲", "Previous match (Shift+Enter)")
        self.next_button = self._button("findNext", "▼", "Next match (Enter)")
        self.close_button = self._button("findClose", "✕", "Close (Esc)")
        layout = QtWidgets.QHBoxLayout(self)
        layout.setContentsMargins(6, 4, 4, 4)
        layout.setSpacing(4)
        layout.addWidget(self.field)
        layout.addWidget(self.count_label)
        layout.addWidget(self.previous_button)
        layout.addWidget(self.next_button)
        layout.addWidget(self.close_button)
        self.field.textEdited.connect(self.query_edited)
        self.previous_button.clicked.connect(self.previous_requested)
        self.next_button.clicked.connect(self.next_requested)
        self.close_button.clicked.connect(self.close_bar)
        self.field.installEventFilter(self)
        host.installEventFilter(self)
        self.hide()

    def _button(self, name: str, text: str, tip: str) -> QtWidgets.QToolButton:
        button = QtWidgets.QToolButton(self)
        button.setObjectName(name)
        button.setText(text)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)  # the field keeps the keys
        return button

    # ---------------------------------------------------------------- what it shows
    @property
    def query(self) -> str:
        return self.field.text()

    def set_count(self, text: str, found: bool, detail: str = "") -> None:
        """The count ('3 of 12', 'no match'); ``found`` False marks the field; ``detail``
        (why a query was not searched) is the count's tooltip."""
        self.count_label.setText(text)
        self.count_label.setToolTip(detail)
        self.field.setProperty("notFound", not found and bool(text))
        self.previous_button.setEnabled(found)
        self.next_button.setEnabled(found)
        palette = self.field.palette()
        base = self.palette().color(QtGui.QPalette.ColorRole.Base)
        if not found and text:
            # a red tint of the field's own background: readable in both themes
            red = QtGui.QColor(220, 50, 50)
            base = QtGui.QColor(
                (base.red() * 3 + red.red()) // 4,
                (base.green() * 3 + red.green()) // 4,
                (base.blue() * 3 + red.blue()) // 4,
            )
        palette.setColor(QtGui.QPalette.ColorRole.Base, base)
        self.field.setPalette(palette)

    def open_bar(self) -> None:
        """Show the bar and put the cursor in the field, its text selected (to type anew)."""
        self.show()
        self.raise_()
        self._place()
        self.field.setFocus(QtCore.Qt.FocusReason.ShortcutFocusReason)
        self.field.selectAll()

    def close_bar(self) -> None:
        if self.isVisible():
            self.hide()
            self._host.setFocus(QtCore.Qt.FocusReason.OtherFocusReason)
            self.closed.emit()

    # ---------------------------------------------------------------- events
    def eventFilter(self, watched: QtCore.QObject, event: QtCore.QEvent) -> bool:
        # Qt may still filter the host's last events while the window is being torn down,
        # after this object's Python attributes are gone.
        host, field = getattr(self, "_host", None), getattr(self, "field", None)
        if host is None or field is None:
            return False
        if watched is host and event.type() == QtCore.QEvent.Type.Resize:
            self._place()
        elif (
            watched is field
            and event.type() == QtCore.QEvent.Type.ShortcutOverride
            and event.key() == QtCore.Qt.Key.Key_Escape
        ):
            event.accept()  # Esc closes the bar, even while Esc also cancels a running script
            return True
        elif watched is field and event.type() == QtCore.QEvent.Type.KeyPress:
            key = event.key()
            if key in (QtCore.Qt.Key.Key_Return, QtCore.Qt.Key.Key_Enter):
                shift = event.modifiers() & QtCore.Qt.KeyboardModifier.ShiftModifier
                (self.previous_requested if shift else self.next_requested).emit()
                return True
            if key == QtCore.Qt.Key.Key_Escape:
                self.close_bar()
                return True
        return super().eventFilter(watched, event)

    def _place(self) -> None:
        """Top right of the host; in a narrow host the field gives up its width first."""
        host = self._host.rect()
        self.count_label.setMinimumWidth(self._count_width)
        for button in (self.previous_button, self.next_button):
            button.setVisible(True)
        others = self.sizeHint().width() - self.field.maximumWidth()  # the field's is fixed
        room = host.width() - 2 * _MARGIN - others
        if room < _FIELD_MIN_WIDTH:  # the count keeps only the width of its text
            self.count_label.setMinimumWidth(0)
            room += self._count_width - self.count_label.sizeHint().width()
        if room < _FIELD_MIN_WIDTH:  # and Enter / Shift+Enter stand for the arrows
            for button in (self.previous_button, self.next_button):
                room += button.sizeHint().width() + self.layout().spacing()
                button.setVisible(False)
        self.field.setFixedWidth(int(min(_FIELD_WIDTH, max(_FIELD_MIN_WIDTH, room))))
        self.adjustSize()
        self.move(max(0, host.right() - self.width() - _MARGIN + 1), _MARGIN)
