"""The legend dock: every state and every mark, drawn as the graph draws them, in both themes;
the export's legend comes from the same entries."""

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.node_states import STATE_NAMES
from viewer.model.panels.legend import MARKS, STATE_LINES
from viewer.qt.drawing.themes import DARK, LIGHT
from viewer.qt.graph.items import _pen
from viewer.qt.panels.legend import LegendWidget, legend_entries


def _pixels(image: QtGui.QImage) -> np.ndarray:
    image = image.convertToFormat(QtGui.QImage.Format.Format_RGBA8888)
    pixels = np.frombuffer(image.constBits(), dtype=np.uint8).reshape(
        image.height(), image.bytesPerLine() // 4, 4
    )
    return pixels[:, : image.width(), :3].copy()  # a copy: the buffer dies with the image


def _centre(image: QtGui.QImage) -> tuple[int, int, int]:
    return tuple(int(c) for c in _pixels(image)[image.height() // 2, image.width() // 2])


def test_the_window_has_a_legend_dock_with_every_state_and_mark(qtbot, window):
    dock = window.findChild(QtWidgets.QDockWidget, "legendDock")
    assert dock is not None and dock.windowTitle() == "Legend"
    legend = dock.widget()
    assert isinstance(legend, LegendWidget) and legend is window.legend
    keys = legend.keys
    for state in STATE_NAMES:
        assert f"variable:{state}" in keys
    for state in ("not_computed", "value", "grad", "freed"):
        assert f"function:{state}" in keys
    assert "function ran" in legend.label_text("function:value")
    assert "backward ran" in legend.label_text("function:grad")
    assert "grad carried over" in legend.label_text("variable:grad_carried")
    assert "the next backward adds to it" in legend.label_text("variable:grad_carried")
    previous = legend.label_text("variable:grad_previous")
    assert "grad previous" in previous and "empties it" in previous
    assert "nothing adds to it" in previous
    for mark in MARKS:
        assert f"mark:{mark.kind}" in keys
    assert legend.badge_texts("mark:leak_cycle") == ("cycle",)
    assert legend.badge_texts("mark:leak_held") == ("held",)
    assert legend.badge_texts("mark:nonfinite") == ("NaN",)
    assert len(legend.badge_texts("mark:gradcheck")) == 3  # green, amber, red
    labels = [w.text() for w in legend.findChildren(QtWidgets.QLabel)]
    for needed in ("reference cycle", "held by something", "NaN / Inf", "current step"):
        assert any(needed in text for text in labels), needed
    # View menu: the dock's show/hide action
    toggles = [a for a in window.menuBar().actions() if a.text().replace("&", "") == "View"]
    assert dock.toggleViewAction() in toggles[0].menu().actions()


def test_the_legend_restyles_on_a_theme_change(qtbot, window):
    window.set_theme("light")
    legend = window.legend
    light = {key: _centre(legend.swatch_image(key)) for key in legend.keys}
    light_text = legend.label_text("variable:value")
    assert light["variable:value"] == _rgb(LIGHT.node_style("variable", "value").fill)
    window.set_theme("dark")
    dark = {key: _centre(legend.swatch_image(key)) for key in legend.keys}
    assert legend.theme is DARK
    assert dark["variable:value"] == _rgb(DARK.node_style("variable", "value").fill)
    changed = [key for key in legend.keys if light[key] != dark[key]]
    assert len(changed) == len(legend.keys)
    assert legend.label_text("variable:value") != light_text  # the text colour too
    assert LIGHT.text in light_text and DARK.text in legend.label_text("variable:value")


def _rgb(colour: str) -> tuple[int, int, int]:
    c = QtGui.QColor(colour)
    return c.red(), c.green(), c.blue()


def test_each_state_is_drawn_with_its_own_fill_and_border(qapp):
    for theme in (LIGHT, DARK):
        for kind in ("variable", "function"):
            styles = [theme.node_style(kind, state) for state in STATE_NAMES]
            assert len({s.fill for s in styles}) == len(STATE_NAMES)
            assert len({(s.line, s.border_width) for s in styles}) == len(STATE_NAMES)
            for state, style in zip(STATE_NAMES, styles, strict=True):
                assert (style.line, style.border_width) == STATE_LINES[state]
                # the graph view's pen is the style's
                pen = _pen(style)
                assert pen.widthF() == style.border_width and pen.isCosmetic()
                assert pen.color() == QtGui.QColor(style.border)
                patterned = style.line != "solid"
                assert (pen.style() == QtCore.Qt.PenStyle.CustomDashLine) == patterned
    patterns = {tuple(_pen(LIGHT.node_style("variable", s)).dashPattern()) for s in STATE_NAMES}
    assert len(patterns) == 4  # solid, dashed, dotted, dash-dot


def test_a_swatch_is_the_node_as_the_graph_draws_it(qapp):
    legend = LegendWidget(LIGHT)
    for key in ("variable:grad_cleared", "variable:constant", "variable:not_computed"):
        image = _pixels(legend.swatch_image(key))
        style = LIGHT.node_style(*key.split(":"))
        fill, border = np.array(_rgb(style.fill)), np.array(_rgb(style.border))
        assert (np.abs(image.astype(int) - fill).sum(axis=-1) <= 3).sum() > 200
        assert np.abs(image.astype(int) - border).sum(axis=-1).min() <= 40
    legend.deleteLater()


def test_the_export_legend_uses_the_same_entries(qapp):
    from viewer.qt.graph.image_export import _legend_rows

    sections = dict(legend_entries(LIGHT))
    rows = _legend_rows(LIGHT, None)
    # each row has its title: "freed" is in both, told apart by the row it is in
    assert rows == [("variables", sections["Variables"]), ("functions", sections["Functions"])]
    overlays = (
        np.array([0, 1, 2]),
        np.zeros((3, 4), np.uint8),
        ["cycle", "held", "1.0e-02"],
    )
    title, marks = _legend_rows(LIGHT, overlays)[2]
    assert title == "marks"
    assert [e.key for e in marks] == ["mark:leak_cycle", "mark:leak_held", "mark:gradcheck"]
    assert marks[0] in sections["Marks"]
    # a problem's sample badge is the first kind on the picture, not a fixed example
    overlays = (np.array([0, 1]), np.zeros((2, 4), np.uint8), ["carried-gradient", "dead-relu"])
    (problem,) = _legend_rows(LIGHT, overlays)[2][1]
    assert problem.key == "mark:problem"
    assert [text for text, _ in problem.badges] == ["carried-gradient"]


def test_a_narrow_legend_wraps_its_badges_and_clips_no_description(qtbot):
    """The gradient check's three badges side by side are wider than a narrow dock: they
    wrap into rows, so the legend is no wider than its view and every description fits."""
    legend = LegendWidget(LIGHT)
    qtbot.addWidget(legend)
    legend.resize(200, 400)
    legend.show()
    qtbot.waitExposed(legend)
    view_width = legend.viewport().width()
    assert legend.widget().width() <= view_width
    badges = legend.findChild(QtWidgets.QLabel, "legendBadges:mark:gradcheck")
    assert (
        badges.height()
        >= 2 * legend.findChild(QtWidgets.QLabel, "legendBadges:mark:leak_held").height()
    )
    for key in legend.keys:
        text = legend.findChild(QtWidgets.QLabel, f"legendText:{key}")
        right = text.mapTo(legend.viewport(), QtCore.QPoint(text.width(), 0)).x()
        assert right <= view_width, key
    legend.resize(500, 400)
    qtbot.waitUntil(
        lambda: (
            badges.height()
            == legend.findChild(QtWidgets.QLabel, "legendBadges:mark:leak_held").height()
        )
    )  # one row again
