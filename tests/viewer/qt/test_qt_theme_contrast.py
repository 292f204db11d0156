"""Readable in both themes: badge text picks black or white by contrast, and disabled text
keeps at least 3:1 on the window (the QA walk-through found 2.8:1 and near-invisible)."""

import pytest
from PySide6 import QtGui

from viewer.qt.themes import THEMES, qpalette, readable_on


def _luminance(c: QtGui.QColor) -> float:
    def linear(v: float) -> float:
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(c.redF()) + 0.7152 * linear(c.greenF()) + 0.0722 * linear(c.blueF())


def _contrast(a: QtGui.QColor, b: QtGui.QColor) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@pytest.mark.parametrize("name", sorted(THEMES))
def test_badge_text_and_disabled_text_are_readable(qapp, name):
    theme = THEMES[name]
    error = QtGui.QColor(theme.error)
    assert _contrast(readable_on(error), error) >= 4.5
    palette = qpalette(theme)
    group = QtGui.QPalette.ColorGroup.Disabled
    for role in (QtGui.QPalette.ColorRole.Text, QtGui.QPalette.ColorRole.ButtonText):
        shown = palette.color(group, role)
        assert _contrast(shown, QtGui.QColor(theme.window)) >= 3.0
        assert shown != QtGui.QColor(theme.text)  # still looks disabled
