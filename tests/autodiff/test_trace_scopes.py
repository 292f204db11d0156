"""Scopes: a Layer's call (and an ``autodiff.scope`` block) names the Functions run in it."""

import io
import json

import networkx as nx
import numpy as np
import pytest

import autodiff
import autodiff.functions as F
from autodiff import Layer, Model, Variable, core
from autodiff.layers import Linear
from autodiff.trace import TraceFormatError, record, view_for_root
from autodiff.trace._checks import MAX_SCOPE_PATH
from autodiff.trace._trace import trace_from_dict, trace_from_npz
from autodiff.trace.formats.json_io import SCHEMA_VERSION, trace_to_dict
from autodiff.trace.formats.npz import trace_to_npz


class Block(Layer):
    def __init__(self) -> None:
        super().__init__()
        self.fc = Linear(3)
        self.fc2 = Linear(3)

    def forward(self, x):
        return x + self.fc2(F.relu(self.fc(x)))


class Net(Model):
    def __init__(self) -> None:
        super().__init__()
        self.b1 = Block()
        self.b2 = Block()
        self.out = Linear(1)

    def forward(self, x):
        return self.out(self.b2(self.b1(x)))


def _recorded(net=None):
    net = net or Net()
    x = Variable(np.random.default_rng(0).standard_normal((2, 3)), name="x")
    with record() as t:
        y = net(x)
        with autodiff.scope("loss"):
            loss = F.sum(y * y)
        loss.backward()
    return t, loss


def _ops_by_scope(t):
    return [(t.node(f)["op"], t.node(f)["scope"]) for f in t.functions]


def test_paths_are_attribute_names_under_the_outermost_class():
    t, _ = _recorded()
    assert _ops_by_scope(t) == [
        ("Linear", "Net/b1/fc"),
        ("ReLU", "Net/b1"),
        ("Linear", "Net/b1/fc2"),
        ("Add", "Net/b1"),
        ("Linear", "Net/b2/fc"),
        ("ReLU", "Net/b2"),
        ("Linear", "Net/b2/fc2"),
        ("Add", "Net/b2"),
        ("Linear", "Net/out"),
        ("Mul", "loss"),
        ("Sum", "loss"),
    ]
    rows = t.scopes()
    assert rows[0].path == "" and rows[0].parent == -1
    by_path = {r.path: r for r in rows[1:]}
    assert by_path["Net/b2"].cls == "Block" and by_path["Net/b2"].name == "b2"
    assert by_path["Net/b2/fc"].depth == 3
    assert rows[by_path["Net/b2/fc"].parent].path == "Net/b2"
    assert by_path["loss"].cls == "" and by_path["loss"].depth == 1


def test_variables_are_in_their_creators_scope_and_parameters_are_flagged():
    t, _ = _recorded()
    scopes = t.node_scopes()
    assert len(scopes) == len(t.variables) + len(t.functions)
    for v in t.variables:
        a = t.node(v)
        creator = t.creator_of(v)
        expected = "" if creator < 0 else t.node(creator)["scope"]
        assert a["scope"] == expected
        assert t.scopes()[scopes[v]].path == expected
        assert a["parameter"] == (a["name"] is not None and a["name"] != "x")
    assert sum(t.node(v)["parameter"] for v in t.variables) == 10  # 5 Linear: W and b


def test_a_name_the_user_set_replaces_the_attribute_name_and_the_class():
    net = Net()
    net.b1.name = "first"
    t, _ = _recorded(net)
    assert "Net/first/fc" in {r.path for r in t.scopes()}
    net.name = "model"
    t, _ = _recorded(net)
    assert t.node(t.functions[0])["scope"] == "model/first/fc"


def test_a_layer_called_on_its_own_is_named_by_its_class():
    net = Net()
    x = Variable(np.ones((2, 3)))
    with record() as t:
        net.b2(x)
    assert {t.node(f)["scope"] for f in t.functions} == {"Block", "Block/fc", "Block/fc2"}


def test_each_call_is_its_own_instance():
    fc = Linear(2)
    x = Variable(np.ones((1, 2)))
    with record() as t:
        fc(fc(x))
    rows = t.scopes()
    assert [r.path for r in rows] == ["", "Linear", "Linear"]
    ids = t.node_scopes()
    assert [int(ids[f]) for f in t.functions] == [1, 2]


