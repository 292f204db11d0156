"""The Problems panel (objectName problemsDock): what it lists and in which order, its header on a
clean run, a click (or Enter) going to the problem's graph, step and node, the graph list's
filter by kind, plain-text messages, its View-menu toggle, its layout in a narrow dock, and
the problems' badges on the graph kept apart."""

import itertools
import textwrap

import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

import viewer.model.checks.detectors  # noqa: F401  (registered before the registry is swapped)
from viewer.model.checks import problems as P
from viewer.model.checks.problem_marks import OVERLAY_KIND
from viewer.model.document import problem_finder
from viewer.qt.checks.problem_rows import MESSAGE_LINES, message_lines
from viewer.qt.checks.problems import ELSEWHERE, HERE


@pytest.fixture
def registry(monkeypatch):
    """An empty detector registry the test fills; a script's run is looked at app-side (its
    worker's report, when it brings one, is the model tests' concern)."""
    monkeypatch.setattr(P, "_GRAPH", {})
    monkeypatch.setattr(P, "_RUN", {})
    monkeypatch.setattr(problem_finder, "report_of_result", lambda result: None)
    monkeypatch.setattr(problem_finder, "pending_report", lambda result: None)
    return P


TRAIN = """
import numpy as np
from autodiff import Variable
w = Variable(np.array([1.0, 2.0]), name="w")
for epoch in range(4):
    w.cleargrad()
    loss = (w * w).sum()
    loss.backward()
    w.data = w.data - 0.05 * w.grad.data
"""


def run_train(qtbot, window, wait_for_script, tmp_path):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(TRAIN))
    assert window.open_path(path, confirm_scripts=False)
    wait_for_script(window)
    assert window.document.script_result.ok
    # a run is looked at on the runner, off the GUI thread
    qtbot.waitUntil(lambda: not window.document.problems_running, timeout=30_000)
    return window.document.script_result


def plant(graphs_with_problem=(0,), severity="warning", name="<b>layer</b>"):
    """A dead-relu detector that finds one on each graph of ``graphs_with_problem``, at its
    step 1, on its first Function, naming ``name``."""

    @P.graph_detector("dead-relu")
    def detector(g, limits):
        if g.graph not in graphs_with_problem:
            return []
        fn = g.reader.functions[0]
        return [P.Problem("dead-relu", severity, f"{name}: units dead", g.graph, 1, (fn,))]


def test_the_dock_is_there_with_a_view_menu_toggle_and_its_key(window):
    dock = window.findChild(QtWidgets.QDockWidget, "problemsDock")
    assert dock is not None and dock.widget() is window.problems_panel
    toggle = window.actions["problems"]
    assert toggle is dock.toggleViewAction()
    assert toggle.shortcut().toString() == "Ctrl+Shift+P"
    view_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    assert toggle in view_menu.actions()
    shown = dock.isVisible()
    toggle.trigger()
    assert dock.isVisible() != shown


def test_an_expressions_nan_is_listed_and_a_click_goes_to_its_step_and_node(window, registry):
    doc, panel = window.document, window.problems_panel
    assert doc.run_expression("x = 0.0\ny = log(x) * 2\n")
    first = doc.trace.first_nonfinite()
    assert [r.kind for r in panel.rows] == ["nonfinite"] and panel.groups() == [HERE]
    assert panel.summary.text().startswith("1 error")
    assert window.docks["problemsDock"].windowTitle() == "Problems (1)"
    doc.playback.to_start()
    doc.select(None)
    panel.click_row(0)
    assert doc.playback.index == first.index and doc.selection == first.function
    # the node's own NaN badge names the problem (one mark for one finding)
    (badge,) = doc.scene.overlays[first.function]
    assert badge.kind == "nonfinite" and "problem nonfinite" in badge.tooltip


