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
    assert [p.severity for p in report.problems] == ["error", "info", "info"]
    assert report.ran == ["dead-relu", "nonfinite"]
    assert report.skipped["stale-value"] == "no values kept"
    assert "KeyError" in report.skipped["broadcast-shape"]
    assert report.worst == "error" and report.graphs == 2
    again = P.ProblemReport.from_json(json.loads(json.dumps(report.to_json())))
    assert again.problems == report.problems and again.skipped == report.skipped


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
