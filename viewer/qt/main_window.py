"""The main window: builds the panels, their docks and their binders, and owns what is the
window's own: menus and shortcuts, the title, the status bar, the docks, dialogs, settings and
the one run at a time.

Each panel is bound to the Document by its ``*Binding`` (``viewer/qt/<folder>/*_binding.py``);
this module connects only the window's own parts, and hands the menus what each entry runs
(:class:`~viewer.qt.menus.MenuSlots`). Long work runs off the GUI thread: the Document's
(laying out a big graph, running a slow typed program) on the :class:`ThreadRunner` the window
gives it, a user's script in its own process.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model import assets
from viewer.model.document import data_export
from viewer.model.document.document import (
    EXPRESSION_SUFFIXES,
    SCRIPT_SUFFIXES,
    TRACE_SUFFIXES,
    Document,
    ScriptError,
)
from viewer.model.document.examples import list_examples
from viewer.model.expression.program import ExpressionError
from viewer.model.scripts.process import ScriptProcess
from viewer.model.scripts.run import ScriptResult
from viewer.qt.dock_fit import DockFit
from viewer.qt.drawing.icons import media_icon
from viewer.qt.drawing.themes import Theme, apply_theme, theme_named
from viewer.qt.graph.explain_binding import ExplainBinding
from viewer.qt.graph.find_bar import FindBar
from viewer.qt.graph.find_binding import FindBinding
from viewer.qt.graph.image_export import EXPORT_FORMATS, export_graph
from viewer.qt.graph.nonfinite_binding import NonfiniteBinding
from viewer.qt.graph.overview import Overview
from viewer.qt.graph.overview_binding import OverviewBinding
from viewer.qt.graph.scene_binding import SceneBinding, scene_overlays
from viewer.qt.graph.scope_binding import ScopeBinding
from viewer.qt.graph.view import GraphView
from viewer.qt.menus import MenuSlots, Toggle, build_menus
from viewer.qt.panels.gradcheck import GradCheckPanel
from viewer.qt.panels.gradcheck_binding import GradCheckBinding
from viewer.qt.panels.inspector import InspectorPanel
from viewer.qt.panels.leaks import LeakPanel
from viewer.qt.panels.leaks_binding import LeakBinding
from viewer.qt.panels.legend import LegendWidget
from viewer.qt.panels.playback import SPEEDS, PlaybackBar
from viewer.qt.panels.playback_binding import PlaybackBinding
from viewer.qt.panels.plots import PlotPanel
from viewer.qt.panels.plots_binding import PlotBinding
from viewer.qt.panels.script import ScriptPanel
from viewer.qt.panels.script_binding import ScriptBinding
from viewer.qt.program.editor import EditorPanel
from viewer.qt.program.editor_binding import EditorBinding
from viewer.qt.program.examples import ExampleLibrary
from viewer.qt.program.examples_binding import ExampleBinding
from viewer.qt.program.examples_dialog import ExamplesByTopic
from viewer.qt.program.variables import VariablesTable
from viewer.qt.program.variables_binding import VariablesBinding
from viewer.qt.runners.runner import ThreadRunner
from viewer.qt.settings import AppSettings
from viewer.qt.tour import STOPS, Tour, TourStop

__all__ = [
    "DEFAULT_PROGRAM",
    "MainWindow",
    "documents_folder",
    "export_start_folder",
    "start_folder",
]

DEFAULT_PROGRAM = "# The seeds' example\nx = 0.5\ny = square(exp(square(x)))\n"
OPEN_FILTER = (
    "Everything it opens (*.expr *.txt *.json *.py);;Expressions (*.expr *.txt);;"
    "Traces (*.json);;Python scripts (*.py);;All files (*)"
)
EXPORT_FILTER = "PNG image (*.png);;SVG drawing (*.svg);;" + data_export.FILE_FILTER


def start_folder(*candidates: str | os.PathLike[str] | None) -> str:
    """Where a file dialog opens: the first candidate that is an existing folder (the last
    folder used, then the current document's), else the home folder; never the process's
    working directory, which for an app started from a menu means nothing to the user."""
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return str(Path(candidate))
    return str(Path.home())


def documents_folder() -> str:
    """The user's documents folder as the platform names it ('' when it has none)."""
    location = QtCore.QStandardPaths.StandardLocation.DocumentsLocation
    return QtCore.QStandardPaths.writableLocation(location)


def export_start_folder(
    last_export: str | os.PathLike[str] | None,
    documents: str | os.PathLike[str] | None,
    bundled: str | os.PathLike[str],
) -> str:
    """Where File > Export opens: the last folder exported to, else the documents folder, else
    home; never inside ``bundled`` (the app's own files: an example's folder is no place for
    the user's pictures, and may be read-only)."""
    inside = Path(bundled).resolve()

    def usable(folder: str | os.PathLike[str] | None) -> bool:
        if not folder:
            return False
        path = Path(folder).resolve()
        return path != inside and inside not in path.parents

    return start_folder(*(f for f in (last_export, documents) if usable(f)))


class MainWindow(QtWidgets.QMainWindow):
    """Editor, variables, examples, graph, inspector, playback, script output."""

    def __init__(
        self,
        settings: AppSettings | None = None,
        theme: str | None = None,
        restore: bool = True,
    ) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.setWindowTitle("autodiff viewer")
        self.setAcceptDrops(True)
        with contextlib.suppress(ValueError, FileNotFoundError):
            self.setWindowIcon(QtGui.QIcon(str(assets.path("icons/app.svg"))))
        self.settings = settings or AppSettings()
        self.settings.check_all()  # what is not used is named once the window is up
        self.document = Document(palette=theme or self.settings.theme())
        document = self.document
        document.element_budget = self.settings.element_budget()
        document.step_budget = self.settings.step_budget()
        document.script_memory_mb = self.settings.script_memory_mb()
        document.script_max_passes = self.settings.script_max_passes()
        speed = self.settings.speed()
        if speed is not None:
            self.document.playback.set_speed(speed)

        # ---- the panels
        self.graph_view = GraphView(self)
        self.setCentralWidget(self.graph_view)
        self.find_bar = FindBar(self.graph_view)  # both float over the graph
        self.overview = Overview(self.graph_view)
        self.editor = EditorPanel(self)
        self.variables = VariablesTable(self)
        self.examples = ExampleLibrary(self)
        self.inspector = InspectorPanel(self)
        self.playback_bar = PlaybackBar(self)
        self.script_panel = ScriptPanel(self)
        self.leak_panel = LeakPanel(self)
        self.gradcheck_panel = GradCheckPanel(self)
        self.plot_panel = PlotPanel(self)
        self.runner = ThreadRunner(self)
        self.document.runner = self.runner
        self._theme: Theme = theme_named(theme or self.settings.theme())
        self.legend = LegendWidget(self._theme, self)

        self.docks: dict[str, QtWidgets.QDockWidget] = {}
        self._place_docks()
        side_docks = [d for name, d in self.docks.items() if name != "playbackDock"]
        self.dock_fit = DockFit(self, side_docks)
        self._docks_sized = False  # default sizes once shown, unless a saved state is restored
        self._first_shown = False
        self.tour: Tour | None = None
        self.examples_by_topic: ExamplesByTopic | None = None

        self.status_label = QtWidgets.QLabel(self)
        self.status_label.setObjectName("graphSizeLabel")
        self.status_label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        status_bar = self.statusBar()
        status_bar.addPermanentWidget(self.status_label)
        status_bar.setObjectName("statusBar")

        self._make_binders(status_bar)

        self.actions = build_menus(self, self._menu_slots())
        self.leak_panel.set_release_action(self.actions["release_graph"])
        self.gradcheck_panel.set_check_action(self.actions["check_gradients"])
        self._bind_window()
        self.example_binding = ExampleBinding(self.examples, self.load_example, self)
        self.set_theme(self._theme.name)
        if restore:
            self._restore_window()
        self.editor_binding.load_initial(DEFAULT_PROGRAM)
        # After the first programs' own status lines (their runs are queued before this).
        QtCore.QTimer.singleShot(0, self._report_settings_problems)

    def _report_settings_problems(self) -> None:
        message = self.settings.problem_message()
        if message:
            self.statusBar().showMessage(message)

    # ================================================================== construction
    def _make_binders(self, status_bar: QtWidgets.QStatusBar) -> None:
        """One binder per panel: each makes every connection between its panel and the
        Document."""
        doc, docks = self.document, self.docks
        self.scene_binding = SceneBinding(doc, self.graph_view, self.inspector, status_bar, self)
        scene = self.scene_binding
        self.explain_binding = ExplainBinding(
            doc, self.inspector.explain, self.graph_view, scene, self
        )
        self.scope_binding = ScopeBinding(doc, self.graph_view, self)
        self.plot_binding = PlotBinding(doc, self.plot_panel, docks["plotPanel"], status_bar, self)
        self.leak_binding = LeakBinding(
            doc, self.leak_panel, docks["leakPanel"], scene, status_bar, self
        )
        self.gradcheck_binding = GradCheckBinding(
            doc, self.gradcheck_panel, docks["gradCheckPanel"], scene, self
        )
        self.nonfinite_binding = NonfiniteBinding(doc, scene, status_bar, self)
        self.find_binding = FindBinding(doc, self.find_bar, scene, self)
        self.overview_binding = OverviewBinding(doc, self.overview, self.graph_view, scene, self)
        self.editor_binding = EditorBinding(
            doc, self.editor, docks["editorDock"], self.settings, self
        )
        self.variables_binding = VariablesBinding(doc, self.variables, self)
        self.playback_binding = PlaybackBinding(doc.playback, self.playback_bar)
        self.script_binding = ScriptBinding(
            doc, self.script_panel, docks["scriptDock"], status_bar, self
        )

    def _place_docks(self) -> None:
        """Each panel in its dock: the left and right tab groups, playback at the bottom."""
        area = QtCore.Qt.DockWidgetArea
        for name, title, widget, where in (
            ("editorDock", "Program", self.editor, area.LeftDockWidgetArea),
            ("variablesDock", "Variables", self.variables, area.LeftDockWidgetArea),
            ("examplesDock", "Examples", self.examples, area.LeftDockWidgetArea),
            ("legendDock", "Legend", self.legend, area.LeftDockWidgetArea),
            ("inspectorDock", "Inspector", self.inspector, area.RightDockWidgetArea),
            ("scriptDock", "Script", self.script_panel, area.RightDockWidgetArea),
            ("plotPanel", "Plots", self.plot_panel, area.RightDockWidgetArea),
            ("leakPanel", "Leaks", self.leak_panel, area.RightDockWidgetArea),
            ("gradCheckPanel", "Gradients", self.gradcheck_panel, area.RightDockWidgetArea),
            ("playbackDock", "Playback", self.playback_bar, area.BottomDockWidgetArea),
        ):
            self._add_dock(name, title, widget, where)
        self.tabifyDockWidget(self.docks["variablesDock"], self.docks["examplesDock"])
        self.tabifyDockWidget(self.docks["examplesDock"], self.docks["legendDock"])
        self.docks["variablesDock"].raise_()
        self.tabifyDockWidget(self.docks["inspectorDock"], self.docks["scriptDock"])
        self.docks["inspectorDock"].raise_()
        # the debugging panels share a second tab group, below the inspector's
        for name in ("leakPanel", "gradCheckPanel"):
            self.tabifyDockWidget(self.docks["plotPanel"], self.docks[name])
        self.docks["plotPanel"].raise_()
        self.docks["playbackDock"].setFeatures(
            QtWidgets.QDockWidget.DockWidgetFeature.DockWidgetMovable
        )

    def _add_dock(self, name: str, title: str, widget, area) -> QtWidgets.QDockWidget:
        dock = QtWidgets.QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        self.docks[name] = dock
        return dock

    def _menu_slots(self) -> MenuSlots:
        """What each menu entry runs; the follow and overview switches applied as saved."""
        doc, view, playback = self.document, self.graph_view, self.document.playback
        settings = self.settings
        view.set_follow(settings.follow_active_step())
        self.overview.set_shown(settings.overview_shown())

        def follow(on: bool) -> None:
            view.set_follow(on)
            settings.set_follow_active_step(on)

        self.explain_binding.set_edge_labels(settings.edge_gradients_shown())

        def label_edges(on: bool) -> None:
            self.explain_binding.set_edge_labels(on)
            settings.set_edge_gradients_shown(on)

        def show_overview(on: bool) -> None:
            self.overview.set_shown(on)
            settings.set_overview_shown(on)

        commands: dict[str, Callable[[], object]] = {
            "open": self.open_dialog,
            "save_trace": self.save_trace_dialog,
            "export": self.export_dialog,
            "quit": self.close,
            "run": self.editor_binding.run,
            "cancel_run": doc.cancel_run,
            "reset_leaves": doc.reset_leaf_values,
            "find": self.find_binding.open,
            "fit": self.scene_binding.fit,
            "zoom_in": lambda: view.zoom_by(1.25),
            "zoom_out": lambda: view.zoom_by(0.8),
            "play": playback.toggle_playing,
            "step_forward": playback.step_forward,
            "step_back": playback.step_back,
            "to_start": playback.to_start,
            "to_end": playback.to_end,
            "next_phase": self.playback_bar.jump_next_phase,
            "first_nonfinite": self.nonfinite_binding.first_nonfinite,
            "next_nonfinite": self.nonfinite_binding.next_nonfinite,
            "slower": lambda: self.change_speed(-1),
            "faster": lambda: self.change_speed(+1),
            "check_gradients": self.gradcheck_binding.check_gradients,
            "release_graph": self.leak_binding.release_graph,
            "tour": self.show_tour,
            "examples_by_topic": self.show_examples_by_topic,
        }
        return MenuSlots(
            commands=commands,
            toggles={
                "follow_step": Toggle(settings.follow_active_step(), follow),
                "overview": Toggle(settings.overview_shown(), show_overview),
                "edge_gradients": Toggle(settings.edge_gradients_shown(), label_edges),
            },
            editor=self.editor.editor,
            recent_files=settings.recent_files,
            clear_recent_files=settings.clear_recent_files,
            open_path=self.open_path,
            theme=self._theme.name,
            set_theme=self.set_theme,
            load_example=self.load_example,
            docks=tuple(self.docks.values()),
        )

    def _bind_window(self) -> None:
        """The window's own parts: the status bar, the title, where an error is shown, the
        docks raised, the saved speed, and Open and Run while something runs."""
        doc = self.document
        doc.status_changed.connect(self._on_status)
        doc.error_raised.connect(self._on_error)
        doc.graph_loaded.connect(self._on_graph_loaded)
        doc.scene_changed.connect(self._on_graph_loaded)  # a box opened: new counts
        doc.script_finished.connect(self._on_script_finished)
        doc.playback.speed_changed.connect(self.settings.set_speed)
        self.graph_view.node_clicked.connect(self._on_node_clicked)
        doc.program_started.connect(self._on_program_started)
        doc.program_finished.connect(self._on_program_finished)
        self.script_binding.shown.connect(self._on_script_shown)

    def _restore_window(self) -> None:
        """The saved size and docks; one Qt cannot read is named in the status bar and the
        default takes its place."""
        geometry = self.settings.geometry()
        if geometry is None or not self.restoreGeometry(geometry):
            if geometry is not None:
                self.settings.refuse("window/geometry", "not a window geometry Qt can read")
            self.resize(1280, 800)
        state = self.settings.window_state()
        if state is not None:
            self._docks_sized = self.restoreState(state)
            if not self._docks_sized:
                self.settings.refuse("window/state", "not a dock layout Qt can read")

    def _size_docks(self) -> None:
        """Dock sizes once shown (before the first show Qt ignores them): the defaults'
        heights unless a saved state was restored, and the widths :class:`DockFit` keeps."""
        if not self._docks_sized:
            vertical = QtCore.Qt.Orientation.Vertical
            left, right = self.docks["editorDock"], self.docks["inspectorDock"]
            self.resizeDocks([left, self.docks["variablesDock"]], [260, 300], vertical)
            self.resizeDocks([right, self.docks["plotPanel"]], [45, 55], vertical)
        saved = self.settings.dock_widths() if self._docks_sized else None
        self.dock_fit.start(keep_current=self._docks_sized, preferred=saved)
        self._docks_sized = True
        if not self.settings.tour_seen():
            self.show_tour()

    def showEvent(self, event: QtGui.QShowEvent) -> None:
        super().showEvent(event)
        if not self._first_shown:
            self._first_shown = True
            QtCore.QTimer.singleShot(0, self._size_docks)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self.dock_fit.fit()  # the graph keeps its half of the width

    # ================================================================== help
    def show_tour(self) -> Tour:
        """Help > Take the Tour, and the first start: callouts over the window, never modal;
        finished or dismissed, it is not shown at the start again."""
        if self.tour is None:
            self.tour = Tour(self, self._tour_stops())
            self.tour.finished.connect(lambda: self.settings.set_tour_seen(True))
        self.tour.start()
        return self.tour

    def _tour_stops(self) -> list[TourStop]:
        """:data:`~viewer.qt.tour.STOPS`, each pointing at its dock (raised, should it be
        behind a tab) or at the graph."""

        def target(where: str) -> Callable[[], QtWidgets.QWidget]:
            if where == "graph":
                return lambda: self.graph_view

            def raised() -> QtWidgets.QWidget:
                self.raise_dock(where)
                return self.docks[where]

            return raised

        return [TourStop(title, text, target(where)) for title, text, where in STOPS]

    def show_examples_by_topic(self) -> ExamplesByTopic:
        """Help > Examples by Topic: non-modal; a title clicked there opens that example."""
        if self.examples_by_topic is None:
            self.examples_by_topic = ExamplesByTopic(list_examples(), self)
            self.examples_by_topic.example_chosen.connect(self.load_example)
        self.examples_by_topic.show()
        self.examples_by_topic.raise_()
        return self.examples_by_topic

    # ================================================================== user actions
    def load_example(self, key: str) -> bool:
        result = self.document.load_example(key, self.editor_binding.may_replace)
        if isinstance(result, ScriptProcess):
            return self.start_script(result, confirm=False)
        self.editor_binding.sync(result)
        return bool(result)

    def open_path(self, path: str | Path, confirm_scripts: bool = True) -> bool:
        """Open an expression, a trace or a script (after confirmation)."""
        path = Path(path)
        if not path.exists():
            self._report(f"Cannot open {path}: no such file")
            self.settings.remove_recent_file(str(path.resolve()))
            return False
        result = self.document.load_path(path, self.editor_binding.may_replace)
        if isinstance(result, ScriptProcess):
            self.settings.add_recent_file(path)
            self.settings.set_last_directory(path.parent)
            return self.start_script(result, confirm=confirm_scripts)
        if result:
            self.settings.add_recent_file(path)
            self.settings.set_last_directory(path.parent)
        if path.suffix.lower() in EXPRESSION_SUFFIXES:
            self.editor_binding.sync(result)
        return bool(result)

    def _document_folder(self) -> Path | None:
        path = self.document.path
        return path.parent if path is not None else None

    def open_folder(self) -> str:
        """Where File > Open starts: the last folder opened from, else the document's."""
        return start_folder(self.settings.last_directory(), self._document_folder())

    def export_folder(self) -> str:
        """Where File > Export starts: the last folder exported to, else the documents folder
        (:func:`export_start_folder`)."""
        last_export = self.settings.last_export_directory()
        return export_start_folder(last_export, documents_folder(), assets.root())

    def open_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Open", self.open_folder(), OPEN_FILTER
        )
        if path:
            self.settings.set_last_directory(Path(path).parent)
            self.open_path(path)

    def save_trace_dialog(self) -> None:
        if self.document.trace is None:
            self.statusBar().showMessage("There is no trace to save")
            return
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self, "Save the trace", "trace.json", "Trace (*.json)"
        )
        if path:
            if not path.lower().endswith(".json"):
                path += ".json"
            self.export_path(path)  # a script's graph saves the whole recording

    def export_dialog(self) -> None:
        if self.document.scene is None:
            self._report("There is no graph to export")
            return
        stem = self.document.path.stem if self.document.path is not None else "graph"
        start = str(Path(self.export_folder()) / f"{stem}.png")
        path, chosen = QtWidgets.QFileDialog.getSaveFileName(
            self, "Export the view, the graph or the trace", start, EXPORT_FILTER
        )
        if path:
            self.settings.set_last_export_directory(Path(path).parent)
            known = (*EXPORT_FORMATS, *data_export.DATA_FORMATS)
            if Path(path).suffix.lower() not in known:
                # no suffix typed: the one of the chosen filter, "PNG image (*.png)" -> .png
                path += chosen.split("(*", 1)[1].split()[0].rstrip(")") if "(*" in chosen else ""
            self.export_path(path)

    def export_path(self, path: str | Path) -> bool:
        """File > Export: the view as PNG or SVG, the graph as DOT or GraphML, the trace as
        JSON (by the suffix)."""
        if Path(path).suffix.lower() in EXPORT_FORMATS:
            return self.export_view(path)
        return self.document.export_data(path)

    def raise_dock(self, name: str) -> None:
        dock = self.docks[name]
        dock.show()
        dock.raise_()

    def export_view(self, path: str | Path) -> bool:
        scene = self.document.scene
        if scene is None:
            self._report("There is no graph to export")
            return False
        try:
            out = export_graph(
                path,
                scene.geometry,
                self.document.frame(),
                self._theme,
                caption=self._caption(),
                selected=self.scene_binding.selected_index(),
                overlays=scene_overlays(scene),
            )
        except (OSError, ValueError) as exc:
            self._report(f"Export failed: {exc}")
            return False
        self.statusBar().showMessage(f"Exported the graph to {out}")
        return True

    def _caption(self) -> str:
        doc = self.document
        playback = doc.playback
        step = playback.current_step
        where = (
            "before any step"
            if step is None
            else f"step {playback.index + 1}/{playback.n_steps} · {step.phase} · {step.op}"
        )
        return f"{doc.title or 'graph'} — {where}"

    def confirm_script(self, path: Path) -> bool:
        """Ask before running a user's script (tests replace this)."""
        box = self.script_confirmation(path)
        box.exec()
        clicked = box.clickedButton()
        role = box.buttonRole(clicked) if clicked is not None else None
        return role == QtWidgets.QMessageBox.ButtonRole.AcceptRole

    def script_confirmation(self, path: Path) -> QtWidgets.QMessageBox:
        """The question asked before a script runs: buttons that say what they do, "Don't
        Run" the default (Return does not run someone's code by accident), plain text."""
        box = QtWidgets.QMessageBox(self)
        box.setObjectName("scriptConfirmation")
        box.setIcon(QtWidgets.QMessageBox.Icon.Question)
        box.setWindowTitle("Run this script?")
        box.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        box.setText(
            f"{path.name} is Python code: opening it runs it, in a process of its own but with "
            f"your rights, while recording the graphs it builds.\n\n{path}"
        )
        run = box.addButton("Run Script", QtWidgets.QMessageBox.ButtonRole.AcceptRole)
        skip = box.addButton("Don't Run", QtWidgets.QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(skip)
        box.setEscapeButton(skip)
        box.setProperty("runButton", run)
        return box

    def start_script(self, run: ScriptProcess, confirm: bool = True) -> bool:
        """Run ``run`` on its own thread; the window stays usable, Cancel stops it."""
        if confirm and not self.confirm_script(run.path):
            self.document.script_run = None
            self.statusBar().showMessage(f"Did not run {run.path.name}")
            return False
        self.script_binding.attach(run)
        self.statusBar().showMessage(f"Running {run.path.name}…")
        self._set_script_running(True)
        run.start()
        return True

    def _on_program_started(self) -> None:
        """A typed program that may take a while runs on a worker: Open and Run wait."""
        self._set_script_running(True)

    def _on_program_finished(self, _shown: bool) -> None:
        self._set_script_running(False)

    def _set_script_running(self, running: bool) -> None:
        """One run at a time: Open and Run wait for the script (Cancel stops it)."""
        for name in ("open", "run"):
            act = self.actions.get(name)
            if act is not None:
                act.setEnabled(not running)
        cancel = self.actions.get("cancel_run")
        if cancel is not None:  # Esc stops it; otherwise Esc stays the focused widget's
            cancel.setEnabled(running)
        self.editor.set_busy(running)

    def _on_script_finished(self, _result: ScriptResult) -> None:
        self._set_script_running(False)

    def _on_script_shown(self, result: ScriptResult, ok: bool) -> None:
        survivors = getattr(result.leak_report, "survivors", None)
        if ok and survivors:
            self.statusBar().showMessage(
                f"{result.path.name}: {len(survivors)} object(s) survived the end of the script "
                "(red leak badges; see the Leaks panel)"
            )
            self.raise_dock("leakPanel")

    def set_theme(self, name: str) -> None:
        self._theme = theme_named(name)
        app = QtWidgets.QApplication.instance()
        if isinstance(app, QtWidgets.QApplication):
            apply_theme(app, self._theme)
        self.graph_view.set_theme(self._theme)
        self.overview.set_theme(self._theme)
        self.playback_bar.set_icon_colour(self._theme.text)
        self.editor.run_button.setIcon(media_icon("play", self._theme.text))
        self.editor.set_error_colour(self._theme.error)
        self.editor.highlighter.set_dark(self._theme.name == "dark")
        self.script_panel.set_error_colour(self._theme.error)
        self.plot_panel.set_theme(self._theme)
        self.inspector.set_theme(self._theme)
        self.legend.set_theme(self._theme)
        self.document.set_palette(self._theme.name)
        self.settings.set_theme(self._theme.name)
        action = self.actions.get(f"theme_{self._theme.name}") if hasattr(self, "actions") else None
        if action is not None:
            action.setChecked(True)
        self.scene_binding.refresh()

    @property
    def theme(self) -> Theme:
        return self._theme

    def change_speed(self, direction: int) -> None:
        playback = self.document.playback
        faster = [s for s in SPEEDS if s > playback.speed]
        slower = [s for s in SPEEDS if s < playback.speed]
        if direction > 0 and faster:
            playback.set_speed(faster[0])
        elif direction < 0 and slower:
            playback.set_speed(slower[-1])
        self.statusBar().showMessage(f"Speed: {playback.speed:g} steps/s")

    # ================================================================== model -> views
    def _on_status(self, text: str) -> None:
        self.statusBar().showMessage(text)

    def _on_error(self, error: BaseException) -> None:
        """Where an error is shown: a leaf's cell, the editor, the script panel, else a box."""
        if self.variables_binding.editing is not None:
            return  # shown on the variables table's cell
        if isinstance(error, ExpressionError):
            self.editor_binding.show_error(error)
        elif isinstance(error, ScriptError):
            self.script_binding.show_error(error.traceback or error.message)
        else:
            self._report(str(error))

    def _on_node_clicked(self, index: int) -> None:
        # The inspector answers a click: bring it in front of the tabs it shares its place
        # with (the Script tab is raised while a script runs), unless the user closed it.
        dock = self.docks["inspectorDock"]
        if index >= 0 and not dock.isHidden():
            dock.raise_()

    def _on_graph_loaded(self, document: Document) -> None:
        scene = document.scene
        if scene is None:
            return
        self.status_label.setText(
            f"{scene.n_nodes} nodes · {scene.n_edges} edges · {scene.n_steps} steps"
        )
        self.setWindowTitle(f"{document.title} — autodiff viewer")

    def _report(self, message: str) -> None:
        """A problem that is not in the editor's text: status bar and a non-blocking box."""
        self.statusBar().showMessage(message)
        box = QtWidgets.QMessageBox(
            QtWidgets.QMessageBox.Icon.Warning, "autodiff viewer", message, parent=self
        )
        box.setObjectName("errorBox")
        box.setTextFormat(QtCore.Qt.TextFormat.PlainText)  # messages quote files and names
        box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    # ================================================================== window events
    def event(self, event: QtCore.QEvent) -> bool:
        # Hovering a menu entry without a status tip sends an empty one, which would wipe the
        # status line (what an export, a theme switch or an error just said) for nothing.
        if isinstance(event, QtGui.QStatusTipEvent) and not event.tip():
            return True
        return super().event(event)

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:
        self.save_settings()
        self.document.playback.pause()
        if self.document.script_run is not None:
            self.document.cancel_script()
        self.document.cancel_expression()
        self.document.cancel_layout()
        super().closeEvent(event)

    def save_settings(self) -> None:
        self.settings.set_geometry(self.saveGeometry())
        with self.dock_fit.unfolded():  # the arrangement the user made, not a narrow one's
            self.settings.set_window_state(self.saveState())
        if self.dock_fit.preferred is not None:  # their widths, which a narrow window squeezed
            self.settings.set_dock_widths(self.dock_fit.preferred)
        self.settings.set_editor_text(self.editor.program_text)
        self.settings.set_theme(self._theme.name)
        self.settings.sync()

    def dragEnterEvent(self, event: QtGui.QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QtGui.QDropEvent) -> None:
        for url in event.mimeData().urls():
            if url.isLocalFile():
                suffix = Path(url.toLocalFile()).suffix.lower()
                if suffix in EXPRESSION_SUFFIXES + TRACE_SUFFIXES + SCRIPT_SUFFIXES:
                    self.open_path(url.toLocalFile())
                    break
