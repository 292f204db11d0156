"""Light and dark themes: the Qt palette for widgets and the colours of the graph.

Node colours follow DeZero's ``plot_dot_graph`` (variables orange, functions light blue) and
are modulated by the node's state at the current step, so a glance at the graph says which
values and gradients exist yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model.node_states import state_code
from viewer.model.panels.legend import STATE_LINES
from viewer.model.scene import colours as graph_colours

__all__ = [
    "DARK",
    "LIGHT",
    "THEMES",
    "NodeStyle",
    "Theme",
    "apply_theme",
    "readable_on",
    "theme_named",
]

# dash, gap, ... in pen widths
_DASH_PATTERNS = {"dashed": [4.0, 2.5], "dotted": [1.0, 1.8], "dashdot": [5.0, 2.0, 1.0, 2.0]}


@dataclass(frozen=True)
class NodeStyle:
    """How one (kind, state) group of nodes is drawn. ``line``: 'solid' | 'dashed' |
    'dotted' | 'dashdot' (:data:`viewer.model.panels.legend.LINE_PATTERNS`)."""

    fill: str
    border: str
    text: str
    border_width: float = 1.2
    line: str = "solid"

    @property
    def dashed(self) -> bool:
        return self.line != "solid"

    def pen(self, cosmetic: bool = False) -> QtGui.QPen:
        """The border's pen (``cosmetic``: its width in device pixels whatever the scale)."""
        pen = QtGui.QPen(QtGui.QColor(self.border), self.border_width)
        pen.setCosmetic(cosmetic)
        if self.line != "solid":
            # Flat caps: Qt's default square caps lengthen every dash by a pen width, which
            # closes the gaps of a thick border until dashes, dots and solid look alike.
            pen.setCapStyle(QtCore.Qt.PenCapStyle.FlatCap)
            pen.setDashPattern(_DASH_PATTERNS[self.line])
        return pen


