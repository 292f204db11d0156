"""The problem vocabulary and the detector run (viewer.model.checks.problems)."""

import json

import pytest

from viewer.model.checks import problems as P


def test_kinds_are_the_contract():
    assert P.KINDS == (
        "unreached-parameter",
        "carried-gradient",
        "dead-relu",
        "saturated-activation",
        "vanishing-gradient",
        "exploding-gradient",
        "nonfinite",
        "wrong-backward",
        "graph-held",
        "broadcast-shape",
        "stale-value",
        "redundant-computation",
        "diverging-loss",
    )


def test_problem_json_round_trip_and_line():
    p = P.Problem("dead-relu", "warning", "fc1: 80% of units dead", 2, 5, (3, 4))
    data = json.loads(json.dumps(p.to_json()))
    assert set(data) == {"kind", "severity", "message", "graph", "step", "nodes"}
    assert P.problem_from_json(data) == p
    assert p.line().startswith("dead-relu ")


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"kind": "nope", "severity": "error", "message": ""},
        {"kind": "nonfinite", "severity": "fatal", "message": ""},
        {"kind": "nonfinite", "severity": "error", "message": "m", "graph": "1"},
        {"kind": "nonfinite", "severity": "error", "message": "m", "nodes": [1.5]},
    ],
)
def test_malformed_problem_is_refused(bad):
    with pytest.raises(ValueError):
        P.problem_from_json(bad)


def test_detect_sorts_reports_cannot_run_and_contains_a_failing_detector(monkeypatch):
    monkeypatch.setattr(P, "_GRAPH", {})
    monkeypatch.setattr(P, "_RUN", {})

    @P.graph_detector("dead-relu")
    def info(g, t):
        return [P.Problem("dead-relu", "info", "i", g.graph, 1)]

    @P.graph_detector("nonfinite")
    def err(g, t):
        return [P.Problem("nonfinite", "error", "e", g.graph, 0)] if g.graph == 1 else []

    @P.graph_detector("stale-value")
    def cannot(g, t):
        raise P.CannotRun("no values kept")

    @P.graph_detector("broadcast-shape")
    def broken(g, t):
        raise KeyError("x")

    report = P.detect([P.GraphInput(None, 0), P.GraphInput(None, 1)])
    # the same info in both graphs is one problem, the first graph's; each graph keeps its own
    assert [p.severity for p in report.problems] == ["error", "info"]
    assert report.problems[1].graph == 0
    assert report.problems[1].message == "i (in 2 of 2 kept passes, first in pass #1)"
    assert [p.kind for p in report.for_graph(1)] == ["nonfinite", "dead-relu"]
    assert report.for_graph(0) == [P.Problem("dead-relu", "info", "i", 0, 1)]
    assert report.ran == ["dead-relu", "nonfinite"]
    assert report.skipped["stale-value"] == "no values kept"
    assert "KeyError" in report.skipped["broadcast-shape"]
    assert report.worst == "error" and report.graphs == 2
    # which line names each graph's own problem: graph 1's info is the one line at graph 0
    assert report.named_by == {0: [1], 1: [0, 1]}
    assert report.naming(1, 1) is report.problems[1] and report.as_shown(0, 0) is None
    shown = report.as_shown(1, 1)  # graph 1 on screen: its own info, saying where else
    assert shown == P.Problem(
        "dead-relu", "info", "i (in 2 of 2 kept passes, first in pass #1)", 1, 1
    )
    assert report.as_shown(1, 0) is None  # named at its own graph
    again = P.ProblemReport.from_json(json.loads(json.dumps(report.to_json())))
    assert again.problems == report.problems and again.skipped == report.skipped
    assert again.per_graph == report.per_graph and again.named_by == report.named_by
    data = report.to_json()
    for bad in ([], {"1": [0]}, {"1": [0, 2]}, {"1": [0, "1"]}, {"x": [0]}):
        data["named_by"] = bad
        with pytest.raises(ValueError):
            P.ProblemReport.from_json(data)
    del data["named_by"]  # a report written before named_by: no line named
    assert P.ProblemReport.from_json(data).as_shown(1, 1) is None


