"""Exports (DOT, GraphML, JSON) and the validating loader."""

import copy
import json

import networkx as nx
import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Variable, no_grad, trace
from autodiff.trace import NodeState, TraceFormatError
from autodiff.trace._trace import trace_from_dict
from autodiff.trace.formats.json_io import MAX_DEPTH, trace_to_dict


def _recorded():
    x = Variable(np.array([0.5, 0.0, 2.0]), name="x")
    w = Variable(np.arange(12.0).reshape(3, 4), name="w")
    with trace.record(max_array_size=8) as t, np.errstate(all="ignore"):
        h = F.log(x) * 2 + x * x
        z = F.matmul(F.reshape(h, (1, 3)), w)  # z: 4 elements, w: 12 (summarised)
        with no_grad():
            c = x * 3
        y = F.sum(z) + F.sum(c)
        y.name = "y"
        y.backward(create_graph=True)
        del h
    return t, (x, w, z, y)


def _assert_same(t1, t2):
    assert t1.steps == t2.steps
    assert dict(t1.graph.nodes(data=True)) == dict(t2.graph.nodes(data=True))
    e1 = sorted(t1.graph.edges(keys=True, data=True))
    assert e1 == sorted(t2.graph.edges(keys=True, data=True))
    assert t1.variables == t2.variables and t1.functions == t2.functions
    assert t1.backward_roots == t2.backward_roots
    for n in range(t1.graph.number_of_nodes()):
        for i in range(-1, len(t1.steps)):
            assert t1.state_at(n, i) == t2.state_at(n, i), (n, i)
            assert t1.value_at(n, i) == t2.value_at(n, i), (n, i)
            assert t1.grad_at(n, i) == t2.grad_at(n, i), (n, i)
    assert (t1.first_nonfinite() is None) == (t2.first_nonfinite() is None)


def test_json_round_trip(tmp_path):
    t, _keep = _recorded()
    path = tmp_path / "t.json"
    t.to_json(path)
    t2 = trace.load(path)
    _assert_same(t, t2)
    assert t2.first_nonfinite().index == t.first_nonfinite().index
    # a loaded trace has no live objects and nothing freed unless recorded so
    assert all(t2.live(n) is None for n in range(len(t2.variables) + len(t2.functions)))
    assert not any(t2.freed(n) for n in t2.variables)
    # the file holds no NaN/Infinity tokens: strict JSON parsers read it
    json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"token {c}"))


def test_json_round_trip_keeps_freed_states(tmp_path):
    x = Variable(np.array(1.5), name="x")
    with trace.record() as t:
        y = F.exp(F.square(x))
        y.backward()
        del y
        z = F.sin(x)
    assert t.state_at(t.variables[2], len(t.steps) - 1) is NodeState.FREED
    del z
    t.to_json(tmp_path / "t.json")
    _assert_same(t, trace.load(tmp_path / "t.json"))


def test_json_round_trip_keeps_what_each_iteration_held(tmp_path):
    # leaves changed and gradients emptied or left over between iterations, an operand
    x = Variable(np.array(1.0), name="x")
    with trace.record() as t:
        for v, clear in ((1.0, True), (2.0, False), (0.5, True)):
            x.data = np.array(v)
            if clear:
                x.cleargrad()
            y = F.sin(x) * x * 3.0
            y.backward()
    path = tmp_path / "loop.json"
    t.to_json(path)
    back = trace.load(path)
    kinds = {e[3] for e in t._extra}
    assert {4} <= kinds  # an emptied gradient was recorded
    assert back._operands == t._operands and len(t._operands) == 3
    n = len(t.steps)
    for node in range(len(t._info)):
        assert back.position_timeline(node) == t.position_timeline(node)
        for pos in range(-1, 2 * n):
            assert back.state_at_position(node, pos) is t.state_at_position(node, pos)
            assert back.grad_origin_at_position(node, pos) == t.grad_origin_at_position(node, pos)
            assert back.grad_fate_at_position(node, pos) == t.grad_fate_at_position(node, pos)
    states = {t.state_at(0, i) for i in range(n)}
    assert NodeState.GRAD_CARRIED in states


