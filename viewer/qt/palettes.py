"""Light and dark themes: the Qt palette for widgets and the colours of the graph.

Node colours follow DeZero's ``plot_dot_graph`` (variables orange, functions light blue) and
are modulated by the node's state at the current step, so a glance at the graph says which
values and gradients exist yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6 import QtGui, QtWidgets

from viewer.model import scene

__all__ = ["DARK", "LIGHT", "THEMES", "NodeStyle", "Theme", "apply_theme", "theme_named"]


@dataclass(frozen=True)
class NodeStyle:
    """How one (kind, state) group of nodes is drawn (fill from the model's palette)."""

    fill: str
    border: str
    text: str
    border_width: float = 1.2
    dashed: bool = False


def _hex(rgba) -> str:
    r, g, b = (int(c) for c in rgba[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


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
    graph: scene.Palette = scene.LIGHT

    def node_style(self, kind: str, state: str) -> NodeStyle:
        """Style for a node of ``kind`` ('variable' | 'function') in ``state`` (a state name).

        The fill is the model's (:data:`viewer.model.scene.PALETTES`), so the view and the
        model's ``Frame.fill`` agree; borders, dashes and text colours are the view's.
        """
        state = state.lower()
        key = f"{kind}:{state}"
        style = self.nodes.get(key) or self.nodes[f"{kind}:default"]
        if state in scene.STATE_NAMES:
            table = self.graph.function_fill if kind == "function" else self.graph.variable_fill
            style = NodeStyle(
                _hex(table[scene.state_code(state)]),
                style.border,
                style.text,
                style.border_width,
                style.dashed,
            )
        return style


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
    graph=scene.LIGHT,
    nodes={
        "variable:default": NodeStyle("#ffc46b", "#b9770e", "#2b1a00"),
        "variable:not_computed": NodeStyle("#fdf3e3", "#d9b98a", "#9a8868", dashed=True),
        "variable:value": NodeStyle("#ffc46b", "#b9770e", "#2b1a00"),
        "variable:grad": NodeStyle("#ff8f3d", "#a61e4d", "#2b0f00", border_width=2.6),
        "variable:grad_cleared": NodeStyle("#f6dcb5", "#a0896b", "#5a4a33", dashed=True),
        "variable:freed": NodeStyle("#dddddd", "#8a8a8a", "#555555", dashed=True),
        "variable:constant": NodeStyle("#ece6cf", "#9b9171", "#45402c"),
        "variable:grad_carried": NodeStyle("#c77dff", "#5a189a", "#1c0630", border_width=2.6),
        "function:default": NodeStyle("#add8e6", "#4a86a0", "#0d2a36"),
        "function:not_computed": NodeStyle("#e9f4f8", "#a9c9d6", "#7b98a4", dashed=True),
        "function:value": NodeStyle("#add8e6", "#4a86a0", "#0d2a36"),
        "function:grad": NodeStyle("#74b3d9", "#1f5f8b", "#071f30", border_width=2.0),
        "function:grad_cleared": NodeStyle("#add8e6", "#4a86a0", "#0d2a36"),
        "function:freed": NodeStyle("#dddddd", "#8a8a8a", "#555555", dashed=True),
        "function:constant": NodeStyle("#d9e4e8", "#8aa0a8", "#3b4a50"),
    },
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
    graph=scene.DARK,
    nodes={
        "variable:default": NodeStyle("#e0a04a", "#ffd08a", "#1e1200"),
        "variable:not_computed": NodeStyle("#3a332a", "#7d6a4e", "#a99878", dashed=True),
        "variable:value": NodeStyle("#e0a04a", "#ffd08a", "#1e1200"),
        "variable:grad": NodeStyle("#f07f2e", "#ff8fb3", "#1e0a00", border_width=2.6),
        "variable:grad_cleared": NodeStyle("#6b5a42", "#a58f70", "#f0e2cc", dashed=True),
        "variable:freed": NodeStyle("#44474d", "#8a8d94", "#c8cad0", dashed=True),
        "variable:constant": NodeStyle("#5e5946", "#a79f80", "#f1ebd3"),
        "variable:grad_carried": NodeStyle("#9d5cc9", "#e0b3ff", "#12041f", border_width=2.6),
        "function:default": NodeStyle("#6fa8bf", "#bfe6f5", "#061820"),
        "function:not_computed": NodeStyle("#26343a", "#4f6b76", "#8fa9b3", dashed=True),
        "function:value": NodeStyle("#6fa8bf", "#bfe6f5", "#061820"),
        "function:grad": NodeStyle("#4f93c4", "#a9dcff", "#03131f", border_width=2.0),
        "function:grad_cleared": NodeStyle("#6fa8bf", "#bfe6f5", "#061820"),
        "function:freed": NodeStyle("#44474d", "#8a8d94", "#c8cad0", dashed=True),
        "function:constant": NodeStyle("#46545a", "#8aa0a8", "#e3edf0"),
    },
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
        role.PlaceholderText: theme.mid,
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
    disabled = c(theme.mid)
    for r in (role.WindowText, role.Text, role.ButtonText):
        pal.setColor(group.Disabled, r, disabled)
    return pal


def apply_theme(app: QtWidgets.QApplication, theme: Theme) -> None:
    """Apply ``theme``'s palette to the whole application (Fusion keeps both readable)."""
    app.setStyle("Fusion")
    app.setPalette(qpalette(theme))
