"""The main window: builds the panels, their docks and their binders, and owns what is the
window's own: the menus, the title, the status bar, where an error is shown, opening files and
starting scripts, settings. Its dialogs are :mod:`viewer.qt.dialogs`'s, where its docks go
:mod:`viewer.qt.window_docks`'s, one run at a time :class:`~viewer.qt.run_gate.RunGate`'s.

Each panel is bound to the Document by its ``*Binding`` (``viewer/qt/<folder>/*_binding.py``);
this module connects only the window's own parts, and hands the menus what each entry runs
(:class:`~viewer.qt.menus.MenuSlots`). Long work runs off the GUI thread: the Document's
(laying out a big graph, running a slow typed program) on the :class:`ThreadRunner` the window
gives it, a user's script in its own process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from viewer.model import assets
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
from viewer.qt import dialogs
from viewer.qt.checks.gradcheck import GradCheckPanel
from viewer.qt.checks.gradcheck_binding import GradCheckBinding
from viewer.qt.checks.problems import ProblemsPanel
from viewer.qt.checks.problems_binding import ProblemsBinding
from viewer.qt.dock_fit import DockFit
from viewer.qt.drawing.icons import media_icon
from viewer.qt.drawing.plain_text import MAX_TOOLTIP, tooltip
from viewer.qt.drawing.themes import Theme, apply_theme, theme_named
from viewer.qt.graph import view_export
from viewer.qt.graph.explain_binding import ExplainBinding
from viewer.qt.graph.find_bar import FindBar
from viewer.qt.graph.find_binding import FindBinding
from viewer.qt.graph.image_export import EXPORT_FORMATS
from viewer.qt.graph.nonfinite_binding import NonfiniteBinding
from viewer.qt.graph.overview import Overview
from viewer.qt.graph.overview_binding import OverviewBinding
from viewer.qt.graph.scene_binding import SceneBinding
from viewer.qt.graph.scope_binding import ScopeBinding
from viewer.qt.graph.view import GraphView
from viewer.qt.menus import MenuSlots, Toggle, build_menus
from viewer.qt.panels.inspector import InspectorPanel
from viewer.qt.panels.leaks import LeakPanel
from viewer.qt.panels.leaks_binding import LeakBinding
from viewer.qt.panels.legend import LegendWidget
from viewer.qt.panels.playback import PlaybackBar, next_speed
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
from viewer.qt.run_gate import RunGate
from viewer.qt.runners.runner import ThreadRunner
from viewer.qt.settings import AppSettings
from viewer.qt.tour import Tour, tour_stops
from viewer.qt.window_docks import place_docks, restore_window, save_window, size_docks

__all__ = [
    "DEFAULT_PROGRAM",
    "MainWindow",
]

DEFAULT_PROGRAM = "# The seeds' example\nx = 0.5\ny = square(exp(square(x)))\n"


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
        document.problem_limits = self.settings.problem_thresholds()
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
        self.problems_panel = ProblemsPanel(self)
        self.plot_panel = PlotPanel(self)
        self.runner = ThreadRunner(self)
        self.document.runner = self.runner
        self._theme: Theme = theme_named(theme or self.settings.theme())
        self.legend = LegendWidget(self._theme, self)

        self.docks = place_docks(
            self,
            {
                "editorDock": self.editor,
                "variablesDock": self.variables,
                "examplesDock": self.examples,
                "legendDock": self.legend,
                "inspectorDock": self.inspector,
                "scriptDock": self.script_panel,
                "plotPanel": self.plot_panel,
                "leakPanel": self.leak_panel,
                "gradCheckPanel": self.gradcheck_panel,
                "problemsDock": self.problems_panel,
                "playbackDock": self.playback_bar,
            },
        )
        side_docks = [d for name, d in self.docks.items() if name != "playbackDock"]
        self.dock_fit = DockFit(self, side_docks)
        self._docks_sized = False  # default sizes once shown, unless a saved state is restored
        self._laid_out = False  # the docks sized once shown (see laid_out)
        self._first_shown = False
        self._asked_size: QtCore.QSize | None = None
        self.tour: Tour | None = None
        self.examples_by_topic: ExamplesByTopic | None = None

        self.status_label = QtWidgets.QLabel(self)
        self.status_label.setObjectName("graphSizeLabel")
        self.status_label.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        # a gap before the counts: a long message is cut there, not run into them
        self.status_label.setContentsMargins(12, 0, 0, 0)
        status_bar = self.statusBar()
        status_bar.addPermanentWidget(self.status_label)
        status_bar.setObjectName("statusBar")
        # a message longer than the bar is cut at its right end: the whole of it on hover
        status_bar.messageChanged.connect(
            lambda message: status_bar.setToolTip(tooltip(message, MAX_TOOLTIP))
        )

        self._make_binders(status_bar)

        self.actions = build_menus(self, self._menu_slots())
        self.leak_panel.set_release_action(self.actions["release_graph"])
        self.gradcheck_panel.set_check_action(self.actions["check_gradients"])
        self.run_gate = RunGate(self.document, self.actions, self.editor)
        self._bind_window()
        self.example_binding = ExampleBinding(self.examples, self.load_example, self)
        self.set_theme(self._theme.name)
        if restore:
            self._docks_sized = restore_window(self, self.settings)
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
        self.problems_binding = ProblemsBinding(
            doc, self.problems_panel, docks["problemsDock"], scene, self
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

    def _menu_slots(self) -> MenuSlots:
        """What each menu entry runs; the follow and overview switches applied as saved."""
        doc, view, playback = self.document, self.graph_view, self.document.playback
        settings = self.settings
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
                "follow_step": Toggle.saved(
                    settings.follow_active_step(), view.set_follow, settings.set_follow_active_step
                ),
                "overview": Toggle.saved(
                    settings.overview_shown(), self.overview.set_shown, settings.set_overview_shown
                ),
                "edge_gradients": Toggle.saved(
                    settings.edge_gradients_shown(),
                    self.explain_binding.set_edge_labels,
                    settings.set_edge_gradients_shown,
                ),
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
        docks raised and the saved speed."""
        doc = self.document
        doc.status_changed.connect(self._on_status)
        doc.error_raised.connect(self._on_error)
        doc.graph_loaded.connect(self._on_graph_loaded)
        doc.scene_changed.connect(self._on_graph_loaded)  # a box opened: new counts
        doc.playback.speed_changed.connect(self.settings.set_speed)
        self.graph_view.node_clicked.connect(self._on_node_clicked)
        self.script_binding.shown.connect(self.leak_binding.script_shown)

    def _size_docks(self) -> None:
        """Once shown: the docks' sizes (:func:`size_docks`), then the tour on a first start."""
        size_docks(self, self.docks, self.dock_fit, self.settings, restored=self._docks_sized)
        # Shown unfolded, the right column's panels made the window taller than asked (800 x
        # 560 became 616 high); folded, they fit in the size asked for.
        asked = self._asked_size
        if asked is not None and self.height() > asked.height():
            self.resize(asked.expandedTo(self.minimumSizeHint()))
        self._docks_sized = True
        self._laid_out = True
        if not self.settings.tour_seen():
            self.show_tour()

    @property
    def laid_out(self) -> bool:
        """Whether the docks have had their sizes since the window was first shown (one
        event-loop turn after the show; a loaded machine takes longer): before, the graph view
        has a passing width."""
        return self._laid_out

    def showEvent(self, event: QtGui.QShowEvent) -> None:
        super().showEvent(event)
        if not self._first_shown:
            self._first_shown = True
            self._asked_size = self.size()  # before the layout's minimum grows it
            QtCore.QTimer.singleShot(0, self._size_docks)

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:
        super().resizeEvent(event)
        self.dock_fit.fit()  # the graph keeps its half of the width

    # ================================================================== help
    def show_tour(self) -> Tour:
        """Help > Take the Tour, and the first start: callouts over the window, never modal;
        finished or dismissed, it is not shown at the start again."""
        if self.tour is None:
            self.tour = Tour(self, tour_stops(self.graph_view, self.raise_dock))
            self.tour.finished.connect(lambda: self.settings.set_tour_seen(True))
        self.tour.start()
        return self.tour

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
        if isinstance(result, ScriptProcess) or result:
            self.settings.add_recent_file(path)
            self.settings.set_last_directory(path.parent)
        if isinstance(result, ScriptProcess):
            return self.start_script(result, confirm=confirm_scripts)
        if path.suffix.lower() in EXPRESSION_SUFFIXES:
            self.editor_binding.sync(result)
        return bool(result)

    def open_dialog(self) -> None:
        path = dialogs.ask_open_path(self, self.settings, self.document.path)
        if path:
            self.open_path(path)

    def save_trace_dialog(self) -> None:
        if self.document.trace is None:
            self.statusBar().showMessage("There is no trace to save")
            return
        stem = self.document.path.stem if self.document.path is not None else "trace"
        path = dialogs.ask_trace_path(self, self.settings, stem)
        if path:
            self.export_path(path)  # a script's graph saves the whole recording

    def export_dialog(self) -> None:
        if self.document.scene is None:
            self._report("There is no graph to export")
            return
        stem = self.document.path.stem if self.document.path is not None else "graph"
        path = dialogs.ask_export_path(self, self.settings, stem)
        if path:
            self.export_path(path)

    def export_path(self, path: str | Path) -> bool:
        """File > Export: the view as PNG or SVG, the graph as DOT or GraphML, the trace as
        JSON (by the suffix)."""
        if Path(path).suffix.lower() in EXPORT_FORMATS:
            return self.export_view(path)
        return self.document.export_data(path)

    def raise_dock(self, name: str) -> QtWidgets.QDockWidget:
        """Shows the dock ``name`` in front of the tabs it shares its place with."""
        dock = self.docks[name]
        dock.show()
        dock.raise_()
        return dock

    def export_view(self, path: str | Path) -> bool:
        """The view as a picture (:func:`~viewer.qt.graph.view_export.export_view`)."""
        if self.document.scene is None:
            self._report("There is no graph to export")
            return False
        selected = self.scene_binding.selected_index()
        try:
            out = view_export.export_view(path, self.document, self._theme, selected)
        except (OSError, ValueError) as exc:
            self._report(f"Export failed: {exc}")
            return False
        self.statusBar().showMessage(f"Exported the graph to {out}")
        return True

    def confirm_script(self, path: Path) -> bool:
        """Ask before running a user's script (tests replace this)."""
        return dialogs.chose_to_run(self.script_confirmation(path))

    def script_confirmation(self, path: Path) -> QtWidgets.QMessageBox:
        """The question asked before ``path`` runs, parented to the window."""
        return dialogs.script_confirmation(self, path)

    def start_script(self, run: ScriptProcess, confirm: bool = True) -> bool:
        """Run ``run`` on its own thread; the window stays usable, Cancel stops it."""
        if confirm:
            run.warm_up()  # the worker's imports happen while the user reads the question
        if confirm and not self.confirm_script(run.path):
            run.release()
            self.document.script_run = None
            self.statusBar().showMessage(f"Did not run {run.path.name}")
            return False
        self.script_binding.attach(run)
        self.statusBar().showMessage(f"Running {run.path.name}…")
        self.run_gate.set_running(True)
        run.start()
        return True

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
        playback.set_speed(next_speed(playback.speed, direction))
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
        dialogs.problem_box(self, message).open()

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
        self.runner.cancel("problems")  # the detectors of the graph that goes with the window
        super().closeEvent(event)

    def save_settings(self) -> None:
        save_window(self, self.settings, self.dock_fit)
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