def test_budget_stops_after_at_least_one_graph(monkeypatch):
    monkeypatch.setattr(P, "_GRAPH", {})
    ticks = iter(range(100))
    report = P.detect(
        [P.GraphInput(None, i) for i in range(5)],
        limits=P.Thresholds(budget_seconds=1.5),
        clock=lambda: next(ticks),
    )
    assert 1 <= report.graphs < 5 and report.graphs_total == 5
    assert "of 5 graphs" in report.summary()


def test_thresholds_from_settings_ignore_bad_values():
    t = P.Thresholds.from_mapping(
        {"dead_fraction": "0.7", "vanishing_orders": -1, "x": 3, "diverging_passes": "many"}
    )
    assert t.dead_fraction == 0.7 and t.vanishing_orders == 4.0 and t.diverging_passes == 5


# =============================================================================
# One bug, one line: a culprit's findings across graphs grouped
# =============================================================================
class _Reader:
    """Just enough of a TraceReader for the grouping: named parameters (ids shifted per
    graph, as a script's passes number their nodes anew) and two unnamed ReLUs."""

    def __init__(self, shift: int) -> None:
        self.shift = shift
        self.nodes = {
            shift + 1: {"kind": "variable", "name": "l0.W", "op": None},
            shift + 2: {"kind": "variable", "name": "l1.W", "op": None},
            shift + 3: {"kind": "function", "name": None, "op": "ReLU"},
            shift + 4: {"kind": "function", "name": None, "op": "ReLU"},
        }
        self.functions = [shift + 3, shift + 4]
        self.variables = [shift + 1, shift + 2]

    def node(self, i):
        return self.nodes[i]

    def creator_of(self, i):
        return -1

    def ops(self, ids):
        return [self.nodes[i]["op"] for i in ids]

    def scopes(self):
        raise AttributeError("no scopes")  # a reader without layers: names alone tell

    def node_scopes(self):
        raise AttributeError("no scopes")


def _grouping_detectors(monkeypatch, relu_of_graph=lambda g: 0):
    monkeypatch.setattr(P, "_GRAPH", {})
    monkeypatch.setattr(P, "_RUN", {})

    @P.graph_detector("carried-gradient")
    def carried(g, t):
        if g.graph == 0:
            return []
        s = g.reader.shift
        # which parameters are named changes with the graph: l0.W always, l1.W in graph 2
        found = [P.Problem("carried-gradient", "warning", f"l0.W ({s + 1})", g.graph, 5, (s + 1,))]
        if g.graph == 2:
            found.append(P.Problem("carried-gradient", "warning", "l1.W", g.graph, 6, (s + 2,)))
        return found

    @P.graph_detector("dead-relu")
    def dead(g, t):
        relu = g.reader.shift + 3 + relu_of_graph(g.graph)
        return [P.Problem("dead-relu", "warning", f"ReLU (node {relu})", g.graph, 2, (relu,))]

    @P.run_detector("diverging-loss")
    def diverging(run, t):
        return [P.Problem("diverging-loss", "warning", "grows", 3, None, (99,))]


def test_the_same_culprit_in_many_graphs_is_one_problem_with_its_first_graph(monkeypatch):
    _grouping_detectors(monkeypatch)
    graphs = [P.GraphInput(_Reader(100 * g), g, number=10 + g) for g in range(4)]
    report = P.detect(graphs, P.RunInput())
    lines = {(p.kind, p.graph, p.step, p.nodes): p.message for p in report.problems}
    assert lines == {
        # l0.W carried in graphs 1-3: graph 1's step and node, its own message first
        ("carried-gradient", 1, 5, (101,)): "l0.W (101) (in 3 of 4 kept passes, first in pass #11)",
        # l1.W carried in graph 2 alone: as it was found
        ("carried-gradient", 2, 6, (202,)): "l1.W",
        # the first unnamed ReLU in every graph (different ids)
        ("dead-relu", 0, 2, (3,)): "ReLU (node 3) (in 4 of 4 kept passes, first in pass #10)",
        # a run problem is never grouped
        ("diverging-loss", 3, None, (99,)): "grows",
    }
    # each graph keeps its own problems (by step), with its own ids, and the run's that
    # point at it
    assert [(p.kind, p.nodes) for p in report.for_graph(2)] == [
        ("dead-relu", (203,)),
        ("carried-gradient", (201,)),
        ("carried-gradient", (202,)),
    ]
    assert [p.kind for p in report.for_graph(3)] == [
        "dead-relu",
        "carried-gradient",
        "diverging-loss",
    ]
    assert report.for_graph(7) == []
    assert "4 warnings" in report.summary()


