"""The Document's problems (what the Problems panel lists): the report of the source shown, the
existing marks read as problems and shown once, the panel's rows and header, the graph list's
filter by kind."""

import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import viewer.model.checks.detectors  # noqa: F401  (registered before the registry is swapped)
from autodiff import Variable
from autodiff.trace import record, view_for_root
from viewer.check import check_path
from viewer.model.checks import problems as P
from viewer.model.checks.problem_list import kinds_by_graph, problem_rows, report_lines
from viewer.model.checks.problem_marks import OVERLAY_KIND, flag_problems, unify
from viewer.model.document.document import Document
from viewer.model.document.problem_finder import loaded_graphs
from viewer.model.document.work import Outcome
from viewer.model.scripts.pass_sampling import FLAG_GRADCHECK, FLAG_HELD, filter_entries
from viewer.model.scripts.run import ScriptRun


@pytest.fixture
def registry(monkeypatch):
    """An empty detector registry the test fills (the real detectors stay out of it)."""
    monkeypatch.setattr(P, "_GRAPH", {})
    monkeypatch.setattr(P, "_RUN", {})
    return P


def dead_relu_on_first_function(seen=None):
    @P.graph_detector("dead-relu")
    def detector(g, limits):
        if seen is not None:
            seen.append((g.graph, g.source, g.title))
        fn = g.reader.functions[0]
        name = g.reader.node(fn).get("op")
        return [P.Problem("dead-relu", "warning", f"<b>{name}</b> units dead", g.graph, 1, (fn,))]

    return detector


def test_a_typed_expression_is_looked_at_and_its_problem_marks_its_node(registry):
    seen = []
    dead_relu_on_first_function(seen)
    doc = Document()
    changes = []
    doc.problems_changed.connect(changes.append)
    assert doc.run_expression("x = 0.5\ny = exp(x) * 2\n")
    assert seen == [(0, "engine", "expression")] and changes
    problems = doc.problems()
    assert [p.kind for p in problems] == ["dead-relu"]
    fn = doc.trace.functions[0]
    (mark,) = [o for o in doc.scene.overlays[fn] if o.kind == OVERLAY_KIND]
    assert mark.badge == "dead-relu" and mark.tooltip.startswith("dead-relu (warning): ")
    summary = doc.problem_summary()
    assert summary.problems == problems and "dead-relu" in summary.ran
    # another program: another report, and the old marks go with the old scene
    assert doc.run_expression("x = 2.0\ny = x * x\n")
    assert [p.graph for p in doc.problems()] == [0] and len(changes) >= 2


def test_the_first_nan_is_a_problem_shown_once_on_its_own_badge(registry):
    doc = Document()
    assert doc.run_expression("x = 0.0\ny = log(x) * 2\n")
    (problem,) = doc.problems()
    first = doc.trace.first_nonfinite()
    assert problem.kind == "nonfinite" and problem.severity == "error"
    assert problem.step == first.index and problem.nodes == (first.function,)
    assert "Log" in problem.message
    overlays = doc.scene.overlays[first.function]
    assert [o.kind for o in overlays] == ["nonfinite"]  # no second mark for the same finding
    assert "problem nonfinite" in overlays[0].tooltip


def test_a_detector_finding_the_same_kind_on_the_graph_replaces_the_mark(registry):
    @P.graph_detector("nonfinite")
    def nonfinite(g, limits):
        return [P.Problem("nonfinite", "error", "from the detector", g.graph, 0, ())]

    doc = Document()
    assert doc.run_expression("x = 0.0\ny = log(x)\n")
    assert [p.message for p in doc.problems()] == ["from the detector"]


def test_unify_keeps_one_problem_per_kind_and_graph_of_the_marks():
    graph_mark = P.Problem("nonfinite", "error", "with its node", 2, 4, (7,))
    flag = P.Problem("nonfinite", "error", "the pass flag", 2)
    other = P.Problem("graph-held", "warning", "held", 3)
    found = P.Problem("dead-relu", "warning", "dead", 1)
    assert unify([found], [graph_mark, flag, other]) == [graph_mark, found, other]


