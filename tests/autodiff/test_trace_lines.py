"""Source lines of the recorded Functions (``record(lines=...)``, ``TraceReader.line_of``):
recorded only when asked, the innermost line of the program's file, kept by both file formats,
refused when malformed, and absent (at no cost) from a plain recording."""

from __future__ import annotations

import io
import json
import runpy
import textwrap
import zipfile

import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Variable
from autodiff import trace as T
from autodiff.trace import ForwardOnly, TraceFormatError, trace_from_npz, trace_to_npz
from autodiff.trace._recorder import _T_LINE, LineRecorder, Recorder
from autodiff.trace._trace import trace_from_dict
from autodiff.trace.formats import json_io

PROGRAM = """\
import numpy as np
import autodiff.functions as F
from autodiff import Variable

x = Variable(np.array([0.5, 1.0, 2.0]), name="x")
y = F.sin(x)
z = y * x
w = F.sum(z)
w.backward()
"""
LINES = {"Sin": 6, "Mul": 7, "Sum": 8}


def write(tmp_path, text=PROGRAM, name="program.py"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def ops_and_lines(t):
    return {t.node(f)["op"]: t.line_of(f) for f in t.functions}


def test_each_op_has_its_line_and_a_variable_its_creators(tmp_path):
    path = write(tmp_path)
    with T.record(lines=path) as t:
        runpy.run_path(path)
    assert ops_and_lines(t) == LINES
    by_name = {t.node(v)["name"]: v for v in t.variables if t.node(v)["name"]}
    assert t.line_of(by_name["x"]) is None  # a leaf: no creator
    for f in t.functions:
        for out in t.graph.successors(f):
            assert t.line_of(out) == t.line_of(f)
    view = T.view_for_root(t, t.backward_roots[0], 0)
    assert {view.node(f)["op"]: view.line_of(f) for f in view.functions} == LINES
    with pytest.raises(IndexError):
        t.line_of(len(t.tables._info))


def test_the_innermost_line_of_the_program_through_its_own_helpers(tmp_path):
    write(
        tmp_path,
        "import autodiff.functions as F\n\n\ndef act(v):\n    return F.tanh(v)\n",
        "helper.py",
    )
    program = textwrap.dedent(
        """\
        import sys
        import numpy as np
        sys.path.insert(0, {folder!r})
        from helper import act
        from autodiff import Variable

        def layer(v):
            return act(v) * 2.0

        x = Variable(np.ones(3))
        y = layer(x)
        """
    ).format(folder=str(tmp_path))
    path = write(tmp_path, program)
    with T.record(lines=path) as t:
        runpy.run_path(path)
    # tanh ran in helper.py, called from the program's line 8 (inside its own function)
    assert ops_and_lines(t) == {"Tanh": 8, "Mul": 8}
    # a test of the file name picks the files it accepts: here the helper's own line
    with T.record(lines=lambda name: name.endswith("helper.py")) as t2:
        runpy.run_path(path)
    assert ops_and_lines(t2) == {"Tanh": 5, "Mul": None}


def test_a_plain_recording_keeps_no_line_and_the_same_tape(tmp_path):
    path = write(tmp_path)
    plain_recorder = T.record()
    with plain_recorder as plain:
        tape = plain.tables._tape  # the live tape, read before it is decoded
        runpy.run_path(path)
        kinds = [e[0] for e in tape if type(e) is tuple]
    assert type(plain.tables) is Recorder and _T_LINE not in kinds
    with T.record(lines=path) as lined:
        runpy.run_path(path)
    assert isinstance(lined.tables, LineRecorder)
    assert all(plain.line_of(n) is None for n in range(len(plain.tables._info)))
    assert plain.tables._lines == {}
    # the same recording otherwise: steps, nodes and values
    assert [(s.phase, s.op, s.inputs, s.outputs) for s in plain.steps] == [
        (s.phase, s.op, s.inputs, s.outputs) for s in lined.steps
    ]
    assert [plain.node(n)["op"] for n in range(len(plain.tables._info))] == [
        lined.node(n)["op"] for n in range(len(lined.tables._info))
    ]


def test_json_and_npz_keep_the_lines(tmp_path):
    path = write(tmp_path)
    with T.record(lines=path) as t:
        runpy.run_path(path)
    t.to_json(tmp_path / "t.json")
    assert ops_and_lines(T.load(tmp_path / "t.json")) == LINES
    data = json.loads((tmp_path / "t.json").read_text())
    assert sorted(n["line"] for n in data["graph"]["nodes"] if "line" in n) == [6, 7, 8]
    trace_to_npz(t, tmp_path / "t.npz")
    back = trace_from_npz(tmp_path / "t.npz")
    assert ops_and_lines(back) == LINES
    # saved again, the loaded trace keeps them
    trace_to_npz(back, tmp_path / "t2.npz")
    assert ops_and_lines(trace_from_npz(tmp_path / "t2.npz")) == LINES


def test_files_without_lines_load_with_none(tmp_path):
    path = write(tmp_path)
    with T.record(lines=path) as t:
        runpy.run_path(path)
    data = json_io.trace_to_dict(t)
    for n in data["graph"]["nodes"]:
        n.pop("line", None)
    assert set(ops_and_lines(trace_from_dict(data)).values()) == {None}
    with T.record() as plain:
        runpy.run_path(path)
    trace_to_npz(plain, tmp_path / "plain.npz")
    with zipfile.ZipFile(tmp_path / "plain.npz") as z:
        assert not {"line_nodes.npy", "line_numbers.npy"} & set(z.namelist())
    assert set(ops_and_lines(trace_from_npz(tmp_path / "plain.npz")).values()) == {None}


def _lined_dict(tmp_path):
    path = write(tmp_path)
    with T.record(lines=path) as t:
        runpy.run_path(path)
    return t, json_io.trace_to_dict(t)


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (-1, "graph.nodes[1].line"),
        ("7", "graph.nodes[1].line"),
        (2**31, "graph.nodes[1].line"),
    ],
)
def test_a_malformed_json_line_is_refused(tmp_path, bad, words):
    _, data = _lined_dict(tmp_path)
    data["graph"]["nodes"][1]["line"] = bad
    with pytest.raises(TraceFormatError, match=words.replace("[", r"\[").replace("]", r"\]")):
        trace_from_dict(data)


