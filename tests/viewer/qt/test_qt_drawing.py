"""What the graph view paints: labels keep one font through playback, and a partial repaint
(only the boxes a step changed) leaves the screen exactly as a full repaint would."""

import numpy as np
import pytest
from PySide6 import QtCore, QtGui

from viewer.model.document.document import Document
from viewer.qt.drawing.themes import DARK, LIGHT
from viewer.qt.graph.view import GraphView


def _scene(example):
    doc = Document()
    assert doc.load_example(example) is True
    return doc.scene


def _view(qtbot, scene, size=(600, 700)):
    view = GraphView()
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    qtbot.waitExposed(view)
    view.set_graph(scene.geometry)
    # These tests are about painting: the view must not pan while they compare pictures.
    view.set_follow(False)
    return view


class _PaintCounter(QtCore.QObject):
    def __init__(self, widget):
        super().__init__(widget)
        self.count = 0
        widget.installEventFilter(self)

    def eventFilter(self, watched, event):
        if event.type() == QtCore.QEvent.Type.Paint:
            self.count += 1
        return False


def _pixels(image: QtGui.QImage) -> np.ndarray:
    image = image.convertToFormat(QtGui.QImage.Format.Format_RGB32)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), -1)
    return rows[:, : 4 * image.width()].reshape(image.height(), image.width(), 4).copy()


def _on_screen(view) -> np.ndarray:
    """What the window shows now: the backing store, where partial repaints accumulate (a
    ``grab()`` would paint everything afresh)."""
    return _pixels(view.screen().grabWindow(view.winId()).toImage())


def _settle(qtbot, view, counter, change):
    """Apply ``change`` and wait until the viewport has repainted what it invalidated."""
    before = counter.count
    change()
    qtbot.waitUntil(lambda: counter.count > before, timeout=30_000)
    qtbot.wait(30)  # any further queued update of the same change


def _box(view, scene, node, inset=3):
    """Node ``node``'s box in viewport pixels, shrunk by ``inset`` (clear of borders)."""
    x, y = scene.geometry.positions[node]
    hw, hh = scene.geometry.half_sizes[node]
    top_left = view.mapFromScene(view.view_box.mapViewToScene(QtCore.QPointF(x - hw, y - hh)))
    bottom_right = view.mapFromScene(view.view_box.mapViewToScene(QtCore.QPointF(x + hw, y + hh)))
    return (
        slice(top_left.y() + inset, bottom_right.y() - inset),
        slice(top_left.x() + inset, bottom_right.x() - inset),
    )


def _lines(label):
    return label.count("\n") + 1 if label else 0


def test_a_node_gaining_a_line_leaves_the_other_labels_as_they_were(qtbot):
    scene = _scene("diamond")
    view = _view(qtbot, scene)
    view.set_graph(scene.geometry, label_lines=scene.max_label_lines())
    view.set_frame(scene.frame(-1))
    qtbot.wait(10)
    assert view.label_detail() == 2, "the labels must be drawn in full for this test"
    pairs = 0
    for step in range(-1, scene.n_steps - 1):
        before, after = scene.frame(step), scene.frame(step + 1)
        if max(map(_lines, after.labels)) <= max(map(_lines, before.labels)):
            continue
        # Nodes the step leaves alone: same text, same state, no ring around them.
        touched = set(before.current_nodes) | set(after.current_nodes)
        quiet = [
            i
            for i in range(scene.n_nodes)
            if before.labels[i]
            and before.labels[i] == after.labels[i]
            and before.state_codes[i] == after.state_codes[i]
            and i not in touched
        ]
        assert quiet, f"step {step + 1}: every node changed, nothing to compare"
        view.set_frame(before)
        first = _pixels(view.grab().toImage())
        size = view._labels.painted_pixel_size
        view.set_frame(after)
        second = _pixels(view.grab().toImage())
        assert view._labels.painted_pixel_size == size
        for node in quiet:
            box = _box(view, scene, node)
            assert np.array_equal(first[box], second[box]), (
                f"the label of {before.labels[node]!r} changed when step {step + 1} gave "
                "another node one more line"
            )
        pairs += 1
    assert pairs >= 1, "diamond.expr should have a step where a label gains a line"


def test_the_label_font_depends_on_the_zoom_and_the_graph_alone(qtbot):
    scene = _scene("diamond")
    view = _view(qtbot, scene)
    sizes = set()
    for step in range(-1, scene.n_steps):
        view.set_frame(scene.frame(step))
        view.grab()
        sizes.add(view._labels.painted_pixel_size)
    assert len(sizes) == 1 and sizes.pop() >= 8
    fewer = GraphView()
    qtbot.addWidget(fewer)
    fewer.resize(600, 700)
    fewer.set_graph(scene.geometry, label_lines=2)
    # a zoom at which both graphs draw full labels (the four-line one's text 9 px tall)
    ppu = view._labels.pixels_per_unit_for_text(9.0)
    assert view._labels.detail_at(ppu) == fewer._labels.detail_at(ppu) == 2
    # A graph whose labels never pass two lines can afford a bigger font at the same zoom.
    assert fewer._labels.font_pixel_size(ppu) > view._labels.font_pixel_size(ppu)
    view.zoom_by(2.0)
    qtbot.wait(10)
    assert view._labels.font_pixel_size(view.pixels_per_unit()) > view._labels.font_pixel_size(ppu)


