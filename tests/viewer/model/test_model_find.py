"""Find: a node by its name, op or scope path, case ignored, matches in id order, cycling."""

from types import SimpleNamespace

import numpy as np

import autodiff.functions as F
from viewer.model.expression.program import evaluate
from viewer.model.layout.compute import compute_layout
from viewer.model.panels.find import FindCursor, FindIndex, match_summary
from viewer.model.scene.scene import Scene


class _ScopedTrace:
    """A trace-like reader with scope paths (as the engine records them since issue 13)."""

    def __init__(self):
        self._nodes = {
            0: {"kind": "variable", "name": "x", "op": None, "scope": ""},
            1: {"kind": "function", "name": None, "op": "Linear", "scope": "Net/fc1"},
            2: {"kind": "variable", "name": None, "op": None, "scope": "Net/fc1"},
            3: {"kind": "function", "name": None, "op": "Sigmoid", "scope": "Net"},
            4: {"kind": "variable", "name": "hidden", "op": None, "scope": "Net"},
            5: {"kind": "function", "name": None, "op": "Linear", "scope": "Net/fc2"},
            6: {"kind": "variable", "name": "y", "op": None, "scope": "Net/fc2"},
        }

    @property
    def variables(self):
        return [n for n, a in self._nodes.items() if a["kind"] == "variable"]

    @property
    def functions(self):
        return [n for n, a in self._nodes.items() if a["kind"] == "function"]

    def node(self, nid):
        return dict(self._nodes[nid])

    # the reading interface's scope table and bulk readers, over the same attributes
    def scopes(self):
        return _scope_rows(["", "Net", "Net/fc1", "Net/fc2"])

    def node_scopes(self):
        paths = [row.path for row in self.scopes()]
        return np.array([paths.index(a["scope"]) for a in self._nodes.values()])

    def names(self, node_ids):
        return [self._nodes[int(n)]["name"] for n in node_ids]

    def ops(self, node_ids):
        return [self._nodes[int(n)]["op"] for n in node_ids]

    def detached(self):
        return frozenset()

    def function_params(self, nid):
        return {}


def _scope_rows(paths):
    """Scope rows as a reader lists them: row k has scope id k (0: the root, path '')."""
    return [SimpleNamespace(path=path) for path in paths]


def _scene(text):
    trace = evaluate(text).trace
    return trace, Scene(trace, compute_layout(trace))


def test_finds_by_name_and_op_case_insensitively_in_id_order():
    trace, scene = _scene("x = 0.5\nw = 2.0\ny = square(exp(square(x))) * w")
    index = FindIndex(trace, scene)
    squares = index.search("SQUARE")
    ops = [trace.node(int(n))["op"] for n in squares]
    assert ops == ["Square", "Square"]
    assert list(squares) == sorted(squares)
    (w,) = index.search(" W ")
    assert trace.node(int(w))["name"] == "w"
    assert len(index.search("x")) == 2  # the leaf x and the op Exp
    assert len(index.search("xp")) == 1  # a substring of Exp
    assert len(index.search("nothing like it")) == 0
    assert len(index.search("")) == 0
    assert len(index.search("   ")) == 0


def test_finds_by_scope_path_and_by_id():
    index = FindIndex(_ScopedTrace())
    assert list(index.search("net/fc1")) == [1, 2]
    assert list(index.search("fc")) == [1, 2, 5, 6]
    assert list(index.search("net")) == [1, 2, 3, 4, 5, 6]
    assert list(index.search("linear")) == [1, 5]
    assert list(index.search("#4")) == [4]
    assert list(index.search("#40")) == []
    # a match never spans two fields: 'x' then the op of the next field
    assert list(index.search("hiddennet")) == []


def test_a_trace_without_scopes_is_searched_by_name_and_op():
    trace, scene = _scene("x = 0.5\ny = tanh(x)")
    assert "scope" not in trace.node(0) or trace.node(0)["scope"] == ""
    assert len(FindIndex(trace, scene).search("tanh")) == 1
    assert len(FindIndex(trace, None).search("tanh")) == 1


