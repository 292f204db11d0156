"""Open modules: ``Document.expand`` of a scope inside a folded run opens it in one call and
``collapse`` closes it; each open scope is framed in the scene, titled with its name and
class, around its nodes, nested frames inside their parent's; the status says what changed."""

import numpy as np
import pytest
from scoped_nets import Net

import autodiff.functions as F
from autodiff.trace import record
from viewer.model.document.document import Document
from viewer.model.scene.frames import FRAME_TITLE_HEIGHT, frame_title

TIMES = "\N{MULTIPLICATION SIGN}"


@pytest.fixture(scope="module")
def residual_result():
    result = Document().load_example("residual_mlp").run()
    assert result.ok, result.error
    return result


@pytest.fixture
def residual(residual_result):
    doc = Document()
    assert doc.apply_script_result(residual_result)
    return doc


@pytest.fixture
def net_doc():
    np.random.seed(0)
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((5, 2)), rng.standard_normal((5, 1))
    with record() as trace:
        F.mean_squared_error(Net()(x), t).backward()
    doc = Document()
    doc.load_graph(trace, "net", "trace")
    return doc


def modules(scene):
    return {scene.names[i]: i for i, k in enumerate(scene.kinds) if k == "module"}


def shown_functions_in(doc, path):
    """The scopes of the Functions the scene shows as themselves, under ``path``."""
    scene = doc.scene
    scopes = [
        doc.trace.node(int(scene.node_ids[i]))["scope"]
        for i in range(scene.n_nodes)
        if scene.kinds[i] == "function"
    ]
    return [s for s in scopes if s == path or s.startswith(path + "/")]


def frames_by_path(scene):
    return {f.path: f for f in scene.geometry.frames}


def scope_of(doc, i):
    """The scope node ``i`` of the scene is drawn in: a Function's, where it ran; a variable's,
    where it was made; a box's, the scope around it; a Parameter's, the innermost scope that
    holds every Function shown using it."""
    scene = doc.scene
    box = scene.module(i)
    if box is not None:
        return box.path.rpartition("/")[0]
    node = doc.trace.node(int(scene.node_ids[i]))
    if not node.get("parameter"):
        return node["scope"] or ""
    uses = [scope_of(doc, int(v)).split("/") for u, v in scene.edges.tolist() if u == i]
    common = uses[0]
    for parts in uses[1:]:
        n = 0
        while n < min(len(common), len(parts)) and common[n] == parts[n]:
            n += 1
        common = common[:n]
    return "/".join(common)


def members(doc, path):
    """The node indexes of the scene that belong to scope ``path``: the Functions that ran
    in it, the variables they made, the Parameters only it uses, the boxes of the scopes in
    it."""
    out = []
    for i in range(doc.scene.n_nodes):
        scope = scope_of(doc, i)
        if scope == path or scope.startswith(path + "/"):
            out.append(i)
    return out