CARRIES = """
import numpy as np
from autodiff import Variable
w = Variable(np.array([1.0, 2.0]), name="weights")
for epoch in range(3):
    loss = (w * w).sum()
    loss.backward()  # no w.cleargrad(): each pass adds to the last one's gradient
    w.data = w.data - 0.01 * w.grad.data
"""

CLEARS = CARRIES.replace("    loss = (w * w)", "    w.cleargrad()\n    loss = (w * w)")


def run_script(tmp_path, text):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(text))
    result = ScriptRun(path).run()
    assert result.ok, result.error
    return result


def test_a_carried_gradient_is_a_problem_of_the_graph_naming_the_parameter(tmp_path, registry):
    doc = Document()
    result = run_script(tmp_path, CARRIES)
    assert doc.apply_script_result(result)
    index = doc.shown_graph()
    assert index == len(result.graphs) - 1
    carried = [p for p in doc.problems() if p.kind == "carried-gradient"]
    assert len(carried) == 1 and carried[0].graph == index
    assert "weights" in carried[0].message and "cleargrad" in carried[0].message
    assert carried[0].nodes and carried[0].step is not None
    # its twin that clears the gradient has none
    doc2 = Document()
    assert doc2.apply_script_result(run_script(tmp_path, CLEARS))
    assert not [p for p in doc2.problems() if p.kind == "carried-gradient"]


def test_a_scripts_own_report_is_used_and_not_detected_again(tmp_path, registry):
    @P.graph_detector("dead-relu")
    def never(g, limits):
        raise AssertionError("the run brought its report")

    result = run_script(tmp_path, CLEARS)
    found = P.Problem("diverging-loss", "warning", "the loss grew", None)
    result.problems = P.ProblemReport([found], ["diverging-loss"], {}, 3, 3)
    doc = Document()
    assert doc.apply_script_result(result)
    assert doc.problem_report is result.problems
    assert found in doc.problems()


def test_a_runs_held_passes_are_its_detectors_finding_when_they_ran(tmp_path, registry):
    held = CLEARS.replace("    loss.backward()", "    loss.backward()\n    kept.append(loss)")
    result = run_script(tmp_path, "kept = []\n" + textwrap.dedent(held))
    assert sum(g.flags & FLAG_HELD != 0 for g in result.graphs) == 2
    doc = Document()
    assert doc.apply_script_result(result)
    assert [p.graph for p in doc.problems() if p.kind == "graph-held"] == [0, 1]  # the flags
    # the run's detector read the same flags and said it once, for the whole run
    once = P.Problem("graph-held", "warning", "passes #1 and #2 kept: history.append(loss)")
    result.problems = P.ProblemReport([once], ["graph-held"], {}, 3, 3)
    doc = Document()
    assert doc.apply_script_result(result)
    assert [p for p in doc.problems() if p.kind == "graph-held"] == [once]


def test_the_panels_held_graph_names_the_global_list_that_held_the_losses(tmp_path):
    """The real detectors over a run whose loop keeps each loss in a global list: the
    Document's graph-held problem names the list and the line that fills it."""
    held = CLEARS.replace("    loss.backward()", "    loss.backward()\n    kept.append(loss)")
    result = run_script(tmp_path, "kept = []\n" + textwrap.dedent(held))
    doc = Document()
    assert doc.apply_script_result(result)
    (problem,) = [p for p in doc.problems() if p.kind == "graph-held"]
    assert problem.severity == "warning"
    assert "held by `kept` (a list, line 10: kept.append(loss))" in problem.message


