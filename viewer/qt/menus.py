"""Menus, actions and keyboard shortcuts of the main window.

:data:`SHORTCUTS` is the one table of key bindings: the actions below take their keys from it
and Help > Keyboard shortcuts (and docs/viewer.md) show it.

Playback keys (arrows, Space, Home, End, letters) are window shortcuts: a text field that has
the focus keeps them for editing, because Qt lets a focused editor claim a key before a
shortcut fires.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6 import QtGui, QtWidgets

from viewer.model.document.examples import list_examples
from viewer.model.expression.reference import language_reference
from viewer.qt.drawing.plain_text import tooltip
from viewer.qt.program.examples_dialog import topic_title

__all__ = [
    "SHORTCUTS",
    "MenuSlots",
    "Toggle",
    "build_menus",
    "language_html",
    "shortcuts_html",
    "show_language",
    "show_shortcuts",
]

# name -> (keys, description). The first key is the one shown in menus.
SHORTCUTS: dict[str, tuple[tuple[str, ...], str]] = {
    "open": (("Ctrl+O",), "Open an expression (.expr, .txt), a trace (.json) or a script (.py)"),
    "export": (
        ("Ctrl+E",),
        "Export the view (PNG, SVG), the graph (DOT, GraphML) or the trace (JSON)",
    ),
    "quit": (("Ctrl+Q",), "Quit"),
    "run": (("Ctrl+Return", "Ctrl+Enter"), "Run the program in the editor"),
    "cancel_run": (("Esc",), "Cancel the running script or program (as its Cancel button)"),
    "play": (("Space",), "Play / pause"),
    "step_forward": (("Right",), "Step forward"),
    "step_back": (("Left",), "Step back"),
    "to_start": (("Home",), "Jump to the start (only the leaves computed)"),
    "to_end": (("End",), "Jump to the end"),
    "next_phase": (
        ("B",),
        "Jump to the next phase: from the forward phase to the first backward step, "
        "from a backward pass to the next phase (stays at the last)",
    ),
    "first_nonfinite": (("Ctrl+J", "N"), "Jump to the first step that produced NaN or Inf"),
    "next_nonfinite": (("Shift+N",), "Jump to the next step that produced NaN or Inf"),
    "check_gradients": (
        ("Ctrl+G",),
        "Check gradients: backprop against central differences, the graph coloured by error",
    ),
    "release_graph": (
        ("Ctrl+L",),
        "Release graph: drop the expression's objects and list what leaked",
    ),
    "slower": (("[",), "Play slower"),
    "faster": (("]",), "Play faster"),
    "find": (
        ("Ctrl+F",),
        "Find a node by name, op or scope path (Enter: next match, Shift+Enter: previous, "
        "Esc: close)",
    ),
    "fit": (("F",), "Fit the graph in the view"),
    "zoom_in": (("Ctrl+=", "Ctrl++"), "Zoom in (or the mouse wheel)"),
    "zoom_out": (("Ctrl+-",), "Zoom out"),
    "overview": (
        ("Ctrl+M",),
        "Show or hide the overview (the whole graph, while part of it is out of view)",
    ),
    "shortcuts": (("F1",), "Show the keyboard shortcuts"),
    "problems": (
        ("Ctrl+Shift+P",),
        "Show or hide the Problems panel: the gradient bugs found, by name; a click goes there",
    ),
}
# A dock's View-menu toggle that has a key of its own: dock objectName -> SHORTCUTS' name.
DOCK_SHORTCUTS = {"problemsDock": "problems"}


def shortcuts_html() -> str:
    rows = "".join(
        f"<tr><td><b>{html.escape(' / '.join(keys))}</b></td><td>{html.escape(text)}</td></tr>"
        for keys, text in SHORTCUTS.values()
    )
    extra = (
        "<p>Mouse: drag to pan, wheel to zoom, click a node to inspect it, hover an edge for "
        "its shapes. Arrow keys and Space act on playback unless a text field has the "
        "focus.</p>"
    )
    return f"<table cellspacing='6'>{rows}</table>{extra}"


@dataclass(frozen=True)
class Toggle:
    """A checkable action: whether it starts checked, and what a change of it does."""

    checked: bool
    changed: Callable[[bool], object]

    @classmethod
    def saved(
        cls, saved: bool, apply: Callable[[bool], object], save: Callable[[bool], object]
    ) -> Toggle:
        """A switch kept in the settings: ``saved`` applied now, each change applied and saved."""
        apply(saved)

        def changed(on: bool) -> None:
            apply(on)
            save(on)

        return cls(saved, changed)


@dataclass(frozen=True)
class MenuSlots:
    """What the menus call, handed in by the window that builds them."""

    commands: Mapping[str, Callable[[], object]]  # an action's name -> what it runs
    toggles: Mapping[str, Toggle]  # a checkable action's name -> its state and its effect
    editor: QtWidgets.QPlainTextEdit  # Edit's undo, redo, cut, copy, paste, select all
    recent_files: Callable[[], Sequence[str]]
    clear_recent_files: Callable[[], object]
    open_path: Callable[[str], object]
    theme: str  # the theme checked in View > Theme
    set_theme: Callable[[str], object]
    load_example: Callable[[str], object]  # by the example's stem
    docks: Sequence[QtWidgets.QDockWidget]  # shown or hidden from the View menu


# name -> the text shown (the action's objectName is ``action_<name>``). Its key and its tips
# come from SHORTCUTS, or its tips from TIPS.
ACTION_TEXTS: dict[str, str] = {
    "open": "&Open…",
    "save_trace": "Save the Trace as JSON…",
    "export": "&Export…",
    "quit": "&Quit",
    "run": "&Run the Program",
    "cancel_run": "&Cancel the Running Script",
    "reset_leaves": "Reset the Leaf Values",
    "find": "&Find a Node…",
    "fit": "&Fit the Graph",
    "zoom_in": "Zoom &In",
    "zoom_out": "Zoom &Out",
    "follow_step": "Follow the &Active Step",
    "overview": "&Overview",
    "edge_gradients": "Label the Step's Edges with &Gradients",
    "play": "&Play / Pause",
    "step_forward": "Step &Forward",
    "step_back": "Step &Back",
    "to_start": "Jump to the &Start",
    "to_end": "Jump to the &End",
    "next_phase": "Jump to the &Next Phase",
    "first_nonfinite": "Jump to First &NaN/Inf",
    "next_nonfinite": "Jump to Next NaN/Inf",
    "slower": "&Slower",
    "faster": "F&aster",
    "check_gradients": "Check &Gradients",
    "release_graph": "&Release Graph",
    "examples_by_topic": "&Examples by Topic…",
    "tour": "Take the &Tour",
    "shortcuts": "&Keyboard Shortcuts",
    "language": "Expression &Language",
    "about": "&About",
}
TIPS = {
    "edge_gradients": "At a backward step, write on each of its edges the gradient it carries",
    "follow_step": "Pan the graph to keep the current step's Function and nodes in view",
    "examples_by_topic": "Every bundled example under its topic, with what it teaches",
    "language": "What a typed program may use: statements, operators, every function by name",
    "tour": "Show the first-run tour again: the editor, the graph, playback, inspector, legend",
}
ROLES = {"quit": QtGui.QAction.MenuRole.QuitRole, "about": QtGui.QAction.MenuRole.AboutRole}

# Shown for discoverability; the editor handles these keys itself when it has the focus.
EDIT_ACTIONS = (
    ("undo", "&Undo", QtGui.QKeySequence.StandardKey.Undo, "undo"),
    ("redo", "&Redo", QtGui.QKeySequence.StandardKey.Redo, "redo"),
    ("cut", "Cu&t", QtGui.QKeySequence.StandardKey.Cut, "cut"),
    ("copy", "&Copy", QtGui.QKeySequence.StandardKey.Copy, "copy"),
    ("paste", "&Paste", QtGui.QKeySequence.StandardKey.Paste, "paste"),
    ("select_all", "Select &All", QtGui.QKeySequence.StandardKey.SelectAll, "selectAll"),
)
THEMES = (("light", "&Light"), ("dark", "&Dark"))
TOOLBAR = ("check_gradients", "release_graph", "first_nonfinite", "export")

# Each menu: its title, its objectName ("" for none) and its entries in order: an action's name,
# SEPARATOR, or one of the PARTS below ("@recent", "@edit", ...).
SEPARATOR = "-"
MENUS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("&File", "", ("open", "@recent", SEPARATOR, "save_trace", "export", SEPARATOR, "quit")),
    ("&Edit", "", ("@edit", SEPARATOR, "run", "cancel_run", "reset_leaves", SEPARATOR, "find")),
    (
        "&View",
        "",
        (
            *("fit", "zoom_in", "zoom_out", "follow_step", "overview", "edge_gradients"),
            SEPARATOR,
            *("@themes", SEPARATOR, "@docks", "@toolbar"),
        ),
    ),
    (
        "&Playback",
        "",
        (
            *("play", "step_forward", "step_back", "to_start", "to_end", "next_phase"),
            *("first_nonfinite", "next_nonfinite", SEPARATOR, "slower", "faster"),
        ),
    ),
    (
        "&Debug",
        "debugMenu",
        ("check_gradients", "release_graph", "first_nonfinite", "next_nonfinite"),
    ),
    ("E&xamples", "examplesMenu", ("@examples",)),
    ("&Help", "", ("tour", "examples_by_topic", SEPARATOR, "language", "shortcuts", "about")),
)


def build_menus(window: QtWidgets.QMainWindow, slots: MenuSlots) -> dict[str, QtGui.QAction]:
    """Create the menu bar of ``window`` from :data:`MENUS` and return the actions by name."""
    commands = {
        "shortcuts": lambda: show_shortcuts(window),
        "language": lambda: show_language(window),
        "about": lambda: _about(window),
        **slots.commands,
    }
    actions = {name: _make_action(window, name, commands, slots.toggles) for name in ACTION_TEXTS}
    actions["cancel_run"].setEnabled(False)  # enabled while a script or a program runs
    bar = window.menuBar()
    for title, object_name, entries in MENUS:
        menu = bar.addMenu(title)
        if object_name:
            menu.setObjectName(object_name)
        for entry in entries:
            if entry == SEPARATOR:
                menu.addSeparator()
            elif entry.startswith("@"):
                PARTS[entry](menu, window, slots, actions)
            else:
                menu.addAction(actions[entry])
    return actions


def _make_action(
    window: QtWidgets.QMainWindow,
    name: str,
    commands: Mapping[str, Callable[[], object]],
    toggles: Mapping[str, Toggle],
) -> QtGui.QAction:
    act = QtGui.QAction(ACTION_TEXTS[name], window)
    act.setObjectName(f"action_{name}")
    if name in SHORTCUTS:
        keys, tip = SHORTCUTS[name]
        act.setShortcuts([QtGui.QKeySequence(k) for k in keys])
        act.setStatusTip(tip)
        act.setToolTip(f"{tip} ({keys[0]})")
    elif name in TIPS:
        act.setStatusTip(TIPS[name])
        act.setToolTip(TIPS[name])
    if name in ROLES:
        act.setMenuRole(ROLES[name])
    if name in toggles:
        act.setCheckable(True)
        act.setChecked(toggles[name].checked)
        act.toggled.connect(toggles[name].changed)
    else:
        act.triggered.connect(lambda _checked=False, run=commands[name]: run())
    window.addAction(act)  # active whichever dock has the focus
    return act


def _recent_menu(
    menu: QtWidgets.QMenu,
    window: QtWidgets.QMainWindow,
    slots: MenuSlots,
    actions: dict[str, QtGui.QAction],
) -> None:
    """File > Open Recent, filled each time it opens."""
    recent = menu.addMenu("Open &Recent")
    recent.setObjectName("recentMenu")

    def fill_recent() -> None:
        recent.clear()
        files = slots.recent_files()
        for path in files:
            act = recent.addAction(Path(path).name)
            act.setToolTip(tooltip(path))
            act.setStatusTip(path)
            act.triggered.connect(lambda _=False, p=path: slots.open_path(p))
        if not files:
            recent.addAction("(none)").setEnabled(False)
        recent.addSeparator()
        recent.addAction("Clear the list", slots.clear_recent_files)

    recent.aboutToShow.connect(fill_recent)
    fill_recent()


def _edit_actions(
    menu: QtWidgets.QMenu,
    window: QtWidgets.QMainWindow,
    slots: MenuSlots,
    actions: dict[str, QtGui.QAction],
) -> None:
    """Edit > Undo ... Select All: the editor's own keys, for discoverability (WidgetShortcut:
    the editor handles them when it has the focus, and they do nothing elsewhere)."""
    for name, text, key, method in EDIT_ACTIONS:
        act = menu.addAction(text)
        act.setShortcut(QtGui.QKeySequence(key))
        act.setShortcutContext(QtGui.Qt.ShortcutContext.WidgetShortcut)
        run = getattr(slots.editor, method)
        act.triggered.connect(lambda _=False, run=run: run())
        actions[name] = act


def _theme_menu(
    menu: QtWidgets.QMenu,
    window: QtWidgets.QMainWindow,
    slots: MenuSlots,
    actions: dict[str, QtGui.QAction],
) -> None:
    """View > Theme: one checked at a time."""
    theme_menu = menu.addMenu("&Theme")
    group = QtGui.QActionGroup(window)
    for name, text in THEMES:
        act = theme_menu.addAction(text)
        act.setObjectName(f"action_theme_{name}")
        act.setCheckable(True)
        act.setChecked(slots.theme == name)
        act.triggered.connect(lambda _=False, n=name: slots.set_theme(n))
        group.addAction(act)
        actions[f"theme_{name}"] = act


def _dock_toggles(
    menu: QtWidgets.QMenu,
    window: QtWidgets.QMainWindow,
    slots: MenuSlots,
    actions: dict[str, QtGui.QAction],
) -> None:
    for dock in slots.docks:
        toggle = dock.toggleViewAction()
        # a dock shown again joins its tab group behind the tab in front (where the window
        # is narrow, every side dock is in one group): the user asked to see it, so it comes
        # to the front
        toggle.triggered.connect(lambda shown, d=dock: d.raise_() if shown else None)
        name = DOCK_SHORTCUTS.get(dock.objectName())
        if name is not None:
            keys, tip = SHORTCUTS[name]
            toggle.setShortcuts([QtGui.QKeySequence(k) for k in keys])
            toggle.setStatusTip(tip)
            toggle.setToolTip(f"{tip} ({keys[0]})")
            window.addAction(toggle)  # active whichever dock has the focus
            actions[name] = toggle
        menu.addAction(toggle)


def _debug_toolbar(
    menu: QtWidgets.QMenu,
    window: QtWidgets.QMainWindow,
    slots: MenuSlots,
    actions: dict[str, QtGui.QAction],
) -> None:
    """The Debug toolbar (:data:`TOOLBAR`), shown or hidden from ``menu``."""
    toolbar = QtWidgets.QToolBar("Debug", window)
    toolbar.setObjectName("debugToolbar")
    toolbar.setToolButtonStyle(QtGui.Qt.ToolButtonStyle.ToolButtonTextOnly)
    for name in TOOLBAR:
        toolbar.addAction(actions[name])
    window.addToolBar(toolbar)
    menu.addAction(toolbar.toggleViewAction())


def _examples_menu(
    menu: QtWidgets.QMenu,
    window: QtWidgets.QMainWindow,
    slots: MenuSlots,
    actions: dict[str, QtGui.QAction],
) -> None:
    """Examples: one submenu per category, one action per bundled example."""
    submenus: dict[str, QtWidgets.QMenu] = {}
    for example in list_examples():
        submenu = submenus.get(example.category)
        if submenu is None:
            submenu = menu.addMenu(topic_title(example.category))
            submenus[example.category] = submenu
        act = submenu.addAction(example.title)
        act.setStatusTip(example.description or example.title)
        act.setObjectName(f"action_example_{example.stem}")
        act.triggered.connect(lambda _=False, k=example.stem: slots.load_example(k))
        actions[f"example_{example.stem}"] = act


# The entries of a menu that are not one action each: each adds what it makes to ``actions``.
PARTS: dict[
    str,
    Callable[[QtWidgets.QMenu, QtWidgets.QMainWindow, MenuSlots, dict[str, QtGui.QAction]], None],
] = {
    "@recent": _recent_menu,
    "@edit": _edit_actions,
    "@themes": _theme_menu,
    "@docks": _dock_toggles,
    "@toolbar": _debug_toolbar,
    "@examples": _examples_menu,
}


def _help_dialog(
    window: QtWidgets.QWidget, name: str, title: str, body: QtWidgets.QWidget
) -> QtWidgets.QDialog:
    """A Help dialog: ``body`` above a Close button, deleted when closed."""
    dialog = QtWidgets.QDialog(window)
    dialog.setObjectName(name)
    dialog.setWindowTitle(title)
    body.setParent(dialog)
    buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close, dialog)
    buttons.rejected.connect(dialog.close)
    layout = QtWidgets.QVBoxLayout(dialog)
    layout.addWidget(body)
    layout.addWidget(buttons)
    dialog.setAttribute(QtGui.Qt.WidgetAttribute.WA_DeleteOnClose)
    return dialog


def show_shortcuts(window: QtWidgets.QWidget) -> QtWidgets.QDialog:
    label = QtWidgets.QLabel(shortcuts_html())
    label.setWordWrap(True)
    dialog = _help_dialog(window, "shortcutsDialog", "Keyboard shortcuts", label)
    dialog.open()
    return dialog


def language_html() -> str:
    """The expression language's reference (Help > Expression Language), escaped."""
    parts = []
    for title, rows in language_reference():
        cells = "".join(
            f"<tr><td><code>{html.escape(code)}</code></td><td>{html.escape(note)}</td></tr>"
            for code, note in rows
        )
        parts.append(f"<h4>{html.escape(title)}</h4><table cellspacing='4'>{cells}</table>")
    return "".join(parts)


def show_language(window: QtWidgets.QWidget) -> QtWidgets.QDialog:
    """Help > Expression Language: a scrolling reference, non-modal (it stays open beside the
    editor while a program is typed)."""
    text = QtWidgets.QTextBrowser()
    text.setObjectName("languageText")
    text.setHtml(language_html())
    dialog = _help_dialog(window, "languageDialog", "Expression language", text)
    dialog.resize(480, 520)
    dialog.show()
    return dialog


def _about(window: QtWidgets.QWidget) -> None:
    QtWidgets.QMessageBox.about(
        window,
        "About autodiff viewer",
        "<b>autodiff viewer</b><p>Type or load an expression, see its graph, and step "
        "through the forward and backward passes: values appear in generation order, "
        "gradients arrive in the engine's backward order, and fan-out nodes show their "
        "gradients being summed.</p><p>The engine is a DeZero-compatible autodiff on numpy; "
        "the graph is laid out in-house, no Graphviz needed.</p>",
    )
