"""Menus, actions and keyboard shortcuts of the main window.

:data:`SHORTCUTS` is the one table of key bindings: the actions below take their keys from it
and Help > Keyboard shortcuts (and docs/viewer.md) show it.

Playback keys (arrows, Space, Home, End, letters) are window shortcuts: a text field that has
the focus keeps them for editing, because Qt lets a focused editor claim a key before a
shortcut fires.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6 import QtGui, QtWidgets

from viewer.model.document.examples import list_examples
from viewer.qt.drawing.plain_text import tooltip

if TYPE_CHECKING:
    from viewer.qt.main_window import MainWindow

__all__ = ["SHORTCUTS", "build_menus", "shortcuts_html"]

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
}


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


def build_menus(window: MainWindow) -> dict[str, QtGui.QAction]:
    """Create the menu bar and return the actions by name."""
    actions: dict[str, QtGui.QAction] = {}
    doc = window.document
    playback = doc.playback
    bar = window.menuBar()

    def action(name: str, text: str, slot, menu: QtWidgets.QMenu) -> QtGui.QAction:
        act = QtGui.QAction(text, window)
        act.setObjectName(f"action_{name}")
        if name in SHORTCUTS:
            keys, tip = SHORTCUTS[name]
            act.setShortcuts([QtGui.QKeySequence(k) for k in keys])
            act.setStatusTip(tip)
            act.setToolTip(f"{tip} ({keys[0]})")
        act.triggered.connect(lambda _checked=False: slot())
        window.addAction(act)  # active whichever dock has the focus
        menu.addAction(act)
        actions[name] = act
        return act

    # ---------------------------------------------------------------- File
    file_menu = bar.addMenu("&File")
    action("open", "&Open…", window.open_dialog, file_menu)
    recent = file_menu.addMenu("Open &Recent")
    recent.setObjectName("recentMenu")

    def fill_recent() -> None:
        recent.clear()
        files = window.settings.recent_files()
        for path in files:
            act = recent.addAction(Path(path).name)
            act.setToolTip(tooltip(path))
            act.setStatusTip(path)
            act.triggered.connect(lambda _=False, p=path: window.open_path(p))
        if not files:
            recent.addAction("(none)").setEnabled(False)
        recent.addSeparator()
        recent.addAction("Clear the list", window.settings.clear_recent_files)

    recent.aboutToShow.connect(fill_recent)
    fill_recent()
    file_menu.addSeparator()
    action("save_trace", "Save the Trace as JSON…", lambda: _save_trace(window), file_menu)
    action("export", "&Export…", window.export_dialog, file_menu)
    file_menu.addSeparator()
    quit_action = action("quit", "&Quit", window.close, file_menu)
    quit_action.setMenuRole(QtGui.QAction.MenuRole.QuitRole)

    # ---------------------------------------------------------------- Edit
    edit_menu = bar.addMenu("&Edit")
    editor = window.editor.editor
    for name, text, key, slot in (
        ("undo", "&Undo", QtGui.QKeySequence.StandardKey.Undo, editor.undo),
        ("redo", "&Redo", QtGui.QKeySequence.StandardKey.Redo, editor.redo),
        ("cut", "Cu&t", QtGui.QKeySequence.StandardKey.Cut, editor.cut),
        ("copy", "&Copy", QtGui.QKeySequence.StandardKey.Copy, editor.copy),
        ("paste", "&Paste", QtGui.QKeySequence.StandardKey.Paste, editor.paste),
        ("select_all", "Select &All", QtGui.QKeySequence.StandardKey.SelectAll, editor.selectAll),
    ):
        # Shown for discoverability; the editor handles these keys itself when focused.
        act = edit_menu.addAction(text)
        act.setShortcut(QtGui.QKeySequence(key))
        act.setShortcutContext(QtGui.Qt.ShortcutContext.WidgetShortcut)
        act.triggered.connect(lambda _=False, s=slot: s())
        actions[name] = act
    edit_menu.addSeparator()
    action("run", "&Run the Program", window.run_program, edit_menu)
    action("cancel_run", "&Cancel the Running Script", doc.cancel_run, edit_menu).setEnabled(False)
    action("reset_leaves", "Reset the Leaf Values", doc.reset_leaf_values, edit_menu)
    edit_menu.addSeparator()
    action("find", "&Find a Node…", window.find_binding.open, edit_menu)

    # ---------------------------------------------------------------- View
    view_menu = bar.addMenu("&View")
    action("fit", "&Fit the Graph", window.graph_view.fit, view_menu)
    action("zoom_in", "Zoom &In", lambda: window.graph_view.zoom_by(1.25), view_menu)
    action("zoom_out", "Zoom &Out", lambda: window.graph_view.zoom_by(0.8), view_menu)
    actions["follow_step"] = _follow_action(window, view_menu)
    actions["overview"] = _overview_action(window, view_menu)
    view_menu.addSeparator()
    theme_menu = view_menu.addMenu("&Theme")
    group = QtGui.QActionGroup(window)
    for name, text in (("light", "&Light"), ("dark", "&Dark")):
        act = theme_menu.addAction(text)
        act.setObjectName(f"action_theme_{name}")
        act.setCheckable(True)
        act.setChecked(window.theme.name == name)
        act.triggered.connect(lambda _=False, n=name: window.set_theme(n))
        group.addAction(act)
        actions[f"theme_{name}"] = act
    view_menu.addSeparator()
    for dock in window.docks.values():
        view_menu.addAction(dock.toggleViewAction())

    # ---------------------------------------------------------------- Playback
    play_menu = bar.addMenu("&Playback")
    action("play", "&Play / Pause", playback.toggle_playing, play_menu)
    action("step_forward", "Step &Forward", playback.step_forward, play_menu)
    action("step_back", "Step &Back", playback.step_back, play_menu)
    action("to_start", "Jump to the &Start", playback.to_start, play_menu)
    action("to_end", "Jump to the &End", playback.to_end, play_menu)
    action("next_phase", "Jump to the &Next Phase", window.playback_bar.jump_next_phase, play_menu)
    debug = window.debug
    action("first_nonfinite", "Jump to First &NaN/Inf", debug.first_nonfinite, play_menu)
    action("next_nonfinite", "Jump to Next NaN/Inf", debug.next_nonfinite, play_menu)
    play_menu.addSeparator()
    action("slower", "&Slower", lambda: window.change_speed(-1), play_menu)
    action("faster", "F&aster", lambda: window.change_speed(+1), play_menu)

    # ---------------------------------------------------------------- Debug
    debug_menu = bar.addMenu("&Debug")
    debug_menu.setObjectName("debugMenu")
    action("check_gradients", "Check &Gradients", debug.check_gradients, debug_menu)
    action("release_graph", "&Release Graph", debug.release_graph, debug_menu)
    debug_menu.addAction(actions["first_nonfinite"])
    debug_menu.addAction(actions["next_nonfinite"])
    toolbar = QtWidgets.QToolBar("Debug", window)
    toolbar.setObjectName("debugToolbar")
    toolbar.setToolButtonStyle(QtGui.Qt.ToolButtonStyle.ToolButtonTextOnly)
    for name in ("check_gradients", "release_graph", "first_nonfinite", "export"):
        toolbar.addAction(actions[name])
    window.addToolBar(toolbar)
    view_menu.addAction(toolbar.toggleViewAction())

    # ---------------------------------------------------------------- Examples
    examples_menu = bar.addMenu("E&xamples")
    examples_menu.setObjectName("examplesMenu")
    submenus: dict[str, QtWidgets.QMenu] = {}
    for example in list_examples():
        menu = submenus.get(example.category)
        if menu is None:
            menu = examples_menu.addMenu(example.category.replace("-", " ").capitalize())
            submenus[example.category] = menu
        act = menu.addAction(example.title)
        act.setStatusTip(example.description or example.title)
        act.setObjectName(f"action_example_{example.stem}")
        act.triggered.connect(lambda _=False, k=example.stem: window.load_example(k))
        actions[f"example_{example.stem}"] = act

    # ---------------------------------------------------------------- Help
    help_menu = bar.addMenu("&Help")
    action("shortcuts", "&Keyboard Shortcuts", lambda: show_shortcuts(window), help_menu)
    about = action("about", "&About", lambda: _about(window), help_menu)
    about.setMenuRole(QtGui.QAction.MenuRole.AboutRole)
    return actions


def _follow_action(window: MainWindow, menu: QtWidgets.QMenu) -> QtGui.QAction:
    """View > Follow the Active Step: checkable, kept in the settings, applied to the view."""
    act = QtGui.QAction("Follow the &Active Step", window)
    act.setObjectName("action_follow_step")
    act.setCheckable(True)
    tip = "Pan the graph to keep the current step's Function and nodes in view"
    act.setStatusTip(tip)
    act.setToolTip(tip)
    act.setChecked(window.settings.follow_active_step())
    window.graph_view.set_follow(act.isChecked())

    def toggled(on: bool) -> None:
        window.graph_view.set_follow(on)
        window.settings.set_follow_active_step(on)

    act.toggled.connect(toggled)
    window.addAction(act)
    menu.addAction(act)
    return act


def _overview_action(window: MainWindow, menu: QtWidgets.QMenu) -> QtGui.QAction:
    """View > Overview: checkable, kept in the settings, shows or hides the minimap."""
    act = QtGui.QAction("&Overview", window)
    act.setObjectName("action_overview")
    act.setCheckable(True)
    keys, tip = SHORTCUTS["overview"]
    act.setShortcuts([QtGui.QKeySequence(k) for k in keys])
    act.setStatusTip(tip)
    act.setToolTip(f"{tip} ({keys[0]})")
    act.setChecked(window.settings.overview_shown())
    window.overview.set_shown(act.isChecked())

    def toggled(on: bool) -> None:
        window.overview.set_shown(on)
        window.settings.set_overview_shown(on)

    act.toggled.connect(toggled)
    window.addAction(act)
    menu.addAction(act)
    return act


def show_shortcuts(window: QtWidgets.QWidget) -> QtWidgets.QDialog:
    dialog = QtWidgets.QDialog(window)
    dialog.setObjectName("shortcutsDialog")
    dialog.setWindowTitle("Keyboard shortcuts")
    label = QtWidgets.QLabel(shortcuts_html(), dialog)
    label.setWordWrap(True)
    buttons = QtWidgets.QDialogButtonBox(QtWidgets.QDialogButtonBox.StandardButton.Close, dialog)
    buttons.rejected.connect(dialog.close)
    layout = QtWidgets.QVBoxLayout(dialog)
    layout.addWidget(label)
    layout.addWidget(buttons)
    dialog.setAttribute(QtGui.Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
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


def _save_trace(window: MainWindow) -> None:
    if window.document.trace is None:
        window.statusBar().showMessage("There is no trace to save")
        return
    path, _ = QtWidgets.QFileDialog.getSaveFileName(
        window, "Save the trace", "trace.json", "Trace (*.json)"
    )
    if path:
        if not path.lower().endswith(".json"):
            path += ".json"
        window.export_path(path)  # a script's graph saves the whole recording