def test_a_saved_multi_pass_trace_lists_what_check_prints_per_pass(tmp_path):
    """Three passes without cleargrad(), saved: the panel looks at each pass as --check does
    and lists the same problem (kind, message with its pass count, nodes), on the one graph
    shown at the whole recording's step of that pass's accumulation."""
    w = Variable(np.array([1.0, 2.0]), name="weights")
    with record() as t:
        for _ in range(3):
            loss = (w * w).sum()
            loss.backward()
            w.data = w.data - 0.01 * w.grad.data
    path = tmp_path / "carried.json"  # (the app opens saved traces as .json)
    t.to_json(path)
    checked = check_path(path, run_scripts=False).report
    (printed,) = checked.problems
    assert printed.kind == "carried-gradient" and printed.graph == 1
    assert "(in 2 of 3 kept passes, first in pass #2)" in printed.message
    doc = Document()
    assert doc.load_path(str(path))
    (shown,) = doc.problems()
    assert (shown.kind, shown.severity, shown.message, shown.nodes) == (
        printed.kind,
        printed.severity,
        printed.message,
        printed.nodes,
    )
    assert shown.graph == doc.shown_graph() == 0
    second = view_for_root(doc.trace, doc.trace.backward_roots[1], 1)
    assert shown.step == second.global_step(printed.step)
    step = doc.trace.steps[shown.step]
    assert step.phase == "backward" and step.accumulations  # the carried sum itself
    assert doc.problem_summary().graphs == 3


def test_a_script_without_a_report_is_looked_at_over_its_graphs_in_memory(tmp_path, registry):
    seen = []
    dead_relu_on_first_function(seen)
    result = run_script(tmp_path, CLEARS)
    result.problems = None  # a run that brought no report (its detectors did not run)
    seen.clear()  # (a run that looks at its passes itself already showed them the detector)
    doc = Document()
    assert doc.apply_script_result(result)
    assert sorted(g for g, _, _ in seen) == loaded_graphs(result) == list(range(3))
    assert [t for _, _, t in seen] == [g.title for g in result.graphs]
    # one bug, named once: by the graph on screen (the last) as its own line, in place of
    # the run's line at its first graph; the filter finds every graph of it
    assert kinds_by_graph(doc.problems()) == {2: {"dead-relu"}}
    kinds = doc.problem_kinds()
    assert kinds == {0: {"dead-relu"}, 1: {"dead-relu"}, 2: {"dead-relu"}}
    # choosing another graph keeps the run's report (one source)
    report = doc.problem_report
    assert doc.show_script_graph(0)
    assert doc.problem_report is report and doc.shown_graph() == 0


class FakeRunner:
    """Lays out at once (as the window's runner would, later); keeps the detectors' work."""

    def __init__(self):
        self.works = []

    def submit(self, work):
        if work.kind != "problems":
            result = work.function(*work.args, lambda *a: None, lambda: False)
            work.finish(Outcome("succeeded", result))
            return
        self.works.append(work)

    def cancel(self, kind):
        pass


def test_a_big_source_is_looked_at_on_the_runner_without_a_dialog(registry):
    dead_relu_on_first_function()
    doc = Document()
    runner = doc.runner = FakeRunner()
    doc.run_expression("x = 0.5\ny = exp(x) * 2\n")
    assert doc.problem_report is not None and not runner.works  # small: looked at here
    doc.sync_layout_limit = 2
    doc.run_expression("x = 0.5\ny = exp(x) * 2\n")
    doc.run_expression("x = 0.5\ny = exp(x) * 2 + x\n")
    assert doc.problem_report is None  # not yet: it is the runner's
    stale, work = runner.works
    assert work.kind == "problems" and work.quiet and doc.problems_running
    # the runner's thread runs the function; the outcome comes back on the GUI thread
    report = work.function(*work.args, lambda *a: None, lambda: False)
    stale.finish(Outcome("succeeded", P.ProblemReport()))  # another source's: ignored
    assert doc.problem_report is None
    work.finish(Outcome("succeeded", report))
    assert doc.problem_report is report and not doc.problems_running
    assert [p.kind for p in doc.problems()] == ["dead-relu"]


