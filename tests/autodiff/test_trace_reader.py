"""TraceReader names everything the viewer reads: a Trace and a TraceView answer each member,
the whole-recording members keep their contract, and the viewer asks, never probes."""

import re
from pathlib import Path

import numpy as np

import autodiff.functions as F
from autodiff import Variable, trace
from autodiff.trace import Trace, TraceReader, TraceView, view_for_root

ROOT = Path(__file__).resolve().parents[2]


def _members() -> list[str]:
    """Every member the Protocol names: methods and properties, and attributes it only
    annotates (``pass_offset``)."""
    named = {m for m in vars(TraceReader) if not m.startswith("_")}
    named |= set(vars(TraceReader).get("__annotations__", {}))
    return sorted(named)


def _run():
    x = Variable(np.array([1.0, 2.0]), name="x")
    with trace.record() as t:
        for _ in range(3):
            x.cleargrad()
            y = F.sum(F.sin(x) * x)
            y.backward()
            y.unchain_backward()
    return t


def test_the_protocol_names_what_the_viewer_reads_of_a_whole_recording():
    members = _members()
    for name in (
        "base",
        "pass_offset",
        "global_step",
        "local_step",
        "cut_at",
        "cuts",
        "detached",
        "first_nonfinite",
        "timeline",
        "live",
        "function_params",
        "audit",
        "names",
        "ops",
        "scopes",
        "node_scopes",
        "functions",
        "backward_roots",
    ):
        assert name in members, name


def test_a_trace_and_a_view_satisfy_every_member_of_the_protocol():
    t = _run()
    view = view_for_root(t, t.backward_roots[1], 1)
    assert isinstance(t, Trace) and isinstance(view, TraceView)
    for reader in (t, view):
        assert isinstance(reader, TraceReader)
        missing = [m for m in _members() if not hasattr(reader, m)]
        assert missing == [], (type(reader).__name__, missing)


def test_the_whole_recording_members_keep_their_contract():
    t = _run()
    view = view_for_root(t, t.backward_roots[2], 2)
    # a Trace is its own whole recording; a view's is the trace it shows a graph of
    assert t.base is t and view.base is t
    assert t.pass_offset == 0 and view.pass_offset == 0
    assert t.detached() == frozenset()
    assert t.global_step(4) == 4 and t.local_step(4) == 4
    first = view.global_step(0)
    assert first > 0 and view.local_step(first) == 0
    assert set(view.cuts()) <= set(t.cuts())


def test_the_viewer_never_probes_a_reader_for_what_it_has():
    probe = re.compile(
        r"\b(getattr|hasattr)\((self\.)?(trace|_trace|reader|view|whole|base|source)\b"
    )
    found = [
        f"{p.relative_to(ROOT)}:{i}"
        for folder in ("viewer", "autodiff/trace/formats")
        for p in sorted((ROOT / folder).rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if probe.search(line)
    ]
    assert found == []


def test_no_viewer_module_imports_a_private_name_of_the_trace():
    found = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in sorted((ROOT / "viewer").rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "autodiff.trace._" in line
    ]
    assert found == []