@pytest.mark.parametrize(
    ("example", "theme", "zoom"),
    [
        pytest.param("diamond", LIGHT, 1.0, id="diamond-light"),
        pytest.param("diamond", DARK, 1.0, id="diamond-dark"),
        pytest.param("diamond", LIGHT, 2.5, id="diamond-zoomed-in"),
        pytest.param("nan_log", DARK, 2.5, id="nan_log-flagged-dark"),
        pytest.param("tanh_x2", LIGHT, 0.5, id="tanh_x2-zoomed-out"),
    ],
)
def test_a_partial_repaint_draws_what_a_full_repaint_draws(qtbot, example, theme, zoom):
    scene = _scene(example)
    view = _view(qtbot, scene)
    view.set_theme(theme)
    counter = _PaintCounter(view.viewport())
    _settle(qtbot, view, counter, lambda: view.set_frame(scene.frame(-1)))
    if zoom != 1.0:
        _settle(qtbot, view, counter, lambda: view.zoom_by(zoom))
        _settle(qtbot, view, counter, lambda: view.center_on(scene.n_nodes // 2))
    for step in range(scene.n_steps):
        _settle(qtbot, view, counter, lambda s=step: view.set_frame(scene.frame(s)))
        _settle(qtbot, view, counter, lambda s=step: view.set_selection(s % scene.n_nodes))
        partial = _on_screen(view)
        view.viewport().repaint()  # everything, at once
        full = _on_screen(view)
        assert partial.std() > 0, "nothing was drawn"
        differ = np.argwhere((partial != full).any(axis=2))
        assert len(differ) == 0, (
            f"step {step}: {len(differ)} pixels left over from earlier frames, "
            f"from (x, y) {tuple(differ[:, ::-1].min(0))} to {tuple(differ[:, ::-1].max(0))}"
        )


@pytest.mark.parametrize("zoom", [0.45, 0.7, 1.0])
def test_cleared_flags_leave_no_ring_or_badge_behind(qtbot, zoom):
    scene = _scene("diamond")
    view = _view(qtbot, scene)
    counter = _PaintCounter(view.viewport())
    _settle(qtbot, view, counter, lambda: view.set_frame(scene.frame(3)))
    if zoom != 1.0:
        _settle(qtbot, view, counter, lambda: view.zoom_by(zoom))
    magenta = np.array([[200, 0, 200, 255]] * 3, np.uint8)
    flags = (np.array([0, 2, 2]), magenta, ["1.2e-03", "leak", "NaN"])
    _settle(qtbot, view, counter, lambda: view.set_overlays(*flags))
    flagged = _on_screen(view)
    nothing = (np.zeros(0, np.intp), np.zeros((0, 4), np.uint8), [])
    _settle(qtbot, view, counter, lambda: view.set_overlays(*nothing))
    partial = _on_screen(view)
    view.viewport().repaint()
    full = _on_screen(view)
    assert not np.array_equal(flagged, full), "the flags were never drawn"
    assert np.array_equal(partial, full), "clearing the flags left some of them on screen"


def test_labels_that_do_not_fit_keep_the_value_and_the_gradient():
    from viewer.qt.graph.items import fitting_lines

    assert fitting_lines("1x1\n-0.3521\n∇ -0.5991", 2) == ["-0.3521", "∇ -0.5991"]
    assert fitting_lines("x\n1x3\n[1 2 3]\n∇ [4 5 6]", 3) == ["x", "[1 2 3]", "∇ [4 5 6]"]
    assert fitting_lines("x\n0.5\n∇ 3.3", 2) == ["x", "∇ 3.3"]
    assert fitting_lines("x\n0.5", 2) == ["x", "0.5"]
    assert fitting_lines("Mul", 1) == ["Mul"]


@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
def test_op_names_read_whole_in_their_boxes(qtbot, theme):
    """QA saw cnn_step's Functions as Con…, Pool…, Res…, Soft… at the first zoom: a graph's
    Function boxes are as wide as its longest op name needs (SoftmaxCrossEntropy included)."""
    doc = Document()
    result = doc.load_example("cnn_step").run()
    assert result.ok and doc.apply_script_result(result)
    scene = doc.scene
    ops = [doc.trace.node(int(n))["op"] for n in scene.node_ids[scene.geometry.is_function]]
    assert "SoftmaxCrossEntropy" in ops and "Pooling" in ops
    view = _view(qtbot, scene)
    view.set_theme(theme)
    view.fit()
    for step in (-1, scene.n_steps - 1):
        view.set_frame(scene.frame(step))
        view.grab()
        painted = list(view._labels._elided.values())
        assert painted and not [t for t in painted if "…" in t], painted


def test_dotted_names_cut_in_the_middle_keep_what_tells_them_apart(qtbot):
    """QA saw three of torch_resnet_block's parameters all read 'block.downsa…': a dotted name
    that does not fit keeps its last two parts (its end says which it is) and what fits of
    its start; other lines are cut at the end, as before."""
    from viewer.qt.graph.items import cut_name

    names = ["block.downsample.0.weight", "block.downsample.1.weight", "block.downsample.1.bias"]
    metrics = QtGui.QFontMetrics(QtGui.QFont())
    width = metrics.horizontalAdvance("block.downsa…")
    cut = [cut_name(n, metrics, width) for n in names]
    assert [c.split("…")[1] for c in cut] == ["0.weight", "1.weight", "1.bias"], cut
    assert all(c.startswith("b") and metrics.horizontalAdvance(c) <= width for c in cut), cut
    assert cut_name("block.bias", metrics, 1000) == "block.bias"  # fits: whole
    for line in ("0.70710678118654752440", "4x2x6x6x6x6x6x6x6x6x6x6x6x6"):
        assert cut_name(line, metrics, width) == metrics.elidedText(
            line, QtCore.Qt.TextElideMode.ElideRight, width
        )
