"""The Document: what the main window wires. Errors keep the previous graph."""

import json
import types

import numpy as np
import pytest

from viewer.model.document.document import Document, ScriptError
from viewer.model.expression.program import ExpressionError
from viewer.model.scripts.process import ScriptProcess


class HeldRunner(list):
    """A runner that keeps what each work was given (a trace to lay out, a program's job) for
    the test to run by hand."""

    def submit(self, work) -> None:
        self.append(work.args[0])

    def cancel(self, kind: str) -> None:
        pass


@pytest.fixture
def doc():
    d = Document()
    d.events = []
    for name in (
        "graph_loaded",
        "error_raised",
        "status_changed",
        "selection_changed",
        "leaves_changed",
        "script_finished",
        "leaks_found",
    ):
        getattr(d, name).connect(lambda *args, _n=name: d.events.append((_n, args)))
    return d


def names(doc, event):
    return [args for n, args in doc.events if n == event]


def test_run_expression_loads_a_graph(doc):
    assert doc.run_expression("x = 0.5\ny = square(exp(square(x)))")
    assert doc.has_graph and doc.kind == "expression"
    assert names(doc, "graph_loaded") == [(doc,)]
    assert doc.playback.n_steps == 6 and doc.playback.index == -1
    assert doc.frame().step == -1
    assert "result 1.649" in names(doc, "status_changed")[-1][0]
    rows = doc.leaf_rows()
    assert [(r.name, r.text, r.default) for r in rows] == [("x", "0.5", True)]


def test_error_keeps_the_previous_graph_and_the_text(doc):
    doc.run_expression("x = 0.5\ny = exp(x)")
    scene, trace = doc.scene, doc.trace
    assert not doc.run_expression("y = exp(x")
    errors = names(doc, "error_raised")
    assert len(errors) == 1 and isinstance(errors[0][0], ExpressionError)
    assert doc.scene is scene and doc.trace is trace
    assert doc.source == "y = exp(x"
    assert names(doc, "status_changed")[-1][0].startswith("Error: line 1")
    assert not doc.run_expression("a = ones(2)\ny = a * ones(3) + x")
    assert doc.scene is scene
    assert doc.evaluation.output is not None  # the shown graph is still alive


def test_set_leaf_value_reruns_and_keeps_the_step(doc):
    doc.run_expression("x = 0.5\ny = square(exp(square(x)))")
    doc.playback.to_end()
    doc.select_index(doc.scene.names.index("x"))
    selected = doc.selection
    assert doc.set_leaf_value("x", "1.0")
    assert doc.playback.at_end
    assert doc.selection == selected
    assert float(doc.evaluation.leaves["x"].grad.data) == pytest.approx(4 * np.exp(2))
    # typed text is written into the program, which is what ran: it is the program's value
    assert doc.source == "x = 1.0\ny = square(exp(square(x)))"
    assert doc.program.source == doc.source and doc.leaf_rows()[0].default is True
    assert not doc.set_leaf_value("x", "x + 1")
    assert not doc.set_leaf_value("nope", 1.0)
    assert float(doc.evaluation.leaves["x"].data) == 1.0
    assert doc.set_leaf_value("x", 2)  # a number sets this run's value, not the text
    assert doc.leaf_rows()[0].default is False and doc.source.startswith("x = 1.0\n")
    assert doc.reset_leaf_values()
    assert float(doc.evaluation.leaves["x"].data) == 1.0


def test_a_failing_leaf_value_is_rolled_back(doc):
    doc.run_expression("x = [1, 2]\ny = sum(x * [3, 4])")
    assert not doc.set_leaf_value("x", "[1, 2, 3]")
    assert "x" not in doc.leaf_values
    assert doc.source == "x = [1, 2]\ny = sum(x * [3, 4])"  # the text is put back too
    np.testing.assert_array_equal(doc.evaluation.leaves["x"].data, [1.0, 2.0])


def test_select_and_inspect(doc):
    doc.run_expression("x = 0.5\ny = exp(x)")
    x = doc.scene.names.index("x")
    doc.select_index(x)
    assert doc.selection == int(doc.scene.node_ids[x])
    assert names(doc, "selection_changed")[-1] == (doc.selection,)
    doc.playback.to_end()
    info = doc.inspect()
    assert info.name == "x" and info.grad is not None
    doc.select_index(-1)
    assert doc.selection is None and doc.inspect() is None
    doc.select(10_000)
    assert doc.selection is None


def test_load_expression_file_and_unknown_suffix(doc, tmp_path):
    path = tmp_path / "f.expr"
    path.write_text("# title\nx = 2.0\ny = x * x\n")
    assert doc.load_path(path) is True
    assert doc.title == "f.expr" and doc.path == path
    assert not doc.load_path(tmp_path / "f.docx")
    assert not doc.load_path(tmp_path / "missing.expr")
    assert doc.title == "f.expr"


