"""Module scopes in the viewer's model: the scope tree, depths, collapse and expand, folded
repeats, playback through a collapsed module, and graphs without scopes as before."""

import itertools

import numpy as np
import pytest
from scoped_nets import Net

import autodiff.functions as F
from autodiff.layers import Linear
from autodiff.models import MLP, Model
from autodiff.trace import record
from viewer.model.document.document import Document
from viewer.model.expression.program import evaluate
from viewer.model.scene.overlays import Overlay
from viewer.model.scopes.tree import MAX_FIRST_SCREEN

TIMES = "\N{MULTIPLICATION SIGN}"


def record_step(model, in_size=2):
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((5, in_size)), rng.standard_normal((5, 1))
    with record() as trace:
        loss = F.mean_squared_error(model(x), t)
        loss.backward()
    return trace


def open_doc(trace):
    doc = Document()
    doc.load_graph(trace, "net", "trace")
    assert doc.last_error is None
    return doc


@pytest.fixture
def net_doc():
    np.random.seed(0)
    return open_doc(record_step(Net()))


def modules(scene):
    return {scene.names[i]: i for i, k in enumerate(scene.kinds) if k == "module"}


def n_total(trace):
    return len(trace.variables) + len(trace.functions)


def test_the_tree_has_every_instance_nested():
    doc = open_doc(record_step(Net()))
    (top,) = doc.scope_tree()
    assert (top.path, top.name, top.cls, top.depth) == ("Net", "Net", "Net", 1)
    assert [c.path for c in top.children] == [
        "Net/inp",
        "Net/b0",
        "Net/b1",
        "Net/b2",
        "Net/b3",
        "Net/out",
    ]
    b0 = top.children[1]
    assert (b0.name, b0.cls, b0.depth) == ("b0", "Block", 2)
    assert [(c.name, c.cls, c.depth) for c in b0.children] == [
        ("fc1", "Linear", 3),
        ("fc2", "Linear", 3),
    ]
    assert all(not c.children for c in b0.children)
    assert isinstance(b0.collapsed, bool)
    # the four blocks repeat: they make one run, folded on its head
    assert (b0.fold_count, b0.folded) == (4, True)
    assert all(c.fold_head == b0.scope_id for c in top.children[1:5])


def test_set_depth_collapses_everything_deeper(net_doc):
    doc = net_doc
    doc.expand_all()
    assert doc.scene.n_nodes == n_total(doc.trace)
    assert "module" not in doc.scene.kinds
    counts = []
    for depth in (0, 1, 2, 3):
        assert doc.set_depth(depth)
        counts.append(doc.scene.n_nodes)
        for node in _walk(doc.scope_tree()):
            assert node.collapsed == (node.depth > depth)
    assert counts == sorted(counts) and counts[0] < counts[-1]
    assert counts[-1] == n_total(doc.trace)  # nothing deeper than 3: every node shows
    doc.set_depth(0)
    assert modules(doc.scene) == {"Net": modules(doc.scene)["Net"]}
    # x, t, the output of Net, the loss and its Function, and the box
    assert doc.scene.kinds.count("module") == 1


def _walk(nodes):
    for n in nodes:
        yield n
        yield from _walk(n.children)


def test_expand_and_collapse_one_module(net_doc):
    doc = net_doc
    doc.set_depth(1)
    doc.unfold("Net/b0")
    boxes = modules(doc.scene)
    assert set(boxes) == {"inp", "b0", "b1", "b2", "b3", "out"}
    before = doc.scene.n_nodes
    assert doc.expand("Net/b1")
    boxes = modules(doc.scene)
    assert "b1" not in boxes and {"fc1", "fc2"} <= set(boxes)
    assert doc.scene.n_nodes > before
    tree = {n.path: n for n in _walk(doc.scope_tree())}
    assert not tree["Net/b1"].collapsed and tree["Net/b1/fc1"].collapsed
    assert doc.collapse("Net/b1")
    assert doc.scene.n_nodes == before
    assert "b1" in modules(doc.scene)


def test_a_collapsed_module_is_one_node_named_after_its_path(net_doc):
    doc = net_doc
    doc.expand_all()
    doc.collapse("Net/b2/fc1")
    scene = doc.scene
    (i,) = [i for i, k in enumerate(scene.kinds) if k == "module"]
    assert scene.names[i] == "fc1"
    # every Function that ran in it is drawn as the box
    inside = [f for f in doc.trace.functions if doc.trace.node(f)["scope"] == "Net/b2/fc1"]
    assert inside and all(scene.index_of(f) == i for f in inside)
    assert scene.module(i).path == "Net/b2/fc1"