def test_json_round_trip_from_output(tmp_path):
    x = Variable(np.array(2.0), name="x")
    a = F.square(x)
    y = F.add(F.exp(a), F.square(a))
    y.backward()
    t = trace.from_output(y)
    t.to_json(tmp_path / "t.json")
    _assert_same(t, trace.load(tmp_path / "t.json"))


def test_dot_has_dezero_colours_and_details():
    t, _keep = _recorded()
    dot = t.to_dot()
    assert dot.startswith("digraph g {") and dot.rstrip().endswith("}")
    assert "color=orange" in dot and "color=lightblue" in dot and "shape=box" in dot
    assert 'label="x\\n(3,) float64' in dot
    assert "MatMul\\ngen" in dot and "grad " in dot and "gen 0" in dot
    assert dot.count(" -> ") == t.graph.number_of_edges()


def test_graphml_is_readable(tmp_path):
    t, _keep = _recorded()
    path = tmp_path / "t.graphml"
    t.to_graphml(path)
    g = nx.read_graphml(path, node_type=int)
    assert g.number_of_nodes() == t.graph.number_of_nodes()
    assert g.number_of_edges() == t.graph.number_of_edges()
    assert g.nodes[0]["name"] == "x" and g.nodes[0]["kind"] == "variable"
    assert g.nodes[t.functions[0]]["op"] == "Log"


# ----------------------------------------------------------------------------------------
# Malformed files: each names the field and the problem
# ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def good():
    t, _keep = _recorded()
    return trace_to_dict(t)


def _bad(good, edit):
    d = copy.deepcopy(good)
    edit(d)
    return d


def _forward(d):
    return next(i for i, s in enumerate(d["steps"]) if s["phase"] == "forward")


def _backward(d):
    return next(i for i, s in enumerate(d["steps"]) if s["phase"] == "backward")


def _set(path, value):
    def edit(d):
        *head, last = path(d)
        obj = d
        for k in head:
            obj = obj[k]
        obj[last] = value

    return edit


def _delete(path):
    def edit(d):
        *head, last = path(d)
        obj = d
        for k in head:
            obj = obj[k]
        del obj[last]

    return edit


