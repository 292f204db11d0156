"""Readable in both themes: badge text picks black or white by contrast, and disabled text
keeps at least 3:1 on the window (the QA walk-through found 2.8:1 and near-invisible)."""

import pytest
from PySide6 import QtGui

from viewer.qt.drawing.themes import THEMES, qpalette, readable_on


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


@pytest.mark.parametrize("name", sorted(THEMES))
def test_detached_history_text_reads_on_its_greyed_fill_for_every_state(qapp, name):
    """The dark theme's greyed module boxes had dark text on a dark fill (1.5:1)."""
    import numpy as np

    from viewer.model.node_states import STATE_NAMES
    from viewer.model.scene.colours import faded
    from viewer.qt.graph.items import DETACHED_KEY, style_of_key

    theme = THEMES[name]
    graph = theme.graph
    for kind, fills in enumerate((graph.variable_fill, graph.function_fill, graph.module_fill)):
        for code in range(len(STATE_NAMES)):
            style = style_of_key(theme, 1000 * kind + code + DETACHED_KEY, STATE_NAMES)
            fill = faded(np.asarray([fills[code]], np.uint8), graph.background)[0]
            shown = QtGui.QColor(*(int(c) for c in fill[:3]))
            assert _contrast(QtGui.QColor(style.text), shown) >= 4.5, (kind, code)
            plain = style_of_key(theme, 1000 * kind + code, STATE_NAMES)
            assert style.text != plain.text or style.border != plain.border  # it is greyed


def test_tooltips_follow_the_theme(qapp):
    """QA: tooltips stayed white in the dark theme."""
    from PySide6 import QtWidgets

    from viewer.qt.drawing.themes import apply_theme

    for name in ("dark", "light"):
        theme = THEMES[name]
        apply_theme(qapp, theme)
        palette = QtWidgets.QToolTip.palette()
        base = palette.color(QtGui.QPalette.ColorRole.ToolTipBase)
        text = palette.color(QtGui.QPalette.ColorRole.ToolTipText)
        assert base == QtGui.QColor(theme.base) and text == QtGui.QColor(theme.text)
        assert _contrast(base, text) >= 4.5


@pytest.mark.parametrize("name", sorted(THEMES))
def test_every_states_label_reads_on_its_fill(qapp, name):
    """QA: a not-run Function's op name was 2.7:1 on its fill; muted is fine, unreadable not."""
    from viewer.model.node_states import STATE_NAMES

    theme = THEMES[name]
    graph = theme.graph
    kinds = (
        ("variable", graph.variable_fill),
        ("function", graph.function_fill),
        ("module", graph.module_fill),
    )
    for kind, fills in kinds:
        for code, state in enumerate(STATE_NAMES[: len(fills)]):
            text = QtGui.QColor(theme.node_style(kind, state).text)
            fill = QtGui.QColor(*(int(c) for c in fills[code][:3]))
            assert _contrast(text, fill) >= 4.5, (kind, state, text.name(), fill.name())