def test_a_clean_program_says_which_detectors_ran_and_which_could_not(window, registry):
    plant(graphs_with_problem=())

    @P.graph_detector("stale-value")
    def cannot(g, limits):
        raise P.CannotRun("the recording keeps no versions")

    assert window.document.run_expression("x = 0.5\ny = exp(x)\n")
    panel = window.problems_panel
    assert panel.rows == [] and panel.tree.isHidden()
    assert panel.summary.text().startswith("No problems found")
    assert "Ran: carried-gradient, dead-relu, nonfinite." in panel.details.text()
    assert "stale-value (the recording keeps no versions)" in panel.details.text()
    assert not panel.details_area.isHidden()
    assert window.docks["problemsDock"].windowTitle() == "Problems"
    # with a problem listed, the rows get the height and the lines go to the tooltip
    assert window.document.run_expression("x = 0.0\ny = log(x)\n")
    assert panel.rows and panel.details_area.isHidden()
    assert "Ran: carried-gradient, dead-relu, nonfinite." in panel.summary.toolTip()


def test_messages_are_plain_text(window, registry):
    plant(name="<b>bold</b> & <i>x</i>")
    assert window.document.run_expression("x = 0.5\ny = exp(x)\n")
    item = window.problems_panel.items()[0]
    assert item.text(2) == "<b>bold</b> & <i>x</i>: units dead" and item.text(0) == "dead-relu"
    assert "&lt;b&gt;bold&lt;/b&gt;" in item.toolTip(2) or "<b>" not in item.toolTip(2)
    # the node's mark carries the problem, literally too
    fn = window.document.trace.functions[0]
    (mark,) = [o for o in window.document.scene.overlays[fn] if o.kind == OVERLAY_KIND]
    assert mark.badge == "dead-relu" and "<b>bold</b>" in mark.tooltip
    # the node's inspector names the problem
    window.problems_panel.click_row(0)
    assert window.document.selection == fn
    assert "problem: dead-relu (warning)" in window.inspector.text()


def test_no_graph_and_no_report_shows_a_line_and_no_rows(qtbot, registry):
    from viewer.model.document.document import Document
    from viewer.qt.checks.problems import ProblemsPanel
    from viewer.qt.checks.problems_binding import ProblemsBinding
    from viewer.qt.graph.scene_binding import SceneBinding
    from viewer.qt.graph.view import GraphView
    from viewer.qt.panels.inspector import InspectorPanel

    doc = Document()
    panel, view, inspector = ProblemsPanel(), GraphView(), InspectorPanel()
    for widget in (panel, view, inspector):
        qtbot.addWidget(widget)
    scene = SceneBinding(doc, view, inspector)
    binding = ProblemsBinding(doc, panel, None, scene)
    assert panel.rows == [] and panel.summary.text().startswith("No problems looked for")
    doc.problems_changed.emit(doc)  # nothing to show: no crash
    assert not binding.go_to(P.Problem("diverging-loss", "warning", "m", 3))


def test_a_runs_problems_list_its_graph_first_and_a_click_goes_to_another_graph(
    qtbot, window, wait_for_script, tmp_path, registry
):
    plant(graphs_with_problem=(0, 3), severity="warning")

    @P.graph_detector("nonfinite")
    def error_on_one(g, limits):
        if g.graph != 1:
            return []
        return [P.Problem("nonfinite", "error", "NaN in pass 2", 1, 2, (g.reader.functions[-1],))]

    result = run_train(qtbot, window, wait_for_script, tmp_path)
    doc, panel = window.document, window.problems_panel
    assert doc.shown_graph() == 3
    rows = panel.rows
    assert panel.groups() == [HERE, ELSEWHERE]
    # the warning of graphs 0 and 3 is one bug: one line, graph 3's own while it is shown
    assert [(r.here, r.severity, r.problem.graph) for r in rows] == [
        (True, "warning", 3),
        (False, "error", 1),
    ]
    assert rows[0].message.endswith("(in 2 of 4 kept passes, first in pass #1)")
    assert rows[1].where == f"#{result.graphs[1].number + 1}, step 3"
    assert result.graphs[1].title in rows[1].tooltip
    # a click: the pass's graph, the step, the node; the graph list follows
    target = rows[1].problem
    panel.click_row(1)
    assert doc.shown_graph() == 1
    assert window.script_panel.selected_graph() == 1
    assert doc.playback.index == target.step and doc.selection == target.nodes[0]
    assert window.scene_binding.selected_index() == doc.scene.index_of(target.nodes[0])
    # now graph 1 is the one on screen: its problem heads the list
    assert panel.rows[0].problem == target and panel.rows[0].here
    # Enter on a row does the same
    items = panel.items()
    index = next(k for k, r in enumerate(panel.rows) if r.problem.graph == 0)
    panel.tree.setCurrentItem(items[index])
    panel.tree.setFocus()
    qtbot.keyClick(panel.tree, QtCore.Qt.Key.Key_Return)
    assert doc.shown_graph() == 0 and doc.playback.index == 1