def test_the_module_label_says_class_shapes_parameters_and_gradient_norm(net_doc):
    doc = net_doc
    doc.set_depth(1)
    scene = doc.scene
    i = modules(scene)["inp"]
    last = scene.n_steps - 1
    lines = scene.frame(last).labels[i].split("\n")
    assert lines[0] == "inp \N{MIDDLE DOT} Linear"
    assert lines[1] == "5x2 \N{RIGHTWARDS ARROW} 5x3"
    assert lines[2] == "2 params (9 values)"  # W 2x3 and b 3
    params = scene.module(i).params
    expected = np.sqrt(sum(doc.trace.grad_at(int(p), last).norm ** 2 for p in params))
    assert "backward" in lines[3]  # the last backward step ran in 'inp'
    assert f"{expected:.3g}" in lines[3]
    assert scene.frame(-1).labels[i].split("\n")[3] == "not run yet"


def test_playback_lights_the_module_of_a_hidden_function(net_doc):
    doc = net_doc
    doc.set_depth(1)
    scene = doc.scene
    i = modules(scene)["out"]
    inside = {f for f in doc.trace.functions if doc.trace.node(f)["scope"] == "Net/out"}
    seen = {"forward": 0, "backward": 0}
    for k, step in enumerate(doc.trace.steps):
        if step.function not in inside:
            continue
        doc.playback.seek(k)
        frame = doc.frame()
        assert frame.current_function == i
        assert i in frame.current_nodes
        mark = "\N{BLACK RIGHT-POINTING TRIANGLE} forward"
        if step.phase == "backward":
            mark = "\N{BLACK LEFT-POINTING TRIANGLE} backward"
        assert mark in frame.labels[i]
        seen[step.phase] += 1
        # the box's edges are the step's: in from its input, out to its output
        assert len(frame.active_edges) == 2
        assert all(i in scene.edges[e] for e in frame.active_edges)
    assert seen["forward"] > 0 and seen["backward"] > 0
    # every step still plays
    assert doc.playback.n_steps == len(doc.trace.steps)


def test_the_edges_of_a_box_carry_the_gradients_across_its_boundary(net_doc):
    doc = net_doc
    doc.set_depth(1)
    scene = doc.scene
    i = modules(scene)["out"]
    (into,) = [e for e in range(scene.n_edges) if scene.edges[e, 1] == i]
    h = int(scene.edges[into, 0])  # the block run's output, the input of 'out'
    assert scene.kinds[h] == "variable"
    h_id = scene.node_id(h)
    inside = {f for f in doc.trace.functions if doc.trace.node(f)["scope"] == "Net/out"}
    # the backward step inside 'out' that hands h its gradient
    k = next(
        s.index
        for s in doc.trace.steps
        if s.phase == "backward" and s.function in inside and h_id in s.inputs
    )
    frame = scene.frame(k)
    assert into in frame.active_edges
    assert h in frame.current_nodes
    assert "\N{NABLA}" in frame.labels[h]
    assert "\N{NABLA}" not in scene.frame(k - 1).labels[h]


def test_repeats_fold_into_one_box_and_unfold(net_doc):
    doc = net_doc
    scene = doc.scene  # as opened: the four blocks are one box
    assert f"Block {TIMES} 4" in modules(scene)
    box = modules(scene)[f"Block {TIMES} 4"]
    assert scene.frame(-1).labels[box].startswith(f"Block {TIMES} 4")
    inside = [f for f in doc.trace.functions if doc.trace.node(f)["scope"].startswith("Net/b")]
    assert all(scene.index_of(f) == box for f in inside)
    assert doc.expand("Net/b0")  # expanding a repeat unfolds its run and opens it
    assert f"Block {TIMES} 4" not in modules(doc.scene)
    assert "b0" not in modules(doc.scene) and "b1" in modules(doc.scene)
    assert doc.fold("Net/b3")
    assert f"Block {TIMES} 4" in modules(doc.scene)
    assert doc.unfold("Net/b2")
    assert not any(TIMES in n for n in modules(doc.scene))