def test_nodes_the_scene_shows_but_the_trace_does_not_list_are_searched_by_shown_name():
    trace = _ScopedTrace()

    class _SceneWithModule:
        node_ids = np.array([0, 3, 4, 100])
        names = ("x", "Sigmoid", "hidden", "fc1")
        kinds = ("variable", "function", "variable", "module")

    index = FindIndex(trace, _SceneWithModule())
    assert 100 in set(index.search("fc1"))
    assert list(index.search("sigm")) == [3]


def test_cursor_cycles_both_ways_and_counts():
    cursor = FindCursor()
    cursor.set_source(_ScopedTrace())
    seen = []
    cursor.current_changed.connect(seen.append)
    assert cursor.search("fc") == 1
    assert cursor.summary() == "1 of 4"
    assert [cursor.next(), cursor.next(), cursor.next(), cursor.next()] == [2, 5, 6, 1]
    assert cursor.previous() == 6
    assert cursor.summary() == "4 of 4"
    assert seen == [1, 2, 5, 6, 1, 6]
    assert cursor.search("zzz") is None
    assert cursor.summary() == "no match"
    assert cursor.next() is None and cursor.previous() is None
    assert cursor.search("") is None and cursor.summary() == ""


def test_a_new_graph_runs_the_query_again_and_keeps_the_current_match():
    cursor = FindCursor()
    first = _ScopedTrace()
    cursor.set_source(first)
    cursor.search("linear")
    cursor.next()
    assert cursor.current == 5
    counts = []
    cursor.matches_changed.connect(lambda c: counts.append(c.count))
    second = _ScopedTrace()
    cursor.set_source(second)
    assert counts == [2] and cursor.current == 5
    cursor.set_source(second)  # the same graph: nothing happens
    assert counts == [2]


def test_match_summary():
    assert match_summary(2, 12, "fc") == "3 of 12"
    assert match_summary(-1, 0, "fc") == "no match"
    assert match_summary(-1, 0, " ") == ""


def test_a_big_graph_is_searched_quickly():
    class _Chain:
        n = 100_000
        variables = tuple(range(0, n, 2))
        functions = tuple(range(1, n, 2))

        def node(self, nid):
            if nid % 2:
                return {"kind": "function", "name": None, "op": "Exp", "scope": f"Net/b{nid % 7}"}
            return {"kind": "variable", "name": f"v{nid}", "op": None}

        def scopes(self):
            return _scope_rows(["", *(f"Net/b{k}" for k in range(7))])

        def node_scopes(self):
            ids = np.arange(self.n)
            return np.where(ids % 2 == 1, 1 + ids % 7, 0)

        def names(self, node_ids):
            return [self.node(int(n))["name"] for n in node_ids]

        def ops(self, node_ids):
            return [self.node(int(n))["op"] for n in node_ids]

        def function_params(self, nid):
            return {}

    index = FindIndex(_Chain())
    hits = index.search("net/b3")
    assert len(hits) == len([n for n in range(1, 100_000, 2) if n % 7 == 3])
    assert len(index.search("v99998")) == 1


def test_a_recorded_trace_is_searched_by_its_scope_paths():
    import autodiff
    import autodiff.functions as F
    import autodiff.layers as L
    from autodiff import Variable, trace

    with trace.record() as t:
        x = Variable(np.ones((2, 3)), name="x")
        with autodiff.scope("encoder"):
            h = F.tanh(x)
        y = L.Linear(4)(h)
        F.sum(y).backward()
    scene = Scene(t, compute_layout(t))
    # without a scene every node is read with node(); with one, from its arrays
    for index in (FindIndex(t), FindIndex(t, scene)):
        encoder = index.search("ENCODER")
        assert len(encoder) == 2
        assert {t.node(int(n))["scope"] for n in encoder} == {"encoder"}
        kinds = [t.node(int(n))["kind"] for n in index.search("linear")]
        assert kinds == ["function", "variable"]
        assert [t.node(int(n))["name"] for n in index.search("w")] == ["W"]
        assert len(index.search("tanh")) == 1


