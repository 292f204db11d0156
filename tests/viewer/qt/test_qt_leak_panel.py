"""The leak panel on the bundled leak examples: each shows exactly its survivors, with reason
and holders, flagged on the graph; the clean examples show none; a click selects and centres."""

import numpy as np
import pytest
from PySide6 import QtWidgets

from viewer.model.document.examples import find_example

# (kind, name or '#' for an unnamed variable, reason) of every survivor, sorted
EXPECTED = {
    "global_list": sorted(
        [("variable", n, "referenced") for n in ("x", "w", "h0", "h1", "#", "#")]
        + [("function", n, "referenced") for n in ("MatMul", "MatMul", "Tanh", "Tanh")]
    ),
    "strong_outputs": sorted(
        [("variable", n, "cycle") for n in ("x", "y", "#")]
        + [("function", n, "cycle") for n in ("Exp", "KeepOutputs")]
    ),
    "create_graph_cycle": sorted(
        [("variable", n, "cycle") for n in ("x", "#", "#", "#", "#", "#")]
        + [("function", n, "cycle") for n in ("Pow", "Mul", "Mul")]
    ),
    "closure": sorted(
        [("variable", n, "referenced") for n in ("x", "h", "#", "#")]
        + [("function", n, "referenced") for n in ("Tanh", "Mul")]
    ),
    "clean_graph": [],
    "no_grad": [],
}
HOLDER = {
    "global_list": "global 'debug_cache'",
    "closure": "closure cell 'h'",
    "strong_outputs": "cycle",
    "create_graph_cycle": "cycle",
}


def _run_example(wait_for_script, window, stem):
    window.load_example(stem)
    wait_for_script(window)
    result = window.document.script_result
    assert result is not None and result.ok, result.error if result else "no result"
    return result


def _key(survivor):
    name = "#" if survivor.label.startswith("#") else survivor.label
    return (survivor.kind, name, survivor.reason)


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_each_leak_example_lists_exactly_its_survivors(qtbot, window, wait_for_script, stem):
    _run_example(wait_for_script, window, stem)
    panel = window.leak_panel
    dock = window.findChild(QtWidgets.QDockWidget, "leakPanel")
    assert dock is not None and dock.widget() is panel
    survivors = panel.survivors
    assert sorted(_key(s) for s in survivors) == EXPECTED[stem]
    assert panel.row_count() == len(EXPECTED[stem])
    if not EXPECTED[stem]:
        assert "No leaks" in panel.summary.text()
        return
    assert f"{len(survivors)} recorded objects" in panel.summary.text()
    assert window.docks["leakPanel"].isVisible()  # raised when the script ended
    for row in range(panel.row_count()):
        _name, reason, held_by = panel.row_texts(row)
        assert reason in ("cycle", "referenced")
        assert HOLDER[stem] in held_by
    # every survivor drawn in the graph on screen carries a red leak badge
    scene = window.document.scene
    nodes, _colours, badges = scene.overlay_arrays("leak")
    flagged = {int(scene.node_ids[i]) for i in nodes}
    shown = {s.node_id for s in survivors if scene.index_of(s.node_id) >= 0}
    assert flagged == shown and shown
    # the badge names the cause: 'cycle' for a reference cycle, 'held' for a holder
    assert set(badges) == {"cycle" if HOLDER[stem] == "cycle" else "held"}
    assert window.graph_view.overlay_count >= len(shown)


def test_clicking_a_survivor_selects_and_centres_it(qtbot, window, wait_for_script):
    _run_example(wait_for_script, window, "strong_outputs")
    panel = window.leak_panel
    doc = window.document
    row = next(r for r in range(panel.row_count()) if panel.row_texts(r)[0].startswith("x "))
    node = panel.row_node(row)
    window.graph_view.zoom_by(4)
    assert panel.detail.isHidden()  # no row chosen yet: the list keeps the room
    panel.click_row(row)
    assert doc.selection == node
    assert not panel.detail.isHidden()
    index = doc.scene.index_of(node)
    centre = window.graph_view.view_box.viewRect().center()
    assert np.allclose((centre.x(), centre.y()), doc.scene.geometry.positions[index], atol=1e-6)
    assert "cycle" in panel.detail.toPlainText()
    assert "\n  -> " in panel.detail.toPlainText()  # one hop a line


def test_a_survivor_of_another_graph_switches_to_that_graph(qtbot, window, wait_for_script):
    result = _run_example(wait_for_script, window, "global_list")
    assert len(result.graphs) == 2
    panel = window.leak_panel
    doc = window.document
    row = next(r for r in range(panel.row_count()) if panel.row_texts(r)[0].startswith("h0"))
    assert "(in another graph)" in panel.row_texts(row)[0]
    panel.click_row(row)
    node = panel.row_node(row)
    assert doc.selection == node
    assert doc.scene.index_of(node) >= 0
    assert doc.title.endswith(result.graphs[0].title)
    assert window.script_panel.graphs.currentIndex() == 0
    # the other graph of the script is flagged from the same audit
    assert len(doc.scene.overlay_arrays("leak")[0]) == 6


def test_release_graph_audits_a_typed_expression(qtbot, window):
    assert window.editor_binding.run("x = 0.5\ny = tanh(x) * x ** 2")
    assert "Not audited yet" in window.leak_panel.summary.text()
    window.actions["release_graph"].trigger()
    assert window.document.leak_report is not None
    assert window.leak_panel.row_count() == 0
    assert "No leaks" in window.leak_panel.summary.text()
    assert window.docks["leakPanel"].isVisible()
    assert window.actions["release_graph"].shortcut().toString() == "Ctrl+L"
    # the graph stays on screen and can still be stepped through
    window.document.playback.to_end()
    assert window.graph_view.frame.step == window.document.playback.n_steps - 1
    # a new run is not audited until released again
    assert window.editor_binding.run("x = 0.5\ny = exp(x)")
    assert "Not audited yet" in window.leak_panel.summary.text()