def overlap(a, b):
    """Whether rectangles ``a`` and ``b`` (x0, y0, x1, y1) share more than an edge."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def assert_frames_clear(doc):
    """Every open frame holds its members and nothing else, and two frames are nested or
    apart: no frame overlaps a node or a frame outside it."""
    scene = doc.scene
    frames = scene.geometry.frames
    assert frames
    pos, half = scene.geometry.positions, scene.geometry.half_sizes
    boxes = np.column_stack([pos - half, pos + half])
    for f in frames:
        mine = set(members(doc, f.path))
        for i, box in enumerate(boxes.tolist()):
            if i in mine:
                assert inside(box, f.rect), (f.path, scene.names[i])
            else:
                assert not overlap(box, f.rect), (f.path, scene.names[i])
        for g in frames:
            if g.path.startswith(f.path + "/"):
                assert inside(g.rect, f.rect), (g.path, f.path)
            elif g is not f and not f.path.startswith(g.path + "/"):
                assert not overlap(g.rect, f.rect), (g.path, f.path)


def inside(inner, outer):
    """Whether rectangle ``inner`` lies strictly inside ``outer`` (x0, y0, x1, y1)."""
    return (
        inner[0] > outer[0] and inner[1] > outer[1] and inner[2] < outer[2] and inner[3] < outer[3]
    )


def test_expand_opens_a_scope_inside_a_folded_run_in_one_call(residual):
    doc = residual
    said = []
    doc.status_changed.connect(said.append)
    assert f"Block {TIMES} 6" in modules(doc.scene)  # the folded start
    assert shown_functions_in(doc, "ResidualMLP/b2") == []
    assert doc.expand("ResidualMLP/b2")
    assert shown_functions_in(doc, "ResidualMLP/b2")  # b2's own nodes, in one call
    assert shown_functions_in(doc, "ResidualMLP/b2/fc1")
    boxes = modules(doc.scene)
    assert "b2" not in boxes and {"b0", "b1", "b3", "b4", "b5"} <= set(boxes)
    assert said[-1].startswith(f"Unfolded the run Block {TIMES} 6 and expanded ResidualMLP/b2: ")
    assert not doc.expand("ResidualMLP/b2")  # open already: nothing to do
    assert doc.collapse("ResidualMLP/b2")
    assert shown_functions_in(doc, "ResidualMLP/b2") == []
    assert "b2" in modules(doc.scene)
    assert said[-1].startswith("Collapsed ResidualMLP/b2: ")
    assert not doc.collapse("ResidualMLP/b2")  # a box already
    assert doc.expand("ResidualMLP/b2")  # and open again, the run unfolded already
    assert said[-1].startswith("Expanded ResidualMLP/b2: ")
    assert shown_functions_in(doc, "ResidualMLP/b2/fc2")


def test_expand_opens_every_box_above_the_scope(net_doc):
    doc = net_doc
    doc.set_depth(0)
    assert list(modules(doc.scene)) == ["Net"]
    assert doc.expand("Net/b1/fc2")
    assert shown_functions_in(doc, "Net/b1/fc2")
    assert {"inp", "b0", "b2", "b3", "out", "fc1"} <= set(modules(doc.scene))


def test_unfolding_a_run_says_so_by_the_runs_name(residual):
    doc = residual
    said = []
    doc.status_changed.connect(said.append)
    run = modules(doc.scene)[f"Block {TIMES} 6"]
    assert "double-click or Enter: unfold into one box per repeat" in (
        doc.scene.node_tooltip(run, -1)
    )
    assert doc.unfold("ResidualMLP/b0")
    b0 = modules(doc.scene)["b0"]
    assert "double-click or Enter: expand" in doc.scene.node_tooltip(b0, -1).split("\n")
    assert said[-1].startswith(f"Unfolded the run Block {TIMES} 6: ")
    assert {"b0", "b5"} <= set(modules(doc.scene))
    assert doc.fold("ResidualMLP/b3")
    assert said[-1].startswith(f"Folded the run Block {TIMES} 6: ")


def test_an_expanded_scope_is_framed_with_its_name_and_class_around_its_nodes(residual):
    doc = residual
    assert "ResidualMLP/b0" not in frames_by_path(doc.scene)  # folded: no frame
    doc.unfold("ResidualMLP/b0")
    assert "ResidualMLP/b0" not in frames_by_path(doc.scene)  # a box: no frame
    doc.expand("ResidualMLP/b0")
    scene = doc.scene
    frames = frames_by_path(scene)
    b0 = frames["ResidualMLP/b0"]
    assert b0.title == "b0 \N{MIDDLE DOT} Block"
    assert "b0" in b0.title and "Block" in b0.title
    assert frames["ResidualMLP/b0/fc1"].title == "fc1 \N{MIDDLE DOT} Linear"
    assert frames["ResidualMLP"].title == "ResidualMLP"  # the class is the name
    # the closed repeats have no frame
    assert not any(p.startswith(("ResidualMLP/b1", "ResidualMLP/b5")) for p in frames)
    pos, half = scene.geometry.positions, scene.geometry.half_sizes
    for path, frame in frames.items():
        mine = members(doc, path)
        assert mine, path
        x0, y0, x1, y1 = frame.rect
        lo, hi = (pos[mine] - half[mine]).min(axis=0), (pos[mine] + half[mine]).max(axis=0)
        assert x0 < lo[0] and y0 < lo[1] and hi[0] < x1 and hi[1] < y1, path
        assert lo[1] - y0 >= FRAME_TITLE_HEIGHT  # the title's strip is above the nodes
    # nested frames nest, the outermost listed first
    assert inside(frames["ResidualMLP/b0/fc1"].rect, b0.rect)
    assert inside(frames["ResidualMLP/b0/fc2"].rect, b0.rect)
    assert inside(b0.rect, frames["ResidualMLP"].rect)
    depths = [f.depth for f in scene.geometry.frames]
    assert depths == sorted(depths) and depths[0] == 1
    # the view fits the frames too
    bx0, by0, bx1, by1 = scene.geometry.bounds()
    assert inside(frames["ResidualMLP"].rect, (bx0 - 1e-9, by0 - 1e-9, bx1 + 1e-9, by1 + 1e-9))
    doc.collapse("ResidualMLP/b0")
    assert "ResidualMLP/b0" not in frames_by_path(doc.scene)
    assert "ResidualMLP/b0/fc1" not in frames_by_path(doc.scene)


def test_open_frames_keep_clear_of_each_other_and_of_what_they_do_not_hold(net_doc, residual):
    net_doc.expand_all()
    assert_frames_clear(net_doc)
    # a layer's Parameters are drawn in its frame
    scene = net_doc.scene
    weights = [i for i in range(scene.n_nodes) if scene.names[i].startswith("b1.fc2.")]
    assert len(weights) == 2, [scene.names[i] for i in range(scene.n_nodes)]
    fc2 = frames_by_path(scene)["Net/b1/fc2"].rect
    pos, half = scene.geometry.positions, scene.geometry.half_sizes
    for i in weights:
        assert inside((*(pos[i] - half[i]), *(pos[i] + half[i])), fc2)
    residual.unfold("ResidualMLP/b0")
    residual.expand("ResidualMLP/b0")
    assert_frames_clear(residual)


def test_a_collapsed_child_is_a_box_inside_its_parents_frame(net_doc):
    doc = net_doc
    doc.expand_all()
    doc.collapse("Net/b2/fc1")
    scene = doc.scene
    frames = frames_by_path(scene)
    assert "Net/b2/fc1" not in frames and "Net/b2/fc2" in frames
    box = modules(scene)["fc1"]
    x, y = scene.geometry.positions[box]
    hw, hh = scene.geometry.half_sizes[box]
    assert inside((x - hw, y - hh, x + hw, y + hh), frames["Net/b2"].rect)
    doc.set_depth(0)  # one box: nothing open
    assert doc.scene.geometry.frames == ()


def test_a_graph_without_scopes_has_no_frames():
    from viewer.model.expression.program import evaluate

    doc = Document()
    doc.load_trace(evaluate("x = 0.5\ny = square(exp(square(x)))").trace)
    assert doc.scene.geometry.frames == ()


def test_the_title_names_the_class_only_when_it_says_more():
    assert frame_title("b0", "Block") == "b0 \N{MIDDLE DOT} Block"
    assert frame_title("MLP", "MLP") == "MLP"
    assert frame_title("attention", "") == "attention"


def test_a_collapsed_model_leaves_no_empty_rows_between_its_box_and_what_it_feeds(residual):
    """Stacking modules moves their consumers down; a leaf that feeds only its own frame (a
    target, a parameter) follows them, so that closing the modules leaves no long edge
    holding empty rows open."""
    doc = residual
    for expand in (False, True):
        if expand:
            doc.expand_all()
        for depth in (0, 1):
            doc.set_depth(depth)
            scene = doc.scene
            rows = np.unique(np.round(scene.geometry.positions[:, 1], 3))
            assert rows[-1] - rows[0] <= scene.n_nodes, (expand, depth, rows)


def test_a_long_edge_runs_straight_down_through_the_frames_it_crosses():
    """torch_mlp: the input's edge runs down through MLP, hidden and ``0 · Linear`` to the
    first addmm, beside the weight's transpose; frames push the nodes beside it apart layer
    by layer, and its bends once zig-zagged around them. Every long edge's bends are now on
    one vertical (the layout allows it for all of this graph's)."""
    pytest.importorskip("torch")
    result = Document().load_example("torch_mlp").run()
    assert result.ok, result.error
    doc = Document()
    assert doc.apply_script_result(result)
    geometry = doc.scene.geometry
    assert geometry.frames
    long_edges = 0
    for e in range(geometry.n_edges):
        points = geometry.edge_points[geometry.edge_offsets[e] : geometry.edge_offsets[e + 1]]
        bends = points[1:-1]
        if len(bends) >= 2:
            long_edges += 1
            assert np.ptp(bends[:, 0]) < 1e-6, (e, bends[:, 0].tolist())
    assert long_edges >= 3  # the input's, and each Linear's input beside its transpose
    assert_frames_clear(doc)  # (straightened within what keeps the frames clear)
