"""The leak audit: the six cases of the issue, exact survivor sets, no side effects, the CLI."""

import gc
import subprocess
import sys
import weakref
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import autodiff
import autodiff.functions as F
from autodiff import Function, Variable, leaks, no_grad, trace
from autodiff.trace import _audit

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples" / "leaks"

_CACHE: list = []
_HOOKS: list = []


@pytest.fixture(autouse=True)
def no_collector():
    """Cycles must still be there when the audit runs: pause the collector in every test."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        _CACHE.clear()
        _HOOKS.clear()
        if was:
            gc.enable()


def _upstream(t, node):
    """The node and everything upstream of it in the recorded graph."""
    return nx.ancestors(t.graph, node) | {node}


def _alive(t):
    return {n for n in t.variables + t.functions if t.live(n) is not None}


def _ids(survivors):
    return {s.node_id for s in survivors}


# ----------------------------------------------------------------------------------------
# (1) a clean graph after del y
# ----------------------------------------------------------------------------------------
def test_clean_graph_after_del_reports_nothing():
    x = Variable(np.linspace(-1.0, 1.0, 5), name="x")
    with trace.record() as t:
        y = F.sum(F.tanh(x) * x)
        y.backward()
    del y
    report = t.audit()
    assert report.survivors == []
    assert report.clean
    assert [(s.node_id, s.label) for s in report.held_leaves] == [(t.variables[0], "x")]
    where = "local 'x' in test_clean_graph_after_del_reports_nothing()"
    assert where in report.held_leaves[0].held_by


def test_held_output_is_reported_with_its_holder():
    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.exp(F.square(x))
        y.name = "y"
    report = t.audit()
    yid = t.steps[-1].outputs[0]
    assert _ids(report.survivors) == _upstream(t, yid) - {t.variables[0]}
    by_id = {s.node_id: s for s in report.survivors}
    where = "local 'y' in test_held_output_is_reported_with_its_holder()"
    assert by_id[yid].held_by.startswith(where)
    assert by_id[yid].reason == "referenced"
    del y


# ----------------------------------------------------------------------------------------
# (2) an intermediate kept in a global list
# ----------------------------------------------------------------------------------------
def test_global_list_holds_the_variable_and_its_upstream_chain():
    x = Variable(np.array([[0.5, -1.0]]), name="x")
    w = Variable(np.array([[0.1], [0.2]]), name="w")
    with trace.record() as t:
        h = F.tanh(F.matmul(x, w))
        h.name = "h"
        _CACHE.append(h)
        loss = F.sum(h * h)
        loss.backward()
    del h, loss
    report = t.audit()
    hid = next(n for n in t.variables if t.node(n)["name"] == "h")
    expected = _upstream(t, hid) - {t.variables[0], t.variables[1]}
    assert _ids(report.survivors) == expected  # nothing of the loss graph: no false positive
    assert all(s.reason == "referenced" for s in report.survivors)
    for s in report.survivors:
        assert s.held_by.startswith("global '_CACHE'"), s.held_by
        assert "(list) [0] -> Variable 'h'" in s.held_by
    by_id = {s.node_id: s for s in report.survivors}
    assert by_id[hid].held_by.endswith("(list) [0] -> Variable 'h'")
    assert by_id[hid].label == "h" and by_id[hid].kind == "variable"
    creator = t.steps[1].function
    assert by_id[creator].label == "Tanh" and by_id[creator].kind == "function"
    assert by_id[creator].held_by.endswith("-> Variable 'h' .creator -> Function Tanh")
    assert {s.label for s in report.held_leaves} == {"x", "w"}


# ----------------------------------------------------------------------------------------
# (3) a custom Function that stores its outputs strongly
# ----------------------------------------------------------------------------------------
class KeepOutputs(Function):
    def __call__(self, *inputs):
        outputs = super().__call__(*inputs)
        self.kept = outputs
        return outputs

    def forward(self, x):
        return 2 * x

    def backward(self, gy):
        return 2 * gy


def test_strong_outputs_make_a_cycle():
    x = Variable(np.array(1.5), name="x")
    with trace.record() as t:
        y = KeepOutputs()(F.exp(x))
        y.name = "y"
        y.backward()
    yid = t.steps[1].outputs[0]
    del y
    report = t.audit()
    assert _ids(report.survivors) == _upstream(t, yid) - {t.variables[0]}
    assert all(s.reason == "cycle" for s in report.survivors)
    by_id = {s.node_id: s for s in report.survivors}
    assert by_id[yid].held_by == (
        "cycle: Variable 'y' .creator -> Function KeepOutputs .kept -> Variable 'y'"
    )
    exp_id = t.steps[0].function
    assert "in the cycle" in by_id[exp_id].held_by
    # the collector would free them: check that it does, and that the audit saw the truth
    refs = [weakref.ref(t.live(n)) for n in by_id]
    gc.collect()
    assert all(r() is None for r in refs)
    assert t.audit().survivors == []


# ----------------------------------------------------------------------------------------
# (4) backward(create_graph=True) without clearing the leaf's grad
# ----------------------------------------------------------------------------------------
def test_create_graph_cycle_after_dropping_x():
    x = Variable(np.array(2.0), name="x")
    with trace.record() as t:
        y = x**3
        y.backward(create_graph=True)
    xid = t.variables[0]
    del y, x
    report = t.audit()
    assert _ids(report.survivors) == _alive(t)
    assert xid in _ids(report.survivors)
    assert all(s.reason == "cycle" for s in report.survivors)
    by_id = {s.node_id: s for s in report.survivors}
    text = by_id[xid].held_by
    assert text.startswith("cycle: Variable 'x' .grad -> Variable") and text.endswith("'x'")
    gc.collect()
    assert _alive(t) == set()


def test_create_graph_grad_held_through_user_leaf():
    x = Variable(np.array(2.0), name="x")
    with trace.record() as t:
        y = x**3
        y.backward(create_graph=True)
    del y
    report = t.audit()
    xid = t.variables[0]
    assert [s.node_id for s in report.held_leaves] == [xid]
    assert _ids(report.survivors) == _alive(t) - {xid}
    gid = next(n for n in t.variables if t.node(n)["grad_of"] == xid)
    by_id = {s.node_id: s for s in report.survivors}
    assert by_id[gid].held_by.startswith("local 'x' in ")
    assert ".grad -> Variable" in by_id[gid].held_by
    x.cleargrad()  # the fix: the gradient graph goes away
    assert t.audit().survivors == []


# ----------------------------------------------------------------------------------------
# (5) a Variable captured by a closure
# ----------------------------------------------------------------------------------------
def _make_logger(x):
    h = F.tanh(x) * 2.0
    h.name = "h"

    def log():
        return float(h.data.sum())

    return log


def test_closure_keeps_the_captured_variable():
    x = Variable(np.array([0.1, 0.2]), name="x")
    with trace.record() as t:
        _HOOKS.append(_make_logger(x))
    hid = next(n for n in t.variables if t.node(n)["name"] == "h")
    report = t.audit()
    assert _ids(report.survivors) == _upstream(t, hid) - {t.variables[0]}
    by_id = {s.node_id: s for s in report.survivors}
    assert by_id[hid].held_by == (
        "global '_HOOKS' in "
        + __name__
        + " (list) [0] (function _make_logger.<locals>.log) -> closure cell 'h' of "
        "_make_logger.<locals>.log() -> Variable 'h'"
    )


# ----------------------------------------------------------------------------------------
# (6) a graph built under no_grad
# ----------------------------------------------------------------------------------------
def test_no_grad_graph_records_and_flags_nothing():
    x = Variable(np.array([1.0, 2.0]), name="x")
    with trace.record() as t, no_grad():
        y = F.sum(F.exp(x) * x)
    _CACHE.append(y)
    assert t.variables == [] and t.functions == []
    report = t.audit()
    assert report.survivors == [] and report.held_leaves == []


# ----------------------------------------------------------------------------------------
# The audit changes nothing
# ----------------------------------------------------------------------------------------
def test_audit_twice_gives_the_same_answer():
    x = Variable(np.array(1.5), name="x")
    with trace.record() as t:
        y = KeepOutputs()(F.exp(x))
        h = F.sin(x)
        _CACHE.append(h)
    del y, h
    first = t.audit()
    second = t.audit()
    assert first == second
    assert {s.reason for s in first.survivors} == {"cycle", "referenced"}


def test_audit_keeps_nothing_alive():
    x = Variable(np.array(1.5), name="x")
    with trace.record() as t:
        y = F.exp(F.square(x))
        h = F.sin(y)
    refs = [weakref.ref(t.live(n)) for n in _alive(t) if n != t.variables[0]]
    report = t.audit()  # snapshots this frame's locals: y and h are in there
    assert len(report.survivors) == len(refs)
    del y, h, report
    assert all(r() is None for r in refs)  # freed by reference counting alone
    assert t.audit().survivors == []


def test_audit_does_not_collect_cycles():
    x = Variable(np.array(1.5), name="x")
    with trace.record() as t:
        y = KeepOutputs()(x)
    ref = weakref.ref(y)
    del y
    t.audit()
    assert ref() is not None  # still there: the audit did not run the collector
    assert not gc.isenabled()  # and left the collector as it found it


def test_loaded_trace_has_nothing_alive(tmp_path):
    x = Variable(np.array(1.5), name="x")
    with trace.record() as t:
        y = F.exp(x)
    t.to_json(tmp_path / "t.json")
    report = trace.load(tmp_path / "t.json").audit()
    assert report.survivors == [] and report.held_leaves == []
    del y


# ----------------------------------------------------------------------------------------
# The bundled examples, through run_script and the command line
# ----------------------------------------------------------------------------------------
EXPECTED = {
    "clean_graph.py": set(),
    "global_list.py": {"referenced"},
    "strong_outputs.py": {"cycle"},
    "create_graph_cycle.py": {"cycle"},
    "closure.py": {"referenced"},
    "no_grad.py": set(),
}


def test_every_case_has_a_bundled_example():
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(EXPECTED)
    for path in EXAMPLES.glob("*.py"):
        text = path.read_text()
        assert text.startswith('"""') and "\n\nCategory: leaks\n" in text, path.name
        imports = [ln for ln in text.splitlines() if ln.startswith(("import ", "from "))]
        assert all(" autodiff" in ln or "numpy" in ln for ln in imports), path.name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_through_run_script(name, capsys):
    try:
        report = leaks.run_script(str(EXAMPLES / name))
    finally:
        for attr in ("debug_cache", "debug_hooks", "debug_results"):
            if hasattr(autodiff, attr):
                delattr(autodiff, attr)
    capsys.readouterr()
    assert {s.reason for s in report.survivors} == EXPECTED[name]
    if name == "global_list.py":
        assert {s.label for s in report.survivors} >= {"h0", "h1", "x", "w"}
        where = "global 'debug_cache' in autodiff (list) ["
        assert all(where in s.held_by for s in report.survivors)
    if name == "closure.py":
        h = next(s for s in report.survivors if s.label == "h")
        assert "closure cell 'h' of make_logger.<locals>.log()" in h.held_by
    if name == "create_graph_cycle.py":
        x = next(s for s in report.survivors if s.label == "x")
        assert x.held_by.startswith("cycle: Variable 'x' .grad")


@pytest.mark.parametrize(("name", "code"), [("clean_graph.py", 0), ("strong_outputs.py", 1)])
def test_command_line(name, code):
    out = subprocess.run(
        [sys.executable, "-m", "autodiff.leaks", str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == code, out.stderr
    if code:
        assert "survived" in out.stdout and "cycle: Variable 'y' .creator" in out.stdout
    else:
        assert "no leaks" in out.stdout


def test_command_line_usage():
    assert leaks.main([]) == 2


def test_whole_heap_scan_gives_the_same_report(monkeypatch):
    """Large graphs are audited by one scan of the heap: same answers as the walk back."""
    x = Variable(np.array(1.5), name="x")
    with trace.record() as t:
        y = KeepOutputs()(F.exp(x))
        h = F.sin(x) * 2.0
        _CACHE.append(h)
        z = F.tanh(x)
    del y, h
    walked = t.audit()
    monkeypatch.setattr(_audit, "_MAX_BATCH", 0)  # the audit moved to trace._audit
    scanned = t.audit()
    assert scanned == walked
    assert {s.reason for s in scanned.survivors} == {"cycle", "referenced"}
    assert {s.label for s in scanned.held_leaves} == {"x"}
    del z