def test_the_graph_filter_lists_the_graphs_with_a_kind(
    qtbot, window, wait_for_script, tmp_path, registry
):
    plant(graphs_with_problem=(1, 2))
    result = run_train(qtbot, window, wait_for_script, tmp_path)
    panel = window.script_panel
    box = panel.findChild(QtWidgets.QLineEdit, "graphFilter")
    box.setText("dead-relu")
    listed = [panel.graphs.itemData(k) for k in range(panel.graphs.count())]
    assert listed == [1, 2]
    assert panel.graphs.itemText(0) == result.graphs[1].title
    box.setText("stale-value")
    assert panel.graphs.count() == 0


def test_the_problems_settings_group_sets_the_thresholds(qtbot, isolated_settings):
    from viewer.app import build_window
    from viewer.qt.settings import AppSettings

    settings = AppSettings()
    settings.store.setValue("problems/dead_fraction", "0.7")
    settings.store.setValue("problems/budget_seconds", "-1")  # refused: the default stays
    settings.sync()
    window = build_window([])
    qtbot.addWidget(window)
    limits = window.document.problem_limits
    assert limits.dead_fraction == 0.7 and limits.budget_seconds == P.Thresholds().budget_seconds
    assert [p.key for p in window.settings.problems] == ["problems/budget_seconds"]


def test_the_wrong_backward_mark_and_ctrl_g_are_one_problem(
    qtbot, window, wait_for_script, registry
):
    window.load_example("wrong_backward")
    wait_for_script(window)
    qtbot.waitUntil(lambda: not window.document.problems_running, timeout=30_000)
    doc, panel = window.document, window.problems_panel
    shown = doc.shown_graph()
    wrong = [r.problem for r in panel.rows if r.kind == "wrong-backward"]
    assert shown in {p.graph for p in wrong}  # the pass's flag, as a problem
    flagged = len(wrong)
    window.actions["check_gradients"].trigger()
    wrong = [r.problem for r in panel.rows if r.kind == "wrong-backward"]
    assert len(wrong) == flagged  # the check's finding stands for the flag: listed once
    (here,) = [p for p in wrong if p.graph == shown]
    assert "Softplus" in here.message and here.nodes
    node = here.nodes[0]
    kinds = [o.kind for o in doc.scene.overlays[node]]
    assert "gradcheck" in kinds and OVERLAY_KIND not in kinds  # its own mark, not a second
    (check,) = [o for o in doc.scene.overlays[node] if o.kind == "gradcheck"]
    assert "problem wrong-backward" in check.tooltip


def test_the_chosen_problems_whole_message_shows_below_the_list(window, registry):
    plant(name="a long name " * 12)
    assert window.document.run_expression("x = 0.5\ny = exp(x)\n")
    panel = window.problems_panel
    assert panel.chosen_area.isHidden()
    panel.click_row(0)
    assert not panel.chosen_area.isHidden()
    assert panel.chosen.text().startswith("dead-relu (warning): a long name a long name")
    assert panel.chosen.text().count("a long name") == 12