def test_an_unfolded_run_shows_one_box_per_repeat_and_one_opens_alone(net_doc):
    doc = net_doc  # opened at the deepest depth: the blocks' contents would all show
    assert doc.unfold("Net/b0")  # "Block x 4" opens into four boxes
    assert [n for n in modules(doc.scene) if n.startswith("b")] == ["b0", "b1", "b2", "b3"]
    assert doc.expand("Net/b2")
    boxes = modules(doc.scene)
    assert "b2" not in boxes and {"b0", "b1", "b3"} <= set(boxes)
    scene = doc.scene
    opened = {
        doc.trace.node(int(scene.node_ids[i]))["scope"]
        for i in range(scene.n_nodes)
        if scene.kinds[i] == "function"
    }
    assert "Net/b2/fc1" in opened and "Net/b1/fc1" not in opened


def test_the_default_depth_keeps_the_first_screen_small():
    np.random.seed(0)
    trace = record_step(MLP([4] * 60 + [1]), in_size=3)
    assert n_total(trace) > MAX_FIRST_SCREEN
    doc = open_doc(trace)
    assert doc.scene.n_nodes <= MAX_FIRST_SCREEN
    depth = max((n.depth for n in _walk(doc.scope_tree()) if not n.collapsed), default=0)
    doc.set_depth(depth + 1)
    assert doc.scene.n_nodes > MAX_FIRST_SCREEN


def test_a_small_graph_opens_whole():
    np.random.seed(0)
    trace = record_step(MLP([3, 1]), in_size=2)
    doc = open_doc(trace)
    assert doc.scene.n_nodes == n_total(trace)
    assert "module" not in doc.scene.kinds


def test_graphs_without_scopes_show_as_before():
    ev = evaluate("x = 0.5\ny = square(exp(square(x)))")
    doc = Document()
    doc.load_trace(ev.trace)
    assert doc.scene.scopes is None
    assert doc.scope_tree() == []
    assert doc.scene.n_nodes == 7
    assert not doc.set_depth(0) and not doc.expand("x") and not doc.reveal(0)
    with record() as trace:  # recorded without any Layer: no scope
        x = np.ones(3)
        from autodiff import Variable

        y = F.sum(F.exp(Variable(x)))
        y.backward()
    doc.load_trace(trace)
    assert doc.scene.scopes is None and doc.scene.n_nodes == n_total(trace)


def test_reveal_opens_every_box_above_a_node(net_doc):
    doc = net_doc
    doc.set_depth(0)
    f = next(f for f in doc.trace.functions if doc.trace.node(f)["scope"] == "Net/b2/fc1")
    assert doc.scene.kinds[doc.scene.index_of(f)] == "module"
    assert doc.reveal(f)
    assert doc.scene.kinds[doc.scene.index_of(f)] == "function"
    assert not doc.reveal(f)  # already shown
    tree = {n.path: n for n in _walk(doc.scope_tree())}
    assert not tree["Net"].collapsed and not tree["Net/b2"].folded
    assert tree["Net/b1"].collapsed  # the neighbours stay closed
    np.random.seed(0)
    doc = open_doc(record_step(Net()))  # folded, with the blocks' contents expanded
    f = next(f for f in doc.trace.functions if doc.trace.node(f)["scope"] == "Net/b3/fc2")
    assert doc.reveal(f) and doc.scene.kinds[doc.scene.index_of(f)] == "function"
    assert {"b0", "b1", "b2"} <= set(modules(doc.scene))  # only the block holding it opened
    w = next(v for v in doc.trace.variables if doc.trace.node(v)["parameter"])
    doc.set_depth(0)
    assert doc.reveal(w) and doc.scene.kinds[doc.scene.index_of(w)] == "variable"


def test_selection_and_overlays_land_on_the_box(net_doc):
    doc = net_doc
    doc.set_depth(0)
    scene = doc.scene
    box = modules(scene)["Net"]
    f = next(f for f in doc.trace.functions if doc.trace.node(f)["scope"] == "Net/b1/fc2")
    scene.set_overlay(f, Overlay("leak", "held", (255, 0, 0, 255), "held by a list"))
    nodes, _, badges = scene.overlay_arrays("leak")
    assert list(nodes) == [box] and badges == ["held"]
    assert "[leak] held by a list" in scene.node_tooltip(box, -1)
    doc.select(f)
    assert doc.selection == f and scene.index_of(doc.selection) == box
    doc.expand("Net")  # the overlays follow to the next scene
    nodes, _, _ = doc.scene.overlay_arrays("leak")
    assert list(nodes) == [doc.scene.index_of(f)]
    assert doc.scene.kinds[nodes[0]] == "module"  # inside the folded blocks