CASES = [
    (
        "no format field",
        lambda d: d.clear(),
        r"not a saved trace: expected a file written by File > Save Trace or autodiff.trace; "
        r"this one has no 'format' field",
    ),
    (
        "wrong format",
        _set(lambda d: ["format"], "something-else"),
        r"not a saved trace: .*; this one has the format 'something-else', not 'autodiff-trace'",
    ),
    ("newer schema", _set(lambda d: ["schema_version"], 99), r"schema_version: .*version 99"),
    (
        "schema as string",
        _set(lambda d: ["schema_version"], "1"),
        r"schema_version: expected int, got str",
    ),
    ("missing steps", _delete(lambda d: ["steps"]), r"\$: missing field 'steps'"),
    (
        "step input as string",
        _set(lambda d: ["steps", 3, "inputs", 0], "7"),
        r"steps\[3\]\.inputs\[0\]: expected int, got str",
    ),
    (
        "step inputs disagree with links",
        _set(lambda d: ["steps", 0, "inputs"], [2]),
        r"steps\[0\]\.inputs: \[2\] does not match",
    ),
    (
        "missing step field",
        _delete(lambda d: ["steps", 2, "generation"]),
        r"steps\[2\]: missing field 'generation'",
    ),
    ("bad phase", _set(lambda d: ["steps", 1, "phase"], "sideways"), r"steps\[1\]\.phase"),
    ("bad index", _set(lambda d: ["steps", 1, "index"], 5), r"steps\[1\]\.index: expected 1"),
    ("op mismatch", _set(lambda d: ["steps", 0, "op"], "Exp"), r"steps\[0\]\.op: 'Exp' differs"),
    (
        "function is a variable",
        _set(lambda d: ["steps", 0, "function"], 0),
        r"steps\[0\]\.function: node 0 is not a function",
    ),
    (
        "node out of range",
        _set(lambda d: ["steps", 0, "function"], 10_000),
        r"steps\[0\]\.function: node 10000 does not exist",
    ),
    (
        "bool is not int",
        _set(lambda d: ["steps", 0, "generation"], True),
        r"steps\[0\]\.generation: expected int, got bool",
    ),
    (
        "nonfinite lie",
        _set(lambda d: ["steps", 0, "nonfinite"], False),
        r"steps\[0\]\.nonfinite: says False",
    ),
    (
        "snapshot stat as list",
        _set(lambda d: ["steps", 0, "values", 0, "min"], [1]),
        r"steps\[0\]\.values\[0\]\.min: expected number, got array",
    ),
    (
        "snapshot bad string",
        _set(lambda d: ["steps", 0, "values", 0, "max"], "big"),
        r"steps\[0\]\.values\[0\]\.max: expected a number or 'nan'",
    ),
    (
        "array shape mismatch",
        _set(lambda d: ["steps", 0, "values", 0, "array"], [1.0, 2.0]),
        r"steps\[0\]\.values\[0\]\.array: expected 3 item\(s\), got 2",
    ),
    (
        "array element",
        _set(lambda d: ["steps", 0, "values", 0, "array", 1], {"a": 1}),
        r"steps\[0\]\.values\[0\]\.array\[1\]: expected number, got object",
    ),
    (
        "array dtype",
        _set(lambda d: ["steps", 0, "values", 0, "dtype"], "object"),
        r"steps\[0\]\.values\[0\]\.array: arrays of dtype 'object' cannot be stored",
    ),
    (
        "missing snapshot field",
        _delete(lambda d: ["steps", 0, "values", 0, "norm"]),
        r"steps\[0\]\.values\[0\]: missing field 'norm'",
    ),
    (
        "too many values",
        _set(lambda d: ["steps", 0, "values"], [None, None]),
        r"steps\[0\]\.values: expected 1 item\(s\), got 2",
    ),
    (
        "negative count",
        _set(lambda d: ["steps", 0, "values", 0, "nan"], -1),
        r"steps\[0\]\.values\[0\]\.nan: expected an int >= 0",
    ),
    (
        "accumulation node",
        lambda d: _first_acc(d).__setitem__("node", 10_000),
        r"accumulations\[0\]\.node: expected input",
    ),
    (
        "node id gap",
        _set(lambda d: ["graph", "nodes", 1, "id"], 7),
        r"graph\.nodes\[1\]\.id: expected 1",
    ),
    (
        "node kind",
        _set(lambda d: ["graph", "nodes", 1, "kind"], "tensor"),
        r"graph\.nodes\[1\]\.kind: expected 'variable' or 'function'",
    ),
    (
        "node name type",
        _set(lambda d: ["graph", "nodes", 0, "name"], 3),
        r"graph\.nodes\[0\]\.name: expected string or null, got int",
    ),
    (
        "link between variables",
        _set(lambda d: ["graph", "links", 0, "target"], 0),
        r"graph\.links\[0\]: a link must join a variable and a function",
    ),
    (
        "duplicate slot",
        lambda d: d["graph"]["links"].append(dict(d["graph"]["links"][0])),
        r"graph\.links\[\d+\]\.slot: function node \d+ has two links at slot 0",
    ),
    (
        "event kind",
        _set(lambda d: ["events", 0, "kind"], "teleported"),
        r"events\[0\]\.kind: expected one of",
    ),
    (
        "event order",
        _set(lambda d: ["events", len(d["events"]) - 1, "stamp"], 0),
        r"events\[\d+\]\.stamp: expected an int >= ",
    ),
    (
        "root is a function",
        _set(lambda d: ["backward_roots", 0], 1),
        r"backward_roots\[0\]: node 1 is not a variable",
    ),
    # the rules both loaders share (autodiff.trace._rules): the npz reader's bounds
    (
        "backward pass past the roots",
        _set(lambda d: ["steps", _backward(d), "backward_pass"], 999),
        r"steps\[\d+\]\.backward_pass: backward pass 999 does not exist: the trace has 1,",
    ),
    (
        "during_backward past the roots",
        _set(lambda d: ["steps", _forward(d), "during_backward"], 999),
        r"steps\[\d+\]\.during_backward: backward pass 999 does not exist",
    ),
    (
        "event pass equal to the number of roots",
        lambda d: _seed(d).update({"pass": len(d["backward_roots"])}),
        r"events\[\d+\]\.pass: backward pass 1 does not exist",
    ),
    (
        "cut of a function",
        lambda d: d["cuts"].append([_function(d), 0]),
        r"cuts\[0\]\[0\]: node \d+ is not a variable",
    ),
    (
        "gradient of a function",
        lambda d: d["graph"]["nodes"][0].update(grad_of=_function(d)),
        r"graph\.nodes\[0\]\.grad_of: node \d+ is not a variable",
    ),
    (
        "function flagged as a parameter",
        lambda d: d["graph"]["nodes"][_function(d)].update(parameter=True),
        r"parameters: node \d+ is not a variable",
    ),
]