def test_json_trace_round_trip_and_bad_file(doc, tmp_path):
    doc.run_expression("x = 0.5\ny = square(exp(square(x)))")
    path = tmp_path / "t.json"
    assert doc.save_trace(path)
    n_nodes = doc.scene.n_nodes
    assert doc.load_path(path) is True
    assert doc.kind == "trace" and doc.scene.n_nodes == n_nodes
    assert doc.playback.n_steps == 6
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "nonsense"}))
    scene = doc.scene
    assert not doc.load_path(bad)
    assert doc.scene is scene
    assert isinstance(names(doc, "error_raised")[-1][0], ValueError)


def test_examples_load(doc):
    assert doc.load_example("diamond") is True
    assert doc.title.startswith("The diamond")
    run = doc.load_example("newton")
    assert isinstance(run, ScriptProcess) and not run.done
    assert not doc.load_example("no-such-example")


def test_script_runs_synchronously(doc, tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        "import numpy as np\nfrom autodiff import Variable\nimport autodiff.functions as F\n"
        "x = Variable(np.array(0.5), name='x')\ny = F.exp(x)\ny.name = 'y'\ny.backward()\n"
        "print('done')\n"
    )
    assert doc.run_script(script)
    assert doc.kind == "script" and doc.script_result.ok
    assert doc.script_result.stdout == "done\n"
    assert doc.playback.n_steps == 2
    assert names(doc, "script_finished")


def test_failing_script_keeps_the_graph(doc, tmp_path):
    doc.run_expression("y = exp(x)")
    scene = doc.scene
    script = tmp_path / "bad.py"
    script.write_text("x = 1\nraise RuntimeError('boom')\n")
    assert not doc.run_script(script)
    error = names(doc, "error_raised")[-1][0]
    assert isinstance(error, ScriptError)
    assert "RuntimeError: boom" in error.traceback and "bad.py" in error.traceback
    assert doc.scene is scene


def test_script_without_graph_says_what_is_missing(doc, tmp_path):
    script = tmp_path / "nothing.py"
    script.write_text("print(1 + 1)\n")
    assert not doc.run_script(script)
    assert "recorded no graph" in str(names(doc, "error_raised")[-1][0])


def test_script_without_backward_shows_forward_graph(doc, tmp_path):
    script = tmp_path / "forward.py"
    script.write_text(
        "import numpy as np\nfrom autodiff import Variable\nimport autodiff.functions as F\n"
        "x = Variable(np.array(0.5))\ny = F.exp(F.sin(x))\n"
    )
    assert doc.run_script(script)
    assert "never called backward" in names(doc, "status_changed")[-1][0]
    assert doc.playback.n_steps == 2


def test_expressions_wait_for_a_running_script(doc, tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import time\nwhile True:\n    time.sleep(0.01)\n")
    run = doc.load_path(script)
    run.start()
    with pytest.raises(RuntimeError):
        run.start()
    with pytest.raises(RuntimeError):
        run.run()
    try:
        assert not doc.run_expression("y = exp(x)")
        assert "script is running" in str(names(doc, "error_raised")[-1][0])
    finally:
        doc.cancel_script()
        assert run.wait(60)
    assert run.result.cancelled
    assert not doc.apply_script_result(run.result)
    assert doc.run_expression("y = exp(x)")


def test_big_graphs_are_laid_out_on_the_runner(doc):
    requests = HeldRunner()
    doc.runner = requests
    doc.sync_layout_limit = 2
    doc.run_expression("y = exp(x)")  # 3 nodes > 2: goes to the runner
    assert len(requests) == 1 and doc.layout_pending and not doc.has_graph
    from viewer.model.layout.compute import compute_layout

    stale = requests[0]
    doc.run_expression("y = sin(x)")
    assert not doc.apply_layout(stale, compute_layout(stale))  # superseded
    assert doc.apply_layout(requests[1], compute_layout(requests[1]))
    assert doc.has_graph and doc.scene.names.count("Sin") == 1


def test_a_replaced_layouts_outcome_leaves_the_new_one_pending(doc):
    from viewer.model.document.work import Outcome, lay_out

    works = []
    doc.runner = types.SimpleNamespace(submit=works.append, cancel=lambda kind: None)
    doc.sync_layout_limit = 2
    doc.run_expression("y = exp(x)")
    doc.run_expression("y = sin(x)")  # replaces the first layout before it ended
    assert [w.kind for w in works] == ["layout", "layout"]
    works[0].finish(Outcome("cancelled"))
    assert doc.layout_pending and not doc.has_graph
    trace, palette, by_generation = works[1].args
    scene = lay_out(trace, palette, by_generation, lambda *report: None, lambda: False)
    works[1].finish(Outcome("succeeded", scene))
    assert doc.scene is scene and doc.scene.names.count("Sin") == 1


def test_release_graph_audits(doc):
    doc.run_expression("y = exp(square(x))")
    report = doc.release_graph()
    assert doc.evaluation.released
    assert names(doc, "leaks_found") or report is None