def test_expanding_moves_only_what_lies_below_or_beside(net_doc):
    doc = net_doc
    doc.set_depth(1)
    doc.unfold("Net/b0")
    scene = doc.scene
    b2 = modules(scene)["b2"]
    y2 = scene.geometry.positions[b2, 1]
    keys = dict(zip(scene.scopes.keys.tolist(), scene.geometry.positions.tolist(), strict=True))
    changed = []
    doc.scene_changed.connect(changed.append)
    assert doc.expand("Net/b2")
    after = doc.scene
    assert changed == [doc]
    moved_below = 0
    for key, (x, y) in zip(after.scopes.keys.tolist(), after.geometry.positions, strict=True):
        if key not in keys:
            assert y >= y2 - 1e-9  # the contents sit where the box was, and below
            continue
        ox, oy = keys[key]
        if oy < y2 - 1e-9:
            assert (x, y) == (ox, oy)  # above the box: nothing moves
        elif oy > y2 + 1e-9:
            assert x == ox and y > oy
            moved_below += 1
    assert moved_below > 0
    assert doc.collapse("Net/b2")  # and closing it puts them back
    back = dict(
        zip(doc.scene.scopes.keys.tolist(), doc.scene.geometry.positions.tolist(), strict=True)
    )
    assert back.keys() == keys.keys()
    assert all(np.allclose(back[k], keys[k]) for k in keys if keys[k][1] != y2)


def test_scope_path_of_a_node(net_doc):
    doc = net_doc
    f = next(f for f in doc.trace.functions if doc.trace.node(f)["scope"] == "Net/b1/fc2")
    assert doc.scope_path_of(f) == "Net/b1/fc2"
    w = next(v for v in doc.trace.variables if doc.trace.node(v)["parameter"])
    assert doc.scope_path_of(w) == "Net/inp"
    assert doc.collapse_siblings("Net/b1")
    tree = {n.path: n for n in _walk(doc.scope_tree())}
    assert tree["Net/b0"].collapsed and tree["Net/out"].collapsed
    assert not tree["Net/b1"].collapsed


def test_a_box_keeps_its_module_colour_at_every_step(net_doc):
    doc = net_doc
    doc.set_depth(1)
    scene = doc.scene
    boxes = list(modules(scene).values())
    for k in range(-1, scene.n_steps):
        frame = scene.frame(k)
        expected = scene.palette.module_fill[frame.state_codes[boxes]]
        assert (frame.fill[boxes] == expected).all(), k


class Twice(Model):
    def __init__(self):
        super().__init__()
        self.l = Linear(2, in_size=2)

    def forward(self, x):
        return F.sum(self.l(F.tanh(self.l(x))))


def test_a_layer_called_twice_is_two_instances_of_one_path():
    np.random.seed(0)
    with record() as trace:
        y = Twice()(np.ones((3, 2)))
        y.backward()
    doc = open_doc(trace)
    (top,) = doc.scope_tree()
    assert [c.path for c in top.children] == ["Twice/l", "Twice/l"]
    doc.set_depth(1)
    scene = doc.scene
    names = [scene.names[i] for i, k in enumerate(scene.kinds) if k == "module"]
    assert names == ["l", "l"]  # a Tanh runs between them: not a run of repeats
    # the weight is used by both calls: outside either box, it stays visible
    w = next(v for v in trace.variables if trace.node(v)["parameter"])
    assert scene.kinds[scene.index_of(w)] == "variable"
    assert doc.expand("Twice/l")
    assert "module" not in doc.scene.kinds


def test_a_saved_trace_opens_with_its_modules(net_doc, tmp_path):
    doc = net_doc
    path = tmp_path / "net.json"
    assert doc.save_trace(path)
    again = Document()
    assert again.load_path(path)
    assert again.scene.scopes is not None
    assert f"Block {TIMES} 4" in modules(again.scene)
    assert [n.path for n in again.scope_tree()] == ["Net"]