def _seed(d):
    return next(e for e in d["events"] if e.get("pass") is not None and e["pass"] >= 0)


def _function(d):
    return next(n["id"] for n in d["graph"]["nodes"] if n["kind"] == "function")


def _first_acc(d):
    for s in d["steps"]:
        if s["accumulations"]:
            return s["accumulations"][0]
    raise AssertionError("the recorded trace has no accumulation")


@pytest.mark.parametrize(("name", "edit", "message"), CASES, ids=[c[0] for c in CASES])
def test_malformed_dicts_name_the_field(good, name, edit, message):
    trace_from_dict(good)  # the unedited dict loads
    with pytest.raises(TraceFormatError, match=message):
        trace_from_dict(_bad(good, edit))


def test_malformed_file_through_load(tmp_path, good):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_bad(good, _set(lambda d: ["steps", 3, "inputs", 0], "7"))))
    with pytest.raises(TraceFormatError, match=r"steps\[3\]\.inputs\[0\]: expected int, got str"):
        trace.load(path)


def test_not_json(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"format": ')
    with pytest.raises(TraceFormatError, match="not valid JSON: Expecting value at line 1, col"):
        trace.load(path)
    # json's message that ends in "at" reads with its place after it (it read "starting at)")
    path.write_text('{"format": "autodiff')
    with pytest.raises(TraceFormatError) as caught:
        trace.load(path)
    assert str(caught.value).endswith(
        "not valid JSON: Unterminated string starting at line 1, column 12"
    )
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TraceFormatError, match="not UTF-8"):
        trace.load(path)


def test_missing_file(tmp_path):
    with pytest.raises(TraceFormatError, match="cannot read"):
        trace.load(tmp_path / "nope.json")


def test_too_large_is_refused_before_reading(tmp_path, good):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(good))
    with pytest.raises(TraceFormatError, match="above the limit"):
        trace.load(path, max_bytes=100)
    trace.load(path, max_bytes=path.stat().st_size)


def test_deep_nesting_is_refused(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(TraceFormatError, match=f"deeper than {MAX_DEPTH}"):
        trace.load(path)
    # brackets inside strings do not count
    path.write_text(json.dumps({"format": "autodiff-trace", "x": "[" * 1000}))
    with pytest.raises(TraceFormatError, match="schema_version"):
        trace.load(path)


def test_nan_and_inf_survive(tmp_path):
    x = Variable(np.array([np.nan, np.inf, -np.inf, 1.0]), name="x")
    with trace.record() as t:
        y = x * 1.0
    t.to_json(tmp_path / "t.json")
    t2 = trace.load(tmp_path / "t.json")
    a = t2.steps[0].values[0].array
    assert np.isnan(a[0]) and a[1] == np.inf and a[2] == -np.inf and a[3] == 1.0
    assert t2.steps[0].nonfinite
    del y


# ----------------------------------------------------------------------------------------
# What load refuses, and what to_json writes so that load accepts it (issue 11)
# ----------------------------------------------------------------------------------------
def _small_dict():
    x = Variable(np.array(1.0), name="x")
    with trace.record() as t:
        y = F.sin(x)
        y.backward()
    return trace_to_dict(t)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # Sin (1) consumes its own output (2): a cycle
        (lambda d: d["graph"]["links"].append({"source": 2, "target": 1, "slot": 1}), "cycle"),
        # a second function that also creates variable 2
        (
            lambda d: (
                d["graph"]["nodes"].append({**d["graph"]["nodes"][1], "id": 3, "op": "Cos"}),
                d["graph"]["links"].append({"source": 0, "target": 3, "slot": 0}),
                d["graph"]["links"].append({"source": 3, "target": 2, "slot": 0}),
            ),
            "two creators",
        ),
    ],
)
def test_load_refuses_graphs_no_recording_makes(tmp_path, edit, message):
    data = _small_dict()
    edit(data)
    with pytest.raises(TraceFormatError, match=message):
        trace_from_dict(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TraceFormatError, match=message):
        trace.load(path)