def test_pass_flags_read_as_problems_of_their_graphs():
    graphs = [
        SimpleNamespace(title="#1", flags=0, root=3, number=0),
        SimpleNamespace(title="#2", flags=FLAG_HELD | FLAG_GRADCHECK, root=9, number=1),
    ]
    found = flag_problems(graphs)
    assert [(p.kind, p.graph) for p in found] == [("graph-held", 1), ("wrong-backward", 1)]
    assert found[0].nodes == (9,) and "history.append" in found[0].message


def test_the_graph_filter_finds_graphs_by_problem_kind():
    graphs = [
        SimpleNamespace(title="#1 · loss 1", number=0, iteration=0, loss=1.0, flags=0),
        SimpleNamespace(title="#2 · loss 2", number=1, iteration=1, loss=2.0, flags=FLAG_HELD),
        SimpleNamespace(title="#3 · loss 3", number=2, iteration=2, loss=3.0, flags=0),
    ]
    kinds = {0: {"dead-relu"}, 2: {"dead-relu", "stale-value"}}
    assert filter_entries(graphs, "dead-relu", kinds) == [0, 2]
    assert filter_entries(graphs, "Stale-Value", kinds) == [2]
    assert filter_entries(graphs, "graph-held", kinds) == [1]  # the pass's own flag
    assert filter_entries(graphs, "dead-relu") == []  # nothing known: nothing listed
    assert filter_entries(graphs, "loss 2", kinds) == [1]  # the rest is as before


def test_rows_list_the_graph_on_screen_first_then_the_run_most_severe_first():
    problems = [
        P.Problem("dead-relu", "info", "a", 0, 2),
        P.Problem("nonfinite", "error", "b", 1, 5, (4,)),
        P.Problem("diverging-loss", "warning", "c", None),
        P.Problem("graph-held", "warning", "d", 1),
        P.Problem("stale-value", "error", "e", 0, 1),
    ]
    rows = problem_rows(problems, 1, ["#1 · loss 1", "#2 · loss 2"])
    assert [r.message for r in rows] == ["b", "d", "e", "c", "a"]
    assert [r.here for r in rows] == [True, True, False, False, False]
    assert rows[0].where == "step 6" and rows[1].where == "this graph"
    assert rows[2].where == "#1, step 2" and rows[3].where == "the whole run"
    assert "#1 · loss 1" in rows[2].tooltip  # the whole title
    assert "#4" in rows[0].tooltip


def test_a_clean_report_says_which_detectors_ran_and_which_could_not():
    report = P.ProblemReport([], ["dead-relu", "nonfinite"], {"stale-value": "no values"}, 2, 5)
    summary, details = report_lines(report)
    assert summary.startswith("No problems found")
    assert "Ran: dead-relu, nonfinite." in details
    assert "stale-value (no values)" in details and "2 of 5 graphs" in details
    assert report_lines(None)[0].startswith("No problems looked for")


def test_only_the_graphs_in_memory_of_a_run_are_looked_at_app_side():
    folder = SimpleNamespace(loaded_segment=lambda k: "segment" if k == 1 else None)
    graphs = [
        SimpleNamespace(trace="own", segment=-1),  # recorded alone, in memory
        SimpleNamespace(trace=None, segment=0),  # still in the run's folder
        SimpleNamespace(trace=None, segment=1),  # read already
        SimpleNamespace(trace=None, segment=-1),  # in the head trace, not read yet
    ]
    result = SimpleNamespace(folder=folder, graphs=graphs, loaded_trace=None)
    assert loaded_graphs(result) == [0, 2]
    result.loaded_trace = "head"
    assert loaded_graphs(result) == [0, 2, 3]


EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"
CORRECT = [
    *(p.name for p in sorted(EXAMPLES.glob("*.expr")) if p.name != "nan_log.expr"),
    "newton.py",
    "cnn_step.py",
    "micrograd_mlp.py",
    "right_backward.py",
]


@pytest.mark.parametrize("name", CORRECT)
def test_the_marks_raise_no_problem_on_a_correct_example(name, registry):
    """The existing marks read as problems (first NaN, carried gradient, the passes' flags)
    say nothing on a program meant to be correct (the detectors' own tests cover theirs)."""
    path = EXAMPLES / name
    doc = Document()
    if path.suffix == ".py":
        run = ScriptRun(path)
        run.max_passes = 20
        result = run.run()
        assert result.ok, result.error
        assert doc.apply_script_result(result)
    else:
        assert doc.load_path(path)
    assert doc.problems() == []


def test_each_graph_on_screen_lists_its_own_finding_of_a_bug_the_run_names_once(tmp_path):
    """The real detectors group a forgotten cleargrad into one problem at its first graph;
    showing a later graph lists that graph's own finding (its nodes, its step) in that line's
    place, saying where else it showed, and marks it: one bug is one line, as in --check."""
    doc = Document()
    result = run_script(tmp_path, CARRIES)
    assert doc.apply_script_result(result)
    report = result.problems
    grouped = [p for p in report.problems if p.kind == "carried-gradient"]
    assert len(grouped) == 1
    first = grouped[0].graph
    later = len(result.graphs) - 1
    assert later != first and report.for_graph(later)
    assert doc.show_script_graph(later)
    carried = [p for p in doc.problems() if p.kind == "carried-gradient"]
    assert len(carried) == 1 and carried[0].graph == later
    own = report.for_graph(later)[0]
    assert carried[0].nodes == own.nodes and carried[0].step == own.step
    spread = grouped[0].message[len(report.for_graph(first)[0].message) :]
    assert spread.startswith(" (in ") and carried[0].message == own.message + spread
    assert doc.problem_summary().summary().startswith("1 warning")
    assert doc.show_script_graph(first)
    assert [p for p in doc.problems() if p.kind == "carried-gradient"] == grouped


DATA_CARRIES = """
import numpy as np
from autodiff import Variable
import autodiff.functions as F

x = Variable(np.linspace(-1, 1, 5))  # the data: never cleared, its gradient never used
t = np.tanh(0.7 * x.data)
w = Variable(np.array(0.1), name="w")
for i in range(4):
    loss = F.sum((F.tanh(w * x) - t) ** 2)
    w.cleargrad()
    loss.backward()
    w.data -= 0.5 * w.grad.data
"""


def test_the_datas_carried_gradient_is_no_problem_on_screen_as_for_the_detectors(tmp_path):
    """x's gradient is carried from pass to pass (the node style says so), but nothing uses it:
    the graph on screen marks no problem, as the run's detectors (``--check``) say."""
    result = run_script(tmp_path, DATA_CARRIES)
    assert "carried-gradient" in result.problems.ran
    assert not result.problems.problems
    doc = Document()
    assert doc.apply_script_result(result)
    assert not doc.problems()
    # x is drawn carried over before the last backward adds to it: a state, not a problem
    scene = doc.scene
    x = next(i for i in range(len(scene.node_ids)) if scene.state(i, -1).name == "GRAD_CARRIED")
    assert int(scene.node_ids[x]) not in {n for p in doc.problems() for n in p.nodes}
    assert not scene.overlays.get(int(scene.node_ids[x]))
    # the same graph made the weight's forgotten cleargrad a problem on screen
    forgot = DATA_CARRIES.replace("    w.cleargrad()\n", "")
    doc = Document()
    assert doc.apply_script_result(run_script(tmp_path, forgot))
    carried = [p for p in doc.problems() if p.kind == "carried-gradient"]
    assert carried and all("gradient of w," in p.message for p in carried)
    assert doc.shown_graph() in {p.graph for p in carried}