def test_scope_blocks_nest_inside_layers_and_outside_is_empty():
    class Head(Layer):
        def forward(self, x):
            with autodiff.scope("norm"):
                x = x / F.sum(x)
            return F.exp(x)

    x = Variable(np.ones(3))
    with record() as t:
        y = Head()(x)
        z = y * 2
    assert _ops_by_scope(t)[-1] == ("Mul", "")
    assert ("Div", "Head/norm") in _ops_by_scope(t)
    assert ("Exp", "Head") in _ops_by_scope(t)
    del z


def test_an_exception_inside_a_layer_closes_its_scope():
    class Broken(Layer):
        def forward(self, x):
            x = x * 2
            raise ValueError("broken")

    x = Variable(np.ones(2))
    with record() as t:
        with pytest.raises(ValueError):
            Broken()(x)
        y = x + 1
    assert _ops_by_scope(t) == [("Mul", "Broken"), ("Add", "")]
    del y


def test_recording_that_begins_inside_a_layer_ignores_its_end():
    holder = {}

    class Outer(Layer):
        def forward(self, x):
            holder["trace"] = record()
            holder["t"] = holder["trace"].__enter__()
            return x * 3

    x = Variable(np.ones(2))
    Outer()(x)
    y = x + 1  # after the layer ended: in no scope
    holder["trace"].__exit__(None, None, None)
    t = holder["t"]
    assert _ops_by_scope(t) == [("Mul", ""), ("Add", "")]
    del y


def test_scope_takes_a_name():
    with pytest.raises(TypeError, match="non-empty name"), autodiff.scope(""):
        pass
    with autodiff.scope("nothing records"):  # no recorder: nothing happens
        Variable(np.ones(1)) * 2


def test_no_recorder_no_scope_call(monkeypatch):
    def refuse(part):
        raise AssertionError("a scope was opened with nobody listening")

    monkeypatch.setattr(core, "_begin_scope", refuse)
    assert core._on_scope == ()
    Net()(Variable(np.ones((1, 3))))
    with record(), pytest.raises(AssertionError):
        Net()(Variable(np.ones((1, 3))))


def test_a_slash_in_a_name_does_not_read_as_nesting():
    fc = Linear(1)
    fc.name = "a/b"
    with record() as t, autodiff.scope("c/d"):
        fc(Variable(np.ones((1, 2))))
    assert t.node(t.functions[0])["scope"] == "c_d/a_b"


def test_saved_traces_keep_scopes(tmp_path):
    t, _ = _recorded()
    path = tmp_path / "t.json"
    t.to_json(path)
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION == 5
    buffer = io.BytesIO()
    trace_to_npz(t, buffer)
    buffer.seek(0)
    for loaded in (autodiff.trace.load(path), trace_from_npz(buffer)):
        assert loaded.scopes() == t.scopes()
        assert loaded.node_scopes().tolist() == t.node_scopes().tolist()
        assert [loaded.node(n)["parameter"] for n in t.variables] == [
            t.node(n)["parameter"] for n in t.variables
        ]
        assert _ops_by_scope(loaded) == _ops_by_scope(t)


def test_older_files_load_in_no_scope():
    t, _ = _recorded()
    d = trace_to_dict(t)
    d["schema_version"] = 2
    del d["scopes"]
    for n in d["graph"]["nodes"]:
        del n["scope"], n["parameter"]
    old = trace_from_dict(d)
    assert [r.path for r in old.scopes()] == [""]
    assert {old.node(f)["scope"] for f in old.functions} == {""}
    assert not any(old.node(v)["parameter"] for v in old.variables)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["scopes"][0].update(parent=5), r"scopes\[0\]\.parent: scope 5 does not"),
        (lambda d: d["scopes"][1].update(name=7), r"scopes\[1\]\.name: expected string"),
        (lambda d: d["graph"]["nodes"][3].update(scope=99), r"nodes\[3\]\.scope: scope 99"),
        (lambda d: d["graph"]["nodes"][3].update(scope=-1), r"nodes\[3\]\.scope"),
        (lambda d: d.update(scopes={}), r"scopes: expected array"),
    ],
)
def test_malformed_scopes_name_the_field(edit, message):
    t, _ = _recorded()
    d = trace_to_dict(t)
    edit(d)
    with pytest.raises(TraceFormatError, match=message):
        trace_from_dict(d)


