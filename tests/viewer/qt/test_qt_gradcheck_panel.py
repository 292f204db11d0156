"""Check gradients from the window: the wrong backward is flagged (panel and graph), the right
one is not; typed expressions check their leaves; the NaN example jumps to its step."""

import pytest
from PySide6 import QtWidgets

from viewer.model.checks.gradcheck import OVERLAY_KIND


def _run_script_example(wait_for_script, window, stem):
    window.load_example(stem)
    wait_for_script(window)
    assert window.document.script_result.ok


def _overlay_badges(window):
    scene = window.document.scene
    nodes, _colours, badges = scene.overlay_arrays(OVERLAY_KIND)
    return {scene.names[int(i)]: badge for i, badge in zip(nodes, badges, strict=True)}


def test_the_wrong_backward_is_flagged_and_only_it(qtbot, window, wait_for_script):
    _run_script_example(wait_for_script, window, "wrong_backward")
    window.actions["check_gradients"].trigger()
    panel = window.gradcheck_panel
    dock = window.findChild(QtWidgets.QDockWidget, "gradCheckPanel")
    assert dock is not None and dock.widget() is panel and dock.isVisible()
    statuses = {row.label.split()[0]: row.status for row in panel.rows}
    assert statuses == {"Softplus": "wrong", "MatMul": "ok", "Sum": "ok"}
    assert panel.cell_text(0, 0).startswith("Softplus")  # wrong ones first
    assert panel.cell_text(0, 1) == "wrong"
    assert "the backward of Softplus is wrong" in panel.summary.text()
    badges = _overlay_badges(window)
    assert badges["Softplus"] == "wrong backward"
    assert badges["MatMul"] != "wrong backward" and badges["Sum"] != "wrong backward"
    assert window.graph_view.overlay_count >= 3
    # a click on the row selects the Function
    panel.click_row(0)
    assert window.document.selection == panel.rows[0].node_id
    assert "Softplus" in window.inspector.text()


def test_the_right_backward_passes(qtbot, window, wait_for_script):
    _run_script_example(wait_for_script, window, "right_backward")
    report = window.gradcheck_binding.check_gradients()
    assert report is not None and report.ok
    assert {row.status for row in window.gradcheck_panel.rows} == {"ok"}
    assert "wrong backward" not in _overlay_badges(window).values()
    assert "passed" in window.gradcheck_panel.summary.text()


def test_a_typed_expression_checks_its_leaves_and_second_derivatives(window):
    assert window.load_example("higher_order")
    assert window.actions["check_gradients"].shortcut().toString() == "Ctrl+G"
    report = window.gradcheck_binding.check_gradients()
    assert report is not None and report.ok
    leaves = [row for row in window.gradcheck_panel.rows if row.kind == "leaf"]
    assert leaves and all(row.status == "ok" for row in leaves)
    assert any("order" in row.label for row in leaves)
    assert len(_overlay_badges(window)) >= 1
    # a new value is a new graph: the old figures are not shown as if they applied
    assert window.variables_binding.set_leaf_value("x", "1.5")
    assert window.gradcheck_panel.row_count() == 0
    assert "changed" in window.gradcheck_panel.summary.text()


def test_the_check_is_in_the_debug_menu_and_toolbar(window):
    toolbar = window.findChild(QtWidgets.QToolBar, "debugToolbar")
    assert toolbar is not None
    names = {a.objectName() for a in toolbar.actions()}
    assert {"action_check_gradients", "action_release_graph", "action_first_nonfinite"} <= names
    menu = window.findChild(QtWidgets.QMenu, "debugMenu")
    assert {a.objectName() for a in menu.actions()} >= names - {"action_export"}


def test_the_nan_example_jumps_to_the_log_step(window):
    key = "first_nonfinite"
    assert window.load_example("nan_log")
    doc = window.document
    playback = doc.playback
    ops = [s.op for s in doc.trace.steps]
    assert ops == ["Sub", "Log", "Mul", "Mul", "Log", "Sub"]
    playback.to_end()
    window.actions[key].trigger()
    assert playback.index == 1  # after Log's forward step, the first to give -inf
    assert playback.current_step.op == "Log"
    log = playback.current_step.function
    assert doc.selection == log
    assert "Log" in window.statusBar().currentMessage()
    # the Log Function is flagged in the forward and in the backward phase
    scene = doc.scene
    flagged = [int(scene.node_ids[i]) for i in scene.overlay_arrays("nonfinite")[0]]
    assert flagged == [log]
    for phase in ("forward", "backward"):
        playback.to_phase(phase)
        playback.step_forward()
        assert window.graph_view.overlay_count >= 1
    window.actions["next_nonfinite"].trigger()
    assert playback.index in playback.nonfinite_steps
    assert {"Ctrl+J", "N"} <= {s.toString() for s in window.actions[key].shortcuts()}


def test_the_nan_message_goes_when_playback_leaves_its_step(window):
    # the status bar must not describe another step than the one shown (QA: it still said
    # "Step 5/6: Log ... produced NaN" at step 6/6)
    assert window.load_example("nan_log")
    playback = window.document.playback
    window.actions["first_nonfinite"].trigger()
    message = window.statusBar().currentMessage()
    assert "produced NaN" in message
    playback.seek(playback.index)  # the same step: the message stays
    assert window.statusBar().currentMessage() == message
    playback.seek(playback.n_steps - 1)
    assert "produced NaN" not in window.statusBar().currentMessage()