def test_with_module_boxes_every_node_keeps_its_own_name_and_op():
    import autodiff.functions as F
    from autodiff.layers import Layer, Linear
    from autodiff.trace import record
    from viewer.model.document.document import Document

    class Block(Layer):
        def __init__(self):
            super().__init__()
            self.fc = Linear(3, in_size=3)

        def forward(self, x):
            return F.tanh(self.fc(x))

    class Net(Layer):
        def __init__(self):
            super().__init__()
            self.b0, self.b1 = Block(), Block()

        def forward(self, x):
            return self.b1(self.b0(x))

    with record() as t:
        F.sum(Net()(np.ones((2, 3)))).backward()
    doc = Document()
    doc.load_graph(t, "net", "trace")
    doc.set_depth(1)
    scene = doc.scene
    boxes = [int(scene.node_ids[i]) for i, k in enumerate(scene.kinds) if k == "module"]
    assert boxes  # a box stands for a Function it hides, by that Function's id
    index = FindIndex(t, scene)
    ops = [t.node(int(n))["op"] for n in (*index.search("linear"), *index.search("tanh"))]
    assert ops == ["Linear", "Linear", "Tanh", "Tanh"]  # the ones the boxes stand for too
    assert len(index.search("net/b1/fc")) == 2  # the Linear and its output
    assert set(boxes) <= set(index.search("net").tolist())


def test_the_first_match_is_the_graphs_own_not_its_detached_history():
    import autodiff.functions as F
    from autodiff import Variable
    from autodiff.trace import record, view_for_root

    w = Variable(np.array(0.5), name="w")
    h = Variable(np.array(0.1), name="h0")
    with record() as t:
        for _ in range(2):
            loss = 0
            for _ in range(3):
                h = F.tanh(h * w)
                loss = loss + h
            loss.backward()
            loss.unchain_backward()
    view = view_for_root(t, t.backward_roots[1], 1)
    cursor = FindCursor()
    cursor.set_source(view)
    first = cursor.search("tanh")
    tanhs = [n for n in view.functions if t.node(n)["op"] == "Tanh"]
    assert cursor.count == len(tanhs) == 6  # its three, and the three of the window before
    assert first not in view.detached() and first == min(set(tanhs) - view.detached())
    seen = [cursor.next() for _ in range(6)]
    assert sorted(seen) == sorted(tanhs)  # the others are still a keystroke away


def test_hidden_nodes_are_indexed_from_the_bulk_readers_with_the_same_text(monkeypatch):
    """Boxes hide most of a big graph: their nodes' names and ops are read in bulk
    (node() built a dict a node, 0.35 s at 100 000), and find answers as before."""
    from scoped_nets import Net

    from autodiff.trace import record
    from viewer.model.document.document import Document

    model = Net()
    with record() as t:
        loss = F.sum(model(np.ones((2, 2))))
        loss.name = "loss"
        loss.backward()
    ids = [*t.variables, *t.functions]
    assert t.names(ids) == [t.node(n)["name"] for n in ids]
    assert t.ops(ids) == [t.node(n)["op"] for n in ids]
    doc = Document()
    doc.load_trace(t, "net")
    doc.set_depth(0)
    scene = doc.scene
    slow = FindIndex(t)  # every node through node(): the reference
    calls = []
    real = t.node
    monkeypatch.setattr(t, "node", lambda nid: (calls.append(nid), real(nid))[1])
    fast = FindIndex(t, scene)
    hidden = set(ids) - {int(n) for n in scene.node_ids}
    assert hidden and not hidden & set(calls)
    for query in ("linear", "loss", "net/b1", "W", "#3"):
        assert fast.search(query).tolist() == slow.search(query).tolist(), query


def test_an_id_or_a_query_too_long_to_search_is_refused_with_its_reason():
    import pytest

    from viewer.model.panels.find import MAX_ID_DIGITS, MAX_QUERY_CHARS, FindQueryError

    trace, scene = _scene("x = 0.5\ny = exp(x)")
    index = FindIndex(trace, scene)
    assert len(index.search("#" + "9" * MAX_ID_DIGITS)) == 0  # int64-sized: searched
    with pytest.raises(FindQueryError, match="5,000 digits: a node id has at most 18"):
        index.search("#" + "1" * 5000)
    with pytest.raises(FindQueryError, match="1,001 characters"):
        index.search("e" * (MAX_QUERY_CHARS + 1))
    cursor = FindCursor()
    cursor.set_source(trace, scene)
    assert cursor.search("#" + "1" * 5000) is None
    assert cursor.summary() == "id too long"
    assert cursor.search("exp") is not None
    assert cursor.error is None and cursor.summary() == "1 of 1"
