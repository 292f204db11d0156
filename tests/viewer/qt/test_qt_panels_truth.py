"""Every panel speaks about the graph on screen and claims only what it checked (issue 23):
a run that failed or recorded no graph leaves the graph, its leak badges and the Leaks,
Gradients and Script panels as they were; Check Gradients on a NaN graph never says
'passed'."""

import math

from viewer.model.document.examples import find_example
from viewer.model.document.gradient_checks import check_document

NO_GRAPH = "print('this script uses no autodiff at all')\n"
BROKEN = """\
import numpy as np
import autodiff.functions as F
from autodiff import Variable
x = Variable(np.array(0.5), name="x")
y = F.exp(x)
y.backward()
print(1 / 0)
"""


def _open(window, wait_for_script, path):
    assert window.open_path(path, confirm_scripts=False) is not False
    wait_for_script(window)


def _leak_badges(doc):
    return {
        nid for nid, found in doc.scene.overlays.items() if any(o.kind == "leak" for o in found)
    }


def _global_list(window, wait_for_script):
    _open(window, wait_for_script, find_example("global_list").path)
    doc = window.document
    assert doc.script_result is not None and doc.script_result.path.name == "global_list.py"
    badges = _leak_badges(doc)
    assert len(badges) == 10  # the held badges the issue saw
    return doc, badges


def test_a_script_that_records_no_graph_leaves_every_panel_as_it_was(
    qtbot, window, wait_for_script, tmp_path
):
    doc, badges = _global_list(window, wait_for_script)
    scene, result, title = doc.scene, doc.script_result, doc.title
    leaks_before = window.leak_panel.summary.text()
    rows_before = window.leak_panel.row_count()
    listed_before = [
        window.script_panel.graphs.itemText(i) for i in range(window.script_panel.graphs.count())
    ]
    assert "leak" in leaks_before.lower() or rows_before == 10

    script = tmp_path / "plain.py"
    script.write_text(NO_GRAPH)
    _open(window, wait_for_script, script)
    assert "recorded no graph" in str(doc.last_error)
    # the graph drawn, the run it belongs to and its badges stay
    assert doc.scene is scene and doc.script_result is result and doc.title == title
    assert _leak_badges(doc) == badges
    # the Leaks panel still lists global_list's survivors: no false all-clear
    assert window.leak_panel.summary.text() == leaks_before
    assert "No leaks" not in window.leak_panel.summary.text()
    assert window.leak_panel.row_count() == rows_before == 10
    # the Script panel reports the failed run but still lists the graph on screen's run
    panel = window.script_panel
    listed = [panel.graphs.itemText(i) for i in range(panel.graphs.count())]
    assert listed == listed_before
    assert panel.selected_graph() == result.graph_index(doc.trace)
    assert f"The graph on screen is still the one before: {title}" in panel.status.text()


def test_a_failed_run_keeps_the_leak_panel_until_one_of_its_graphs_is_opened(
    qtbot, window, wait_for_script, tmp_path
):
    doc, badges = _global_list(window, wait_for_script)
    scene, result = doc.scene, doc.script_result
    leaks_before = window.leak_panel.summary.text()
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN)
    _open(window, wait_for_script, broken)
    assert doc.scene is scene and doc.script_result is result
    assert window.leak_panel.summary.text() == leaks_before
    assert _leak_badges(doc) == badges
    panel = window.script_panel
    assert panel.graphs.count() == 1  # the graph broken.py built before its error is offered
    panel.graphs.activated.emit(0)
    qtbot.waitUntil(lambda: not doc.layout_pending)
    # now broken.py's graph is on screen, and every panel speaks of it
    assert doc.script_result is not result and doc.script_result.path.name == "broken.py"
    assert doc.title.startswith("broken.py: ")
    assert _leak_badges(doc) == set()
    assert "global_list" not in window.leak_panel.summary.text()


def test_check_gradients_on_a_nan_graph_never_says_passed(qtbot, window):
    assert window.open_path(find_example("nan_log").path) is not False
    doc = window.document
    report = check_document(doc)
    assert report is not None
    assert "passed" not in report.summary
    assert "cannot judge 3 of 4 checks" in report.summary
    assert "NaN/Inf" in report.summary
    rows = {row.label: row for row in report.rows()}
    for label in ("dy/dx", "Log #3", "Mul #5"):
        assert rows[label].status == "nonfinite"
        assert math.isnan(rows[label].error) and math.isnan(rows[label].max_abs_error)
    assert rows["Sub #1"].status == "ok"  # what could be judged still is
    # the panel: the same summary, and no 0.00e+00 error on a row that was not compared
    window.gradcheck_binding.check_gradients()
    panel = window.gradcheck_panel
    assert "passed" not in panel.summary.text()
    table = panel.table
    for r in range(table.rowCount()):
        texts = [table.item(r, c).text() if table.item(r, c) else "" for c in range(4)]
        if "nonfinite" in " ".join(texts) or "NaN" in " ".join(texts):
            assert "0.00e+00" not in texts


def test_a_finite_graph_still_passes(qtbot, window):
    assert window.open_path(find_example("tanh_x2").path) is not False
    report = check_document(window.document)
    assert report.summary.startswith("Gradient check passed")


def test_no_all_clear_on_a_pass_the_audit_did_not_cover(qtbot, window, wait_for_script, tmp_path):
    script = tmp_path / "clean_loop.py"
    script.write_text(
        "import numpy as np\n"
        "from autodiff import Variable\n"
        "x = Variable(np.array(2.0), name='x')\n"
        "for i in range(8):\n"
        "    y = x * x * 3.0\n"
        "    y.backward()\n"
        "    x.cleargrad()\n"
    )
    doc = window.document
    doc.script_max_passes = 4
    _open(window, wait_for_script, script)
    result = doc.script_result
    assert result is not None and result.ok and result.leak_report is not None
    assert not result.leak_report.survivors
    assert result.graphs[-1].own_trace  # the last pass was recorded on its own
    text = window.leak_panel.summary.text()
    assert "No leaks" not in text and "was not audited" in text
    # a graph of the audited recording gets the all-clear its audit earned
    window.script_panel.graphs.activated.emit(0)
    qtbot.waitUntil(lambda: getattr(doc.trace, "base", doc.trace) is result.trace)
    assert window.leak_panel.summary.text().startswith("No leaks in clean_loop.py")
