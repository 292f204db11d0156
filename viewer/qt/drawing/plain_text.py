"""Strings from files and users shown as plain text wherever Qt would guess rich text.

QLabel and QMessageBox take ``Qt.PlainText``; a tooltip has no such switch and renders any
text that looks like HTML, so :func:`tooltip` escapes it and wraps it in a paragraph that keeps
its line breaks and spaces.
"""

from __future__ import annotations

import html

__all__ = ["tooltip"]


def tooltip(text: str) -> str:
    """``text`` as a tooltip shows it literally: ``<h1>x</h1>`` reads as typed."""
    if not text:
        return ""
    return "<p style='white-space:pre-wrap'>" + html.escape(text, quote=False) + "</p>"