def test_a_json_line_on_a_variable_is_refused(tmp_path):
    _, data = _lined_dict(tmp_path)
    variable = next(i for i, n in enumerate(data["graph"]["nodes"]) if n["kind"] == "variable")
    data["graph"]["nodes"][variable]["line"] = 3
    with pytest.raises(TraceFormatError, match="only a function node has a source line"):
        trace_from_dict(data)


def _npz_with(tmp_path, **members):
    """The program's npz with members replaced (as arrays)."""
    t, _ = _lined_dict(tmp_path)
    trace_to_npz(t, tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz") as f:
        out = {k: f[k] for k in f.files}
    out.update(members)
    buffer = io.BytesIO()
    np.savez(buffer, **out)
    buffer.seek(0)
    return buffer


@pytest.mark.parametrize(
    ("members", "words"),
    [
        ({"line_nodes": np.array([1, 3], np.int64)}, "as many node ids"),
        ({"line_nodes": np.array([0, 3, 5], np.int64)}, "line_nodes"),  # 0: a variable
        ({"line_nodes": np.array([1, 3, 999], np.int64)}, "line_nodes"),
        ({"line_numbers": np.array([6, -7, 8], np.int64)}, "line_numbers"),
        ({"line_numbers": np.array([6, 7, 8], np.float64)}, "line_numbers"),
    ],
)
def test_malformed_npz_lines_are_refused(tmp_path, members, words):
    with pytest.raises(TraceFormatError, match=words):
        trace_from_npz(_npz_with(tmp_path, **members))


def test_a_line_budget_pauses_between_passes_at_no_cost(tmp_path):
    program = textwrap.dedent(
        """\
        import numpy as np
        import autodiff.functions as F
        from autodiff import Variable

        x = Variable(np.array(1.0), name="x")
        for i in range(20):
            F.sin(x)
        for step in range(2):
            loss = F.cos(x) * x
            x.cleargrad()
            loss.backward()
        F.exp(x)
        """
    )
    path = write(tmp_path, program)
    with T.record(lines=path) as t:
        t.tables.line_budget = 5
        runpy.run_path(path)
    sins = [t.line_of(f) for f in t.functions if t.node(f)["op"] == "Sin"]
    assert sins == [7] * 5 + [None] * 15  # paused after 5 operations
    # the first pass's ops came while paused; its backward renewed the budget
    assert [t.line_of(f) for f in t.functions if t.node(f)["op"] == "Cos"] == [None, 9]
    assert [t.line_of(f) for f in t.functions if t.node(f)["op"] == "Exp"] == [12]


def test_compaction_drops_the_lines_of_the_steps_it_removes(tmp_path):
    program = textwrap.dedent(
        """\
        import numpy as np
        import autodiff.functions as F
        from autodiff import Variable

        x = Variable(np.array(1.0), name="x")
        for i in range(50):
            F.sin(x)
        loss = F.cos(x) * x
        loss.backward()
        """
    )
    path = write(tmp_path, program)
    with T.record(lines=path) as t:
        t.tables.forward_only = summary = ForwardOnly(sample=0)
        runpy.run_path(path)
        assert t.tables.compact() == 50
    assert summary.operations == 50
    assert ops_and_lines(t) == {"Cos": 8, "Mul": 8}
    assert set(t.tables._lines) == set(t.functions)
    trace_to_npz(t, tmp_path / "t.npz")  # the rules hold: every line is a function's


def test_ops_of_other_files_have_no_line(tmp_path):
    path = write(tmp_path)
    with T.record(lines=str(tmp_path / "elsewhere.py")) as t:
        runpy.run_path(path)
        y = F.exp(Variable(np.array(1.0)))
    del y
    assert set(ops_and_lines(t).values()) == {None}


def test_micrograd_values_get_their_lines(tmp_path):
    program = textwrap.dedent(
        """\
        from autodiff.micrograd.engine import Value
        a = Value(2.0)
        b = Value(-3.0)
        c = a * b
        d = (c + a).tanh()
        d.backward()
        """
    )
    path = write(tmp_path, program)
    with T.record(lines=path) as t:
        runpy.run_path(path)
    assert ops_and_lines(t) == {"Mul": 4, "Add": 5, "Tanh": 5}


def test_a_pytorch_recording_answers_none():
    torch = pytest.importorskip("torch")
    from autodiff.trace import pytorch

    with pytorch.record() as t:
        x = torch.ones(3, requires_grad=True)
        (x.sin() * x).sum().backward()
    assert t.functions and all(t.line_of(n) is None for n in (*t.functions, *t.variables))