def _hex(rgba) -> str:
    r, g, b = (int(c) for c in rgba[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def _node_styles(
    palette: graph_colours.Palette, colours: dict[str, tuple[str, str]]
) -> dict[str, NodeStyle]:
    """``kind:state`` -> NodeStyle from ``colours`` (``kind:state`` -> (border, text)): the
    fill is the model's palette, the border's pattern and width the legend's
    :data:`~viewer.model.panels.legend.STATE_LINES`. The graph fills its nodes with ``Frame.fill``,
    which the scene takes from the same palette; the legend's swatches use this fill."""
    styles = {}
    for key, (border, text) in colours.items():
        kind, state = key.split(":")
        tables = {"function": palette.function_fill, "module": palette.module_fill}
        table = tables.get(kind, palette.variable_fill)
        drawn_as = "value" if state == "default" else state
        line, width = STATE_LINES[drawn_as]
        fill = _hex(table[state_code(drawn_as)])
        styles[key] = NodeStyle(fill, border, text, width, line)
    return styles


def readable_on(colour: QtGui.QColor) -> QtGui.QColor:
    """Black or white, whichever has the higher WCAG contrast on ``colour`` (badge text:
    white on the dark theme's light red was 2.8:1)."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    lum = (
        0.2126 * linear(colour.redF())
        + 0.7152 * linear(colour.greenF())
        + 0.0722 * linear(colour.blueF())
    )
    on_white = 1.05 / (lum + 0.05)
    on_black = (lum + 0.05) / 0.05
    return QtGui.QColor("#ffffff" if on_white >= on_black else "#000000")


def _module_styles(palette: graph_colours.Palette, border: str) -> dict[str, tuple[str, str]]:
    """(border, text) of a module box in each state: one border colour, and black or white
    text, whichever reads better on the state's fill."""
    out = {}
    for state in ("default", *(name for name in STATE_LINES)):
        drawn_as = "value" if state == "default" else state
        fill = QtGui.QColor(_hex(palette.module_fill[state_code(drawn_as)]))
        out[f"module:{state}"] = (border, readable_on(fill).name())
    return out


@dataclass(frozen=True)
class Theme:
    name: str
    window: str
    base: str
    alt_base: str
    text: str
    button: str
    highlight: str
    highlighted_text: str
    mid: str
    graph_background: str
    edge: str
    edge_active: str
    selection: str
    current: str
    error: str
    nodes: dict[str, NodeStyle] = field(default_factory=dict)
    graph: graph_colours.Palette = graph_colours.LIGHT

    def node_style(self, kind: str, state: str) -> NodeStyle:
        """Style for a node of ``kind`` ('variable' | 'function') in ``state`` (a state name);
        an unknown state gets the kind's default."""
        state = state.lower()
        return self.nodes.get(f"{kind}:{state}") or self.nodes[f"{kind}:default"]


LIGHT = Theme(
    name="light",
    window="#f3f3f5",
    base="#ffffff",
    alt_base="#f0f2f5",
    text="#1d1f23",
    button="#e9eaee",
    highlight="#2f6fdb",
    highlighted_text="#ffffff",
    mid="#b8bcc6",
    graph_background="#fbfbfc",
    edge="#8d939e",
    edge_active="#e8590c",
    selection="#2f6fdb",
    current="#e8590c",
    error="#c92a2a",
    graph=graph_colours.LIGHT,
    nodes=_node_styles(
        graph_colours.LIGHT,
        {
            "variable:default": ("#b9770e", "#2b1a00"),
            "variable:not_computed": ("#c9a877", "#76654a"),
            "variable:value": ("#b9770e", "#2b1a00"),
            "variable:grad": ("#a61e4d", "#2b0f00"),
            "variable:grad_cleared": ("#a0805a", "#5a4a33"),
            "variable:freed": ("#7d8087", "#4a4d52"),
            "variable:constant": ("#5f5c3c", "#1f1e12"),
            "variable:grad_carried": ("#5a189a", "#1c0630"),
            "variable:grad_previous": ("#8a5a44", "#1f0d00"),
            "function:default": ("#4a86a0", "#0d2a36"),
            "function:not_computed": ("#a9c9d6", "#526d79"),
            "function:value": ("#4a86a0", "#0d2a36"),
            "function:grad": ("#163f66", "#02101c"),
            "function:grad_cleared": ("#6f9a4a", "#1f2e12"),
            "function:freed": ("#6e7177", "#26282c"),
            "function:constant": ("#3f5448", "#0b1510"),
            "function:grad_carried": ("#5a2d91", "#1c0630"),
            "function:grad_previous": ("#2f5670", "#02101c"),
        }
        | _module_styles(graph_colours.LIGHT, "#5f3dc4"),
    ),
)

DARK = Theme(
    name="dark",
    window="#25272b",
    base="#1b1d20",
    alt_base="#2a2d32",
    text="#e4e6eb",
    button="#33363c",
    highlight="#4c8dff",
    highlighted_text="#0d0f12",
    mid="#4a4e57",
    graph_background="#17191c",
    edge="#7b818c",
    edge_active="#ff922b",
    selection="#74a8ff",
    current="#ff922b",
    error="#ff6b6b",
    graph=graph_colours.DARK,
    nodes=_node_styles(
        graph_colours.DARK,
        {
            "variable:default": ("#ffd08a", "#1e1200"),
            "variable:not_computed": ("#8a765a", "#b3a486"),
            "variable:value": ("#ffd08a", "#1e1200"),
            "variable:grad": ("#ff8fb3", "#1e0a00"),
            "variable:grad_cleared": ("#c09a66", "#fff3de"),
            "variable:freed": ("#8a8d94", "#c8cad0"),
            "variable:constant": ("#dcd8bd", "#15140c"),
            "variable:grad_carried": ("#e0b3ff", "#12041f"),
            "variable:grad_previous": ("#ecd2b0", "#1e1200"),
            "function:default": ("#bfe6f5", "#061820"),
            "function:not_computed": ("#58767f", "#8fa9b3"),
            "function:value": ("#bfe6f5", "#061820"),
            "function:grad": ("#a9dcff", "#03131f"),
            "function:grad_cleared": ("#a8d68f", "#081204"),
            "function:freed": ("#9a9da4", "#e1e3e8"),
            "function:constant": ("#d3dde1", "#0b1114"),
            "function:grad_carried": ("#eab0e4", "#fbeefa"),
            "function:grad_previous": ("#c9d9ec", "#05090d"),
        }
        | _module_styles(graph_colours.DARK, "#d0bfff"),
    ),
)

THEMES: dict[str, Theme] = {"light": LIGHT, "dark": DARK}


def theme_named(name: str) -> Theme:
    """The theme called ``name``; a ValueError lists the known ones."""
    try:
        return THEMES[name]
    except KeyError:
        known = ", ".join(sorted(THEMES))
        raise ValueError(f"unknown theme {name!r}; known themes: {known}") from None


def qpalette(theme: Theme) -> QtGui.QPalette:
    role = QtGui.QPalette.ColorRole
    group = QtGui.QPalette.ColorGroup
    c = QtGui.QColor
    pal = QtGui.QPalette()
    pairs = {
        role.Window: theme.window,
        role.WindowText: theme.text,
        role.Base: theme.base,
        role.AlternateBase: theme.alt_base,
        role.ToolTipBase: theme.base,
        role.ToolTipText: theme.text,
        role.Text: theme.text,
        role.Button: theme.button,
        role.ButtonText: theme.text,
        role.BrightText: theme.error,
        role.Highlight: theme.highlight,
        role.HighlightedText: theme.highlighted_text,
        role.Mid: theme.mid,
        role.Link: theme.highlight,
    }
    for r, colour in pairs.items():
        pal.setColor(r, c(colour))
    # halfway between the text and the window: readable, and clearly not enabled (the
    # theme's 'mid' all but vanished on the dark window)
    text, window = c(theme.text), c(theme.window)
    disabled = c(
        (text.red() + window.red()) // 2,
        (text.green() + window.green()) // 2,
        (text.blue() + window.blue()) // 2,
    )
    for r in (role.WindowText, role.Text, role.ButtonText, role.PlaceholderText):
        pal.setColor(group.Disabled, r, disabled)
    # a placeholder ("choose a graph to show it") is a hint, not a value: the same halfway
    # colour ('mid' is too faint to read on the dark theme)
    for g in (group.Active, group.Inactive):
        pal.setColor(g, role.PlaceholderText, disabled)
    return pal


def apply_theme(app: QtWidgets.QApplication, theme: Theme) -> None:
    """Apply ``theme``'s palette to the whole application (Fusion keeps both readable)."""
    app.setStyle("Fusion")
    palette = qpalette(theme)
    app.setPalette(palette)
    # tooltips keep a palette of their own: without this they stayed white in the dark theme
    QtWidgets.QToolTip.setPalette(palette)