def test_an_unknown_path_is_an_error_that_changes_nothing(net_doc):
    doc = net_doc
    scene = doc.scene
    errors = []
    doc.error_raised.connect(errors.append)
    assert not doc.expand("Net/nope")
    assert not doc.collapse("Nope")
    assert len(errors) == 2 and "Net/b0" in str(errors[0])
    assert doc.scene is scene


def test_a_top_box_named_by_its_class_says_it_once(net_doc):
    net_doc.set_depth(0)
    scene = net_doc.scene
    box = modules(scene)["Net"]
    assert scene.frame(-1).labels[box].split("\n")[0] == "Net"
    net_doc.set_depth(1)
    scene = net_doc.scene
    assert scene.frame(-1).labels[modules(scene)["inp"]].split("\n")[0] == "inp · Linear"


def test_the_inspector_describes_a_selected_box_as_the_module(net_doc):
    doc = net_doc
    doc.set_depth(1)
    scene = doc.scene
    inp = modules(scene)["inp"]
    doc.select_index(inp)
    info = doc.inspect()
    assert info.kind == "module" and info.title == "Net/inp (Linear module)"
    rows = dict(info.as_rows())
    assert rows["path"] == "Net/inp" and rows["class"] == "Linear"
    assert rows["parameters"] == "2 (9 values)" and rows["ran"] == "not yet"
    assert [r.label.split(" #")[0] for r in info.inputs] == ["variable"]  # x, unnamed
    assert len(info.outputs) == 1
    doc.playback.to_end()
    rows = dict(doc.inspect().as_rows())
    assert rows["ran"] == "backward"
    norm = scene.parameter_grad_norm(inp, doc.playback.index)
    assert rows["‖∇θ‖"] == f"{norm:.4g}"
    folded = modules(scene)[f"Block {TIMES} 4"]
    doc.select_index(folded)
    assert dict(doc.inspect().as_rows())["repeats"] == "4 consecutive instances, folded"


PRINTS_NORMS = """
import numpy as np
import autodiff.functions as F
from autodiff import Layer, Model
from autodiff.layers import Linear
from autodiff.optimizers import SGD


class Block(Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = Linear(4, in_size=4)
        self.fc2 = Linear(4, in_size=4)

    def forward(self, x):
        return x + self.fc2(F.tanh(self.fc1(x)))


class Net(Model):
    def __init__(self):
        super().__init__()
        self.inp = Linear(4, in_size=2)
        self.b0, self.b1, self.b2 = Block(), Block(), Block()
        self.out = Linear(1, in_size=4)

    def forward(self, x):
        return self.out(self.b2(self.b1(self.b0(self.inp(x)))))


def norm(params):
    return np.sqrt(sum(float((p.grad.data.astype(np.float64) ** 2).sum()) for p in params))


np.random.seed(1)
x = np.random.randn(6, 2)
t = np.random.randn(6, 1)
net = Net()
opt = SGD(lr=0.1).setup(net)
for step in range(3):
    loss = F.mean_squared_error(net(x), t)
    net.cleargrads()
    loss.backward()
    blocks = [p for b in (net.b0, net.b1, net.b2) for p in b.params()]
    print(f"step {step} blocks {norm(blocks):.4g} inp {norm(net.inp.params()):.4g}")
    opt.update()
"""


def test_a_boxs_gradient_norm_is_what_the_program_printed_at_each_iteration(tmp_path):
    path = tmp_path / "norms.py"
    path.write_text(PRINTS_NORMS)
    doc = Document()
    assert doc.run_script(path)
    result = doc.script_result
    printed = [line.split() for line in result.stdout.splitlines()]
    assert len(printed) == len(result.graphs) == 3
    for k, words in enumerate(printed):
        assert doc.show_script_graph(k)
        doc.set_depth(1)
        doc.playback.to_end()
        for name, value in ((f"Block {TIMES} 3", words[3]), ("inp", words[5])):
            doc.select_index(modules(doc.scene)[name])
            assert dict(doc.inspect().as_rows())["‖∇θ‖"] == value, (k, name)