def test_the_panel_says_it_is_looking_while_the_runner_works(qtbot, registry):
    from viewer.model.document.document import Document
    from viewer.model.document.work import Outcome
    from viewer.qt.checks.problems import ProblemsPanel
    from viewer.qt.checks.problems_binding import ProblemsBinding
    from viewer.qt.graph.scene_binding import SceneBinding
    from viewer.qt.graph.view import GraphView
    from viewer.qt.panels.inspector import InspectorPanel

    plant()
    kept = []

    class Runner:
        def submit(self, work):
            if work.kind == "problems":
                kept.append(work)
                return
            work.finish(
                Outcome("succeeded", work.function(*work.args, lambda *a: None, lambda: False))
            )

        def cancel(self, kind):
            pass

    doc = Document()
    doc.runner, doc.sync_layout_limit = Runner(), 2
    panel, view, inspector = ProblemsPanel(), GraphView(), InspectorPanel()
    for widget in (panel, view, inspector):
        qtbot.addWidget(widget)
    scene = SceneBinding(doc, view, inspector)
    binding = ProblemsBinding(doc, panel, None, scene)  # (kept: the document's are weak)
    assert doc.run_expression("x = 0.5\ny = exp(x)\n")
    (work,) = kept
    assert panel.summary.text().startswith("Looking for problems")
    # no verdict while they run: the marks looked, the detectors have not yet
    assert "No problems" not in panel.summary.text() + panel.details.text()
    assert "still running" in panel.details.text()
    work.finish(Outcome("succeeded", work.function(*work.args, lambda *a: None, lambda: False)))
    assert panel.summary.text().startswith("1 warning")
    assert [r.kind for r in panel.rows] == ["dead-relu"] and binding.document is doc


def _front_tab_of(window, title_start):
    """The current tab's text of the tab bar that holds a tab starting with ``title_start``."""
    for bar in window.findChildren(QtWidgets.QTabBar):
        texts = [bar.tabText(i) for i in range(bar.count())]
        if any(t.startswith(title_start) for t in texts):
            return bar.tabText(bar.currentIndex())
    return None


def test_a_source_that_opens_with_a_bug_brings_the_panel_forward_once(window, registry, qtbot):
    doc = window.document
    docks = window.docks
    assert doc.run_expression("x = 0.5\ny = exp(x)\n")  # clean: the panel stays behind
    docks["plotPanel"].raise_()
    qtbot.wait(10)
    assert _front_tab_of(window, "Problems") == "Plots"
    assert doc.run_expression("x = 0.0\ny = log(x) * 2\n")
    qtbot.wait(10)
    assert _front_tab_of(window, "Problems").startswith("Problems (1)")
    # once per report: the user's choice of tab stands while the same source is shown
    docks["plotPanel"].raise_()
    doc.playback.to_end()
    qtbot.wait(10)
    assert _front_tab_of(window, "Problems") == "Plots"


def _rect(coords):
    left, top, right, bottom = coords
    return QtCore.QRectF(left, top, right - left, bottom - top)


def test_dead_relus_badges_cover_no_other_badge_and_no_nodes_text_at_any_zoom(
    qtbot, window, wait_for_script
):
    """The ReLU and its output both carry a dead-relu badge: zoomed out, the two pills (17 px
    high whatever the zoom) once sat on each other and on the ReLU's text. At every zoom no
    pill covers another or a node."""
    window.load_example("dead_relu")
    wait_for_script(window)
    qtbot.waitUntil(lambda: not window.document.problems_running, timeout=30_000)
    view = window.graph_view
    layer = view._overlays
    assert [b for b in layer._badges] == ["dead-relu", "dead-relu"]
    n = view.geometry_data.n_nodes
    view.fit()
    painted_at = []
    for _ in range(8):
        view.grab()  # a paint at this zoom
        pills = [pill for _, pill in layer.painted_badges]
        boxes = layer.node_boxes_px(np.arange(n), layer.deviceTransform(view.viewportTransform()))
        for a, b in itertools.combinations(pills, 2):
            assert not a.intersects(b), (a, b)
        for pill in pills:
            hit = [i for i, box in enumerate(boxes) if pill.intersects(_rect(box))]
            assert not hit, (pill, hit)
        painted_at.append(len(pills))
        view.zoom_by(0.8)
    # both drawn while there is room, then none (the nodes too small for badges), never two
    # on top of each other. (Where the second has no room of its own the two share one pill:
    # test_model_badge_places; here the layout leaves room beside the ReLU's output, as the
    # layer's parameters now sit in its frame, not in that row.)
    assert painted_at[0] == 2 and painted_at[-1] == 0, painted_at
    assert painted_at == sorted(painted_at, reverse=True), painted_at