def test_nested_names_cannot_multiply_a_files_size():
    # a path is derived from the names, not saved: past MAX_SCOPE_PATH it is cut, so each
    # scope costs at most that much whatever its depth
    t, _ = _recorded()
    d = trace_to_dict(t)
    d["scopes"] = [{"name": "x" * 5000, "cls": "", "parent": i} for i in range(5)]
    for n in d["graph"]["nodes"]:
        n["scope"] = 0
    paths = [row.path for row in trace_from_dict(d).scopes()[1:]]
    assert all(len(p) <= MAX_SCOPE_PATH for p in paths)
    assert paths[-1].startswith("x" * 100) and "/…/" in paths[-1]


def test_dot_draws_scopes_as_nested_clusters_and_graphml_carries_them(tmp_path):
    t, _ = _recorded()
    dot = t.to_dot()
    assert dot.count("subgraph cluster_") == len(t.scopes()) - 1
    b2 = dot.index('label="Net/b2 (Block)"')
    fc = dot.index('label="Net/b2/fc (Linear)"')
    end_of_b2 = dot.index("}", fc)
    assert b2 < fc < end_of_b2  # nested: fc's cluster inside b2's
    path = tmp_path / "t.graphml"
    t.to_graphml(path)
    import networkx as nx

    g = nx.read_graphml(path)
    assert {a["scope"] for _, a in g.nodes(data=True) if a["kind"] == "function"} >= {
        "Net/b1/fc",
        "loss",
    }


def test_a_view_of_one_pass_reads_the_whole_traces_scopes():
    t, _ = _recorded()
    view = view_for_root(t, t.backward_roots[0])
    assert view.scopes() == t.scopes()
    assert view.node_scopes()[view.functions].tolist() == t.node_scopes()[view.functions].tolist()


def test_bulk_readers_agree_with_node():
    t, _ = _recorded()
    ids = list(range(len(t.node_scopes())))
    assert t.shapes(ids) == [t.node(n)["shape"] for n in ids]
    assert t.parameters() == {n for n in ids if t.node(n)["parameter"]}
    view = view_for_root(t, t.backward_roots[0])
    assert view.parameters() == {n for n in view.variables if t.node(n)["parameter"]}
    with pytest.raises(KeyError, match="not in the trace"):
        t.shapes([len(ids)])


# ------------------------------------------------------------- truncated backprop's cuts
def _windows(n_windows=3, length=4):
    """A state carried across windows; each window's loss is backpropagated, then
    unchain_backward cuts the history (the book's truncated BPTT)."""
    w = Variable(np.array(0.5), name="w")
    h = Variable(np.array(0.0), name="h0")
    with record() as t:
        for _ in range(n_windows):
            loss = 0
            for _ in range(length):
                h = F.tanh(h * w + 1.0)
                loss = loss + h * h
            w.cleargrad()
            loss.backward()
            loss.unchain_backward()
    return t


def test_a_window_after_a_cut_stops_at_the_cut_and_the_first_keeps_its_history():
    t = _windows()
    sizes = []
    for k, root in enumerate(t.backward_roots):
        view = view_for_root(t, root, k)
        sizes.append(len(view.variables) + len(view.functions))
        assert len([s for s in view.steps if s.phase == "forward"]) == 4 * 5  # its window only
    assert sizes[1] == sizes[2]  # the windows do not pull in the ones before them
    cut = t.cuts()
    assert len(cut) == 2  # the state each later window starts from
    for k, (node, step) in enumerate(sorted(cut.items()), start=1):
        view = view_for_root(t, t.backward_roots[k], k)
        assert node in view.variables and view.creator_of(node) == -1
        assert t.cut_at(node) == step
        first = view_for_root(t, t.backward_roots[k - 1], k - 1)
        assert node in first.variables and first.creator_of(node) >= 0  # made there


def test_saved_traces_keep_the_cuts():
    t = _windows()
    d = trace_to_dict(t)
    buffer = io.BytesIO()
    trace_to_npz(t, buffer)
    buffer.seek(0)
    for loaded in (trace_from_dict(json.loads(json.dumps(d))), trace_from_npz(buffer)):
        assert loaded.cuts() == t.cuts()
        sizes = [
            len(view_for_root(loaded, r, k).functions) for k, r in enumerate(loaded.backward_roots)
        ]
        assert sizes[1] == sizes[2]
        for k, r in enumerate(loaded.backward_roots):
            assert view_for_root(loaded, r, k).detached() == view_for_root(t, r, k).detached()