def test_different_unnamed_nodes_of_one_op_stay_apart(monkeypatch):
    # graph 0 and 2: the first ReLU dead, graph 1: the second: two layers, two problems
    _grouping_detectors(monkeypatch, relu_of_graph=lambda g: g % 2)
    report = P.detect([P.GraphInput(_Reader(100 * g), g) for g in range(3)])
    dead = [(p.graph, p.message) for p in report.problems if p.kind == "dead-relu"]
    assert dead == [
        (0, "ReLU (node 3) (in 2 of 3 kept passes, first in pass #1)"),
        (1, "ReLU (node 104)"),
    ]


def test_a_budget_cut_says_how_many_passes_were_looked_at(monkeypatch):
    _grouping_detectors(monkeypatch)
    ticks = iter(range(100))
    report = P.detect(
        iter([P.GraphInput(_Reader(100 * g), g) for g in range(6)]),
        limits=P.Thresholds(budget_seconds=2.5),
        total=6,
        clock=lambda: next(ticks),
    )
    assert report.graphs == 3
    (dead,) = [p for p in report.problems if p.kind == "dead-relu"]
    assert dead.message.endswith("(in 3 of 3 kept passes looked at, of 6; first in pass #1)")


def test_problems_without_nodes_group_by_their_message_without_numbers(monkeypatch):
    monkeypatch.setattr(P, "_GRAPH", {})

    @P.graph_detector("nonfinite")
    def nan(g, t):
        return [P.Problem("nonfinite", "error", f"NaN in l2.b at 1.5e-{g.graph + 3}", g.graph)]

    report = P.detect([P.GraphInput(None, g) for g in range(3)])
    (p,) = report.problems
    assert p.message == "NaN in l2.b at 1.5e-3 (in 3 of 3 kept passes, first in pass #1)"


def test_per_graph_problems_are_checked_on_read():
    p = P.Problem("dead-relu", "warning", "m", 1, 2, (3,))
    data = P.ProblemReport([p], per_graph={1: [p]}).to_json()
    assert data["per_graph"] == {"1": [p.to_json()]}
    assert set(data["per_graph"]["1"][0]) == {
        "kind",
        "severity",
        "message",
        "graph",
        "step",
        "nodes",
    }
    assert P.ProblemReport.from_json(data).for_graph(1) == [p]
    # a report written before per_graph existed: its problems by graph
    del data["per_graph"]
    assert P.ProblemReport.from_json(data).for_graph(1) == [p]
    for bad in ({"x": []}, {"1": {}}, [], {"2": [p.to_json()]}, {"1": [{"kind": "nope"}]}):
        data["per_graph"] = bad
        with pytest.raises(ValueError):
            P.ProblemReport.from_json(data)


def test_a_kind_that_ran_on_some_graphs_is_not_said_to_have_not_run():
    """A forward-only graph beside a training pass: carried-gradient ran on the pass and could
    not on the other graph; diverging-loss ran on none. The panel's details and --check say so
    apart."""
    from viewer.model.checks.problem_list import report_lines

    why = "the graph has no backward pass"
    report = P.ProblemReport(
        [],
        ["carried-gradient", "dead-relu"],
        {"carried-gradient": why, "diverging-loss": "fewer than 2 backward passes"},
        2,
        2,
    )
    never, partly = report.not_run()
    assert never == {"diverging-loss": "fewer than 2 backward passes"}
    assert partly == {"carried-gradient": why}
    _, details = report_lines(report)
    assert "Could not run: diverging-loss (fewer than 2 backward passes)." in details
    assert f"Ran, but not on every graph: carried-gradient ({why})." in details
    assert "Could not run: carried-gradient" not in details
