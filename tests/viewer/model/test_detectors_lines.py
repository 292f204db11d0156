"""A script run knows the line of each op of its first passes (the head of its recording) and of
the passes kept later with the same ops (carried over), and the problems and the inspector say
it: "on line 7"."""

from __future__ import annotations

import runpy
import textwrap

import numpy as np

import autodiff.functions as F
from autodiff import Variable
from autodiff import trace as T
from autodiff.trace._recorder import LineRecorder, Recorder
from viewer.model.checks.detectors import flow, values
from viewer.model.checks.problems import GraphInput, Thresholds
from viewer.model.panels.inspector import inspect
from viewer.model.scripts.pass_recording import LINE_BUDGET, PassRecording
from viewer.model.scripts.process import ScriptProcess
from viewer.model.scripts.run import run_script

LIMITS = Thresholds()

THREE = """\
import numpy as np, autodiff.functions as F
from autodiff import Variable
x = Variable(np.array([1.0, 2.0]), name="x"); y = F.sin(x)
z = y * x
F.sum(z).backward()
"""

# line 7: (10, 1) - (10,) broadcasts to (10, 10), then summed
BROADCAST = """\
import numpy as np
import autodiff.functions as F
from autodiff import Parameter, Variable
x = Variable(np.linspace(-1, 1, 10).reshape(10, 1))
t = Variable(np.linspace(0, 1, 10), name="t")
W = Parameter(np.ones((1, 1)), name="W")
diff = F.matmul(x, W) - t
loss = F.sum(diff ** 2) / 10
loss.backward()
"""