def test_the_history_a_window_was_cut_from_comes_with_it_detached_and_never_stepped():
    t = _windows()
    assert not view_for_root(t, t.backward_roots[0], 0).detached()  # nothing cut before it
    for k, (node, _) in enumerate(sorted(t.cuts().items()), start=1):
        view = view_for_root(t, t.backward_roots[k], k)
        detached = view.detached()
        live = set(view.variables) | set(view.functions)
        assert detached <= live  # drawn: part of the view's nodes...
        live -= detached
        # ...the window before, back to its own cut: the tanh chain that made the state
        assert detached == t.ancestors(node, stop_at_cuts=True) - live
        assert t.creator_of(node) in detached and view.creator_of(node) == -1
        assert [t.node(n)["op"] for n in detached if n in view.functions].count("Tanh") == 4
        for step in view.steps:  # its steps are not the view's: backward never runs there
            assert not {step.function, *step.inputs, *step.outputs} & detached
        pairs, _ = view.edges()
        assert [t.creator_of(node), node] in pairs.tolist()  # the cut edge is drawn


def test_the_detached_history_is_bounded_nearest_first():
    t = _windows(n_windows=2, length=50)
    ((node, _),) = t.cuts().items()
    made_by = t.creator_of(node)
    assert t.ancestors(node, limit=1) == {made_by}
    assert len(t.ancestors(node, limit=5)) == 5
    assert t.ancestors(node, limit=10**9) == t.ancestors(node)
    view = view_for_root(t, t.backward_roots[1], 1, detached_limit=7)
    assert len(view.detached()) == 7 and made_by in view.detached()
    assert not view_for_root(t, t.backward_roots[1], 1, detached_limit=0).detached()
    whole = view_for_root(t, t.backward_roots[1], 1)  # by default: up to the graph's own size
    live = len(whole.variables) + len(whole.functions) - len(whole.detached())
    assert 0 < len(whole.detached()) <= live


def test_dot_and_graphml_of_a_window_mark_its_detached_history(tmp_path):
    t = _windows()
    view = view_for_root(t, t.backward_roots[1], 1)
    detached = view.detached()
    dot = view.to_dot()
    dashed = {int(line.split()[0]) for line in dot.splitlines() if "fillcolor=gray92" in line}
    assert dashed == detached
    (node, _), *_ = sorted(t.cuts().items())
    assert f"{t.creator_of(node)} -> {node} [style=dashed, color=gray60]" in dot  # the cut
    assert "fillcolor=gray92" not in view_for_root(t, t.backward_roots[0], 0).to_dot()
    view.to_graphml(tmp_path / "w.graphml")
    flat = nx.read_graphml(tmp_path / "w.graphml")
    assert {int(n) for n, a in flat.nodes(data=True) if a["detached"]} == detached


def test_many_cut_leaves_walk_their_shared_history_a_bounded_number_of_times(monkeypatch):
    w = Variable(np.array(0.5), name="w")
    states = [Variable(np.array(k / 100)) for k in range(300)]
    with record() as t:
        states = [F.tanh(F.tanh(h * w)) for h in states]
        for h in states:
            h.unchain()
        loss = F.tanh(states[0] * w)
        for h in states[1:]:
            loss = loss + F.tanh(h * w)
        loss.backward()
    walked = []
    real = t.ancestors

    def counting(node, stop_at_cuts=False, limit=None):
        found = real(node, stop_at_cuts=stop_at_cuts, limit=limit)
        walked.append(len(found))
        return found

    monkeypatch.setattr(t, "ancestors", counting)
    view = view_for_root(t, t.backward_roots[0], 0, detached_limit=50)
    live = len(view.variables) + len(view.functions) - len(view.detached())
    assert len(view.detached()) == 50
    detached_walks = walked[1:]  # the first walk is the graph's own
    assert sum(detached_walks) <= 4 * (50 + live) + len(detached_walks) + live


def test_node_scopes_is_made_once_and_again_when_the_recording_grows():
    x = Variable(np.array(1.0), name="x")
    with record() as t:
        with autodiff.scope("first"):
            y = F.sin(x)
        before = t.node_scopes()
        assert t.node_scopes() is before  # made once while nothing changed
        assert not before.flags.writeable  # shared: nobody may change it
        with autodiff.scope("second"):
            F.exp(y)
        after = t.node_scopes()
    assert len(after) > len(before)
    paths = [s.path for s in t.scopes()]
    assert paths[after[-1]] == "second"  # the newest node, exp's output, is in its scope
    assert after[: len(before)].tolist() == before.tolist()
