"""The base of a binder that connects the Document to one docked panel.

The wiring rule (docs/ARCHITECTURE.md, "viewer.qt"): a panel knows no Document; its binder
takes the document, the panel and its dock, and makes every connection between them in its
``__init__``. This class holds the three, so that each binder starts the same way.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets

__all__ = ["PanelBinding"]


class PanelBinding(QtCore.QObject):
    def __init__(
        self,
        document: Any,
        panel: Any,
        dock: QtWidgets.QDockWidget | None,
        parent: QtCore.QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.document = document
        self.panel = panel
        self.dock = dock
