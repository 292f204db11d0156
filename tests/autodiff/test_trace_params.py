"""A Function's small attributes (Pow's c, Sum's axis...) are recorded, read back through
``function_params`` from a live trace, a view, JSON and the binary format, and a file's
attributes are checked like every other field."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Function, Variable, trace
from autodiff.trace import TraceFormatError, view_for_root
from autodiff.trace._checks import (
    MAX_PARAM_CHARS,
    MAX_PARAM_STR,
    MAX_PARAMS,
    check_params,
    small_params,
)
from autodiff.trace._trace import trace_from_dict, trace_from_npz
from autodiff.trace.formats.json_io import trace_to_dict
from autodiff.trace.formats.npz import trace_to_npz


class Odd(Function):
    """Attributes of every kind a recording keeps, and some it leaves out."""

    def __init__(self) -> None:
        self.c = 2.5
        self.n = np.int64(3)
        self.zero_d = np.array(-1.5)
        self.flag = True
        self.nothing = None
        self.axes = (np.int64(1), 0)
        self.label = "scale"
        self.top = math.inf
        self.bad = math.nan
        self.weights = np.ones(3)  # an array: left out
        self.fn = print  # a callable: left out
        self.long = "x" * (MAX_PARAM_STR + 1)  # too long: left out
        self._private = 1  # not public: left out

    def forward(self, x):
        return x * self.c

    def backward(self, gy):
        return gy * self.c


KEPT = {
    "c": 2.5,
    "n": 3,
    "zero_d": -1.5,
    "flag": True,
    "nothing": None,
    "axes": (1, 0),
    "label": "scale",
    "top": math.inf,
}


def _same(got: dict, want: dict) -> None:
    """Equal, NaN included, and of the same types (a tuple stays a tuple, an int an int)."""
    assert list(got) == list(want)
    for name, v in want.items():
        assert type(got[name]) is type(v), name
        if isinstance(v, float) and math.isnan(v):
            assert math.isnan(got[name])
        else:
            assert got[name] == v, name


def _recorded():
    x = Variable(np.arange(6.0).reshape(2, 3), name="x")
    with trace.record() as t:
        y = F.sum(Odd()(x) ** 2, axis=0) + x[0]
        y = F.sum(y)
        y.backward()
    return t, (x, y)


def _fid(t, op):
    return next(f for f in t.functions if t.node(f)["op"] == op)


def test_the_small_public_attributes_are_kept_and_the_rest_left_out():
    kept = dict(small_params(Odd().__dict__))
    assert "bad" not in kept  # past MAX_PARAMS: the first eight are kept
    _same(kept, KEPT)
    assert len(small_params({f"a{i}": i for i in range(20)})) == MAX_PARAMS
    wide = small_params({f"n{i}": "y" * 40 for i in range(8)})
    assert sum(len(n) + len(repr(v)) for n, v in wide) <= MAX_PARAM_CHARS < 8 * 44
    assert small_params({"v": Variable(np.array(1.0)), "s": (1, 2.5), "t": tuple(range(99))}) == ()
    assert dict(small_params({"x": math.nan}))["x"] != dict(small_params({"x": math.nan}))["x"]


def test_a_recording_keeps_them_only_for_functions_that_have_some():
    t, alive = _recorded()
    _same(t.function_params(_fid(t, "Odd")), KEPT)
    assert t.function_params(_fid(t, "Pow")) == {"c": 2}
    assert t.function_params(_fid(t, "Sum")) == {"axis": 0, "keepdims": False, "x_shape": (2, 3)}
    assert t.function_params(_fid(t, "GetItem")) == {"slices": 0}
    assert t.function_params(_fid(t, "Add")) == {}
    assert _fid(t, "Add") not in t.tables._params  # most primitives cost no entry
    view = view_for_root(t, t.backward_roots[0])
    assert view.function_params(_fid(t, "Pow")) == {"c": 2}
    del alive


def test_a_graph_built_before_recording_keeps_them_too():
    x = Variable(np.array([1.0, 2.0]))
    y = F.sum(x**3)
    t = trace.from_output(y)
    assert t.function_params(_fid(t, "Pow")) == {"c": 3}
    assert t.function_params(_fid(t, "Sum")) == {"axis": None, "keepdims": False, "x_shape": (2,)}


def test_json_and_npz_round_trips_keep_values_and_types():
    t, alive = _recorded()
    data = json.loads(json.dumps(trace_to_dict(t), allow_nan=False))
    from_json = trace_from_dict(data)
    buffer = io.BytesIO()
    trace_to_npz(t, buffer)
    buffer.seek(0)
    from_npz = trace_from_npz(buffer)
    for back in (from_json, from_npz):
        for f in t.functions:
            _same(back.function_params(f), t.function_params(f))
        assert back.live(_fid(t, "Pow")) is None
    del alive


def test_a_file_of_schema_4_loads_with_no_attributes():
    t, alive = _recorded()
    data = trace_to_dict(t)
    assert data["schema_version"] == 5
    data["schema_version"] = 4
    for node in data["graph"]["nodes"]:
        node.pop("params", None)
    back = trace_from_dict(data)
    assert all(back.function_params(f) == {} for f in back.functions)
    assert len(back.steps) == len(t.steps)
    del alive


def _node_params(d):
    return next(n for n in d["graph"]["nodes"] if n.get("params"))


# (name, the params entry, the message after the entry's path)
HOSTILE = [
    ("not a list", {"c": 2}, r": expected array, got object"),
    ("too many", [[f"a{i}", "int", i] for i in range(9)], rf": 9 .* limit of {MAX_PARAMS}"),
    ("not a row", [["c", "int"]], r"\[0\]: expected 3 item"),
    ("a private name", [["_c", "int", 1]], r"\[0\]\[0\]: '_c' is not a public"),
    ("a name that is code", [["a b", "int", 1]], r"\[0\]\[0\]: 'a b' is not a public"),
    ("an unknown kind", [["c", "pickle", "x"]], r"\[0\]\[1\]: expected one of"),
    ("a string as a float", [["c", "float", "2"]], r"\[0\]\[2\]: expected a number"),
    ("an object as an int", [["c", "int", {"a": 1}]], r"\[0\]\[2\]: expected int"),
    ("a huge int", [["c", "int", 10**30]], r"\[0\]\[2\]: expected an int <="),
    ("a long string", [["c", "str", "s" * 51]], r"\[0\]\[2\]: string of 51 characters"),
    ("a long tuple", [["c", "ints", list(range(17))]], r"\[0\]\[2\]: 17 ints"),
    ("floats in a tuple", [["c", "ints", [1.5]]], r"\[0\]\[2\]\[0\]: expected int"),
    ("too many characters", [[f"a{i}", "str", "s" * 40] for i in range(6)], r": .* 200 char"),
    ("a name twice", [["c", "int", 1], ["c", "int", 2]], r": an attribute is named twice"),
]


@pytest.mark.parametrize(("name", "params", "message"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_params_are_refused_naming_the_field(name, params, message):
    t, alive = _recorded()
    data = trace_to_dict(t)
    _node_params(data)["params"] = params
    with pytest.raises(TraceFormatError, match=rf"graph\.nodes\[\d+\]\.params{message}"):
        trace_from_dict(json.loads(json.dumps(data)))
    buffer = io.BytesIO()
    trace_to_npz(t, buffer)
    buffer.seek(0)
    with np.load(buffer) as f:
        arrays = {k: f[k] for k in f.files}
    header = json.loads(bytes(arrays["header"]).decode())
    header["params"][0][1] = params
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    out = io.BytesIO()
    np.savez(out, **arrays)
    out.seek(0)
    with pytest.raises(TraceFormatError, match=rf"params\[0\]\[1\]{message}"):
        trace_from_npz(out)
    del alive


def test_params_on_a_variable_node_are_refused():
    t, alive = _recorded()
    data = trace_to_dict(t)
    variable = next(n for n in data["graph"]["nodes"] if n["kind"] == "variable")
    variable["params"] = [["c", "int", 1]]
    with pytest.raises(TraceFormatError, match=r"\.params: only a function node"):
        trace_from_dict(data)
    buffer = io.BytesIO()
    trace_to_npz(t, buffer)
    buffer.seek(0)
    with np.load(buffer) as f:
        arrays = {k: f[k] for k in f.files}
    header = json.loads(bytes(arrays["header"]).decode())
    header["params"][0][0] = variable["id"]
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    out = io.BytesIO()
    np.savez(out, **arrays)
    out.seek(0)
    with pytest.raises(TraceFormatError, match=r"params\[0\]\[0\]: node \d+ is not a function"):
        trace_from_npz(out)
    del alive


def test_check_params_reads_what_small_params_keeps():
    from autodiff.trace._checks import params_to_plain

    pairs = small_params(Odd().__dict__)
    rows = json.loads(json.dumps(params_to_plain(pairs), allow_nan=False))
    _same(dict(check_params(rows, "p")), KEPT)


class Flags(Function):
    def __init__(self, c) -> None:
        self.c = c

    def forward(self, x):
        return x

    def backward(self, gy):
        return gy


def test_equal_attributes_of_other_types_stay_apart():
    x = Variable(np.array(1.0))
    with trace.record() as t:
        ys = [Flags(c)(x) for c in (2, 2.0, True, (1,), (True,), (1, 2))]
    got = [t.function_params(f) for f in t.functions]
    assert len(got) == len(ys)
    _same(got[0], {"c": 2})
    _same(got[1], {"c": 2.0})
    _same(got[2], {"c": True})
    _same(got[3], {"c": (1,)})
    assert got[4] == {}  # a tuple of bools is not kept
    _same(got[5], {"c": (1, 2)})