def test_a_file_nesting_scopes_thousands_deep_opens_without_a_walk_per_depth(tmp_path, monkeypatch):
    """A hostile trace can nest scopes as deep as its size allows; choosing the first
    screen's depth is a binary search (it once counted every depth: a minute for 4000)."""
    import json

    from autodiff import Variable
    from autodiff.trace.formats.json_io import trace_to_dict
    from viewer.model.scopes.tree import ScopeModel

    x = Variable(np.ones(2), name="x")
    with record() as trace:
        (x * 2).sum().backward()
    data = trace_to_dict(trace)
    depth = 4000
    names = ["<b>s</b>"] + ["s"] * (depth - 1)  # paths within the loader's 10 000 characters
    data["scopes"] = [{"name": n, "cls": "C", "parent": i} for i, n in enumerate(names)]
    for node in data["graph"]["nodes"]:
        node["scope"] = depth if node["kind"] == "function" else 0
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(data))
    counted = []
    count = ScopeModel._count_visible
    monkeypatch.setattr(ScopeModel, "_count_visible", lambda self: counted.append(1) or count(self))
    doc = Document()
    assert doc.load_path(path) and doc.last_error is None
    assert len(counted) <= 14  # log2(4000) + 2
    (top,) = doc.scope_tree()
    assert top.name == "<b>s</b>"  # a name from a file, kept as plain text
    assert "module" not in doc.scene.kinds  # 6 nodes: it opens whole, at depth 4000
    assert doc.set_depth(0) and doc.scene.kinds.count("module") == 1


def test_a_state_made_by_one_call_and_used_by_it_and_the_next_makes_no_cycle():
    """An RNN-like model: each call makes a state that the call itself and the next call
    use. Collapsed, the state stays shown (it leaves the box), and its use inside the box
    that made it is an inner edge, not box -> state -> box (which was a cycle)."""
    from autodiff.layers import Layer, Linear
    from autodiff.models import Model

    class Cell(Layer):
        def __init__(self):
            super().__init__()
            self.x2h = Linear(3, in_size=2)
            self.h2h = Linear(3, in_size=3, nobias=True)

        def forward(self, x, h):
            return F.tanh(self.x2h(x) if h is None else self.x2h(x) + self.h2h(h))

    class Stepper(Model):
        def __init__(self):
            super().__init__()
            self.cell = Cell()
            self.fc = Linear(1, in_size=3)
            self.h = None

        def forward(self, x):
            self.h = self.cell(x, self.h)
            return self.fc(self.h)

    np.random.seed(0)
    model = Stepper()
    rng = np.random.default_rng(0)
    with record() as trace:
        loss = 0
        for _ in range(3):
            loss = loss + F.sum(model(rng.standard_normal((1, 2))))
        loss.backward()
    doc = open_doc(trace)
    for depth in (0, 1, 2):
        assert doc.set_depth(depth) and doc.last_error is None, depth
    doc.set_depth(0)
    steppers = [i for i, n in enumerate(doc.scene.names) if n == "Stepper"]
    assert len(steppers) == 3
    states = {int(v) for u, v in doc.scene.edges if u in steppers}
    assert len(states) >= 5  # each call's output and state leave its box


def _overlapping(scene):
    """Pairs of nodes in one row whose boxes overlap."""
    g = scene.geometry
    pos, half = g.positions, g.half_sizes
    bad = []
    for y in np.unique(np.round(pos[:, 1], 6)):
        row = np.flatnonzero(np.abs(pos[:, 1] - y) < 1e-6)
        row = row[np.argsort(pos[row, 0])]
        for a, b in itertools.pairwise(row.tolist()):
            if pos[a, 0] + half[a, 0] > pos[b, 0] - half[b, 0] + 1e-6:
                bad.append((int(a), int(b)))
    return bad


def test_no_sequence_of_opening_and_closing_boxes_makes_nodes_overlap():
    """Issue 13's QA saw a closed box overlap its neighbour once; random sequences of
    expand / collapse / unfold at every depth keep every row free of overlaps."""
    import random

    def nodes(tree):
        for n in tree:
            yield n
            yield from nodes(n.children)

    for doc in (open_doc(record_step(MLP((4, 4, 1)), 3)), open_doc(record_step(Net(), 2))):
        rng = random.Random(0)
        for _ in range(25):
            doc.set_depth(rng.choice([0, 1, 2]))
            for _ in range(4):
                node = rng.choice(list(nodes(doc.scope_tree())))
                action = rng.choice(["expand", "collapse", "unfold"])
                if action == "unfold" and not node.folded:
                    continue
                getattr(doc, action)(node.path)
                assert not _overlapping(doc.scene), (action, node.path)