def test_a_huge_integer_is_a_format_error(tmp_path):
    path = tmp_path / "big.json"
    path.write_text('{"format": "autodiff-trace", "schema_version": ' + "9" * 5000 + "}")
    with pytest.raises(TraceFormatError, match="not a trace"):
        trace.load(path)


@pytest.mark.parametrize("name", [123, "n" * 20_000, "a\x00b\x1bc", "<h1>big</h1>"])
def test_files_written_can_be_read_back(tmp_path, name):
    from autodiff import Function

    class Doubled(Function):
        def forward(self, x):
            return x * 2

        def backward(self, gy):
            return gy * 2

    Doubled.__name__ = "D" * 300
    x = Variable(np.array(1.0), name=name)
    with trace.record() as t:
        y = Doubled()(F.sin(x))
        y.backward()
    t.to_json(tmp_path / "t.json")
    back = trace.load(tmp_path / "t.json")
    assert back.node(0)["name"] == str(name)[:9_999] + ("…" if len(str(name)) > 10_000 else "")
    assert len(back.node(back.functions[-1])["op"]) == 200
    t.to_graphml(tmp_path / "t.graphml")
    g = nx.read_graphml(tmp_path / "t.graphml")  # well-formed XML
    assert "\x00" not in g.nodes["0"]["name"] and "\x1b" not in g.nodes["0"]["name"]


def test_the_loaders_build_rows_only_through_the_tables_constructors():
    # the tables' layouts are the recorder's (Recorder.add_variable, add_forward_step...):
    # a loader that appended its own tuples would drift from them unseen
    import inspect
    import re

    from autodiff.trace.formats import json_io as _io
    from autodiff.trace.formats import npz as _binary

    write = re.compile(
        r"\._(?:t_)?(?:info|raw|extra|refs|names|constants|operands|grad_of)"
        r"(?:\.(?:append|add|update)\(|\[[^\]]*\]\s*=)"
    )
    for module in (_io, _binary):
        found = write.findall(inspect.getsource(module))
        assert found == [], (module.__name__, found)


def test_the_tables_rows_are_named_alike_recorded_or_loaded(tmp_path):
    import io

    from autodiff.trace._rows import BackwardRow, EventRow, ForwardRow, FunctionRow, VariableRow
    from autodiff.trace._trace import trace_from_npz
    from autodiff.trace.formats.npz import trace_to_npz

    x = Variable(np.array([0.5, -1.0]), name="x")
    with trace.record() as t:
        for _ in range(2):
            x.cleargrad()
            F.sum(F.sin(x) * x).backward()
    path = tmp_path / "t.json"
    t.to_json(path)
    buffer = io.BytesIO()
    trace_to_npz(t, buffer)
    buffer.seek(0)
    for tr in (t, trace.load(path), trace_from_npz(buffer)):
        assert {type(r) for r in tr._raw} == {ForwardRow, BackwardRow}
        assert {type(r) for r in tr._info} == {VariableRow, FunctionRow}
        assert tr._extra and {type(e) for e in tr._extra} == {EventRow}
        fwd = next(r for r in tr._raw if r.kind == 0)
        assert tr._info[fwd.function].outputs == fwd.outputs


def test_random_bytes_are_called_not_text_and_content_errors_name_the_file(tmp_path):
    noise = tmp_path / "noise.json"
    noise.write_bytes(bytes(range(256)) * 400)  # brackets and invalid UTF-8 among them
    with pytest.raises(TraceFormatError, match=r"noise\.json: not UTF-8 text"):
        trace.load(noise)
    other = tmp_path / "settings.json"
    other.write_text('{"a": 1}')
    with pytest.raises(TraceFormatError, match=r"settings\.json: not a saved trace"):
        trace.load(other)
