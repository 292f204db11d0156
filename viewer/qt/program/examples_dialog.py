"""Help > Examples by Topic: every bundled example under its topic, with what it teaches (its
own header's description), each title a link that opens it."""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6 import QtCore, QtWidgets

from viewer.model.document.examples import Example

__all__ = ["TOPICS", "ExamplesByTopic", "topic_title"]

# What each topic teaches, in the order they are shown (the library's own category order).
TOPICS: dict[str, str] = {
    "basics": "How a program becomes a graph, and how gradients flow back through it: "
    "chains, fan-out and the order in which backward visits the Functions.",
    "higher-order": "Gradients of gradients: backward with create_graph=True records the "
    "backward pass as a graph of its own.",
    "training": "Training loops: many backward passes, the loss and gradient norms over time, "
    "layers as boxes you can open and fold.",
    "debugging": "Finding what is wrong: a hand-written backward checked against central "
    "differences, and where NaN or Inf first appears.",
    "leaks": "What keeps a graph alive after you are done with it, and what lets it be freed.",
    "pytorch": "Real PyTorch programs: each backward() is a graph, stepped through in the "
    "order torch's engine runs it, with torch's own values and gradients (needs torch).",
}
_TITLES = {"pytorch": "PyTorch"}
SCHEME = "example"


def topic_title(category: str) -> str:
    """``higher-order`` -> ``Higher order``: as the Examples menu names it."""
    return _TITLES.get(category) or category.replace("-", " ").capitalize()


class ExamplesByTopic(QtWidgets.QDialog):
    """Non-modal: it says what it lists and opens what is chosen; the window loads it."""

    example_chosen = QtCore.Signal(str)  # the example's stem

    def __init__(
        self, examples: Sequence[Example], parent: QtWidgets.QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("examplesByTopic")
        self.setWindowTitle("Examples by topic")
        self.stems = tuple(e.stem for e in examples)
        intro = QtWidgets.QLabel(
            "Each example is a small program written to show one thing. Click a title to open "
            "it (a script runs in a process of its own).",
            self,
        )
        intro.setWordWrap(True)
        self.browser = QtWidgets.QTextBrowser(self)
        self.browser.setObjectName("examplesByTopicText")
        self.browser.setOpenLinks(False)
        self.browser.setHtml(self._page(examples))
        self.browser.anchorClicked.connect(self._open)
        buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.browser, 1)
        layout.addWidget(buttons)
        self.resize(620, 560)

    def _page(self, examples: Sequence[Example]) -> str:
        """The list as HTML; every text from the examples' files is escaped."""
        by_topic: dict[str, list[Example]] = {}
        for example in examples:
            by_topic.setdefault(example.category, []).append(example)
        parts = []
        for category, members in by_topic.items():
            parts.append(f"<h3>{html.escape(topic_title(category))}</h3>")
            if category in TOPICS:
                parts.append(f"<p><i>{html.escape(TOPICS[category])}</i></p>")
            for example in members:
                kind = "script" if example.kind == "script" else "expression"
                missing = example.missing
                if missing:  # opening it says so too, with what to install
                    kind += f"; needs {', '.join(missing)}, not installed"
                parts.append(
                    f"<p><a href='{SCHEME}:{html.escape(example.stem, quote=True)}'>"
                    f"<b>{html.escape(example.title)}</b></a> ({kind})<br>"
                    f"{html.escape(example.description)}</p>"
                )
        return "".join(parts)

    def _open(self, url: QtCore.QUrl) -> None:
        if url.scheme() != SCHEME or url.path() not in self.stems:
            return
        self.example_chosen.emit(url.path())
        self.close()