def test_no_nan_says_so(window):
    assert window.editor_binding.run("y = exp(x)")
    index = window.document.playback.index
    window.actions["first_nonfinite"].trigger()
    assert window.document.playback.index == index
    assert "No step produced NaN or Inf" in window.statusBar().currentMessage()


def test_a_saved_trace_gets_one_message_and_no_rows(qtbot, window, tmp_path):
    import numpy as np

    import autodiff.functions as F
    from autodiff import Variable, trace

    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.exp(F.square(x))
        y.backward()
    t.to_json(tmp_path / "saved.json")
    assert window.open_path(tmp_path / "saved.json")
    window.actions["check_gradients"].trigger()
    panel = window.gradcheck_panel
    text = panel.summary.text()
    assert "saved trace holds no program to re-run" in text
    assert "Open the expression or the script" in text
    assert panel.row_count() == 0 and panel.table.isHidden()
    assert panel.notes.isHidden() and panel.notes.text() == ""
    assert "was checked" not in text and "skipped" not in text


def test_the_results_fit_a_narrow_dock_without_scrolling_sideways(qtbot, window, wait_for_script):
    """QA: 'Max abs error' made the table scroll sideways at the default dock width."""
    _run_script_example(wait_for_script, window, "wrong_backward")
    window.actions["check_gradients"].trigger()
    panel = window.gradcheck_panel
    assert panel.row_count() > 0
    dock = window.docks["gradCheckPanel"]
    dock.raise_()
    qtbot.wait(20)
    assert panel.width() <= dock.width()  # the panel as its dock lays it out
    table = panel.table
    fixed = sum(table.columnWidth(c) for c in range(table.columnCount() - 1))
    assert fixed <= table.viewport().width(), fixed
    # the summary's every line can be read: shown, or scrolled to in its area
    area = panel.summary_area
    assert area.widget() is panel.summary
    assert area.maximumHeight() >= panel.summary.heightForWidth(area.viewport().width())
    header = table.horizontalHeaderItem(2)
    assert header.text() == "Rel. err" and "central differences" in header.toolTip()


TORCH_SCRIPT = """
import torch

class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x  # the factor 2 is missing

w = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5]))
for step in range(2):
    w.grad = None
    torch.tanh(Square.apply(w)).sum().backward()
"""


def test_a_torch_scripts_wrong_custom_function_is_flagged_in_the_panel(
    qtbot, window, wait_for_script, tmp_path
):
    pytest.importorskip("torch")
    script = tmp_path / "custom_torch.py"
    script.write_text(TORCH_SCRIPT)
    assert window.open_path(script, confirm_scripts=False)
    wait_for_script(window)
    result = window.document.script_result
    assert result.ok, result.error
    assert "wrong backward: Square" in result.graphs[0].title
    window.document.show_script_graph(0)
    window.actions["check_gradients"].trigger()
    panel = window.gradcheck_panel
    assert panel.cell_text(0, 0).startswith("Square")  # wrong ones first
    assert panel.cell_text(0, 1) == "wrong"
    assert "for input 0" in panel.rows[0].detail
    assert "torch.autograd.gradcheck" in panel.rows[0].detail
    assert "the backward of Square is wrong" in panel.summary.text()
    assert _overlay_badges(window)["Square"] == "wrong backward"
    # torch's own ops are listed as not checked, never as passed
    assert {row.status for row in panel.rows[1:]} == {"skipped"}


def test_a_message_with_no_table_below_is_shown_whole(qtbot):
    # Check Gradients on a torch recording has no rows to list: its ten-line explanation sat
    # in a four-line scroll box at 1024 x 700, the panel empty below it
    from types import SimpleNamespace

    from viewer.qt.checks.gradcheck import SUMMARY_LINES, GradCheckPanel

    panel = GradCheckPanel()
    qtbot.addWidget(panel)
    panel.resize(290, 400)
    panel.show()
    qtbot.waitExposed(panel)
    text = "Gradient check: every Function here is torch's. " * 8
    report = SimpleNamespace(summary=text, duration=0.0, rows=lambda: [], notes=())
    panel.show_report(report)
    area = panel.summary_area
    lines = area.label.fontMetrics().lineSpacing()
    qtbot.waitUntil(lambda: area.height() >= area.label.heightForWidth(area.viewport().width()))
    assert area.height() > (SUMMARY_LINES + 1) * lines
    assert area.verticalScrollBar().maximum() == 0  # nothing hidden below
    # above a table of rows it asks four lines, and scrolls
    row = SimpleNamespace(
        label="Mul", status="passed", error=0.0, max_abs_error=0.0, detail="", node_id=None
    )
    panel.show_report(SimpleNamespace(summary=text, duration=0.0, rows=lambda: [row], notes=()))
    qtbot.waitUntil(lambda: area.height() <= SUMMARY_LINES * lines + 4)