def _write(tmp_path, text, name="script.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _lines(reader):
    return {reader.ops([f])[0]: reader.line_of(f) for f in reader.functions}


def test_a_script_runs_graph_knows_the_line_of_each_op(tmp_path):
    result = run_script(_write(tmp_path, THREE))
    assert result.ok, result.error
    view = result.view(len(result.graphs) - 1)
    assert _lines(view) == {"Sin": 3, "Mul": 4, "Sum": 5}
    sin = next(f for f in view.functions if view.ops([f])[0] == "Sin")
    rows = dict(inspect(view, sin, len(view.steps) - 1).as_rows())
    assert rows["script"] == "line 3"
    # a variable's inspector rows name no line; a trace recorded without lines shows none
    x = next(v for v in view.variables if view.names([v])[0] == "x")
    assert "script" not in dict(inspect(view, x, -1).as_rows())
    with T.record() as plain:
        F.sin(Variable(np.array(1.0)))
    assert "script" not in dict(inspect(plain, plain.functions[0], 0).as_rows())


def test_the_broadcast_problem_of_a_script_names_its_line(tmp_path):
    result = run_script(_write(tmp_path, BROADCAST))
    assert result.ok, result.error
    found = [p for p in result.problems.problems if p.kind == "broadcast-shape"]
    assert len(found) == 1, [p.line() for p in result.problems.problems]
    assert found[0].message.startswith("Sub (node 5) on line 7: shapes (10, 1) and (10,)")
    # the same graph recorded without lines: no line in the message
    path = _write(tmp_path, BROADCAST, "plain.py")
    with T.record() as t:
        runpy.run_path(str(path))
    (plain,) = values.broadcast_shape(GraphInput(t), LIMITS)
    assert "line" not in plain.message


def test_nonfinite_and_a_cut_name_their_line(tmp_path):
    program = textwrap.dedent(
        """\
        import numpy as np
        import autodiff.functions as F
        from autodiff import Parameter, Variable
        W = Parameter(np.array([1.0, 2.0]), name="W")
        b = Parameter(np.array([0.5, 0.5]), name="b")
        h = F.sin(W)
        h.unchain()
        y = F.log(h * 0.0 + b - 0.5)
        F.sum(y).backward()
        """
    )
    path = _write(tmp_path, program)
    with T.record(lines=str(path)) as t, np.errstate(all="ignore"):
        runpy.run_path(str(path))
    (bad,) = flow.nonfinite(GraphInput(t), LIMITS)
    assert "made by `Log` on line 8" in bad.message, bad.message
    (cut,) = flow.unreached_parameter(GraphInput(t), LIMITS)
    assert cut.message.startswith("W gets no gradient"), cut.message
    assert "(variable #2 from Sin on line 6)" in cut.message, cut.message


def test_the_worker_sends_the_lines_in_its_file(tmp_path):
    result = ScriptProcess(_write(tmp_path, THREE)).run()
    assert result.ok, result.error
    assert _lines(result.view(len(result.graphs) - 1)) == {"Sin": 3, "Mul": 4, "Sum": 5}


def test_only_the_head_records_lines(tmp_path):
    path = _write(tmp_path, "")
    recording = PassRecording(64, max_passes=4, script=str(path))
    assert isinstance(recording.head.tables, LineRecorder)
    assert recording.head.tables.line_budget == LINE_BUDGET
    x = Variable(np.array(1.0))
    with recording:
        for _ in range(40):  # past the reservoir's head: segments of their own
            y = x * x
            x.cleargrad()
            y.backward()
    assert recording.segments
    assert all(type(s.tables) is Recorder for s in recording.segments.values())
    assert type(PassRecording(64).head.tables) is Recorder  # no script: no lines


def test_redundant_computation_names_both_lines(tmp_path):
    program = textwrap.dedent(
        """\
        import numpy as np
        import autodiff.functions as F
        from autodiff import Variable
        x = Variable(np.linspace(-1, 1, 2000).reshape(40, 50), name="x")
        a = F.tanh(x)
        b = F.tanh(x)
        F.sum(a * b).backward()
        """
    )
    path = _write(tmp_path, program)
    with T.record(lines=str(path)) as t:
        runpy.run_path(str(path))
    (p,) = values.redundant_computation(GraphInput(t), LIMITS)
    assert "Tanh" in p.message and "on line 6 on x is computed twice" in p.message, p.message
    assert "(steps 1 and 2, the first on line 5, 2000 elements each)" in p.message, p.message


# A NaN from pass #31 on (log of a negative), long past a 4-pass run's head of 2 passes; the
# same ops in every pass. Line 9: the Log; line 11: backward().
LATE_NAN = """\
import numpy as np
import autodiff.functions as F
from autodiff import Parameter, Variable
x = Variable(np.linspace(1, 2, 8).reshape(8, 1))
W = Parameter(np.ones((1, 1)), name="W")
for i in range(40):
    shift = 10.0 if i >= 30 else 0.0
    h = F.matmul(x, W) - shift
    loss = F.sum(F.log(h))
    W.cleargrad()
    loss.backward()
"""


def _late_run(tmp_path, text):
    from viewer.model.scripts.run import ScriptRun

    run = ScriptRun(_write(tmp_path, text))
    run.max_passes = 4
    with np.errstate(all="ignore"):
        result = run.run()
    assert result.ok, result.error
    return result


def test_a_pass_kept_past_the_head_gets_the_lines_of_a_head_pass_of_the_same_ops(tmp_path):
    result = _late_run(tmp_path, LATE_NAN)
    head = [g for g in result.graphs if not g.own_trace]
    later = [g for g in result.graphs if g.own_trace]
    assert head and later and max(g.number for g in later) == 39
    first = _lines(result.view(result.graphs.index(head[0])))
    assert first == {"MatMul": 8, "Sub": 8, "Log": 9, "Sum": 9}
    for g in later:
        assert _lines(result.view(result.graphs.index(g))) == first, g.title
    # the first NaN, found in pass #31 (kept: flagged), names its op's line
    nan = result.graphs.index(next(g for g in later if g.number == 30))
    (problem,) = [p for p in result.problems.for_graph(nan) if p.kind == "nonfinite"]
    assert "`Log`" in problem.message and "on line 9" in problem.message, problem.message


def test_a_later_pass_of_other_ops_gets_no_lines(tmp_path):
    """Past pass #20 the loss is made by other ops (tanh for log): no head pass has that
    structure, so those passes name no line rather than a wrong one."""
    other = LATE_NAN.replace("F.log(h)", "(F.tanh(h) if i >= 20 else F.log(h))").replace(
        "10.0 if i >= 30", "0.0 if i >= 30"
    )
    result = _late_run(tmp_path, other)
    for g in result.graphs:
        lines = _lines(result.view(result.graphs.index(g)))
        if g.number >= 20:
            assert "Tanh" in lines and set(lines.values()) == {None}, g.title
        else:
            assert lines["Log"] == 9, g.title


def test_carried_lines_travel_in_the_workers_files(tmp_path):
    path = _write(tmp_path, LATE_NAN.replace("10.0 if i >= 30", "0.0 if i >= 30"))
    result = ScriptProcess(path, max_passes=4).run()
    assert result.ok, result.error
    last = len(result.graphs) - 1
    assert result.graphs[last].number == 39
    assert _lines(result.view(last)) == {"MatMul": 8, "Sub": 8, "Log": 9, "Sum": 9}