def test_a_saved_trace_has_nothing_to_release(qtbot, window, tmp_path):
    path = tmp_path / "t.json"
    assert window.document.save_trace(path)
    assert window.open_path(path)
    window.actions["release_graph"].trigger()
    assert "saved trace" in window.leak_panel.summary.text()
    assert window.document.scene is not None


def test_the_leak_example_exports_with_its_badges(qapp, tmp_path, capsys):
    from PySide6 import QtGui

    from viewer.app import main
    from viewer.model.scene.colours import LIGHT

    out = tmp_path / "leak.png"
    assert main(["--export", str(out), "--yes", str(find_example("global_list").path)]) == 0
    assert "wrote" in capsys.readouterr().out
    image = QtGui.QImage(str(out)).convertToFormat(QtGui.QImage.Format.Format_RGBA8888)
    pixels = np.frombuffer(image.constBits(), dtype=np.uint8).reshape(
        image.height(), image.bytesPerLine() // 4, 4
    )[:, : image.width(), :3]
    red = np.all(pixels == np.array(LIGHT.error[:3], dtype=np.uint8), axis=-1)
    assert red.sum() > 500  # the badges and dashed rings of the flagged nodes


def test_the_command_line_runs_a_script_and_shows_its_graphs_and_leaks(qtbot):
    from viewer.app import build_window

    window = build_window(["--yes", str(find_example("strong_outputs").path)])
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.document.script_result is not None, timeout=120_000)
    qtbot.waitUntil(lambda: window.document.script_run is None, timeout=10_000)
    assert window.document.kind == "script" and window.document.scene is not None
    assert window.leak_panel.row_count() == len(EXPECTED["strong_outputs"])


def test_a_survivor_is_shown_in_the_audited_graphs_never_in_a_pass_recorded_alone(
    qtbot, window, wait_for_script, tmp_path
):
    """Past its first passes a long run records each pass on its own, numbering its nodes
    afresh: a survivor's id there is another node. The click goes to the audited graph."""
    script = tmp_path / "leaky.py"
    script.write_text(
        "import numpy as np\n"
        "import autodiff\n"
        "from autodiff import Variable\n"
        "autodiff.leaky_cache = []  # in a module that outlives the script (in its worker)\n"
        "x = Variable(np.array(2.0), name='x')\n"
        "for i in range(8):\n"
        "    h = x * x\n"
        "    h.name = f'h{i}'\n"
        "    if i == 0:\n"
        "        autodiff.leaky_cache.append(h)  # the first pass's h outlives the run\n"
        "    y = h * 3.0\n"
        "    y.backward()\n"
        "    x.cleargrad()\n"
    )
    doc = window.document
    doc.script_max_passes = 4
    assert window.open_path(script, confirm_scripts=False)
    wait_for_script(window)
    result = doc.script_result
    assert result is not None and result.ok, result.error
    last = result.graphs[-1]
    assert last.own_trace  # the graph shown is a pass recorded on its own
    panel = window.leak_panel
    row = next(r for r in range(panel.row_count()) if panel.row_texts(r)[0].startswith("h0"))
    assert "(in another graph)" in panel.row_texts(row)[0]  # listed, and said where
    node = panel.row_node(row)
    assert doc.scene.index_of(node) >= 0  # the same number names a node of this pass too
    assert not len(doc.scene.overlay_arrays("leak")[0])  # so it is not badged here
    panel.click_row(row)
    assert getattr(doc.trace, "base", doc.trace) is result.trace
    assert doc.selection == node and doc.trace.node(node)["name"] == "h0"


def test_a_short_panel_keeps_every_line_of_its_summary(qtbot):
    """Beside the Release button the summary wraps to six or more lines; in a short dock it
    keeps them all and the list below gives up its height (it scrolls)."""
    from types import SimpleNamespace

    from viewer.qt.panels.leaks import LeakPanel

    holder = QtWidgets.QWidget()
    qtbot.addWidget(holder)
    panel = LeakPanel(holder)
    survivors = [
        SimpleNamespace(
            label=f"v{i}", kind="variable", node_id=i, reason="referenced", held_by="global"
        )
        for i in range(10)
    ]
    panel.show_report(SimpleNamespace(survivors=survivors), title="global_list.py")
    panel.resize(240, 240)
    holder.show()
    qtbot.waitExposed(holder)
    summary = panel.summary
    probe = QtWidgets.QLabel(summary.text())  # the same text, with no minimum of its own
    probe.setWordWrap(True)
    probe.setFont(summary.font())
    probe.setContentsMargins(summary.contentsMargins())
    needed = probe.heightForWidth(summary.width())
    assert needed > 4 * summary.fontMetrics().height()  # several lines: the case at hand
    qtbot.waitUntil(lambda: summary.height() >= needed)
    assert panel.list.isVisible() and panel.list.height() >= 60
    # what a long text may ask of the window's height is three lines: the rest scrolls
    area = panel.summary_area
    assert area.minimumHeight() <= 3 * summary.fontMetrics().lineSpacing() + 4 < needed
    panel.resize(240, 150)
    qtbot.waitUntil(lambda: area.height() < needed)
    assert area.verticalScrollBar().maximum() > 0  # the lines it cannot show scroll into view