def test_a_wide_list_has_columns_and_a_narrow_one_stacks_each_problem_on_its_lines(qtbot):
    from viewer.model.checks.problem_list import problem_rows
    from viewer.qt.checks.problems import ProblemsPanel

    message = "layer <b>Net</b> " + "a long name " * 12 + "units dead"
    rows = problem_rows([P.Problem("exploding-gradient", "warning", message, 0, 1, ())], 0)
    panel = ProblemsPanel()
    qtbot.addWidget(panel)
    panel.show_rows(rows, "1 warning", "")
    panel.resize(900, 300)
    panel.show()
    qtbot.waitExposed(panel)
    tree, header = panel.tree, panel.tree.header()
    (item,) = panel.items()
    line = tree.fontMetrics().lineSpacing()

    def no_sideways_scroll():
        width = tree.viewport().width()
        shown = [header.sectionSize(c) for c in range(3) if not tree.isColumnHidden(c)]
        return sum(shown) <= width and tree.horizontalScrollBar().maximum() == 0

    # wide: three columns, the kind whole, the message most of the width, on two lines
    qtbot.waitUntil(lambda: header.sectionSize(2) >= 0.5 * tree.viewport().width())
    assert not panel.rows_drawn.stacked and header.isVisible()
    assert no_sideways_scroll()
    kind_width = tree.fontMetrics().horizontalAdvance(item.text(0))
    assert header.sectionSize(0) >= kind_width + tree.iconSize().width()
    height = tree.visualItemRect(item).height()
    assert line * 1.5 < height <= MESSAGE_LINES * line + 8, (height, line)
    # narrow (a side dock): one column, the kind and where above the message's lines, all of
    # them where the list has room for every row's whole message (one problem at 1024 x 700
    # showed two lines cut short above an empty list)
    panel.resize(300, 300)
    qtbot.waitUntil(lambda: panel.rows_drawn.stacked)
    assert tree.isColumnHidden(1) and tree.isColumnHidden(2) and not header.isVisible()
    assert no_sideways_scroll()
    width = tree.viewport().width() - 40
    whole = len(message_lines(message, tree.font(), width, 1000))
    assert whole > MESSAGE_LINES + 1
    height = tree.visualItemRect(item).height()
    assert (1 + whole - 1) * line <= height <= (1 + whole + 1) * line + 8, (height, whole)
    # where it has not, each message is cut to MESSAGE_LINES
    panel.resize(300, 110)
    qtbot.waitUntil(lambda: tree.visualItemRect(item).height() <= (1 + MESSAGE_LINES) * line + 8)
    height = tree.visualItemRect(item).height()
    assert (1 + MESSAGE_LINES) * line <= height <= (1 + MESSAGE_LINES) * line + 8, height
    lines = message_lines(message, tree.font(), width, MESSAGE_LINES)
    assert len(lines) == MESSAGE_LINES and lines[-1].endswith("…")
    assert lines[0].startswith("layer <b>Net</b>")  # as typed: plain text
    # whatever a row cannot show is in its tooltips, as plain text
    for column in range(3):
        shown = QtGui.QTextDocumentFragment.fromHtml(item.toolTip(column)).toPlainText()
        assert message in shown
    # and back
    panel.resize(900, 300)
    qtbot.waitUntil(lambda: not panel.rows_drawn.stacked)
    assert not tree.isColumnHidden(2) and header.isVisible()


def test_the_side_dock_at_800x560_stacks_the_rows(qtbot, window, registry):
    plant(name="a long name " * 12)
    assert window.document.run_expression("x = 0.5\ny = exp(x)\n")
    window.resize(800, 560)  # the right column folds into the left one's tab group
    qtbot.wait(50)
    window.docks["problemsDock"].raise_()
    panel = window.problems_panel
    qtbot.waitUntil(lambda: panel.rows_drawn.stacked)
    assert panel.tree.horizontalScrollBar().maximum() == 0


def test_after_the_window_shrinks_the_summary_reads_whole_and_the_rows_keep_their_room(
    qtbot, window, wait_for_script
):
    """While the right column folds into the left one, the summary's area passes through a
    width that wraps its line in two; it once kept that height for its viewport around the
    one line it needs at the end, and showed the line cut in half."""
    window.load_example("dead_relu")
    wait_for_script(window)
    qtbot.waitUntil(lambda: not window.document.problems_running, timeout=30_000)
    window.docks["plotPanel"].raise_()
    window.resize(800, 560)
    qtbot.wait(50)
    window.docks["problemsDock"].raise_()
    qtbot.wait(50)
    panel = window.problems_panel
    area, summary = panel.summary_area, panel.summary
    qtbot.wait(50)
    needed = summary.heightForWidth(area.viewport().width())
    assert summary.height() <= area.viewport().height() == area.height()
    assert area.height() >= needed
    # a problem chosen: its whole message below the list takes three lines (the rest
    # scrolls), not a scroll area's own minimum (68 px), which took it from the list's rows
    panel.click_row(0)
    qtbot.wait(50)
    tree, chosen = panel.tree, panel.chosen_area
    assert not chosen.isHidden()
    assert chosen.height() <= 3 * panel.chosen.fontMetrics().lineSpacing() + 4
    assert tree.height() >= 2 * chosen.height()  # the rows keep the room left


def test_the_key_that_shows_the_panel_brings_it_to_the_front(qtbot, window, registry):
    plant()
    assert window.document.run_expression("x = 0.5\ny = exp(x)\n")
    dock, toggle = window.docks["problemsDock"], window.actions["problems"]
    window.resize(800, 560)  # one tab group for the side docks: the easiest to lose it in
    qtbot.wait(50)
    if dock.isVisible():
        toggle.trigger()  # hidden
    window.docks["plotPanel"].raise_()
    qtbot.wait(10)
    toggle.trigger()
    qtbot.wait(10)
    assert dock.isVisible() and _front_tab_of(window, "Problems").startswith("Problems")


def test_the_window_shows_a_scripts_graph_while_its_worker_looks_for_problems(
    qtbot, window, wait_for_script, tmp_path
):
    """The real path: the worker sends the result, the window draws the graph and the panel
    says it is looking; the report comes on the runner and fills the panel (a detector planted
    in the worker waits for the test's word, so the moment between is seen)."""
    from planted_detector import write_plants

    path = write_plants(tmp_path)
    assert window.open_path(path, confirm_scripts=False)
    wait_for_script(window)
    doc, panel = window.document, window.problems_panel
    assert doc.script_result.ok and doc.scene is not None
    qtbot.waitUntil(lambda: (tmp_path / "looking").exists(), timeout=60_000)
    assert doc.problems_running
    assert panel.summary.text().startswith("Looking for problems")
    assert "dead-relu" not in [r.kind for r in panel.rows]
    (tmp_path / "go").write_text("")
    qtbot.waitUntil(lambda: not doc.problems_running, timeout=60_000)
    assert "dead-relu" in [r.kind for r in panel.rows]
    summary = panel.summary.text()
    assert "warning" in summary and "Looking" not in summary, summary
